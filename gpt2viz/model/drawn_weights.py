"""Random weights drawn once per machine: a new server maps them from a file instead of drawing them again.

Drawing random gpt2 (124 million normal values from one seeded generator, which runs on one core) took
0.65-0.8 s of a new server's first view; reading the same values back from a safetensors file takes
0.3 s, and mapping the file 0.01 s (measured on this project's 2-core machine). A server's first view
writes the file of what it drew (ui/first_paint.py), in a thread of its own, KEEP_AFTER_S later, so
that view does not wait for the write (about 1 s). A served model's parameters are never changed in
place (the pages record and intervene through the recorder), so what is written is what was drawn.

The file is named, and its metadata keyed, by everything that decides the values: the config, the seed,
torch's version, the CPU's vector instructions (torch draws normal values with AVX2 or AVX-512 kernels),
and the code that draws them (the model's module, whose parameters are drawn in their order, and
`init_weights`, `random_model`); a change to any of them maps no stale file, and without that code's
source nothing is kept. A file is mapped once its header is checked within read_header's budget, its
key and every shape; one that fails is deleted and the weights are drawn again. Its values are not
read again to check them: the file is this program's own, written whole or not at all (by the one
writer that holds the file's lock, into a part file of its own, synced, then renamed into place). A
file cut short in place by hand while a server maps it would stop that server.

Bounded: only sizes up to MAX_KEPT_BYTES (gpt2: 498 MB, so a class server that builds gpt2-xl does not
write 6 GB), one write a process (its first view), and the folder keeps the MAX_FILES most recently
used files. GPT2VIZ_WEIGHTS_CACHE: the folder (default: $XDG_CACHE_HOME/gpt2viz, else ~/.cache/gpt2viz);
"off" keeps nothing and draws every time.
"""

import contextlib
import glob
import hashlib
import inspect
import json
import logging
import os
import struct
import sys
import tempfile
import threading
import time
import weakref
from pathlib import Path

import torch

from ..spec.config import GPT2Config
from . import gpt2 as model_code
from .gpt2 import GPT2
from .weights import WeightsError, checked, init_weights, params_bytes, random_model

CACHE_ENV = "GPT2VIZ_WEIGHTS_CACHE"
MAX_KEPT_BYTES = 2**30  # gpt2's 498 MB are kept; gpt2-medium's 1.4 GB and larger are drawn each time
MAX_FILES = 3  # files kept in the folder, the most recently used (random gpt2 of three seeds: 1.5 GB)
KEEP_AFTER_S = 5.0  # seconds after the draw before its file is written
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


def _read_code() -> str | None:
    """The source of the code that decides the drawn values, as this process imported it; None where
    it cannot be read (then nothing is kept: a stale file could not be told apart)."""
    try:
        return "".join(inspect.getsource(x) for x in (model_code, init_weights, random_model))
    except (OSError, TypeError):
        return None


_CODE = _read_code()  # at import: a file changed on disk later is not the code this process draws with


def key_of(cfg: GPT2Config, seed: int) -> str | None:
    """The digest of everything that decides these weights' values, or None (see `_read_code`)."""
    code = _CODE
    if code is None or sys.byteorder != "little":  # the file is written in this machine's order, read as little
        return None
    decides = repr((cfg, seed, torch.__version__, torch.backends.cpu.get_cpu_capability(), code))
    return hashlib.sha256(decides.encode()).hexdigest()[:16]


def file_for(cfg: GPT2Config, seed: int, folder: Path, key: str) -> Path:
    return folder / f"random-{cfg.name}-seed{seed}-{key}.safetensors"


def drawn_model(cfg: GPT2Config, seed: int = 0, env=os.environ, write: bool = False) -> GPT2:
    """`random_model(cfg, seed)`, mapped from this machine's file of it when there is one (the same
    values, bit for bit), else drawn. `write`: keep the file of what was drawn, in a thread, for the next
    server (a server's first view asks for it: one file a process at most, whatever seeds its visitors
    ask for later)."""
    folder, key = cache_dir(env), key_of(cfg, seed)
    if folder is None or key is None or params_bytes(cfg) > MAX_KEPT_BYTES:
        return random_model(cfg, seed)
    path = file_for(cfg, seed, folder, key)
    try:
        seen = path.stat()
    except OSError:  # none kept (or another server's folder just let it go)
        seen = None
    if seen is not None:
        try:
            model = mapped(path, cfg, key)
            with contextlib.suppress(OSError):
                os.utime(path)  # used: the last file the folder lets go
            return model
        except WeightsError as e:  # not as this program writes it: deleted, unless another file took its place
            log.warning("the kept random weights %s are not as written (%s): drawn again", path, e)
            with contextlib.suppress(OSError):
                if _same_file(path.stat(), seen):
                    path.unlink()
        except (OSError, RuntimeError) as e:  # the file may be fine (permissions, memory): left as it is
            log.warning("the kept random weights %s could not be mapped (%s): drawn", path, e)
    model = random_model(cfg, seed)
    if write:
        keep(model, path, key)
    return model


def _same_file(a: os.stat_result, b: os.stat_result) -> bool:
    """The same file, not another renamed into its place (which may reuse a freed inode's number)."""
    return (a.st_dev, a.st_ino, a.st_ctime_ns, a.st_size) == (b.st_dev, b.st_ino, b.st_ctime_ns, b.st_size)


def mapped(path: Path, cfg: GPT2Config, key: str) -> GPT2:
    """The model of a kept file, its parameters mapped from the file (private pages: nothing the process
    does writes to it, and a file replaced or deleted meanwhile keeps the pages this one mapped), after
    its header, key and every shape are checked. Reading the values instead (load_safetensors, which
    also checks each for NaN) took 0.3 s alone and 0.6-0.75 s of a first view that the browser and the
    page's imports share the cores with; mapped, 0.01 s, and the first run that reads them took as long
    as with read values (0.11 s against 0.10 s on 11 tokens)."""
    _, header, params, _, heads, _ = checked(path, None, cfg)
    if header.metadata.get("drawn") != key:
        raise WeightsError(f"{path.name} holds other weights than its name says")
    if heads or any(header.entries[k].dtype != "F32" or (header.data_start + header.entries[k].start) % 4
                    for k in params.values()):
        raise WeightsError(f"{path.name} is not as this program writes it (float32, aligned, no lm_head)")
    storage = torch.UntypedStorage.from_file(str(path), shared=False, nbytes=header.file_size)
    state = {name: torch.empty(0).set_(storage, (header.data_start + header.entries[k].start) // 4,
                                       header.entries[k].shape)
             for name, k in params.items()}
    with torch.device("meta"):
        model = GPT2(cfg)
    model.load_state_dict(state, strict=True, assign=True)
    return model.eval()


def keep(model: GPT2, path: Path, key: str) -> threading.Thread:
    """Write `model` to `path` in a thread, KEEP_AFTER_S after it was drawn (the view that drew it draws
    its page meanwhile: the write holds the interpreter at times). One writer a file: the one that holds
    the lock `path`.lock (flock: the system lets go of it when its process ends, however it ends) writes
    into a part file of its own, then renames it into place, so a reader never sees half a file; another
    process or thread finds the lock taken and leaves it. The model is held weakly until then: one the
    server evicts meanwhile is let go, not kept alive to be written."""
    drawn = weakref.ref(model)

    def write() -> None:
        time.sleep(KEEP_AFTER_S)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with _writer_of(path) as mine:
                if mine and (model := drawn()) is not None and not path.is_file():
                    _write_into_place(model, path, key)
                    _keep_recent(path.parent)
        except Exception as e:  # noqa: BLE001 (a full disk, a read-only home: the next server draws them again)
            log.warning("the random weights could not be kept in %s (%s)", path.parent, e)

    thread = threading.Thread(target=write, name="keep-drawn-weights", daemon=True)
    thread.start()
    return thread


@contextlib.contextmanager
def _writer_of(path: Path):
    """True inside when this thread holds `path`'s lock (then the part files a writer of `path` left,
    stopped while writing, are removed: no writer holds the lock); False when another holds it."""
    try:
        import fcntl  # POSIX; elsewhere nothing is kept
    except ImportError:
        yield False
        return
    fd = os.open(path.with_name(path.name + ".lock"), os.O_CREAT | os.O_RDWR, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        for part in path.parent.glob(f"{glob.escape(path.name)}.*.part"):
            with contextlib.suppress(OSError):
                part.unlink()
        yield True
    finally:
        os.close(fd)  # and the lock with it


def _write_into_place(model: GPT2, path: Path, key: str) -> None:
    """The model in safetensors' layout (what save_safetensors writes, with the key in its metadata),
    written through the descriptor of a part file of its own, synced, then renamed to `path`; on any
    error the part file goes. (safetensors' own writer goes through a temporary file of its own, which
    a process stopped while writing leaves behind: 498 MB that no one removes.)"""
    state = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    header, offset = {}, 0
    for name, t in state.items():
        if t.dtype != torch.float32:
            raise WeightsError(f"{name} is {t.dtype}, not float32")
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + 4 * t.numel()]}
        offset += 4 * t.numel()
    cfg = model.config
    header["__metadata__"] = {"format": "pt", "model": cfg.name, "n_head": str(cfg.n_head),
                              "activation": cfg.activation, "drawn": key}
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-(8 + len(raw)) % 8)  # the data section 8-byte aligned
    fd, part = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(struct.pack("<Q", len(raw)) + raw)
            for t in state.values():
                f.write(memoryview(t.numpy()).cast("B"))  # little-endian: key_of keeps nothing on another order
            f.flush()
            os.fsync(f.fileno())
        os.replace(part, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(part)
        raise


def _keep_recent(folder: Path) -> None:
    """At most MAX_FILES files in the folder: those least recently used (mapped or written) go, with
    their locks."""
    def used(f: Path) -> float:
        try:
            return f.stat().st_mtime
        except OSError:
            return 0.0
    for old in sorted(folder.glob("random-*.safetensors"), key=used, reverse=True)[MAX_FILES:]:
        for gone in (old, old.with_name(old.name + ".lock")):
            with contextlib.suppress(OSError):
                gone.unlink()
