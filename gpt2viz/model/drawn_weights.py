"""Random weights drawn once per machine: a new server reads them from a file instead of drawing them again.

Drawing random gpt2 (124 million normal values from one seeded generator, which runs on one core) took
0.65-0.8 s of a new server's first view; reading the same values back from a safetensors file takes
0.3 s, and mapping the file 0.01 s (measured on this project's 2-core machine). The file is written
once, after the first draw, in a thread of its own, so the view that drew them does not wait for the
write (1.2 s).
A served model's parameters are never changed in place (the pages record and intervene through the
recorder), so what is written is what was drawn.

The file's name holds everything that decides the values: the config, the seed, torch's version, the
CPU's vector instructions (torch draws normal values with AVX2 or AVX-512 kernels) and the source of
`init_weights`, so a change to any of them reads no stale file. A file is mapped (`mapped`) once its
header is checked within its budget and every shape against the config; one that fails is deleted and
the weights are drawn again. Its values are not read again to check them: the file is this program's
own, written whole or not at all (renamed into place once written); a file cut short in place by
hand while a server maps it would stop that server. Only sizes up to
MAX_KEPT_BYTES are kept (gpt2: 498 MB), so a class server that builds gpt2-xl does not write 6 GB; a
file is written only for a server's first view (ui/first_paint.py), and the folder keeps the newest
MAX_FILES.

GPT2VIZ_WEIGHTS_CACHE: the folder (default: $XDG_CACHE_HOME/gpt2viz, else ~/.cache/gpt2viz); "off" keeps
no file and draws every time.
"""

import contextlib
import hashlib
import inspect
import logging
import os
import threading
import time
import weakref
from pathlib import Path

import torch

from ..spec.config import GPT2Config
from .gpt2 import GPT2
from .weights import WeightsError, checked, init_weights, random_model, save_safetensors

CACHE_ENV = "GPT2VIZ_WEIGHTS_CACHE"
MAX_KEPT_BYTES = 2**30  # gpt2's 498 MB are kept; gpt2-medium's 1.4 GB and larger are drawn each time
MAX_FILES = 3  # kept weights in the folder, the newest (random gpt2 of three seeds: 1.5 GB)
KEEP_AFTER_S = 5.0  # seconds after the draw before its file is written
STALE_PART_S = 3600  # a claim (a .part file) this old was left by a process that stopped while writing
log = logging.getLogger(__name__)


def cache_dir(env=os.environ) -> Path | None:
    """Where drawn weights are kept, or None when GPT2VIZ_WEIGHTS_CACHE is "off"."""
    chosen = env.get(CACHE_ENV, "").strip()
    if chosen.lower() == "off":
        return None
    if chosen:
        return Path(chosen).expanduser()
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "gpt2viz"


def file_for(cfg: GPT2Config, seed: int, folder: Path) -> Path:
    """The file of these weights: named by everything that decides their values."""
    decides = repr((cfg, seed, torch.__version__, torch.backends.cpu.get_cpu_capability(),
                    inspect.getsource(init_weights)))
    return folder / f"random-{cfg.name}-seed{seed}-{hashlib.sha256(decides.encode()).hexdigest()[:16]}.safetensors"


def kept_bytes(cfg: GPT2Config) -> int:
    """What the file of this config's weights holds (float32 parameters)."""
    with torch.device("meta"):
        return 4 * sum(p.numel() for p in GPT2(cfg).parameters())


def drawn_model(cfg: GPT2Config, seed: int = 0, env=os.environ, write: bool = False) -> GPT2:
    """`random_model(cfg, seed)`, mapped from this machine's file of it when there is one (the same
    values, bit for bit), else drawn. `write`: keep the file of what was drawn, in a thread, for the next
    server (a server's first view asks for it: one file a process at most, whatever seeds its visitors
    ask for later)."""
    folder = cache_dir(env)
    if folder is None or kept_bytes(cfg) > MAX_KEPT_BYTES:
        return random_model(cfg, seed)
    path = file_for(cfg, seed, folder)
    if path.is_file():
        try:
            return mapped(path, cfg)
        except (WeightsError, OSError, RuntimeError) as e:
            log.warning("the kept random weights %s could not be read (%s): drawn again", path, e)
            with contextlib.suppress(OSError):
                path.unlink(missing_ok=True)
    model = random_model(cfg, seed)
    if write:
        keep(model, path)
    return model


def mapped(path: Path, cfg: GPT2Config) -> GPT2:
    """The model of a kept file, its parameters mapped from the file (private pages: nothing the process
    does writes to it, and a file replaced meanwhile keeps the pages this one mapped), after its header
    is checked within read_header's budget and every shape against `cfg`. Reading the values instead
    (load_safetensors, which also checks each for NaN) took 0.3 s alone and 0.6-0.75 s of a first view
    that the browser and the page's imports share the cores with; mapped, 0.01 s, and the first run that
    reads them took as long as with read values (0.11 s against 0.10 s on 11 tokens)."""
    _, header, params, _, heads, _ = checked(path, None, cfg)
    if heads or any(header.entries[k].dtype != "F32" or (header.data_start + header.entries[k].start) % 4
                    for k in params.values()):
        raise WeightsError(f"{path.name} is not as this program writes it (float32, aligned, no lm_head)")
    storage = torch.UntypedStorage.from_file(str(path), shared=False, nbytes=header.file_size)
    state = {name: torch.empty(0).set_(storage, (header.data_start + header.entries[key].start) // 4,
                                       header.entries[key].shape)
             for name, key in params.items()}
    with torch.device("meta"):
        model = GPT2(cfg)
    model.load_state_dict(state, strict=True, assign=True)
    return model.eval()


def keep(model: GPT2, path: Path) -> threading.Thread:
    """Write `model` to `path` in a thread, KEEP_AFTER_S after it was drawn (the view that drew it draws
    its page meanwhile: the write holds the interpreter at times). One writer a machine: the first to
    claim `path`.part writes there, then renames it into place, so a reader never sees half a file;
    another process (or thread) that finds the claim leaves it, unless it is STALE_PART_S old. The model
    is held weakly until then: one the server evicts meanwhile is let go, not kept alive to be written."""
    drawn = weakref.ref(model)

    def write() -> None:
        time.sleep(KEEP_AFTER_S)
        part = path.with_name(path.name + ".part")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if (model := drawn()) is None or path.is_file() or not _claim(part):
                return
            save_safetensors(model, part)
            os.replace(part, path)
            _keep_newest(path.parent)
        except OSError as e:  # a full disk or a read-only home: the next server draws them again
            log.warning("the random weights could not be kept in %s (%s)", path.parent, e)
            with contextlib.suppress(OSError):
                part.unlink(missing_ok=True)

    thread = threading.Thread(target=write, name="keep-drawn-weights", daemon=True)
    thread.start()
    return thread


def _claim(part: Path) -> bool:
    """Create `part` if no one has (a claim older than STALE_PART_S was left by a process that stopped
    while writing: it is taken over)."""
    for _ in range(2):
        try:
            os.close(os.open(part, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
            return True
        except FileExistsError:
            with contextlib.suppress(OSError):
                if time.time() - part.stat().st_mtime <= STALE_PART_S:
                    return False
                part.unlink()
    return False


def _keep_newest(folder: Path) -> None:
    """At most MAX_FILES kept weights in the folder: the oldest beyond go (each first view of a new
    server may ask for another seed)."""
    files = sorted(folder.glob("random-*.safetensors"), key=lambda f: f.stat().st_mtime, reverse=True)
    for old in files[MAX_FILES:]:
        with contextlib.suppress(OSError):
            old.unlink()
