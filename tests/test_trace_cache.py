"""The bounded trace cache: LRU by bytes, one computation per key under concurrency."""

import threading
import time

import pytest
import torch
from own_process import inside, run_alone
from together import together

from gpt2viz.model.trace import Trace
from gpt2viz.server.trace_cache import RunTooLarge, TraceCache


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


def test_a_trace_for_one_page_is_evicted_before_older_shared_ones():
    cache = TraceCache(1_000)
    cache.get_or_compute("shared1", lambda: make(300))
    cache.get_or_compute("shared2", lambda: make(300))
    cache.get_or_compute("page", lambda: make(300), evict_first=True)
    assert list(cache._items) == ["page", "shared1", "shared2"]
    cache.get_or_compute("shared3", lambda: make(300))
    assert list(cache._items) == ["shared1", "shared2", "shared3"]


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

    got = together(*[lambda: cache.get_or_compute("k", slow)] * 5)
    assert len(calls) == 1 and len({id(t) for t in got}) == 1


def until(condition, timeout: float = 10.0) -> bool:
    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > end:
            return False
        time.sleep(0.005)
    return True


def ask_together(cache, key, compute, n=2):
    """n threads ask for `key` at once; their answers (the exception, for one that raised)."""
    got = [None] * n

    def ask(i):
        try:
            got[i] = cache.get_or_compute(key, compute)
        except RuntimeError as e:
            got[i] = e

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=20)
    return got


def held_run(cache, runs, waiting, nbytes):
    """A computation that ends only once `waiting` other askers wait for it: no timing luck involved."""
    def compute():
        runs.append(1)
        assert until(lambda: cache.shared == waiting)
        return make(nbytes)
    return compute


def test_two_askers_at_once_cause_one_run():
    cache, runs = TraceCache(10_000), []
    got = ask_together(cache, "k", held_run(cache, runs, 1, 40))
    assert len(runs) == 1 and got[0] is got[1] is not None
    assert (cache.misses, cache.shared, cache.hits) == (1, 1, 0) and not cache._flights


def test_a_trace_too_large_to_keep_is_still_shared_with_those_waiting():
    cache, runs = TraceCache(100), []
    got = ask_together(cache, "big", held_run(cache, runs, 2, 400), n=3)
    assert len(runs) == 1 and got[0] is got[1] is got[2] is not None and len(cache) == 0


def test_when_the_shared_run_fails_a_waiting_asker_runs_it_again():
    cache, runs = TraceCache(10_000), []

    def compute():
        runs.append(1)
        if len(runs) == 1:
            assert until(lambda: cache.shared == 1)
            raise RuntimeError("first run fails")
        return make(40)

    got = ask_together(cache, "k", compute)
    assert len(runs) == 2 and sum(isinstance(g, RuntimeError) for g in got) == 1
    assert len(cache) == 1 and not cache._flights and cache.in_flight == 0


def test_budget_must_be_positive():
    with pytest.raises(ValueError):
        TraceCache(0)


def test_a_failed_computation_is_not_cached_and_leaves_no_lock():
    cache = TraceCache(10_000)

    def boom():
        raise ValueError("no")

    with pytest.raises(ValueError):
        cache.get_or_compute("k", boom)
    assert len(cache) == 0 and not cache._flights
    assert cache.get_or_compute("k", lambda: make(40)).nbytes == 40


# ---------------------------------------------------------------------------- runs in flight
def test_runs_in_flight_share_the_budget_with_the_cache():
    """Two runs whose estimates do not fit together never overlap; the cache makes room for a
    reservation by evicting, and cached + reserved never passes the budget."""
    cache = TraceCache(1_000)
    cache.get_or_compute("old1", lambda: make(300))
    cache.get_or_compute("old2", lambda: make(300))
    running, overlap, lock = [0], [], threading.Lock()

    def compute(n):
        def run():
            with lock:
                running[0] += 1
                overlap.append(running[0])
            time.sleep(0.05)
            with lock:
                running[0] -= 1
            return make(n)
        return run

    threads = [threading.Thread(target=cache.get_or_compute, args=(f"k{i}", compute(100), 600)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert max(overlap) == 1  # 600 + 600 > 1000: one at a time
    assert cache.peak_reserved <= 1_000 and cache.in_flight == 0
    assert "old1" not in cache._items  # evicted to make room for the first reservation


def test_no_more_runs_at_once_than_max_runs():
    cache, running, most = TraceCache(10**9, max_runs=2), [0], [0]
    lock = threading.Lock()

    def compute():
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        until(lambda: running[0] >= 2, timeout=2)  # keep the turn until another run is in: they overlap
        with lock:
            running[0] -= 1
        return make(4)

    threads = [threading.Thread(target=cache.get_or_compute, args=(f"k{i}", compute)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most[0] == 2 and len(cache) == 6 and cache.running == 0


def test_small_runs_run_together_and_one_larger_than_the_budget_is_refused():
    cache = TraceCache(1_000)
    barrier = threading.Barrier(2, timeout=5)  # both must be inside compute at once, or this fails

    def meet():
        barrier.wait()
        return make(10)

    threads = [threading.Thread(target=cache.get_or_compute, args=(k, meet, 300)) for k in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(cache) == 2 and cache.in_flight == 0
    ran = []
    with pytest.raises(RunTooLarge, match="more than the"):  # it would take the server past its budget
        cache.get_or_compute("huge", lambda: ran.append(1) or make(8), estimate=50_000)
    assert not ran and cache.in_flight == 0 and "huge" not in cache._items


def test_a_failed_run_gives_its_reservation_back():
    cache = TraceCache(1_000)

    def boom():
        raise RuntimeError("out of memory")

    with pytest.raises(RuntimeError):
        cache.get_or_compute("k", boom, estimate=900)
    assert cache.in_flight == 0
    assert cache.get_or_compute("k2", lambda: make(12), estimate=900).nbytes == 12  # not blocked


def test_freed_memory_is_given_back_on_glibc():
    import platform

    from gpt2viz.model.memory import release_freed_memory
    assert release_freed_memory() is (platform.libc_ver()[0] == "glibc")


# ---------------------------------------------------------------------------- what a waiting asker is told
def test_an_asker_of_a_run_another_started_is_told_so_with_its_steps():
    """A session waiting on a run that another session started says so, and shows
    that run's progress; the session running it sees its own steps."""
    from gpt2viz.server.trace_cache import Progress

    cache, release = TraceCache(10_000), threading.Event()
    leader_saw, waiter_saw = [], []
    leader, waiter = Progress(leader_saw.append), Progress(waiter_saw.append)

    def run():
        leader.step(1, 4, "forward pass: block 0")
        until(lambda: cache.shared == 1, timeout=5)  # the second asker has joined this run
        leader.step(2, 4, "forward pass: block 1")
        release.wait(5)
        return make(40)

    def ask_second():
        until(lambda: leader_saw, timeout=5)
        return cache.get_or_compute("k", lambda: make(8), progress=waiter)

    first = threading.Thread(target=cache.get_or_compute, args=("k", run), kwargs={"progress": leader})
    first.start()
    second = threading.Thread(target=ask_second)
    second.start()
    until(lambda: any(s.done == 2 for s in waiter_saw), timeout=5)
    release.set()
    first.join()
    second.join()
    assert [s.state for s in leader_saw] == ["running", "running"]
    assert {s.state for s in waiter_saw} == {"shared"} and waiter_saw[0].done in (1, 2)
    assert (waiter_saw[-1].done, waiter_saw[-1].total, waiter_saw[-1].what) == (2, 4, "forward pass: block 1")
    assert cache.misses == 1  # one run for both


def test_an_asker_waiting_for_its_turn_is_told_so():
    from gpt2viz.server.trace_cache import Progress, Status

    cache, release, saw = TraceCache(10_000, max_runs=1), threading.Event(), []
    busy = threading.Thread(target=cache.get_or_compute, args=("a", lambda: release.wait(5) and make(4)))
    busy.start()
    until(lambda: cache.running == 1, timeout=5)
    queued = threading.Thread(target=cache.get_or_compute, args=("b", lambda: make(4)),
                              kwargs={"progress": Progress(saw.append)})
    queued.start()
    until(lambda: saw, timeout=5)
    assert saw == [Status("queued", ahead=1)] and len(cache) == 0
    told = []  # a third asker, behind both: told 2 runs ahead, then 1 as the line moves
    third = threading.Thread(target=cache.get_or_compute, args=("c", lambda: make(4)),
                             kwargs={"progress": Progress(told.append)})
    third.start()
    until(lambda: told, timeout=5)
    release.set()
    busy.join()
    queued.join()
    third.join()
    assert len(cache) == 3 and saw == [Status("queued", ahead=1)]
    assert [s.ahead for s in told] in ([2, 1], [2])  # 1 unless "b" ran and ended before it looked again


@pytest.mark.parametrize("ahead,line", [(1, "Waiting for a turn: 1 run is ahead of this one"),
                                        (2, "Waiting for a turn: 2 runs are ahead of this one"),
                                        (1234, "Waiting for a turn: 1,234 runs are ahead of this one")])
def test_the_waiting_line_says_how_many_runs_are_ahead(ahead, line):
    from gpt2viz.ui.working import queued

    assert queued(ahead) == line + " on the server's cores and memory."


def test_a_run_reuses_the_memory_it_freed():
    """Large blocks come from the heap once the allocator is told so: a 48 MiB tensor (an attention
    pattern at 1,024 tokens), which glibc's default maps afresh every time (12,288 faults of 4 KiB),
    lies in the heap, and an allocation placed where a freed one was touches no fresh pages. Whether
    glibc places it there depends on the small allocations around it (a small block carved from the
    freed one moves the next large one to the heap's end), so the reuse is checked where it happens,
    and the heap placement every time. glibc only. In a process of its own: a trace cache an earlier
    test made trims the heap from its timer thread (TRIM_IDLE_S after its last run), which in CI shrank
    the heap under the freed block, and could give its pages back between two allocations."""
    import platform
    import resource

    from gpt2viz.model.memory import reuse_freed_memory_within_a_run

    if platform.libc_ver()[0] != "glibc":
        pytest.skip("glibc's mallopt")
    if not inside():
        return run_alone(f"{__file__}::test_a_run_reuses_the_memory_it_freed", "no other test's trims")
    assert reuse_freed_memory_within_a_run()

    def heap() -> tuple[int, int]:
        with open("/proc/self/maps") as maps:
            for line in maps:
                if line.rstrip().endswith("[heap]"):
                    start, end = (int(x, 16) for x in line.split()[0].split("-"))
                    return start, end
        return 0, 0

    seen, reused = set(), []
    for _ in range(8):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        pattern = torch.ones(12, 1024, 1024)  # [nh, T, T] float32
        address = pattern.data_ptr()
        start, end = heap()  # read while the block lives
        del pattern
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
        assert start <= address < end  # from the heap, not a mapping of its own
        if address in seen:
            reused.append(faults)
        seen.add(address)
    assert all(f < 100 for f in reused)  # a block placed where a freed one was is reused


def test_freed_memory_goes_back_once_no_run_computes(monkeypatch):
    """Back-to-back runs reuse what the last one freed; the system gets it back once the cache idles."""
    import gpt2viz.server.trace_cache as tc

    trims = []
    monkeypatch.setattr(tc, "TRIM_IDLE_S", 0.3)
    cache = TraceCache(10**9)
    cache.release = lambda: trims.append(time.monotonic())
    cache.freed = lambda: 10**9  # freed memory beyond the budget, with what the cache holds
    for key in range(3):
        cache.get_or_compute(key, lambda: make(40))
    assert trims == []  # not between runs
    time.sleep(0.6)
    assert len(trims) == 1


@pytest.mark.parametrize("freed,trimmed", [(10**9 - 120, False), (10**9 - 119, True),
                                           (None, True)])
def test_an_idle_cache_keeps_the_freed_memory_its_budget_covers(monkeypatch, freed, trimmed):
    """Freed memory that fits the budget beside the cached traces is kept for the next run (a long
    Training view faulted its pages in again after each trim); beyond it, or not known, it goes back."""
    import gpt2viz.server.trace_cache as tc

    trims = []
    monkeypatch.setattr(tc, "TRIM_IDLE_S", 0.3)
    cache = TraceCache(10**9)
    cache.release = lambda: trims.append(1)
    cache.freed = lambda: freed
    for key in range(3):
        cache.get_or_compute(key, lambda: make(40))
    assert cache.nbytes == 120
    time.sleep(0.6)
    assert trims == ([1] if trimmed else [])


@pytest.mark.parametrize("freed,trimmed", [(10**9 + 500 - 120, False), (10**9 + 500 - 120 + 1, True)])
def test_a_busy_cache_gives_back_freed_memory_past_its_budget_and_slack_after_each_run(monkeypatch, freed, trimmed):
    """A class never idles, so the idle trim never comes: after a run, freed memory that with the
    cached traces passes the budget by more than the slack goes back at once (it took a server 45-124
    MiB past its whole budget); within it, it is kept for the next run."""
    import gpt2viz.server.trace_cache as tc

    trims = []
    monkeypatch.setattr(tc, "TRIM_IDLE_S", 60)  # never idle within the test
    cache = TraceCache(10**9, slack=500)
    cache.release = lambda: trims.append(1)
    held = iter([0, 0, freed])  # what the allocator holds after each of three runs
    cache.freed = lambda: next(held)
    for key in range(3):
        cache.get_or_compute(key, lambda: make(40))
    assert cache.nbytes == 120  # the third run's 40 bytes are cached when it looks: room 10**9 + 500 - 120
    assert trims == ([1] if trimmed else [])
    cache._trim.cancel()


def test_the_freed_memory_malloc_holds_is_read_where_glibc_tells_it():
    """In a process of its own, as the reuse above: a trace cache's timer thread could trim the freed
    block away between the free and the reading."""
    import platform

    from gpt2viz.model.memory import freed_bytes_held, reuse_freed_memory_within_a_run

    held = freed_bytes_held()
    if platform.libc_ver()[0] != "glibc":
        assert held is None
        return
    if not inside():
        return run_alone(f"{__file__}::test_the_freed_memory_malloc_holds_is_read_where_glibc_tells_it",
                         "no other test's trims")
    # the server's setting, whichever test ran before in this process: alone, glibc mapped the block
    # on its own and gave it back when freed, and the test failed
    assert reuse_freed_memory_within_a_run()
    block = torch.ones(64, 2**20 // 4)  # 64 MiB from the heap (one arena, large blocks from it)
    block.add_(1)
    before = freed_bytes_held()
    del block
    assert freed_bytes_held() >= before + 60 * 2**20


def test_a_large_evicted_item_goes_back_to_the_system_at_once():
    """A model beyond the first (475 MiB on gpt2) evicted for a run: its memory is released before the
    run, not when the server idles (its blocks kept put a class server 290 MiB past its budget)."""
    from gpt2viz.server.trace_cache import RELEASE_EVICTED

    class Big:
        nbytes = RELEASE_EVICTED

    cache, released = TraceCache(RELEASE_EVICTED * 3 // 2), []
    cache.release = lambda: released.append(1)
    cache.get_or_compute("model", Big)
    cache.get_or_compute("small", lambda: make(8), estimate=1_000)
    assert released == []  # nothing large went
    cache.get_or_compute("run", lambda: make(8), estimate=RELEASE_EVICTED)
    assert "model" not in cache._items and released == [1]


def test_a_cache_keeps_at_most_max_mapped_traces_mapped_from_shared_runs(monkeypatch):
    """Each mapped trace holds two open files: the cache lets the least recently used go beyond
    max_mapped(), whatever their bytes; traces of its own stay."""
    from gpt2viz.server import trace_cache

    monkeypatch.setattr(trace_cache, "max_mapped", lambda: 3)
    cache = TraceCache(10**9)

    def mapped(i):
        return Trace("full", "tiny", (i,), ("a",), 0, 1, {"x": torch.zeros(1)}, shared_file=f"file {i}")
    cache.get_or_compute("own", lambda: make(40))
    for i in range(6):
        cache.get_or_compute(("mapped", i), lambda i=i: mapped(i))
    cache.get_or_compute(("mapped", 3), lambda: 1 / 0)  # a hit: now the most recently used
    cache.get_or_compute(("mapped", 6), lambda: mapped(6))
    assert list(cache._items) == ["own", ("mapped", 5), ("mapped", 3), ("mapped", 6)]


def test_a_mapped_trace_s_file_counts_in_the_folder_and_a_process_keeps_mapped_files_up_to_its_share():
    """A mapped trace's stored tensors are pages of the host's folder, counted in the folder's budget.
    Counted whole in its process's budget as well, and the writer keeping its own copy besides, a class
    server's process (512 MiB) let its students' runs go and ran them again (17 of 64 runs in a class on
    two processes). Now a trace holds here only what it derived; a process keeps mapped files up to
    `mapped_budget` (its share of the folder), the least recently used going first, so that no process
    holds more than its share of the folder and the rest stays free for new runs."""
    from gpt2viz.server.trace_cache import held

    cache = TraceCache(100)
    cache.mapped_budget = 2 * 400

    def mapped(i):  # a trace of 400 stored bytes mapped from a file
        return Trace("full", "tiny", (i,), ("a",), 0, 1, {"x": torch.zeros(100)}, shared_file=f"file {i}")
    assert held(mapped(0)) == 0 and held(make(80)) == make(80).nbytes == 80
    for i in range(2):
        cache.get_or_compute(("mapped", i), lambda i=i: mapped(i))
    cache.get_or_compute("own", lambda: make(80))
    assert list(cache._items) == [("mapped", 0), ("mapped", 1), "own"] and cache.nbytes == 80  # 880 bytes kept
    cache.get_or_compute(("mapped", 2), lambda: mapped(2))  # 1,200 bytes of files past the share: the oldest goes
    assert list(cache._items) == [("mapped", 1), "own", ("mapped", 2)] and cache.nbytes == 80
    cache.get_or_compute("own 2", lambda: make(40))  # 120 bytes of its own: the older own one goes, no file
    assert list(cache._items) == [("mapped", 1), ("mapped", 2), "own 2"]
    roomy = TraceCache(10**6)  # the share bounds the files whatever room the budget has
    roomy.mapped_budget = 2 * 400
    for i in range(3):
        roomy.get_or_compute(("mapped", i), lambda i=i: mapped(i))
    assert list(roomy._items) == [("mapped", 1), ("mapped", 2)]
    big = TraceCache(10**6)  # a file larger than the whole share: kept, and counted whole as its own would be
    big.mapped_budget = 300
    big.get_or_compute(("mapped", 0), lambda: mapped(0))
    assert list(big._items) == [("mapped", 0)] and big.nbytes == 400
    unshared = TraceCache(1000)  # no share set: a mapped trace counts whole, as any trace
    for i in range(3):
        unshared.get_or_compute(("mapped", i), lambda i=i: mapped(i))
    assert list(unshared._items) == [("mapped", 1), ("mapped", 2)]


def test_a_trace_found_elsewhere_waits_for_no_turn_to_run():
    """A run another process wrote is mapped in milliseconds: the asker does not queue behind the runs
    computing (a class on two processes: mapped runs waited up to 0.6 s in line)."""
    cache = TraceCache(10**9, max_runs=1)
    started, release = threading.Event(), threading.Event()

    def slow():
        started.set()
        release.wait(10)
        return make(1)
    t = threading.Thread(target=lambda: cache.get_or_compute("slow", slow))
    t.start()
    started.wait(10)
    try:
        got = cache.get_or_compute("found", lambda: 1 / 0, found=lambda: make(2))  # no turn free: found at once
        assert got.nbytes == make(2).nbytes and "found" in cache._items
    finally:
        release.set()
        t.join()
    assert cache.get_or_compute("not found", lambda: make(3), found=lambda: None).nbytes == make(3).nbytes
