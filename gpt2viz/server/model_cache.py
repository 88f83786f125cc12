"""Models built for visitors, bounded in bytes: the server's own weights (what a view without a
choice shows: random gpt2, seed 0) stay outside the budget (they are the "weights" of runtime +
weights + budget); every other one, random or loaded and whatever its seed, is an item of the trace
cache, counted against its budget and evicted with the traces, least recently used first.

The own weights are named, not taken to be the first asked for: a lecturer who opened the demo
model's lesson first made the demo model the server's own, and random gpt2 (475 MiB) then counted
against a class process's 384 MiB and was refused to every visitor until the process restarted.

Counting models by entries (four random ones, two files) let four seeds of gpt2-xl take 24 GB.
Here a model that alone exceeds the budget is refused before it is built, in one line, and one that
fits pushes out traces or idle models. The caller must not keep a model past its script run (the
session's state holds no model), so that an evicted model is freed.
"""

import threading
from collections.abc import Callable, Hashable
from typing import Any

from .trace_cache import TraceCache, mib

FIRST = object()  # ModelCache's `own`: the first model asked for is the server's own


class ModelTooLarge(ValueError):
    """A model that alone takes more than the budget; the message says so in one line."""


class ModelCache:
    """`get(key, build, nbytes, what)`: the model of `key`, built once while it stays cached."""

    def __init__(self, traces: TraceCache, own: Hashable = FIRST):
        """`own`: the key of the server's own weights; FIRST: whichever is asked for first (tests)."""
        self.traces = traces
        self.own = own
        self.first: tuple[Hashable, Any] | None = None  # (key, model): the server's own weights
        self._first_lock = threading.Lock()

    def get(self, key: Hashable, build: Callable[[], Any], nbytes: int, what: str) -> Any:
        """`nbytes`: what the model holds, known before it is built; `what`: its name in a refusal
        ("random gpt2-xl weights")."""
        with self._first_lock:
            if self.first is None and self.own in (FIRST, key):
                self.first = (key, build())
            if self.first is not None and self.first[0] == key:
                return self.first[1]
        if nbytes > self.traces.budget:
            raise ModelTooLarge(f"{what} take {mib(nbytes)}, more than the {mib(self.traces.budget)} this "
                                "server lets the models and runs of its visitors use (GPT2VIZ_TRACE_BUDGET_MB)")
        return self.traces.get_or_compute(("model", key), build, estimate=nbytes)

    def cached(self, key: Hashable) -> bool:
        """Whether the model of `key` is held now (for tests and the sidebar)."""
        return self.first is not None and self.first[0] == key or ("model", key) in self.traces._items
