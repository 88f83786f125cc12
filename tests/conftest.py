"""Shared fixtures: a tiny random model, and a small transformers GPT-2 with our model loaded from
its own `save_pretrained` output (the Hugging Face layout), for parity tests."""

import os

import pytest
import torch

# The suite runs against a class server's budget (2 GiB), as its tests were written for: an AppTest or a
# server on loopback would otherwise count as local and take half the machine's memory. Tests of the
# local default pass their own environment to budget_bytes.
os.environ.setdefault("GPT2VIZ_TRACE_BUDGET_MB", "2048")
# Torch on one thread in every test process and in every server or command a test starts (they inherit the
# environment; GPT2VIZ_THREADS fixes the app's runs). The README's run has two workers on two cores, a browser and
# servers beside them: a torch of two threads a process waits for its other thread while another process holds
# the core (measured: two attribution-corpus runs side by side, 54 s at two threads, 22 s at one).
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("GPT2VIZ_THREADS", "1")
# random weights drawn, not mapped from files a run before kept in the home folder (tests/test_drawn_weights.py
# and tests/test_first_paint.py keep and map them in folders of their own)
os.environ.setdefault("GPT2VIZ_WEIGHTS_CACHE", "off")

from gpt2viz.model.weights import load_safetensors, random_model
from gpt2viz.spec.config import get_config

torch.set_num_threads(1)  # as above: torch was imported before the environment was set

TEXT = "The quick brown fox jumps over the lazy dog, and the dog keeps sleeping."


@pytest.fixture(scope="session")
def tiny():
    return random_model(get_config("tiny"), seed=0)


@pytest.fixture(scope="session")
def hf_dir(tmp_path_factory):
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(1234)
    cfg = GPT2Config(n_layer=3, n_head=4, n_embd=128, n_positions=256, attn_implementation="eager")
    hf = GPT2LMHeadModel(cfg).eval()
    path = tmp_path_factory.mktemp("hf")
    hf.save_pretrained(path)
    return hf, path


@pytest.fixture
def hf_cache_tiny(tmp_path, monkeypatch, tiny):
    """A Hugging Face cache holding the tiny model as openai-community/gpt2 (the app's "hf-cache" source)."""
    from gpt2viz.model.weights import save_safetensors
    from gpt2viz.ui.cache import cached_checkpoints

    snap = tmp_path / "hub" / "models--openai-community--gpt2" / "snapshots" / "abc"
    snap.mkdir(parents=True)
    save_safetensors(tiny, snap / "model.safetensors")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    cached_checkpoints.clear()
    yield snap
    cached_checkpoints.clear()


@pytest.fixture(scope="session")
def hf_pair(hf_dir):
    """(transformers model, our model loaded from the same model.safetensors)."""
    hf, path = hf_dir
    return hf, load_safetensors(path / "model.safetensors").model


@pytest.fixture(scope="session")
def text_ids():
    from gpt2viz.model.tokenizer import encode

    return encode(TEXT)


def pytest_runtest_logfinish(nodeid, location):
    """With GPT2VIZ_TEST_MEMORY_LOG=FILE (benchmarks/suite_footprint.py sets it): each test's name, the
    process's peak and current resident memory in MiB when it ends, to name the tests that raise the peak."""
    import os
    import resource

    if path := os.environ.get("GPT2VIZ_TEST_MEMORY_LOG"):
        with open("/proc/self/statm") as f:
            now = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
        with open(path, "a") as f:
            worker = os.environ.get("PYTEST_XDIST_WORKER", "main")  # "main": the run without workers, or xdist's own
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            f.write(f"{worker} {nodeid}\t{peak:.0f}\t{now:.0f}\n")
