"""Uploaded weights on a shared server: on disk, parsed one at a time, counted against an allowance.

- Streamlit holds an uploaded file's bytes in memory (its uploaded-file manager, and the widget's
  value) for as long as the session lives. `Uploads.receive` writes them to the server's upload
  folder under their sha256 (identical uploads are one file), and the sidebar then drops
  Streamlit's copies (gpt2viz/ui/upload.py): a session keeps a `Held` ticket, never the bytes.
  The folder has a cap (GPT2VIZ_UPLOAD_DISK_MB); a file is deleted when the last session holding
  it ends (its ticket is garbage-collected with the session's state, or `sweep` finds the session
  gone), and the folder when the server exits.
- Models built from uploads are cached by digest in an allowance of their own
  (GPT2VIZ_UPLOAD_BUDGET_MB, default 1,024 MiB: two gpt2-sized models in float32), apart from the
  trace budget. Before a file is parsed, its header says what the model will take; an upload that
  does not fit is refused in one line. Room is made only by unloading models nobody used for
  `idle_seconds` (10 minutes): the weights students are using are never unloaded, and the owner of
  an unloaded model gets it rebuilt from their file on their next view, with a note saying so.
- At most one upload is parsed at a time (`parsing`); the others wait their turn.
"""

import hashlib
import os
import shutil
import tempfile
import threading
import time
import uuid
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..model.weights import read_header, split_keys
from ..spec.serving import operator_allows

ALLOW_UPLOAD = "GPT2VIZ_ALLOW_UPLOAD"  # "1": the sidebar offers uploads; "0": never; unset: on loopback only
BUDGET_ENV = "GPT2VIZ_UPLOAD_BUDGET_MB"
DISK_ENV = "GPT2VIZ_UPLOAD_DISK_MB"
DEFAULT_BUDGET_MB = 1024
DEFAULT_DISK_MB = 4096
IDLE_SECONDS = 600
CHUNK = 16 * 2**20  # written to disk in slices of the received bytes (views, not copies)
MIB = 2**20


class UploadError(ValueError):
    """An upload the server does not take; the message says why in one line."""


def uploads_allowed(server_address: str | None, env=os.environ) -> bool:
    """GPT2VIZ_ALLOW_UPLOAD=1 or 0 decides; unset, only a server listening on this machine alone."""
    return operator_allows(ALLOW_UPLOAD, server_address, env)


def megabytes(env, name: str, default_mb: int) -> int:
    """An environment setting in MiB, as bytes (the default unless a positive integer)."""
    mb = env.get(name, "")
    return (int(mb) if mb.isdigit() and int(mb) > 0 else default_mb) * MIB


def model_bytes(path) -> int:
    """What the model built from this file holds: its parameters in float32 (a tied lm_head and
    the attention-mask buffers are not kept). Read from the header alone."""
    header = read_header(path)
    params, _, _ = split_keys(header.entries)
    return 4 * sum(header.entries[key].numel for key in params.values())


class Held:
    """A session's claim on an uploaded file: what it keeps instead of the bytes. The file goes when
    the last claim on it is released (or collected)."""

    def __init__(self, store: "Uploads", digest: str, name: str, size: int, owner: str, file_id: str):
        self.digest, self.name, self.size, self.owner, self.file_id = digest, name, size, owner, file_id
        self._finalizer = weakref.finalize(self, store._release, digest)

    def release(self) -> None:
        self._finalizer()  # runs once: later calls do nothing

    @property
    def released(self) -> bool:
        return not self._finalizer.alive


@dataclass
class _Model:
    value: Any
    nbytes: int
    last_used: float


class Uploads:
    """The server's uploads: files on disk by digest, and the models built from them."""

    def __init__(self, root: str | Path | None = None, budget: int = DEFAULT_BUDGET_MB * MIB,
                 disk: int = DEFAULT_DISK_MB * MIB, idle_seconds: float = IDLE_SECONDS,
                 clock: Callable[[], float] = time.monotonic):
        self.root = Path(tempfile.mkdtemp(prefix="gpt2viz-uploads-") if root is None else root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.budget, self.disk, self.idle_seconds, self.clock = budget, disk, idle_seconds, clock
        self.parsing = threading.Lock()  # one upload parsed at a time
        self._lock = threading.Lock()  # the bookkeeping below
        self._files: dict[str, list[int]] = {}  # digest -> [size, claims]
        self._writing = 0  # bytes being written, counted against the disk cap
        self._models: dict[str, _Model] = {}
        self._claims: weakref.WeakSet[Held] = weakref.WeakSet()
        self.unloaded: dict[str, float] = {}  # digest -> when its idle model was unloaded for room
        weakref.finalize(self, shutil.rmtree, str(self.root), True)  # at the latest when the server exits

    @classmethod
    def from_env(cls, env=os.environ) -> "Uploads":
        return cls(budget=megabytes(env, BUDGET_ENV, DEFAULT_BUDGET_MB), disk=megabytes(env, DISK_ENV, DEFAULT_DISK_MB))

    def path(self, digest: str) -> Path:
        """A folder per digest, the file under the name messages about it give: model.safetensors."""
        return self.root / digest / "model.safetensors"

    # ------------------------------------------------------------------ files
    def receive(self, data: bytes, name: str, owner: str, file_id: str = "") -> Held:
        """Write `data` to the folder (once per digest) and return the session's claim on it."""
        size = len(data)
        digest = hashlib.sha256(data).hexdigest()
        with self._lock:
            if digest not in self._files:
                used = self.disk_used()
                if used + size > self.disk:
                    raise UploadError(f"the server's upload folder is full ({used / MIB:,.0f} of "
                                      f"{self.disk / MIB:,.0f} MiB in use); try again later, or use a "
                                      "checkpoint from the Hugging Face cache")
                self._writing += size
                part = self.root / f".{uuid.uuid4().hex}.part"
            else:
                part = None
                self._files[digest][1] += 1
        if part is not None:
            self._write(part, data, digest, size)
        held = Held(self, digest, name, size, owner, file_id)
        self._claims.add(held)
        return held

    def _write(self, part: Path, data: bytes, digest: str, size: int) -> None:
        try:
            view = memoryview(data)
            with open(part, "wb") as f:
                for start in range(0, size, CHUNK):
                    f.write(view[start:start + CHUNK])
            view.release()
            with self._lock:
                if digest in self._files:  # an identical upload finished first: claim its file
                    self._files[digest][1] += 1
                    part.unlink()
                else:
                    self.path(digest).parent.mkdir()
                    os.replace(part, self.path(digest))
                    self._files[digest] = [size, 1]
        except OSError as e:
            part.unlink(missing_ok=True)
            raise UploadError(f"could not store the upload on the server: {e.strerror or e}") from None
        finally:
            with self._lock:
                self._writing -= size

    def _release(self, digest: str) -> None:
        with self._lock:
            entry = self._files.get(digest)
            if entry is None:
                return
            entry[1] -= 1
            if entry[1] > 0:
                return
            del self._files[digest]
            self._models.pop(digest, None)
            self.unloaded.pop(digest, None)
            shutil.rmtree(self.path(digest).parent, ignore_errors=True)

    def sweep(self, alive: Callable[[str], bool]) -> int:
        """Release the claims of sessions that `alive` says have ended; how many."""
        gone = [held for held in list(self._claims) if not held.released and not alive(held.owner)]
        for held in gone:
            held.release()
        return len(gone)

    def disk_used(self) -> int:
        return sum(size for size, _ in self._files.values()) + self._writing

    def files(self) -> list[Path]:
        """The files in the folder (finished ones and parts being written)."""
        return sorted(p for p in self.root.rglob("*") if p.is_file())

    # ------------------------------------------------------------------ models
    def model(self, held: Held, build: Callable[[Path], Any], wait: Callable[[], None] | None = None
              ) -> tuple[Any, bool]:
        """(the model of `held`'s file, whether it was rebuilt after being unloaded for room).
        Cached by digest; otherwise refused before parsing if it does not fit, else built by
        `build(path)` while no other upload is parsed (`wait()` is called first if one is)."""
        if held.released:
            raise UploadError("this upload was removed when its session ended: upload the file again")
        with self._lock:
            cached = self._models.get(held.digest)
            if cached is not None:
                cached.last_used = self.clock()
                return cached.value, False
        if not self.parsing.acquire(blocking=False):
            if wait is not None:
                wait()
            self.parsing.acquire()
        try:
            with self._lock:  # built by another session while this one waited?
                cached = self._models.get(held.digest)
                if cached is not None:
                    cached.last_used = self.clock()
                    return cached.value, False
            need = model_bytes(self.path(held.digest))
            with self._lock:
                self._make_room(need)
            value = build(self.path(held.digest))
            with self._lock:
                if held.digest in self._files:  # not released meanwhile
                    self._models[held.digest] = _Model(value, need, self.clock())
                rebuilt = self.unloaded.pop(held.digest, None) is not None
            return value, rebuilt
        finally:
            self.parsing.release()

    def models_bytes(self) -> int:
        return sum(m.nbytes for m in self._models.values())

    def _make_room(self, need: int) -> None:
        """Unload idle models (least recently used first) until `need` fits, or refuse."""
        if need > self.budget:
            raise UploadError(f"this model takes {need / MIB:,.0f} MiB in float32, more than the "
                              f"{self.budget / MIB:,.0f} MiB this server allows uploaded models; "
                              "load it from the Hugging Face cache instead")
        now = self.clock()
        in_use = sum(m.nbytes for m in self._models.values() if now - m.last_used < self.idle_seconds)
        if in_use + need > self.budget:
            raise UploadError(f"uploaded models other students are using take {in_use / MIB:,.0f} of the "
                              f"{self.budget / MIB:,.0f} MiB this server allows them, and this one needs "
                              f"{need / MIB:,.0f} MiB: try again later, or use a checkpoint from the "
                              "Hugging Face cache")
        for digest in sorted(self._models, key=lambda d: self._models[d].last_used):
            if self.models_bytes() + need <= self.budget:
                break
            del self._models[digest]
            self.unloaded[digest] = now
