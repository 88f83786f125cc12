"""The immutable record of one run: mode, tokens, P and L, and the ordered `name -> tensor` map.

Some names are derived on demand rather than stored (derive.py: the attention scores and pattern,
LayerNorm outputs, ...): looking one up computes it from the stored tensors, one block's work, and
keeps the latest few in a small cache bounded in bytes. `nbytes` counts real storage once (q, k and
v are views of one qkv; a block's resid_pre is the last one's resid_post) plus that cache.

Saved and loaded as safetensors: every tensor under its trace name (derived ones included, so a
loaded trace has every name stored), the rest in the metadata.
"""

import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import NamedTuple

import numpy as np
import torch
from safetensors import safe_open
from safetensors.numpy import save as save_bytes
from safetensors.numpy import save_file

from ..spec.schema import Mode, block_name


class Derivation(NamedTuple):
    sources: tuple[str, ...]  # full names, stored or derived
    compute: Callable[..., torch.Tensor]  # called with the sources' tensors, in order
    # (trace, head, queries) -> the tensor indexed [:, head, queries], computing only that part
    part: Callable[["Trace", int | slice, slice], torch.Tensor] | None = None
    # (trace, positions) -> the tensor indexed [:, positions] (a slice), computing only those (the logits)
    positions: Callable[["Trace", slice], torch.Tensor] | None = None
    # the model's weights it reads, held weakly (the logits' W_U): bind() points them at a live model
    weights: object = None


AT_KEPT = 4  # positions read alone (Trace.at) a trace keeps, the latest: a page reads the same one again


def _bytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


def _slice_key(s: slice) -> tuple:
    return s.start, s.stop, s.step  # (slices are not hashable before Python 3.12)


def _c_order(a: np.ndarray) -> np.ndarray:
    return a if a.flags.c_contiguous else np.ascontiguousarray(a)  # (ascontiguousarray makes 0-d 1-d)


@dataclass(frozen=True)
class Trace:
    mode: Mode  # saved as its value: full, training, prefill, decode
    model: str
    token_ids: tuple[int, ...]  # the whole text of row 0 (for decode: the P cached tokens and the new one)
    tokens: tuple[str, ...]  # readable token strings, one per id of row 0
    P: int  # positions already in the KV cache before this step
    T: int  # positions this step computes
    tensors: Mapping[str, torch.Tensor] = field(repr=False)  # stored
    rows: tuple[tuple[int, ...], ...] = ()  # the ids of every sequence in the batch (B rows; row 0 is token_ids)
    derived: Mapping[str, "Derivation"] = field(default_factory=dict, repr=False)  # computed when asked
    derived_cache_bytes: int = 0  # bound of the cache of derived tensors
    order: tuple[str, ...] = field(default=(), repr=False)  # every name in execution order (default: as given)
    intervened: tuple[str, ...] = ()  # names an intervention changed: their values, and all after, differ
    # the open file of a host's shared runs whose mapped pages the stored tensors are (server/shared_runs.py),
    # held open (and locked shared) as long as the trace lives; None: the tensors are this process's own
    shared_file: object = field(default=None, repr=False, compare=False)
    ran_here: bool = field(default=True, repr=False, compare=False)  # False: mapped from another process's run

    def __post_init__(self):
        object.__setattr__(self, "mode", Mode.parse(self.mode))
        object.__setattr__(self, "rows", tuple(tuple(r) for r in self.rows) or (tuple(self.token_ids),))
        if self.rows[0] != tuple(self.token_ids):
            raise ValueError("a trace's token_ids must be its first row")
        object.__setattr__(self, "tensors", MappingProxyType(dict(self.tensors)))
        object.__setattr__(self, "derived", MappingProxyType(dict(self.derived)))
        if self.order and set(self.order) != {*self.tensors, *self.derived}:
            raise ValueError("a trace's order must list every stored and derived name once")
        object.__setattr__(self, "_cache", OrderedDict())  # name -> derived tensor, oldest first
        object.__setattr__(self, "_memo", {})  # key -> a small summary a page computed from this trace
        object.__setattr__(self, "_at", OrderedDict())  # (name, position) -> a derived name at one position
        object.__setattr__(self, "_lock", threading.RLock())  # sessions share one trace

    @property
    def L(self) -> int:
        """Keys each query reads (the last query): P + T."""
        return self.P + self.T

    @property
    def names(self) -> list[str]:
        """Stored and derivable names, in execution order."""
        return list(self.order) if self.order else [*self.tensors, *self.derived]

    @property
    def stored_bytes(self) -> int:
        """Bytes of every storage behind the stored tensors, once each: counted on first asking, as the
        stored tensors never change (the trace cache sums every trace's bytes before each run)."""
        stored = self.__dict__.get("_stored_bytes")
        if stored is None:
            storages = {}
            for t in self.tensors.values():
                storage = t.untyped_storage()
                storages[storage.data_ptr()] = storage.nbytes()
            stored = sum(storages.values())
            object.__setattr__(self, "_stored_bytes", stored)
        return stored

    @property
    def nbytes(self) -> int:
        """Bytes held: every storage behind the stored tensors once, and the derived ones cached."""
        with self._lock:
            return (self.stored_bytes + sum(_bytes(t) for t in self._cache.values())
                    + sum(_bytes(t) for t in self._at.values()))

    def __getitem__(self, name: str) -> torch.Tensor:
        if name in self.tensors:
            return self.tensors[name]
        if name in self.derived:
            return self._derive(name)
        raise KeyError(f"{name!r} was not recorded in this {self.mode.value} trace")

    def __contains__(self, name: str) -> bool:
        return name in self.tensors or name in self.derived

    def _derive(self, name: str) -> torch.Tensor:
        how = self.derived[name]
        return self._cached(name, lambda: how.compute(*(self[s] for s in how.sources)))

    def _cached(self, key, compute: Callable[[], torch.Tensor]) -> torch.Tensor:
        """The cached tensor under `key`, or compute and cache it, evicting the oldest beyond the bound;
        one larger than the bound alone (every position's logits) is returned, not kept, and leaves the
        cache as it was."""
        with self._lock:  # one derivation at a time per trace: the cache's bound holds
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
            with torch.no_grad():
                tensor = compute()
            if _bytes(tensor) > self.derived_cache_bytes:
                return tensor
            self._cache[key] = tensor
            while sum(_bytes(t) for t in self._cache.values()) > self.derived_cache_bytes:
                self._cache.popitem(last=False)
            return tensor

    def bind(self, model, weak: bool = False) -> None:
        """Point the weights the derived names read (the logits' W_U) at `model`'s: a trace cached
        longer than the model that ran it derives from the same weights built again. `weak`: held
        only while the model lives, so that a cached trace keeps no evicted model's 147 MiB
        embedding alive (gpt2; derive.Unembedding)."""
        for how in self.derived.values():
            if how.weights is not None:
                how.weights.bind(model, weak)

    def memo(self, key, compute: Callable[[], object]):
        """What `compute()` returns, computed once per trace: a page's small summary of it (norms, a
        lens table, a top-k), which every later view of any session reads instead of recomputing.
        The summary lives and is evicted with the trace; it must be small (it is not counted in nbytes)."""
        with self._lock:
            if key not in self._memo:
                with torch.no_grad():
                    self._memo[key] = compute()
            return self._memo[key]

    def get(self, short: str, block: int | None = None, *, head: int | None = None,
            queries: slice | None = None) -> torch.Tensor:
        """Look up `attn.z` in block 3 as get("attn.z", 3); top-level names without a block.
        `head`, `queries`: of a [B, nh, T, ...] tensor, only that head (`t[:, head]`) and those query
        rows (`t[:, :, queries]`); a derived attention name then computes that part alone."""
        name = short if block is None else block_name(short, block)
        if head is None and queries is None:
            return self[name]
        return self.part(name, slice(None) if head is None else head, slice(None) if queries is None else queries)

    def part(self, name: str, head: int | slice, queries: slice) -> torch.Tensor:
        """`self[name][:, head, queries]`; of a derived name that can, computed (and cached) alone."""
        how = self.derived.get(name)
        with self._lock:
            whole = self.tensors.get(name, self._cache.get(name))
            if whole is not None or how is None or how.part is None:
                return (self[name] if whole is None else whole)[:, head, queries]
            key = (name, head if isinstance(head, int) else _slice_key(head), _slice_key(queries))
            return self._cached(key, lambda: how.part(self, head, queries))

    def at(self, name: str, positions: int | slice) -> torch.Tensor:
        """`self[name][:, positions]` of a [B, T, ...] name (an int drops the axis, as indexing does);
        of a derived name that can (FULL's logits), computed for those positions alone. One position
        read alone is kept, the latest AT_KEPT of them, apart from the derived cache: a page that reads
        the last position's logits three times between other lookups computed them three times."""
        span = positions if isinstance(positions, slice) else slice(positions, positions + 1 or None)
        how = self.derived.get(name)
        with self._lock:
            whole = self.tensors.get(name, self._cache.get(name))
            if whole is not None or how is None or how.positions is None:
                part = (self[name] if whole is None else whole)[:, span]
            else:
                key = (name, span.indices(self.T))
                part = self._at.get(key)
                if part is not None:
                    self._at.move_to_end(key)
                else:
                    with torch.no_grad():
                        part = how.positions(self, span)
                    if part.shape[1] == 1:
                        self._at[key] = part
                        while len(self._at) > AT_KEPT:
                            self._at.popitem(last=False)
        return part if isinstance(positions, slice) else part[:, 0]

    # ------------------------------------------------------------------ safetensors
    def metadata(self) -> dict[str, str]:
        return {"mode": self.mode.value, "model": self.model, "P": str(self.P), "T": str(self.T),
                "token_ids": json.dumps(list(self.token_ids)), "tokens": json.dumps(list(self.tokens)),
                "rows": json.dumps([list(r) for r in self.rows]), "order": json.dumps(self.names),
                "format": "gpt2viz-trace", "intervened": json.dumps(list(self.intervened))}

    def _arrays(self, names) -> dict[str, np.ndarray]:
        # numpy arrays, so views that share storage (q, k, v of one qkv) are written as they are
        return {name: _c_order(self[name].numpy()) for name in names}

    def save(self, path) -> None:
        save_file(self._arrays(self.names), str(path), metadata=self.metadata())

    def to_bytes(self, names=None, weights: str | None = None) -> bytes:
        """The safetensors bytes of `names` (default: all), loadable with Trace.load. `weights`: what
        the sidebar says of the weights ("random gpt2 weights (seed 0), not trained"), kept in the
        header, since `model` names only the size."""
        names = self.names if names is None else [n for n in self.names if n in set(names)]
        about = {} if weights is None else {"weights": weights}
        return save_bytes(self._arrays(names), metadata=self.metadata() | {"order": json.dumps(names)} | about)

    @classmethod
    def load(cls, path) -> "Trace":
        with safe_open(str(path), framework="pt") as f:
            meta = f.metadata() or {}
            if meta.get("format") != "gpt2viz-trace":
                raise ValueError(f"{path} is not a gpt2viz trace file")
            names = json.loads(meta["order"])
            tensors = {name: f.get_tensor(name) for name in names}
        return cls(mode=Mode.parse(meta["mode"]), model=meta["model"], token_ids=tuple(json.loads(meta["token_ids"])),
                   tokens=tuple(json.loads(meta["tokens"])), P=int(meta["P"]), T=int(meta["T"]),
                   tensors=tensors, rows=tuple(map(tuple, json.loads(meta.get("rows", "[]")))),
                   intervened=tuple(json.loads(meta.get("intervened", "[]"))))
