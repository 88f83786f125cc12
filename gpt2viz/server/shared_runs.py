"""Runs shared by the app processes of one host: a trace one process computed, the others map.

Each app process keeps its own trace cache, so without this a text asked on two processes of a
class server is run on each, and a trace one process evicted is run again though another holds it.
Here a process that misses its own cache looks for the run in a memory-backed folder (a class server
makes one in /dev/shm): one safetensors file per run, named by a digest of the run key the trace
cache already uses. Found, its tensors are mapped from the file, not copied: the pages are in memory
once for the whole host. Not found, the process runs it and writes the file for the others.

Cross-process locks (fcntl.flock): an exclusive lock on the run's lock file while a process looks
for it and runs it, so a second process asking for the same run waits and maps the first one's file;
a shared lock on the data file for as long as a process keeps its trace, so the folder's eviction
(the oldest file read first, beyond the folder's budget) never removes a file a process still maps;
and an exclusive lock on the folder's lock file from a writer's looking for room to its file in place,
so two writers never both take the same room.

Budget: the folder's files are bounded by their own budget (GPT2VIZ_SHARED_RUNS_MB; a class server
gives it half the host's and splits the rest between its processes). A run written is mapped by its
writer too, its own copy let go, so each page of a shared run is in memory once however many
processes map it. A mapped trace's stored tensors are the folder's pages, counted in the folder's
budget: in its process's cache it counts what it derives, and the process keeps mapped files up to
`keep` bytes (GPT2VIZ_SHARED_RUNS_KEEP_MB; a class server gives each of N processes the folder's budget
over N + 1), the least recently used going first, and at most `trace_cache.max_mapped()` of them (each
holds two open files); a file larger than that whole share counts in the process's budget, as its own
run would. So the host holds at most the folder and the processes' own budgets together; and since a
file some process maps is never evicted, at least 1/(N + 1) of the folder is held by no process's
share, where a new run of up to that size finds room. A mapped trace let go costs its next ask
milliseconds (its file mapped again) where a run costs seconds, as long as the folder keeps it. A run the
folder has is mapped before the asker waits its turn to run (`find`). A run whose file would not fit
even after eviction is not written: it stays its process's own, as does one asked when no file can be
opened (the process's open-file limit).

Before, a mapped trace counted whole in its process as well as in the folder, a writer kept its own
copy besides the file, and the file was 1.44 times the run (see `as_stored`): a class on two processes
(benchmarks/classroom.py, start) computed 63-72 runs where one process computes 46; now 47-52.

Bit for bit: a mapped run equals the run it stores, derived tensors too, because every array of the
file starts at a 64-byte boundary, as torch's allocator places a storage in memory (`write_aligned`),
and tensors that shared a storage in the run are views at the same offsets of one array (`as_stored`). A
matrix product reads its operands' alignment: MKL rounds q @ kᵀ differently on some CPUs when an operand
starts 4, 8 or 12 bytes past a 16-byte boundary, and `safetensors.numpy.save_file` packs tensors with no
gap. The format accepts no gap between two tensors, so the gaps are filler tensors of bytes (named
`PAD`...), and the header is padded with spaces so that the data starts on a boundary too; the file
still opens with `safetensors.safe_open`. A file whose tensors are not aligned is not mapped (read_mapped).
A file is renamed into place only once all of its bytes are written and its size checked: a write
to a full folder leaves no short file under a run's name.
"""

import errno
import fcntl
import hashlib
import json
import mmap
import os
from collections.abc import Callable, Hashable
from pathlib import Path

import numpy as np
import torch

from ..model.derive import derivations
from ..model.gpt2 import GPT2
from ..model.trace import Trace, _c_order
from ..spec.schema import Mode

DIR_ENV, BUDGET_ENV, KEEP_ENV = "GPT2VIZ_SHARED_RUNS", "GPT2VIZ_SHARED_RUNS_MB", "GPT2VIZ_SHARED_RUNS_KEEP_MB"
SUFFIX = ".safetensors"
DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "F64": torch.float64,
          "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8,
          "BOOL": torch.bool}
NUMPY = {np.dtype(np.float32): "F32", np.dtype(np.float16): "F16", np.dtype(np.float64): "F64",
         np.dtype(np.int64): "I64", np.dtype(np.int32): "I32", np.dtype(np.int16): "I16", np.dtype(np.int8): "I8",
         np.dtype(np.uint8): "U8", np.dtype(np.bool_): "BOOL"}
ALIGN = 64  # bytes: where torch's CPU allocator starts every tensor, and where the file starts every one
PAD = "__pad__."  # the filler tensors' names: bytes between two tensors, which the format has no other way to say
STORAGE = "__storage__."  # the names of storages several tensors of a run share (as_stored)


def plain(key: Hashable) -> bool:
    """True when the key's repr is the same in every process: tuples of str, int, float, bool, None."""
    if isinstance(key, tuple):
        return all(plain(k) for k in key)
    return key is None or isinstance(key, (str, int, float, bool))


def digest(key: Hashable) -> str:
    return hashlib.sha256(repr(key).encode()).hexdigest()[:32]


class SharedRuns:
    """The folder of one host's shared runs, bounded by `budget_bytes`; `keep_bytes`: how much of it one
    process's cache keeps mapped (default: half)."""

    def __init__(self, folder: str | Path, budget_bytes: int, keep_bytes: int | None = None):
        self.dir, self.budget = Path(folder), budget_bytes
        self.keep = budget_bytes // 2 if keep_bytes is None else keep_bytes
        self.read = self.written = 0  # runs this process mapped from another's file, and wrote

    @classmethod
    def from_env(cls, env=os.environ) -> "SharedRuns | None":
        folder, mb = env.get(DIR_ENV, ""), env.get(BUDGET_ENV, "")
        if not folder or not mb.isdigit() or int(mb) <= 0 or not os.path.isdir(folder):
            return None
        keep = env.get(KEEP_ENV, "")
        return cls(folder, int(mb) * 2**20, int(keep) * 2**20 if keep.isdigit() else None)

    def find(self, key: Hashable, model: GPT2) -> Trace | None:
        """The run of `key` mapped from its file, if the folder has it now; None otherwise (without
        waiting for a process that runs it): a run found costs milliseconds, not a turn to run."""
        if not plain(key):
            return None
        found = self._map(self.dir / f"{digest(key)}{SUFFIX}", model, ran_here=False)
        if found is not None:
            self.read += 1
        return found

    def get_or_run(self, key: Hashable, run: Callable[[], Trace], model: GPT2) -> Trace:
        """The run of `key` from the folder, or `run()` it here and write it there, then map it as the
        others do (its own copy let go); `model` the run's, whose derivations the mapped trace gets (the
        attention scores and pattern, ...)."""
        if not plain(key):
            return run()
        name = digest(key)
        lock = _lock_file(self.dir / f"{name}.lock")
        if lock is None:  # the run stays this process's own
            return run()
        with lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # a process running this key: wait for its file
            found = self._map(self.dir / f"{name}{SUFFIX}", model, ran_here=False)
            if found is not None:
                self.read += 1
                return found
            trace = run()
            if self._write(name, trace):
                self.written += 1
                return self._map(self.dir / f"{name}{SUFFIX}", model) or trace
            return trace

    def _map(self, path: Path, model: GPT2, ran_here: bool = True) -> Trace | None:
        try:
            f = open(path, "rb")  # noqa: SIM115 (kept open with the trace: its shared lock holds the file)
        except OSError:  # not there, or no file can be opened now (the open-file limit): run it here
            return None
        try:
            fcntl.flock(f, fcntl.LOCK_SH)
            if os.fstat(f.fileno()).st_ino != os.stat(path).st_ino:  # removed, and another written, meanwhile
                raise OSError(errno.ESTALE, "the run's file was replaced", str(path))
            os.utime(path)  # read now: the last the folder evicts
            stored, meta = read_mapped(f)
            tensors = as_viewed(stored, json.loads(meta["layout"]))
            mode = Mode.parse(meta["mode"])
            rows = tuple(map(tuple, json.loads(meta["rows"])))
            return Trace(mode=mode, model=meta["model"], token_ids=tuple(json.loads(meta["token_ids"])),
                         tokens=tuple(json.loads(meta["tokens"])), P=int(meta["P"]), T=int(meta["T"]),
                         tensors=tensors, rows=rows, derived=derivations(model, mode, tensors, rows),
                         order=tuple(json.loads(meta["order"])),
                         derived_cache_bytes=int(meta["derived_cache_bytes"]), shared_file=f,
                         ran_here=ran_here)
        except (OSError, ValueError, KeyError, RuntimeError, TypeError, IndexError):  # a file cut short, or of
            # another version (a layout torch cannot view): run it here
            f.close()
            return None

    def _write(self, name: str, trace: Trace) -> bool:
        if trace.intervened:
            return False
        arrays, placing = as_stored(trace.tensors)
        meta = trace.metadata() | {"order": json.dumps(list(trace.order)), "layout": json.dumps(placing),
                                   "derived_cache_bytes": str(trace.derived_cache_bytes)}
        head, placed = layout(arrays, meta)
        size = len(head) + (placed[-1][0] + placed[-1][1].nbytes if placed else 0)  # the file's, header and gaps too
        if size > self.budget:  # a run larger than the folder: no copy made
            return False
        lock = _lock_file(self.dir / "folder.lock")
        if lock is None:  # no copy made
            return False
        # one writer at a time, from the room it finds to its file in place: two processes that each
        # found room for one file wrote two, past the folder's budget
        final = self.dir / f"{name}{SUFFIX}"
        with lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            # the file there already (this process could not map it: no file could be opened, say) stays
            # whole: replaced, the pages other processes map would no longer be the folder's, nor counted
            if final.exists() or not self._room(size):  # or the folder all mapped: no copy made
                return False
            tmp = self.dir / f"{name}.{os.getpid()}.tmp"
            try:
                write_aligned(tmp, arrays, meta)  # every byte written and the size checked, or OSError
                os.replace(tmp, final)
                return True
            except OSError:  # the folder full (tmpfs): the run stays this process's own, no file named for it
                tmp.unlink(missing_ok=True)
                return False

    def _room(self, size: int) -> bool:
        """Remove the files read longest ago until `size` more fits the budget; False when it cannot
        (every file left is mapped by a process). Called under the folder's lock, which every writer
        holds until its file is in place: a part-written file found then is a dead writer's, removed."""
        for p in self.dir.glob("*.tmp"):
            p.unlink(missing_ok=True)
        files = []
        for p in self.dir.glob(f"*{SUFFIX}"):
            try:
                st = p.stat()
            except FileNotFoundError:
                continue
            files.append((st.st_mtime, st.st_size, p))
        used = sum(s for _, s, _ in files)
        for _, s, p in sorted(files):
            if used + size <= self.budget:
                break
            if _remove_unless_mapped(p):
                used -= s
        return used + size <= self.budget


def as_stored(tensors: dict[str, torch.Tensor]) -> tuple[dict[str, np.ndarray], dict]:
    """The arrays to write for a run's tensors, and its layout: the tensors' order, and where each view
    sits. Tensors that share one storage (q, k and v of a block's qkv; a block's output and the next
    one's input), all of it theirs, are written as that storage once (`STORAGE` i, its bytes), each a
    view in it: [i, dtype, shape, stride, offset in elements]. A mapped run then sits in memory as the
    run did; written one by one, a full run's file was 1.44 times its tensors' memory on gpt2, 1.6 times
    for prefill. Any other tensor is written by its name, in C order."""
    groups: dict[int, list[str]] = {}
    for name, t in tensors.items():
        if t.untyped_storage().nbytes():
            groups.setdefault(t.untyped_storage().data_ptr(), []).append(name)
    arrays, views, shared = {}, {}, set()
    for names in groups.values():
        storage = tensors[names[0]].untyped_storage()
        if len(names) < 2 or storage.nbytes() > sum(tensors[n].numel() * tensors[n].element_size() for n in names):
            continue  # one tensor, or views of a larger buffer: each by its name
        i = len(arrays)
        arrays[f"{STORAGE}{i}"] = torch.empty(0, dtype=torch.uint8).set_(storage).numpy()
        for n in names:
            t = tensors[n]
            views[n] = [i, NUMPY[np.dtype(t.numpy().dtype)], list(t.shape), list(t.stride()), t.storage_offset()]
        shared.update(names)
    arrays |= {n: _c_order(t.numpy()) for n, t in tensors.items() if n not in shared}
    return arrays, {"order": list(tensors), "views": views}


def as_viewed(stored: dict[str, torch.Tensor], placing: dict) -> dict[str, torch.Tensor]:
    """The run's tensors, in the run's order, from what `as_stored` wrote (mapped): each view made again
    in its storage."""
    views = {name: stored[f"{STORAGE}{i}"].view(DTYPES[dtype]).as_strided(shape, stride, offset)
             for name, (i, dtype, shape, stride, offset) in placing["views"].items()}
    return {name: views[name] if name in views else stored[name] for name in placing["order"]}


def _lock_file(path: Path):
    """`path` opened for an flock (close it when done), or None when no file can be opened now (the
    process's open-file limit)."""
    try:
        return open(path, "a")  # noqa: SIM115
    except OSError:
        return None


def _remove_unless_mapped(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)  # refused while a process holds it shared
            path.unlink()
            return True
    except (BlockingIOError, FileNotFoundError):
        return False


def layout(arrays: dict[str, np.ndarray], metadata: dict[str, str]) -> tuple[bytes, list[tuple[int, np.ndarray]]]:
    """The safetensors header (its 8-byte length included, padded with spaces to a multiple of ALIGN)
    and each array's offset in the data, every one a multiple of ALIGN: the filler tensors (PAD) take
    the gaps, since the format wants each tensor to begin where the one before it ends."""
    header: dict = {"__metadata__": dict(metadata)} if metadata else {}
    placed, end = [], 0
    for name, a in arrays.items():
        if name.startswith(PAD):
            raise ValueError(f"a tensor's name starts with {PAD!r}, the filler's")
        gap = -end % ALIGN
        if gap:
            header[f"{PAD}{len(placed)}"] = {"dtype": "U8", "shape": [gap], "data_offsets": [end, end + gap]}
            end += gap
        header[name] = {"dtype": NUMPY[a.dtype], "shape": list(a.shape), "data_offsets": [end, end + a.nbytes]}
        placed.append((end, a))
        end += a.nbytes
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-(8 + len(text)) % ALIGN)  # the data starts on a boundary
    return len(text).to_bytes(8, "little") + text, placed


def write_aligned(path: str | Path, arrays: dict[str, np.ndarray], metadata: dict[str, str]) -> int:
    """Write `arrays` (C-ordered) as a safetensors file whose every tensor starts at a multiple of
    ALIGN bytes from the file's start (layout); its size, checked: OSError (ENOSPC) when the file
    holds fewer bytes than written, as a full folder may leave it."""
    head, placed = layout(arrays, metadata)
    size = len(head) + (placed[-1][0] + placed[-1][1].nbytes if placed else 0)
    with open(path, "wb") as f:
        _put(f, head)
        at = 0
        for offset, a in placed:
            if offset > at:
                _put(f, bytes(offset - at))  # the filler tensor's bytes
            if a.nbytes:
                _put(f, a.reshape(-1).view(np.uint8))
            at = offset + a.nbytes
        f.flush()
        os.fsync(f.fileno())
        written = os.fstat(f.fileno()).st_size
    if written != size:
        raise OSError(errno.ENOSPC, f"{written} of {size} bytes written", str(path))
    return size


def _put(f, data) -> None:
    """Write `data` (bytes or a C-ordered array) to `f`, all of it (a buffered file raises on a short write)."""
    f.write(data)


def read_mapped(f) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    """The tensors of a safetensors file as views of its pages (mapped copy-on-write: never written,
    so every process reads the same pages), and its metadata. The format: an 8-byte little-endian
    header length, a JSON header (name: dtype, shape, data_offsets), then the data. The filler
    tensors are left out; a tensor not at a multiple of ALIGN bytes is a ValueError (a file of
    another writer, whose matrix products could round otherwise than the run it stores)."""
    mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
    n = int.from_bytes(mm[:8], "little")
    header = json.loads(mm[8:8 + n])
    meta = header.pop("__metadata__", {})
    tensors = {}
    for name, e in header.items():
        if name.startswith(PAD):
            continue
        start, end = e["data_offsets"]
        if (8 + n + start) % ALIGN:
            raise ValueError(f"{name} starts at byte {8 + n + start}, not a multiple of {ALIGN}")
        dtype = DTYPES[e["dtype"]]
        count = (end - start) // torch.empty((), dtype=dtype).element_size()
        flat = torch.frombuffer(mm, dtype=dtype, count=count, offset=8 + n + start) if count else \
            torch.empty(0, dtype=dtype)
        tensors[name] = flat.view(e["shape"])
    return tensors, meta
