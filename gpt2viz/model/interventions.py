"""Interventions: change a recorded tensor during the forward pass, and let the rest of the model react.

An `Intervention` names a recording point (`blocks.3.attn.z`), optionally a slice of it (one head,
one position, one unit of the last axis such as a neuron of `mlp.post`, one batch row), and what
replaces it: zeros, its mean over positions, the same tensor from another run (activation
patching), itself times a factor (`scale`: the scores without their 1/sqrt(dh)), or a function of
itself and of tensors the run recorded before it (`function`: the pattern as the softmax of the
scores without the causal mask). `InterveningRecorder` applies them where the model calls
`x = rec(name, x)`: it returns the replaced tensor, which the model carries on with, and records
the values after the intervention. The model needs no change, and a run without interventions
uses the plain `Recorder`, so it pays nothing.

Batched experiments (a sweep over every head) give each intervention a `row` of the batch: the run
starts with one row and fans out to as many rows as the interventions name at the input of the
first block they touch (`blocks.{b}.resid_pre`), so the blocks before it run once, not once a row.

Axes follow the recording layouts: per-head tensors `[B, nh, T, ·]` (heads before positions), the
others `[B, T, ·]`. Positions are absolute: in DECODE the cached positions were computed by the
prefill and the new one sits at P.
"""

import re
from collections.abc import Callable
from dataclasses import dataclass

import torch

from ..spec.schema import block_name
from .record import Recorder

METHODS = ("zero", "mean", "patch", "scale", "function")
HEAD_MAJOR = ("attn.q", "attn.k", "attn.v", "attn.k_cache", "attn.v_cache", "attn.scores", "attn.pattern",
              "attn.z")
_BLOCK = re.compile(r"blocks\.(\d+)\.(.+)")


def block_of(name: str) -> tuple[int | None, str]:
    """(block, short name) of a recording name: ("blocks.3.attn.z") -> (3, "attn.z")."""
    m = _BLOCK.fullmatch(name)
    return (int(m.group(1)), m.group(2)) if m else (None, name)


@dataclass(frozen=True, eq=False)
class Intervention:
    """Replace `name` (or a slice of it) by zeros, its mean over positions, `source`, itself times
    `factor`, or fn(itself, *the tensors recorded before it under the names `reads`)."""
    name: str  # a full recording name: blocks.3.attn.z, blocks.0.resid_pre, blocks.5.mlp.post
    method: str = "zero"  # one of METHODS
    head: int | None = None  # per-head tensors only: this head
    position: int | None = None  # this absolute position
    unit: int | None = None  # this index of the last axis (a neuron of mlp.post, a dimension of d)
    row: int | None = None  # this batch row (None: every row)
    source: torch.Tensor | None = None  # patch: the tensor at `name` in another run, every position
    factor: float | None = None  # scale: the tensor times this
    fn: Callable[..., torch.Tensor] | None = None  # function: fn(x, *reads) -> a tensor shaped like x
    reads: tuple[str, ...] = ()  # function: names recorded earlier in the run, passed to fn after x

    def __post_init__(self):
        if self.method not in METHODS:
            raise ValueError(f"unknown method {self.method!r}; choose one of {', '.join(METHODS)}")
        for method, arg, what in (("patch", self.source, "a source tensor"), ("scale", self.factor, "a factor"),
                                  ("function", self.fn, "a function")):
            if (self.method == method) != (arg is not None):
                raise ValueError(f"a {method} needs {what}, and only a {method} takes one")
        if self.reads and self.method != "function":
            raise ValueError("only a function reads other tensors")
        if self.head is not None and block_of(self.name)[1] not in HEAD_MAJOR:
            raise ValueError(f"{self.name} has no head axis; heads are in {', '.join(HEAD_MAJOR)}")

    @property
    def key(self) -> tuple:
        """Everything but the source tensor (callers key patches by the source run)."""
        return (self.name, self.method, self.head, self.position, self.unit, self.row, self.factor, self.fn,
                self.reads)

    @property
    def position_axis(self) -> int:
        return 2 if block_of(self.name)[1] in HEAD_MAJOR else 1

    def apply(self, x: torch.Tensor, offset: int = 0, inputs: tuple[torch.Tensor, ...] = ()) -> torch.Tensor:
        """x with the intervention made, as a new tensor (x itself is never written). `offset`: the
        absolute position of x's first position (P in decode); `inputs`: the tensors of `reads`."""
        pos, T = self.position_axis, x.shape[self.position_axis]
        if self.row is not None and self.row >= x.shape[0]:
            raise ValueError(f"{self.name}: row {self.row} of a batch of {x.shape[0]}")
        index = [slice(None)] * x.ndim
        if self.row is not None:
            index[0] = slice(self.row, self.row + 1)
        if self.head is not None:
            index[1] = slice(self.head, self.head + 1)
        if self.position is not None:
            p = self.position - offset
            if not 0 <= p < T:
                return x  # the position is not computed in this call (decode: cached, or still to come)
            index[pos] = slice(p, p + 1)
        if self.unit is not None:
            index[-1] = slice(self.unit, self.unit + 1)
        index = tuple(index)
        if self.method == "zero":
            value = 0.0
        elif self.method == "mean":
            value = x.mean(dim=pos, keepdim=True).expand_as(x)[index]  # the mean over this run's positions
        elif self.method == "scale":
            value = x[index] * self.factor
        elif self.method == "function":
            value = self.fn(x, *inputs)
            if value.shape != x.shape:
                raise ValueError(f"{self.name}: the function gave {list(value.shape)}, not {list(x.shape)}")
            value = value[index]
        else:
            source = self.source.narrow(pos, offset, T)  # the positions of this call
            value = source.expand(x.shape[0], *source.shape[1:])[index] if source.shape[0] == 1 else source[index]
        out = x.clone()
        out[index] = value
        return out


class InterveningRecorder(Recorder):
    """A Recorder that first applies the interventions of each name it is called with.

    offset: the absolute position of the first position of this call. With row-specific
    interventions, a batch of one fans out to as many rows as they name, at the input of the first
    block they touch. keep_graph: as Recorder's (a TRAINING run's gradients).
    """

    def __init__(self, interventions, names=None, offset: int = 0, keep_graph=()):
        super().__init__(names, keep_graph)
        self.offset = offset
        self._by_name: dict[str, list[Intervention]] = {}
        for iv in interventions:
            self._by_name.setdefault(iv.name, []).append(iv)
        self._reads = {r for iv in interventions for r in iv.reads}
        self._seen: dict[str, torch.Tensor] = {}  # the tensors of `reads`, as the run carried them on
        rows = [iv for iv in interventions if iv.row is not None]
        self.rows = 1 + max((iv.row for iv in rows), default=0)
        first = min((block_of(iv.name)[0] or 0 for iv in rows), default=0)
        self._fan_out = block_name("resid_pre", first) if rows else None
        self.intervened: list[str] = []

    def changes(self, name: str) -> bool:
        return name in self._by_name

    def __call__(self, name: str, x: torch.Tensor) -> torch.Tensor:
        if name == self._fan_out and x.shape[0] == 1:
            x = x.expand(self.rows, *x.shape[1:])  # [rows, T, d]: the same input in every row
        todo = self._by_name.get(name)
        if todo:
            for iv in todo:
                x = iv.apply(x, self.offset, tuple(self._read(r, name) for r in iv.reads))
            self.intervened.append(name)
        if name in self._reads:
            self._seen[name] = x
        return super().__call__(name, x)

    def _read(self, name: str, by: str) -> torch.Tensor:
        if name not in self._seen:
            raise ValueError(f"{by} reads {name}, which this run did not compute before it")
        return self._seen[name]


def check_reached(interventions, intervened) -> None:
    """Raise if an intervention's name never came through the recorder (not a recording point of
    this run, e.g. attn.k_cache in FULL): it would otherwise change nothing, silently."""
    missed = sorted({iv.name for iv in interventions} - set(intervened))
    if missed:
        raise ValueError(f"no recording point {', '.join(missed)} in this run: nothing was changed there")


def recorder(names=None, interventions=(), offset: int = 0, keep_graph=()) -> Recorder:
    """The plain Recorder when there is nothing to change; else an InterveningRecorder."""
    if interventions:
        return InterveningRecorder(interventions, names, offset, keep_graph)
    return Recorder(names, keep_graph)
