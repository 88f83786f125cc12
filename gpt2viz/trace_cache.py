"""A bounded, thread-safe LRU cache of traces, sized in bytes.

Traces are immutable, so one cached trace can be shared by every session that asks for the same
(weights, tokens, mode, options). The budget counts the bytes of the recorded tensors.
"""

import threading
from collections import OrderedDict
from typing import Callable, Hashable

from .trace import Trace

DEFAULT_BUDGET = 2 * 2**30  # 2 GiB


class TraceCache:
    def __init__(self, budget_bytes: int = DEFAULT_BUDGET):
        if budget_bytes <= 0:
            raise ValueError(f"the trace cache budget must be positive, got {budget_bytes}")
        self.budget = budget_bytes
        self._items: OrderedDict[Hashable, Trace] = OrderedDict()
        self._lock = threading.Lock()
        self._key_locks: dict[Hashable, threading.Lock] = {}
        self.hits = self.misses = 0

    @property
    def nbytes(self) -> int:
        with self._lock:
            return sum(t.nbytes for t in self._items.values())

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def get_or_compute(self, key: Hashable, compute: Callable[[], Trace]) -> Trace:
        """The cached trace for `key`, or compute it once (concurrent askers of one key wait for
        the first) and keep it, evicting least recently used traces beyond the budget."""
        with self._lock:
            if key in self._items:
                self.hits += 1
                self._items.move_to_end(key)
                return self._items[key]
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:
            with self._lock:
                if key in self._items:
                    self.hits += 1
                    return self._items[key]
            try:
                trace = compute()
            finally:  # a failed computation leaves no lock behind
                with self._lock:
                    self._key_locks.pop(key, None)
            with self._lock:
                self.misses += 1
                self._items[key] = trace
                self._evict()
        return trace

    def _evict(self) -> None:
        total = sum(t.nbytes for t in self._items.values())
        while total > self.budget and len(self._items) > 1:
            _, old = self._items.popitem(last=False)
            total -= old.nbytes
        if total > self.budget:  # a single trace larger than the whole budget is not kept
            self._items.clear()
