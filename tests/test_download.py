"""`download`, end to end against a fake hub on a loopback port (tests/fake_hub.py): the bytes
arrive with progress reported, a dropped connection is resumed with a Range request, the hash is
checked, the hf-cache source then finds and loads the checkpoint, and a failed download leaves
nothing in the cache. The checkpoint is the `tiny` preset (13.6 MB): larger than huggingface_hub's
10 MiB read chunk, so the bytes before a drop reach the disk and the resume starts after them."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from fake_hub import COMMIT, FakeHub

from gpt2viz.model.download import DownloadError, describe, download, download_allowed
from gpt2viz.model.weights import find_hf_checkpoints, load_safetensors, random_model, save_safetensors
from gpt2viz.spec.config import get_config

REPO = "openai-community/gpt2"  # download("gpt2") fetches this repo id


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> dict[str, bytes]:
    model = random_model(get_config("tiny"), seed=5)
    path = tmp_path_factory.mktemp("ckpt") / "model.safetensors"
    save_safetensors(model, path, {"n_head": ""})  # the head count comes from config.json, as on the Hub
    config = {"model_type": "gpt2", "n_layer": 2, "n_head": 4, "n_embd": 64, "vocab_size": 50257, "n_positions": 1024}
    return {"model.safetensors": path.read_bytes(), "config.json": json.dumps(config).encode()}


@pytest.fixture
def hub(checkpoint):
    with FakeHub({REPO: checkpoint}) as h:
        yield h


def cache_files(cache: Path) -> list[str]:
    """Every file in the cache but huggingface_hub's CACHEDIR.TAG (a marker that says "a cache")."""
    return sorted(str(p.relative_to(cache)) for p in cache.rglob("*") if not p.is_dir() and p.name != "CACHEDIR.TAG")


def test_download_reports_progress_resumes_and_is_found(hub, checkpoint, tmp_path):
    cache = tmp_path / "hub"
    hub.drop_once.add("model.safetensors")
    seen = []
    path = download("gpt2", lambda f, done, size: seen.append((f, done, size)), endpoint=hub.endpoint, cache_dir=cache)
    size = len(checkpoint["model.safetensors"])
    assert Path(path).read_bytes() == checkpoint["model.safetensors"]
    # resumed: a second GET asked for the bytes after the ones already on disk (a whole 10 MiB chunk)
    gets = [rng for method, p, rng in hub.requests if method == "GET" and p.endswith("model.safetensors")]
    assert gets[0] is None and gets[1] == f"bytes={10 * 2**20}-" and len(gets) == 2
    model_progress = [(done, total) for f, done, total in seen if f == "model.safetensors"]
    assert model_progress[-1] == (size, size) and all(t == size for _, t in model_progress)
    assert [d for d, _ in model_progress] == sorted(d for d, _ in model_progress)  # never counts back
    pct = 100 * 10 * 2**20 // size
    shown = describe("model.safetensors", 10 * 2**20, size)
    assert shown == f"model.safetensors: 10.0 of {size / 2**20:,.1f} MiB ({pct}%)"
    found = find_hf_checkpoints({"HF_HUB_CACHE": str(cache)})
    assert [(c.name, c.path) for c in found] == [("gpt2", path)]
    loaded = load_safetensors(path)
    assert loaded.n_head_source == "config.json beside the file" and loaded.model.config.n_head == 4
    assert not [f for f in cache_files(cache) if f.endswith(".incomplete")]


@pytest.mark.parametrize("fault", ["corrupt", "fail"])
def test_a_failed_download_leaves_nothing_in_the_cache(hub, tmp_path, fault):
    cache = tmp_path / "hub"
    getattr(hub, fault).add("model.safetensors")
    with pytest.raises(DownloadError) as e:
        download("gpt2", endpoint=hub.endpoint, cache_dir=cache)
    assert ("is corrupt: its hash is" if fault == "corrupt" else "500") in str(e.value)
    assert "\n" not in str(e.value)
    assert cache_files(cache) == [] and not (cache / f"models--{REPO.replace('/', '--')}").exists()
    assert find_hf_checkpoints({"HF_HUB_CACHE": str(cache)}) == []


def test_a_failure_keeps_what_was_cached_before(hub, checkpoint, tmp_path):
    cache = tmp_path / "hub"
    path = download("gpt2", endpoint=hub.endpoint, cache_dir=cache)
    before = cache_files(cache)
    hub.files[REPO] = {**checkpoint, "model.safetensors": checkpoint["model.safetensors"] + b" "}  # a new revision
    hub.commit = "f" * 40
    hub.corrupt.add("model.safetensors")
    ref = cache / f"models--{REPO.replace('/', '--')}" / "refs" / "main"
    with pytest.raises(DownloadError):
        download("gpt2", endpoint=hub.endpoint, cache_dir=cache)
    assert cache_files(cache) == before and ref.read_text() == COMMIT  # main still names what is there
    assert [c.path for c in find_hf_checkpoints({"HF_HUB_CACHE": str(cache)})] == [path]


def test_cli_download_shows_progress_on_stderr(hub, checkpoint, tmp_path):
    env = dict(os.environ, HF_ENDPOINT=hub.endpoint, HF_HUB_CACHE=str(tmp_path / "hub"))
    p = subprocess.run([sys.executable, "-m", "gpt2viz", "download", "gpt2"], capture_output=True, text=True,
                       timeout=120, env=env, check=False)
    assert p.returncode == 0, p.stderr
    size = len(checkpoint["model.safetensors"])
    assert f"model.safetensors: {size / 2**20:,.1f} of {size / 2**20:,.1f} MiB (100%)" in p.stderr
    assert f"model.safetensors: 10.0 of {size / 2**20:,.1f} MiB ({100 * 10 * 2**20 // size}%)" in p.stderr  # on the way
    assert Path(p.stdout.strip()).read_bytes() == checkpoint["model.safetensors"]


def test_cli_download_failure_is_one_error_line(hub, tmp_path):
    hub.corrupt.add("model.safetensors")
    env = dict(os.environ, HF_ENDPOINT=hub.endpoint, HF_HUB_CACHE=str(tmp_path / "hub"))
    p = subprocess.run([sys.executable, "-m", "gpt2viz", "download", "gpt2"], capture_output=True, text=True,
                       timeout=120, env=env, check=False)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    errors = [line for line in p.stderr.splitlines() if "error" in line]
    assert len(errors) == 1 and errors[0].startswith("gpt2viz: error: model.safetensors is corrupt")


@pytest.mark.parametrize("address, setting, allowed", [
    ("localhost", None, True), ("127.0.0.1", None, True), ("::1", None, True),
    (None, None, False), ("0.0.0.0", None, False), ("0.0.0.0", "1", True), ("localhost", "0", False),
])
def test_downloads_are_offered_on_loopback_or_when_the_operator_says(address, setting, allowed):
    env = {} if setting is None else {"GPT2VIZ_ALLOW_DOWNLOAD": setting}
    assert download_allowed(address, env) is allowed


def test_the_loaded_download_runs(hub, tmp_path):
    path = download("gpt2", endpoint=hub.endpoint, cache_dir=tmp_path / "hub")
    logits, _ = load_safetensors(path).model(torch.tensor([[464, 2068]]))
    assert logits.shape == (1, 2, 50257)
