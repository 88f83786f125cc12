"""Pages drawn at once in one process: a turnstile that lets at most `width` script runs draw at a
time, in the order they arrived.

Why: a page's drawing is Python, and one process runs one thread of Python at a time. Thirty students
opening a link at once started thirty script threads that took turns every few milliseconds: each
page then took as long as all thirty together (a burst of 30 attention views: every one finished
after 5.3-5.8 s, and the switching cost 0.23 CPU-s a view against 0.13 for one view alone). Through
the turnstile the first ones are drawn first, and the last one no later than before.

A thread that waits for a run, or computes one, steps aside (`aside`): a run is mostly torch, which
leaves Python free, and a long one (a sweep of a 1,024-token text) would otherwise keep everyone's
page waiting. How it comes back:

- from a run, computed or waited for: at once, even beyond the width (`rejoin=False`). It may hold a
  lock that pages inside wait for (the lesson warm-up computes every stop's run inside one cache
  entry). After a long run, the pages that waited for it therefore draw together, out of line: the
  other way (`rejoin=True` for them) was measured slower for the class that opens one link (30 views
  at their own block and head: p95 3.26-3.42 s against 2.82-2.95 s);
- from a pause of its own (the lecturer's password's second): at the front of the line, in the order it
  first came (`rejoin=True`), after REJOIN_WAIT_S at most in any case, so that a lock it holds can
  delay the pages inside that wait for it but never stop them.

A thread waiting at the gate for its first turn holds nothing yet (it has not started its page).

Pure threading: no streamlit, no torch.
"""

import bisect
import itertools
import threading
from contextlib import contextmanager

REJOIN_WAIT_S = 2.0  # the longest a thread coming back to the line waits for its turn


class Turnstile:
    """At most `width` threads hold a turn at once (0: no limit); the others wait in line: those coming
    back from `aside(rejoin=True)` first, then the new ones, each in the order it first arrived."""

    def __init__(self, width: int):
        if width < 0:
            raise ValueError(f"a turnstile's width is 0 (no limit) or more, got {width}")
        self.width = width
        self.inside = 0  # threads holding a turn now (those coming back at once may exceed the width)
        self.waited = 0  # threads that found the gate closed and waited (for tests and reports)
        self._lock = threading.Lock()
        # waiting threads, in order: (0: coming back, 1: new; arrival number; the place's own condition)
        self._line: list[tuple[int, int, threading.Condition]] = []
        self._arrivals = itertools.count()
        self._holding = threading.local()

    def holds(self) -> bool:
        """Whether this thread holds a turn now."""
        return getattr(self._holding, "turn", False)

    def _room(self) -> bool:
        return self.width == 0 or self.inside < self.width

    def _call_next(self) -> None:
        """Wake the first in line if there is room for it (with the lock held): only it, so that a turn
        given costs one thread's waking, not the whole line's."""
        if self._line and self._room():
            self._line[0][2].notify()

    def _enter(self, rank: int, arrival: int, timeout: float | None = None) -> None:
        with self._lock:
            if not self._line and self._room():
                self.inside += 1
                return
            place = (rank, arrival, threading.Condition(self._lock))
            bisect.insort(self._line, place, key=lambda p: p[:2])
            self.waited += 1
            self._call_next()  # this place may be the first now, with room (a thread coming back)
            place[2].wait_for(lambda: self._line[0] is place and self._room(), timeout)
            self._line.remove(place)
            self.inside += 1
            self._call_next()  # the next in line, if there is room for it too

    @contextmanager
    def turn(self):
        """Inside once this thread's turn comes; out when the block ends (a thread inside already: the
        same turn)."""
        if self.holds():
            yield
            return
        arrival = next(self._arrivals)
        self._enter(1, arrival)
        self._holding.turn, self._holding.arrival = True, arrival
        try:
            yield
        finally:
            self._holding.turn = False
            self._leave()

    @contextmanager
    def aside(self, rejoin: bool = False):
        """Out of the turnstile for the block (a run waited for or computed, a pause); back at once after
        it, or (`rejoin`) at the front of the line in this thread's first order, within REJOIN_WAIT_S."""
        if not self.holds():
            yield
            return
        self._holding.turn = False
        self._leave()
        try:
            yield
        finally:
            if rejoin:
                self._enter(0, self._holding.arrival, REJOIN_WAIT_S)
            else:
                with self._lock:
                    self.inside += 1
            self._holding.turn = True

    def _leave(self) -> None:
        with self._lock:
            self.inside -= 1
            self._call_next()
