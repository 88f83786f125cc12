"""The recording sink: collects the named tensors of one forward pass.

A `Recorder` is passed to the model's forward as an argument (it is never attached to the model),
so one cached model can serve several sessions at once without their recordings mixing. It stores
references to tensors the forward computes anyway (detached, no copies), in execution order.
"""

from fnmatch import fnmatchcase

import torch


class Recorder:
    """Call it as `x = rec(name, x)`: keeps `x` under `name` when the names filter wants it.

    names: None records everything; otherwise an iterable of full names or glob patterns
    (`blocks.*.attn.q`). keep_graph: names whose undetached tensors are kept in `live`,
    for gradients with respect to them.
    """

    intervened = ()  # names an intervention changed (interventions.py): none here
    on_block = None  # called with each block's resid_post name as the forward passes it (progress)

    def __init__(self, names=None, keep_graph=()):
        self._patterns = None if names is None else tuple(names)
        self._literal = frozenset(() if names is None else (n for n in self._patterns if not _is_glob(n)))
        self._globs = () if names is None else tuple(p for p in self._patterns if _is_glob(p))
        self._wanted: dict[str, bool] = {}
        self._keep_graph = frozenset(keep_graph)
        self.tensors: dict[str, torch.Tensor] = {}
        self.live: dict[str, torch.Tensor] = {}

    @classmethod
    def off(cls) -> "Recorder":
        return cls(names=())

    def changes(self, name: str) -> bool:
        """Whether calling it with `name` may replace the tensor (an intervention): none here."""
        return False

    def wants(self, name: str) -> bool:
        if self._patterns is None:
            return True
        hit = self._wanted.get(name)
        if hit is None:
            hit = self._wanted[name] = name in self._literal or any(fnmatchcase(name, p) for p in self._globs)
        return hit

    def __call__(self, name: str, x: torch.Tensor) -> torch.Tensor:
        if self.on_block is not None and name.startswith("blocks.") and name.endswith(".resid_post"):
            self.on_block(name)
        if name in self._keep_graph:
            self.live[name] = x
        if self.wants(name):
            assert name not in self.tensors, f"{name} recorded twice"
            t = x.detach()
            self.tensors[name] = t if t.dtype in (torch.float32, torch.bool) else t.float()
        return x


def _is_glob(pattern: str) -> bool:
    return any(c in pattern for c in "*?[")
