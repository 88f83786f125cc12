"""The sidebar's download offer through Streamlit's AppTest, against the fake hub on a loopback
port: shown only where downloads are allowed, and one click puts gpt2 in the cache and in use."""

import json
from pathlib import Path

import pytest
from fake_hub import FakeHub
from streamlit.testing.v1 import AppTest

from gpt2viz.model.weights import random_model, save_safetensors
from gpt2viz.spec.config import get_config
from gpt2viz.ui.cache import cached_checkpoints

APP = str(Path(__file__).resolve().parents[1] / "app.py")


@pytest.fixture
def hub(tmp_path, monkeypatch):
    path = tmp_path / "model.safetensors"
    save_safetensors(random_model(get_config("tiny"), seed=2), path)
    files = {"model.safetensors": path.read_bytes(), "config.json": json.dumps({"n_head": 4}).encode()}
    with FakeHub({"openai-community/gpt2": files}) as h:
        monkeypatch.setenv("HF_ENDPOINT", h.endpoint)
        monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
        cached_checkpoints.clear()
        yield h
    cached_checkpoints.clear()


def sidebar_run() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["weights"] = "hf-cache"
    return at.run()


def test_no_download_offer_unless_allowed(hub, monkeypatch):
    monkeypatch.delenv("GPT2VIZ_ALLOW_DOWNLOAD", raising=False)  # AppTest's server.address is unset
    at = sidebar_run()
    assert not at.exception and not [b for b in at.sidebar.button if b.label.startswith("Download")]


def test_one_click_fetches_gpt2_and_uses_it(hub, monkeypatch):
    monkeypatch.setenv("GPT2VIZ_ALLOW_DOWNLOAD", "1")
    at = sidebar_run()
    assert "No GPT-2 checkpoint in the Hugging Face cache" in " ".join(i.value for i in at.sidebar.info)
    at.sidebar.button(key="download_go").click()
    at.run()
    assert not at.exception
    captions = " ".join(c.value for c in at.sidebar.caption)
    served = hub.files["openai-community/gpt2"]["model.safetensors"]
    assert f"tiny from {hub.etag('model.safetensors', served)}" in captions  # the blob the cache names by its hash
    assert at.sidebar.selectbox(key="checkpoint").value == "gpt2"
    assert [m for m, p, _ in hub.requests if p.endswith("model.safetensors")] == ["HEAD", "GET"]


def test_a_failed_click_says_why_in_the_sidebar(hub, monkeypatch):
    monkeypatch.setenv("GPT2VIZ_ALLOW_DOWNLOAD", "1")
    hub.fail.add("model.safetensors")
    at = sidebar_run()
    at.sidebar.button(key="download_go").click()
    at.run()
    assert not at.exception
    errors = [e.value for e in at.sidebar.error]
    assert len(errors) == 1 and "could not download model.safetensors of openai-community/gpt2" in errors[0]
