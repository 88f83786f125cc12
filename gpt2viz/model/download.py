"""Real weights one command (or one click) away: fetch a GPT-2 checkpoint's model.safetensors (and
its config.json, which records the head count) into the Hugging Face cache, where the app finds it.

The only code in gpt2viz that uses the network, and only when a person asks: `python -m gpt2viz
download`, or the sidebar's download button where the operator allows it (`download_allowed`).
huggingface_hub does the transfer (it resumes a dropped connection with an HTTP Range request and
checks the size); this module reports progress, checks every file against the hash the hub named
it by (sha256 for large LFS files, git's blob sha1 for small ones), and, when anything fails,
removes whatever the attempt added to the cache, so nothing half-written is left behind.
"""

import hashlib
import os
import shutil
import socket
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

from ..spec.config import PRESETS
from ..spec.serving import operator_allows
from .weights import hf_hub_dir

REPOS = {name: cfg.hf_repo for name, cfg in PRESETS.items() if cfg.hf_repo}  # from the presets
FILES = ("config.json", "model.safetensors")
ALLOW_DOWNLOAD = "GPT2VIZ_ALLOW_DOWNLOAD"  # "1": the app offers downloads; "0": never; unset: on loopback only

Progress = Callable[[str, int, int | None], None]  # (file, bytes so far, bytes in all or None)


class DownloadError(OSError):
    """The checkpoint could not be fetched; the message says why in one line."""


def download_allowed(server_address: str | None, env=os.environ) -> bool:
    """Whether the app may offer downloads: GPT2VIZ_ALLOW_DOWNLOAD=1 or 0 decides; unset, only a
    server that listens on this machine alone (server.address localhost, 127.0.0.1 or ::1)."""
    return operator_allows(ALLOW_DOWNLOAD, server_address, env)


def download(name: str, progress: Progress | None = None, endpoint: str | None = None,
             cache_dir: str | Path | None = None) -> str:
    """Fetch `name` into the Hugging Face cache; the path of its model.safetensors. `endpoint`
    defaults to HF_ENDPOINT (read now, not when huggingface_hub was imported), `cache_dir` to the
    cache the app reads (HF_HUB_CACHE, or HF_HOME/hub)."""
    if name not in REPOS:
        raise ValueError(f"no published checkpoint called {name!r}; choose one of {', '.join(REPOS)}")
    try:
        from huggingface_hub import constants, hf_hub_download
        from huggingface_hub.utils import logging as hf_logging
    except ImportError:
        raise DownloadError("downloading needs huggingface_hub: pip install huggingface_hub") from None
    hf_logging.set_verbosity_error()  # its retry warnings would bury the one line that matters
    endpoint = (endpoint or os.environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/")
    cache = Path(cache_dir) if cache_dir is not None else hf_hub_dir()
    _check_reachable(endpoint)
    repo = REPOS[name]
    added = _Additions(cache, repo)
    path, file = None, FILES[0]
    try:
        for file in FILES:
            path = hf_hub_download(repo, file, cache_dir=cache, endpoint=endpoint,
                                   tqdm_class=_reporter(progress, file))
            verify(path)
    except BaseException as e:  # an interrupted run (Ctrl-C, a Streamlit rerun) is cleaned up too
        added.remove()
        if not isinstance(e, Exception):
            raise
        if isinstance(e, DownloadError):
            raise
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise DownloadError(f"could not download {file} of {repo}: {type(e).__name__}: {first[:200]}") from None
    return path


# ---------------------------------------------------------------------------- checks
def verify(path: str) -> None:
    """Check a downloaded file against the hash the cache names its blob by (the hub's ETag)."""
    blob = Path(os.path.realpath(path))
    etag = blob.name
    if len(etag) == 64:  # an LFS file: its sha256
        actual = _digest(hashlib.sha256(), blob)
    elif len(etag) == 40:  # a file in git: the sha1 of git's blob header and the bytes
        actual = _digest(hashlib.sha1(f"blob {blob.stat().st_size}\0".encode()), blob)
    else:
        return  # not named by a hash (a copy outside the cache layout): nothing to compare with
    if actual != etag:
        raise DownloadError(f"{Path(path).name} is corrupt: its hash is {actual[:12]}…, the hub says {etag[:12]}…")


def _digest(h, path: Path) -> str:
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(2**20), b""):
            h.update(chunk)
    return h.hexdigest()


class _Additions:
    """What a download adds to the cache (the repo's folder and its lock folder), to undo it; a
    ref it moves (refs/main to a revision that never arrived) is moved back."""

    def __init__(self, cache: Path, repo: str):
        folder = "models--" + repo.replace("/", "--")
        self.roots = (cache / folder, cache / ".locks" / folder)
        self.before = {p for root in self.roots if root.exists() for p in [root, *root.rglob("*")]}
        refs = self.roots[0] / "refs"
        self.refs = {p: p.read_bytes() for p in refs.rglob("*") if p.is_file()} if refs.is_dir() else {}

    def remove(self) -> None:
        for ref, content in self.refs.items():
            ref.write_bytes(content)
        for root in self.roots:
            if root not in self.before:
                shutil.rmtree(root, ignore_errors=True)
                continue
            for p in sorted(root.rglob("*"), key=lambda p: len(p.parts), reverse=True):  # files before folders
                if p not in self.before:
                    if p.is_dir() and not p.is_symlink():
                        shutil.rmtree(p, ignore_errors=True)
                    else:
                        p.unlink(missing_ok=True)


# ---------------------------------------------------------------------------- progress
def _reporter(progress: Progress | None, file: str):
    """A tqdm class that reports bytes to `progress` instead of drawing a bar."""
    from tqdm.auto import tqdm

    class Reporter(tqdm):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **{**kwargs, "disable": True})
            self.done, self.size = kwargs.get("initial", 0), kwargs.get("total")

        def update(self, n=1):
            self.done += n  # negative when a server ignored a Range request and the file restarts
            if progress is not None:
                progress(file, self.done, self.size)

    return Reporter


def describe(file: str, done: int, size: int | None) -> str:
    """`model.safetensors: 120.0 of 522.7 MiB (23%)`."""
    if not size:
        return f"{file}: {done / 2**20:,.1f} MiB"
    return f"{file}: {done / 2**20:,.1f} of {size / 2**20:,.1f} MiB ({100 * done // size}%)"


def _check_reachable(endpoint: str, timeout: float = 5.0) -> None:
    """Fail in seconds, not after a minute of retries, when the hub cannot be reached at all."""
    url = urlsplit(endpoint)
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        socket.create_connection((url.hostname, port), timeout=timeout).close()
    except OSError as e:
        raise DownloadError(f"cannot reach {url.hostname}:{port} ({e.strerror or type(e).__name__}): "
                            "no network here? Copy a model.safetensors over instead (see the README)") from None
