"""The bounded trace cache: LRU by bytes, one computation per key under concurrency."""

import threading
import time

import pytest
import torch

from gpt2viz.trace import Trace
from gpt2viz.trace_cache import TraceCache


def make(nbytes: int) -> Trace:
    return Trace("full", "tiny", (1,), ("a",), 0, 1, {"x": torch.zeros(nbytes // 4)})


def test_hits_do_not_recompute():
    cache, calls = TraceCache(10_000), []
    for _ in range(3):
        cache.get_or_compute("k", lambda: calls.append(1) or make(400))
    assert len(calls) == 1 and (cache.hits, cache.misses) == (2, 1)


def test_evicts_least_recently_used_within_budget():
    cache = TraceCache(1_000)
    for key in "abc":
        cache.get_or_compute(key, lambda: make(400))
    assert len(cache) == 2 and cache.nbytes <= 1_000
    cache.get_or_compute("b", lambda: make(400))  # b is now the most recent
    cache.get_or_compute("d", lambda: make(400))
    assert list(cache._items) == ["b", "d"]


def test_a_trace_larger_than_the_budget_is_returned_but_not_kept():
    cache = TraceCache(100)
    t = cache.get_or_compute("big", lambda: make(400))
    assert t.nbytes == 400 and len(cache) == 0


def test_concurrent_askers_share_one_computation():
    cache, calls = TraceCache(10_000), []

    def slow():
        calls.append(1)
        time.sleep(0.2)
        return make(40)

    got = []
    threads = [threading.Thread(target=lambda: got.append(cache.get_or_compute("k", slow))) for _ in range(5)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(calls) == 1 and len({id(t) for t in got}) == 1


def test_budget_must_be_positive():
    with pytest.raises(ValueError):
        TraceCache(0)


def test_a_failed_computation_is_not_cached_and_leaves_no_lock():
    cache = TraceCache(10_000)

    def boom():
        raise ValueError("no")

    with pytest.raises(ValueError):
        cache.get_or_compute("k", boom)
    assert len(cache) == 0 and not cache._key_locks
    assert cache.get_or_compute("k", lambda: make(40)).nbytes == 40
