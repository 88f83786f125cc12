"""A bounded, thread-safe LRU cache of traces, sized in bytes.

Traces are immutable, so one cached trace can be shared by every session that asks for the same
(weights, tokens, mode, options). The budget counts the bytes of the recorded tensors of cached
traces, and the estimated peak of every run in flight. Of a trace mapped from a host's shared runs,
where the process has a share of the folder (`mapped_budget`), it counts what it derived: its file is
counted in the folder's budget, and the files a process keeps mapped are bounded by that share (a file
larger than the whole share counts here whole). Anything with an `nbytes` can be cached (a
Generation, several traces, is one).
"""

import bisect
import contextlib
import hashlib
import itertools
import logging
import resource
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass

import torch

from ..model.memory import freed_bytes_held, release_freed_memory
from ..model.trace import Trace

DEFAULT_BUDGET = 2 * 2**30  # 2 GiB
TRIM_IDLE_S = 5.0  # seconds without a run before freed memory goes back to the system
# an evicted item this large (a model beyond the first) goes back to the system at once, not when the
# server idles: the blocks of a model's shapes are not what the next runs allocate, and kept they put the
# server past its budget (+290 MiB over a 2,048 MiB budget in benchmarks/hostile_memory.py)
RELEASE_EVICTED = 256 * 2**20
MAX_MAPPED = 128  # see max_mapped
HOLD_TURN_S = 0.5  # an asker of another asker's run waits this long before stepping aside (TraceCache.aside)
POLL_S = 0.25  # how often an asker waiting for another asker's run looks at its progress
HEAVY_SHARE = 4  # a run whose estimate exceeds this share of the budget is heavy (see TraceCache)
log = logging.getLogger(__name__)  # one INFO line per run (GPT2VIZ_LOG_RUNS=1 shows them)


def max_mapped() -> int:
    """How many cached traces mapped from a host's shared runs (server/shared_runs.py) a cache keeps:
    each holds two open files (the file, locked shared, and the map's own descriptor), and bytes alone
    bounded their number by the budget over the smallest file (14 KB: a one-token text on tiny), past
    the process's open-file limit (at 256, the 125th mapped trace failed its view: "Too many open
    files"). Their files take at most a quarter of that limit, the sockets and the rest keep the others;
    at most MAX_MAPPED."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return MAX_MAPPED if soft == resource.RLIM_INFINITY else max(1, min(MAX_MAPPED, soft // 8))


@dataclass(frozen=True)
class Status:
    """What an asker of a run is told while it waits for the result."""
    state: str  # "running": its own run · "shared": another asker's run of the same key · "queued":
    # waiting for room in the budget or for a turn (max_runs)
    done: int = 0  # steps of the run done, of `total` (0 of 0: not known yet)
    total: int = 0
    what: str = ""  # the step, in words ("block 3 of 12, forward")
    ahead: int = 0  # queued: the runs computing, and those waiting that asked before this one


class Progress:
    """One asker's view of a run. The computation of the asker that runs it calls `step`; `show`
    of every asker of the key (that one, and those waiting for its run) is called with each step."""

    def __init__(self, show: Callable[[Status], None]):
        self.show = show
        self._flight: _Flight | None = None  # the run this asker leads

    def step(self, done: int, total: int, what: str = "") -> None:
        status = Status("running", done, total, what)
        if self._flight is not None:
            self._flight.status = status
        self.show(status)


class _Flight:
    """One run in progress; the askers of its key wait on `done`."""

    def __init__(self):
        self.done = threading.Event()
        self.trace: Trace | None = None  # set when the run succeeded
        self.waiting = 0  # askers waiting for it
        self.status = Status("running")  # the leader's last step, for the askers waiting for it


def mib(n: int) -> str:
    return f"{n / 2**20:,.0f} MiB"


class RunTooLarge(ValueError):
    """A run whose estimated peak alone exceeds the budget: refused before it starts, in one line
    (the pages that know their run say what would fit instead; ui/fit.py)."""

    def __init__(self, estimate: int, budget: int, message: str | None = None):
        self.estimate, self.budget = estimate, budget
        super().__init__(message or f"This view's run needs about {mib(estimate)}, more than the {mib(budget)} "
                                    "this server gives its runs: a shorter text, or another page, fits.")


_view = threading.local()  # .asked: when the view this thread draws was asked for (one thread a session's run)


@contextlib.contextmanager
def view_asked(at: float | None = None) -> Iterator[None]:
    """Around one view's drawing (a session's script run, app.py): every run it asks for waits in line
    from `at` (default: now, time.perf_counter()), when the view was asked for, not from when the run
    asks. A page that computes two runs (About's full and decode, What if's trace and its knock-out)
    otherwise waited in line twice, the second time behind every view asked meanwhile: in a class that
    started at once they were the slowest views (About 5-9 s)."""
    before = getattr(_view, "asked", None)
    _view.asked = time.perf_counter() if at is None else at
    try:
        yield
    finally:
        _view.asked = before


class TraceCache:
    """LRU by bytes. The budget covers the cached traces and the runs in flight: a run reserves its
    estimated peak (`estimate`) before it starts, waiting while others' reservations would exceed
    the budget and evicting least recently used traces to make room. A run whose estimate alone
    exceeds the budget is refused (`RunTooLarge`), so that what the server holds stays within it
    whatever a visitor asks. `max_runs`: at most this many
    runs compute at once (the others wait their turn), None for as many as the budget lets in.
    Heavy runs (an estimate above 1/HEAVY_SHARE of the budget, or asked as heavy: a sweep) hold at
    most all but one of the `max_runs` slots and all but 1/HEAVY_SHARE of the budget, so a short
    view always finds a slot and room: in a class, two students on 1,024-token texts otherwise took
    both slots of a 2-core server for a minute, and everyone else's first view waited behind them.
    `threads`: given the runs now computing (this one included), torch's threads for this run (set
    in the thread that computes it), or None to leave them as they are."""

    def __init__(self, budget_bytes: int = DEFAULT_BUDGET, max_runs: int | None = None,
                 threads: Callable[[int], int | None] | None = None,
                 aside: Callable[[], AbstractContextManager] = nullcontext, slack: int | None = None):
        if budget_bytes <= 0:
            raise ValueError(f"the trace cache budget must be positive, got {budget_bytes}")
        self.budget = budget_bytes
        self._items: OrderedDict[Hashable, Trace] = OrderedDict()
        self._lock = threading.Lock()
        self._room = threading.Condition(self._lock)  # notified when a reservation ends
        self._flights: dict[Hashable, _Flight] = {}  # runs in progress, by key
        self.in_flight = 0  # bytes reserved by runs in progress
        self.running, self.max_runs = 0, max_runs  # runs in progress, and how many may be
        self.heavy_running = 0  # of them, heavy ones
        # runs waiting to start, in the order their views asked (view_asked): ((asked, ticket), estimate, heavy)
        self._line: list[tuple[tuple[float, int], int, bool]] = []
        self._tickets = itertools.count()
        self.light_in_flight = 0  # bytes reserved by the light ones
        self.threads = threads
        self.aside = aside  # entered while an asker waits for a run or computes one (server/turnstile.py)
        self.peak_reserved = 0  # the most ever held: cached + in flight (for tests and reports)
        self._trim: threading.Timer | None = None  # gives freed memory back once no run computes
        self.release = release_freed_memory  # how: malloc_trim (memory.py)
        self.freed = freed_bytes_held  # freed memory the allocator holds (None: not known; the idle trim trims)
        self._released = True  # False once an item of RELEASE_EVICTED bytes or more was evicted
        self.slack = slack  # freed memory past the budget by more than this goes back after a run (None: kept)
        self.hits = self.misses = 0  # misses: runs computed
        self.shared = 0  # askers that waited for another asker's run of the same key
        # bytes of a host's shared runs' files kept mapped (server/shared_runs.py), counted in the folder's
        # budget, not this one; None: no share set, they count in this budget as any trace
        self.mapped_budget: int | None = None

    @property
    def reserve(self) -> int:
        """What the budget keeps for light runs; a run whose estimate is above it is heavy."""
        return self.budget // HEAVY_SHARE

    @property
    def nbytes(self) -> int:
        with self._lock:
            return self._cached()

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def get_or_compute(self, key: Hashable, compute: Callable[[], Trace], estimate: int = 0,
                       evict_first: bool = False, progress: Progress | None = None,
                       heavy: bool | None = None, found: Callable[[], Trace | None] | None = None) -> Trace:
        """The cached trace for `key`, or compute it once and keep it, evicting least recently used
        traces beyond the budget. Concurrent askers of one key wait for the first one's run and get
        its trace, even one too large to keep; if that run fails, the next asker runs it.
        `estimate`: the bytes the computation holds at its peak, reserved while it runs.
        `evict_first`: keep the new trace as the least recently used one (the next to go), for a
        trace that serves one page, so that it does not push out traces that serve every page.
        `progress`: told when this asker waits for another asker's run (with that run's steps) or
        for its turn; `compute` reports the steps of its own run through it. `heavy`: True for a run
        that is long whatever its bytes (a sweep of many runs); None decides by the estimate. `found`:
        the trace of `key` from elsewhere, or None (a host's shared runs: mapped in milliseconds, it
        waits for no turn to run)."""
        if estimate > self.budget:
            raise RunTooLarge(estimate, self.budget)
        with self._lock:
            if key in self._items:
                self.hits += 1
                self._items.move_to_end(key)
                return self._items[key]
            flight = self._flights.get(key)
            if flight is None:
                flight = self._flights[key] = _Flight()
                leading = True
            else:
                self.shared += 1
                flight.waiting += 1
                leading = False
        if not leading:
            # a short wait keeps this asker's turn to draw, so that askers of one run draw in the order they
            # came once it is done; a longer one gives the turn to others meanwhile (server/turnstile.py)
            if not flight.done.wait(HOLD_TURN_S):
                with self.aside():
                    _wait_for(flight, progress)
            return flight.trace if flight.trace is not None else self.get_or_compute(key, compute, estimate,
                                                                                       evict_first, progress, heavy,
                                                                                       found)
        if progress is not None:
            progress._flight = flight
        try:
            t0 = time.perf_counter()
            trace = found() if found is not None else None
            if trace is not None:
                used, queued = torch.get_num_threads(), 0.0
            else:
                with self.aside():
                    trace, used, t0, queued = self._run(compute, estimate, progress, heavy)
            with self._lock:
                self.misses += 1
                self._items[key] = trace
                if evict_first:
                    self._items.move_to_end(key, last=False)
                self._evict()
                self._note_peak()
            flight.trace = trace
            # a run another process of the host computed, mapped from their shared folder, is no run here
            said = "run" if getattr(trace, "ran_here", True) else "mapped"
            log.info("%s %s (%s): %.2f s, %d asker(s) waited for it, %d thread(s), %.2f s in line", said,
                     key_digest(key), key_kind(key), time.perf_counter() - t0, flight.waiting, used, queued)
        finally:  # done, or failed: the waiters go on, and nothing of the key is left in flight
            with self._lock:
                self._flights.pop(key, None)
            flight.done.set()
        self._release_evicted()
        self._release_beyond_slack()
        self._trim_when_idle()
        return trace

    def _run(self, compute: Callable[[], Trace], estimate: int, progress: Progress | None,
             heavy: bool | None) -> tuple[Trace, int, float, float]:
        """(the trace, the threads it used, when it started, the seconds it waited for its turn): computed
        once the budget has room for `estimate` and a turn is free, its reservation released after."""
        asked = time.perf_counter()
        with self._lock:
            heavy = self._reserve(estimate, progress, heavy)
            running = self.running
        try:  # whatever fails from here leaves no reservation behind, nor its threads
            self._release_evicted()
            n_threads = self.threads(running) if self.threads is not None else None
            before = torch.get_num_threads()
            if n_threads:
                torch.set_num_threads(n_threads)
            t0 = time.perf_counter()
            try:
                return compute(), torch.get_num_threads(), t0, t0 - asked
            finally:
                torch.set_num_threads(before)
        finally:
            with self._lock:
                self.in_flight -= estimate
                self.running -= 1
                if heavy:
                    self.heavy_running -= 1
                else:
                    self.light_in_flight -= estimate
                self._room.notify_all()

    def _trim_when_idle(self) -> None:
        """Give the memory runs freed beyond the budget back to the system once no run has computed
        for TRIM_IDLE_S (_trim_if_idle), not after every run (unless past the budget and its slack:
        `_release_beyond_slack`): the next run reuses it instead of faulting every page in again (on
        this project's machine 2-6 µs a page, a million pages for a training run at 1,024 tokens).
        What is kept stays within the budget: one malloc arena (memory.py), and what the cache holds
        with it fits the budget."""
        with self._lock:
            if self._trim is not None:
                self._trim.cancel()
            self._trim = threading.Timer(TRIM_IDLE_S, self._trim_if_idle)
            self._trim.daemon = True
            self._trim.start()

    def _trim_if_idle(self) -> None:
        """Trim only what the budget does not cover: freed memory that, with the cached traces, fits
        the budget stays for the next run (the budget is what runs may hold; a long Training view
        faulted about a million pages in again after each trim)."""
        with self._lock:
            if self.running:
                return  # the run in progress arms the timer again when it ends
            room = self.budget - self._cached()
        freed = self.freed()
        if freed is None or freed > room:
            self.release()

    def _cached(self) -> int:
        """The bytes the budget counts (`_counts`)."""
        return sum(self._counts(t)[0] for t in self._items.values())

    def _counts(self, item) -> tuple[int, int]:
        """(the bytes an item counts in this budget, the bytes of its file that count in `mapped_budget`):
        what it holds here (`held`); a mapped trace's file counts here when no share of the folder is set
        or when it is larger than the whole share (kept as this process's own run would be, not dropped at
        once), else in the share."""
        if not _mapped(item):
            return held(item), 0
        if self.mapped_budget is None or item.stored_bytes > self.mapped_budget:
            return held(item) + item.stored_bytes, 0
        return held(item), item.stored_bytes

    def _reserve(self, estimate: int, progress: Progress | None = None, heavy: bool | None = None) -> bool:
        """Wait (lock held) until this run may start (`_next_in_line`), then evict until cached + in
        flight + estimate fits, and reserve it; whether it is heavy. A waiting asker's `progress` is
        told how many runs are ahead of it, each time that changes (it only queues a message to its
        page, under the lock)."""
        heavy = estimate > self.reserve if heavy is None else heavy
        told = None
        asked = getattr(_view, "asked", None)
        ticket = ((time.perf_counter() if asked is None else asked, next(self._tickets)), estimate, heavy)
        bisect.insort(self._line, ticket, key=lambda t: t[0])  # behind every run whose view asked before
        try:
            while not self._next_in_line(ticket):
                ahead = self.running + self._line.index(ticket)
                if progress is not None and ahead != told:
                    progress.show(Status("queued", ahead=ahead))
                    told = ahead
                self._room.wait()
        finally:
            self._line.remove(ticket)
            self._room.notify_all()  # the next in line may start too, or may now be the first that fits
        self.running += 1
        self.in_flight += estimate
        if heavy:
            self.heavy_running += 1
        else:
            self.light_in_flight += estimate
        self._evict()
        self._note_peak()
        return heavy

    def _next_in_line(self, ticket: tuple[tuple[float, int], int, bool]) -> bool:
        """Whether this waiting run starts now: it is admitted (`_admits`) and no run whose view asked
        before it is. Without the order, a slot freed went to whichever waiting thread took the lock
        first, or to a run that had only just asked: in a class that started at once, one student's
        first view waited 19 s for its run while later ones went ahead. (Shorter runs a little ahead,
        by their estimates, lowered no figure and raised the start's p95 after a class: 5.9-6.7 s
        against 4.6-7.5 s in the same hour; a tail is the longest runs, which that holds back.)"""
        for earlier in self._line:
            if earlier is ticket:
                return self._admits(estimate=ticket[1], heavy=ticket[2])
            if self._admits(estimate=earlier[1], heavy=earlier[2]):
                return False
        raise AssertionError("a run waits without a ticket")  # pragma: no cover

    def _admits(self, estimate: int, heavy: bool) -> bool:
        """A run alone always starts. Beside others: a free slot of `max_runs`; a heavy run also
        one of the slots heavy runs may hold (all but one) and room within the budget less the
        light runs' reserve; a light run room within the budget, or within the reserve whatever
        heavy runs hold (a heavy run alone may exceed the budget)."""
        if not self.running:
            return True
        if self.max_runs is not None and self.running >= self.max_runs:
            return False
        if heavy:
            slots = None if self.max_runs is None else max(1, self.max_runs - 1)
            return (slots is None or self.heavy_running < slots) and \
                self.in_flight + estimate <= self.budget - self.reserve
        return self.in_flight + estimate <= self.budget or self.light_in_flight + estimate <= self.reserve

    def _evict(self) -> None:
        """Drop least recently used traces until cached + in flight fits the budget (`_cached`), mapped
        ones until their files fit `mapped_budget`, and mapped ones beyond `max_mapped()` (mapping one
        again costs milliseconds)."""
        room = self.budget - self.in_flight
        counts = {key: self._counts(item) for key, item in self._items.items()}
        counted, files = sum(c for c, _ in counts.values()), sum(f for _, f in counts.values())
        for key, (here, shared) in counts.items():  # the least recently used first
            if counted > room and here or self.mapped_budget is not None and files > self.mapped_budget and shared:
                self._evicted(key, self._items.pop(key))
                counted, files = counted - here, files - shared
        mapped = [key for key, item in self._items.items() if _mapped(item)]
        if mapped:  # (a server without shared runs has none)
            for key in mapped[:max(0, len(mapped) - max_mapped())]:  # the least recently used first
                self._evicted(key, self._items.pop(key))

    def _evicted(self, key: Hashable, old) -> None:
        if log.isEnabledFor(logging.INFO):
            log.info("evicted %s (%s): %s, %s in flight", key_digest(key), key_kind(key), mib(old.nbytes),
                     mib(self.in_flight))
        self._released = self._released and held(old) < RELEASE_EVICTED

    def _release_beyond_slack(self) -> None:
        """Give freed memory back now when what the allocator holds freed, with the cached traces and
        the runs in flight, passes the budget by more than `slack`: in a class that never idles the
        idle trim never came, and the blocks runs freed took the server 45-124 MiB past its whole
        budget (benchmarks/classroom.py, the start scenario). A server far from its budget keeps them,
        as when idle (`_trim_if_idle`). What the allocator says it holds freed still counts blocks a
        trim gave back, so once the cache is near full this trims after every run, and the next run
        touches those pages afresh: server CPU per view in the start scenario, 0.281-0.339 s in six
        runs with it (0.339 in a run slow throughout), 0.290-0.313 s in three without."""
        if self.slack is None:
            return
        with self._lock:
            room = self.budget + self.slack - self._cached() - self.in_flight
        freed = self.freed()
        if freed is not None and freed > room:
            self.release()
            log.info("trimmed: the allocator held %s freed, room for %s", mib(freed), mib(max(room, 0)))

    def _release_evicted(self) -> None:
        """Give a large evicted item's memory back now (outside the lock; see RELEASE_EVICTED)."""
        if not self._released:
            self._released = True
            self.release()

    def _note_peak(self) -> None:
        self.peak_reserved = max(self.peak_reserved, self._cached() + self.in_flight)


def _wait_for(flight: _Flight, progress: Progress | None) -> None:
    """Wait for another asker's run; tell `progress` so at once, then its steps as they come."""
    if progress is None:
        flight.done.wait()
        return
    shown = None
    while True:
        s = flight.status
        if s != shown:
            progress.show(Status("shared", s.done, s.total, s.what))
            shown = s
        if flight.done.wait(POLL_S):
            return


def _mapped(item) -> bool:
    return getattr(item, "shared_file", None) is not None


def held(item) -> int:
    """The bytes an item holds in its process: a trace mapped from a host's shared runs only what it
    derived and cached, its stored tensors being pages of the folder's file (counted in the folder's
    budget, once for the host: server/shared_runs.py)."""
    if _mapped(item):
        return item.nbytes - item.stored_bytes
    return item.nbytes


def key_kind(key: Hashable) -> str:
    """What a key computes, for logs: its leading word ("knockout", "generation", ...), else the mode
    of a trace key (weights, ids, mode, ...)."""
    if isinstance(key, tuple) and key:
        for part in key[:3]:
            if isinstance(part, str):
                return part
    return "?"


def key_digest(key: Hashable) -> str:
    """A short name for a key in logs (keys carry every token id)."""
    return hashlib.sha1(repr(key).encode()).hexdigest()[:12]
