"""Real weights one command away: fetch a GPT-2 checkpoint's model.safetensors (and its config.json,
which records the head count) into the Hugging Face cache, where the app finds it. The only code in
gpt2viz that uses the network, and only when a person runs `python -m gpt2viz download`."""

import socket
from urllib.parse import urlsplit

from .config import PRESETS

REPOS = {name: cfg.hf_repo for name, cfg in PRESETS.items() if cfg.hf_repo}  # from the presets
FILES = ("config.json", "model.safetensors")


class DownloadError(OSError):
    """The checkpoint could not be fetched; the message says why in one line."""


def download(name: str) -> str:
    """Fetch `name` into the Hugging Face cache; the path of its model.safetensors."""
    if name not in REPOS:
        raise ValueError(f"no published checkpoint called {name!r}; choose one of {', '.join(REPOS)}")
    try:
        from huggingface_hub import constants, hf_hub_download
        from huggingface_hub.utils import logging as hf_logging
    except ImportError:
        raise DownloadError("downloading needs huggingface_hub: pip install huggingface_hub") from None
    hf_logging.set_verbosity_error()  # its retry warnings would bury the one line that matters
    _check_reachable(constants.ENDPOINT)
    path = None
    for file in FILES:
        try:
            path = hf_hub_download(REPOS[name], file)
        except Exception as e:  # offline, refused, not found: all end in one line
            first = (str(e).strip().splitlines() or [type(e).__name__])[0]
            raise DownloadError(f"could not download {file} of {REPOS[name]} (no network?): "
                                f"{type(e).__name__}: {first[:200]}") from None
    return path


def _check_reachable(endpoint: str, timeout: float = 5.0) -> None:
    """Fail in seconds, not after a minute of retries, when the hub cannot be reached at all."""
    url = urlsplit(endpoint)
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        socket.create_connection((url.hostname, port), timeout=timeout).close()
    except OSError as e:
        raise DownloadError(f"cannot reach {url.hostname}:{port} ({e.strerror or type(e).__name__}): "
                            "no network here? Copy a model.safetensors over instead (see the README)") from None
