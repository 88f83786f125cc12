"""The command line, driven as a user would: exit codes, one-line errors, the JSON contract."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from safetensors.numpy import load_file


def cli(*args):
    return subprocess.run([sys.executable, "-m", "gpt2viz", *args], capture_output=True, text=True, timeout=300)


def test_trace_json_contract(tmp_path):
    out = tmp_path / "t.safetensors"
    p = cli("trace", "--model", "tiny", "--text", "Hello world", "--mode", "decode", "--json", "--out", str(out))
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert set(r) == {"model", "mode", "token_ids", "tokens", "P", "L", "tensors"}
    assert (r["model"], r["mode"], r["token_ids"], r["P"], r["L"]) == ("tiny", "decode", [15496, 995], 1, 2)
    assert r["tensors"]["blocks.0.attn.z"] == [1, 4, 1, 16]
    saved = load_file(str(out))
    assert set(saved) == set(r["tensors"])


def test_names_lists_execution_order():
    p = cli("names", "--model", "gpt2", "--mode", "prefill")
    names = p.stdout.split()
    assert names[:3] == ["embed.tok", "embed.pos", "embed.out"] and names[-1] == "logits"
    golden = (Path(__file__).parent / "golden" / "names_tiny_prefill.txt").read_text().split()  # from real runs
    per_block = [n for n in golden if n.startswith("blocks.0.")]
    assert "blocks.11.attn.k_cache" in names and len(names) == len(golden) + (12 - 2) * len(per_block)


@pytest.mark.parametrize("args,needle", [
    (["trace", "--model", "tiny", "--text", ""], "empty"),
    (["trace", "--model", "tiny", "--text", "a " * 1100], "at most 1,024"),
    (["trace", "--model", "huge", "--text", "hi"], "unknown model"),
    (["trace", "--model", "tiny", "--text", "hi", "--mode", "sideways"], "invalid choice"),
    (["trace", "--weights", "/nonexistent/model.safetensors", "--text", "hi"], "no weights file"),
    (["trace", "--model", "tiny", "--text", "hi", "--mode", "training"], "at least 2 tokens"),
    (["frobnicate"], "invalid choice"),
])
def test_bad_input_is_one_line_exit_2(args, needle):
    p = cli(*args)
    assert p.returncode == 2
    assert "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and needle in p.stderr


def test_pickle_weights_refused(tmp_path):
    bad = tmp_path / "pytorch_model.bin"
    bad.write_bytes(b"PK\x03\x04 zip")
    p = cli("trace", "--weights", str(bad), "--text", "hi")
    assert p.returncode == 2 and "pickle" in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_download_without_network_is_one_line(tmp_path):
    """The hub endpoint points at a closed port on this machine: no traffic leaves it."""
    import os
    env = dict(os.environ, HF_ENDPOINT="http://127.0.0.1:9", HF_HOME=str(tmp_path))
    p = subprocess.run([sys.executable, "-m", "gpt2viz", "download", "gpt2"], capture_output=True, text=True,
                       timeout=120, env=env)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and "cannot reach 127.0.0.1:9" in p.stderr
    assert not any(tmp_path.rglob("model.safetensors"))


def test_download_of_an_unknown_name():
    p = cli("download", "gpt5")
    assert p.returncode == 2 and "no published checkpoint called 'gpt5'" in p.stderr


def test_unwritable_out_path_is_one_line(tmp_path):
    p = cli("trace", "--model", "tiny", "--text", "hi", "--out", str(tmp_path / "missing" / "t.safetensors"))
    assert p.returncode == 2 and "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("mode", ["full", "training", "prefill", "decode"])
def test_names_agree_with_the_golden_lists(mode):
    """`names` lists from the schema without running a model; the golden files come from real runs."""
    golden = (Path(__file__).parent / "golden" / f"names_tiny_{mode}.txt").read_text().split()
    p = cli("names", "--model", "tiny", "--mode", mode)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == golden


def test_no_dropout_drops_the_masks(tmp_path):
    names = cli("names", "--model", "tiny", "--mode", "training", "--no-dropout").stdout.split()
    with_dropout = cli("names", "--model", "tiny", "--mode", "training").stdout.split()
    assert names == [n for n in with_dropout if not n.endswith("dropout_mask")] and len(names) < len(with_dropout)
    p = cli("trace", "--model", "tiny", "--text", "Hello world", "--mode", "training", "--no-dropout", "--json")
    assert p.returncode == 0, p.stderr
    assert list(json.loads(p.stdout)["tensors"]) == names


def test_download_repos_come_from_the_presets():
    """One place per model size: the preset names its repository, and the cache finder expects the
    repository's name to be the preset's."""
    from gpt2viz.model import download
    from gpt2viz.spec.config import PRESETS
    assert {n: c.hf_repo for n, c in PRESETS.items() if c.hf_repo} == download.REPOS
    assert "tiny" not in download.REPOS and download.REPOS["gpt2"] == "openai-community/gpt2"
    assert all(repo.split("/")[1] == name for name, repo in download.REPOS.items())


def test_ablate_json_reports_the_change():
    p = cli("ablate", "--model", "tiny", "--text", "The quick brown fox", "--block", "1", "--head", "2",
            "--method", "zero", "--json")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["target"] == {"block": 1, "part": "head", "index": 2, "name": "blocks.1.attn.z"}
    assert len(r["top_before"]) == 5 and r["top_token"]["id"] == r["top_before"][0]["id"]
    assert r["top_token"]["logit_change"] != 0 and r["loss_before"] != r["loss_after"]
    assert r["changed_most"] and not r["changed_most"][0]["name"].startswith("blocks.0.")


def test_patch_json_has_a_grid_per_block():
    p = cli("patch", "--model", "tiny", "--clean", "Mary gave John a", "--corrupt", "John gave Mary a", "--json")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    T = len(r["clean_tokens"])
    assert len(r["restored"]["resid_pre"]) == 2 and all(len(row) == T for row in r["restored"]["resid_pre"])
    assert len(r["restored"]["attn_z"][0]) == 4 and len(r["answers"]) == 2


@pytest.mark.parametrize("args,needle", [
    (["ablate", "--model", "tiny", "--text", "hi there", "--block", "7"], "block must be between 0 and 1"),
    (["ablate", "--model", "tiny", "--text", "hi there", "--block", "0", "--head", "9"], "head must be between"),
    (["ablate", "--model", "tiny", "--text", "hi", "--block", "0", "--head", "1", "--mlp"], "not allowed with"),
    (["ablate", "--model", "tiny", "--text", "hi", "--block", "0", "--method", "shuffle"], "invalid choice"),
    (["ablate", "--model", "tiny", "--text", "", "--block", "0"], "empty"),
    (["patch", "--model", "tiny", "--clean", "one two three", "--corrupt", "one"], "equal length"),
])
def test_whatif_bad_input_is_one_line_exit_2(args, needle):
    p = cli(*args)
    assert p.returncode == 2, p.stdout
    assert len(p.stderr.strip().splitlines()) == 1 and needle in p.stderr, p.stderr


def test_weights_writes_the_apps_random_weights(tmp_path):
    """`weights` writes a preset's seeded draw, the one the app shows, for transformers to read (the Code
    panel's transformers snippets ask for it on random weights)."""
    import torch

    from gpt2viz.model.weights import load_safetensors, random_model
    from gpt2viz.spec.config import get_config

    out = tmp_path / "tiny-seed3.safetensors"
    p = cli("weights", "--model", "tiny", "--seed", "3", "--out", str(out))
    assert p.returncode == 0, p.stderr
    assert f"wrote {out}: random tiny weights, seed 3" in p.stdout
    theirs, ours = load_safetensors(out).model.state_dict(), random_model(get_config("tiny"), 3).state_dict()
    assert theirs.keys() == ours.keys() and all(torch.equal(theirs[k], ours[k]) for k in ours)
    bad = cli("weights", "--model", "huge", "--out", str(tmp_path / "x.safetensors"))
    assert bad.returncode == 2 and "unknown model 'huge'" in bad.stderr and len(bad.stderr.splitlines()) == 1
