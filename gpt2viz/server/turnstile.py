"""Pages drawn at once in one process: a turnstile that lets at most `width` script runs draw at a
time, in the order they arrived.

Why: a page's drawing is Python (figures, tables, Streamlit's messages), and one process runs one
thread of Python at a time. Thirty students opening a link at once started thirty script threads
that took turns every few milliseconds: each page then took as long as all thirty together (a burst
of 30 attention views: every one finished after 5.3-5.8 s, and the switching cost 0.23 CPU-s a view
against 0.13 for one view alone). Through the turnstile the first ones are drawn first, and the
last one no later than before.

A thread that waits for a run, or computes one, steps aside (`aside`): a run is mostly torch, which
leaves Python free, and a long one (a sweep of a 1,024-token text) would otherwise keep everyone's
page waiting. It comes back at once, ahead of the line: a thread holding a turn never waits at the
gate again, and a thread waiting at the gate holds nothing yet (it has not started its page), so no
thread in line can hold what a thread inside waits for.

Pure threading: no streamlit, no torch.
"""

import threading
from collections import deque
from contextlib import contextmanager


class Turnstile:
    """At most `width` threads hold a turn at once (0: no limit); the others wait in arrival order."""

    def __init__(self, width: int):
        if width < 0:
            raise ValueError(f"a turnstile's width is 0 (no limit) or more, got {width}")
        self.width = width
        self.inside = 0  # threads holding a turn now (those coming back from `aside` may exceed the width)
        self.waited = 0  # threads that found the gate closed and waited (for tests and reports)
        self._cond = threading.Condition()
        self._line: deque[object] = deque()
        self._holding = threading.local()

    def holds(self) -> bool:
        """Whether this thread holds a turn now."""
        return getattr(self._holding, "turn", False)

    def _open_for(self, ticket: object) -> bool:
        return self._line[0] is ticket and (self.width == 0 or self.inside < self.width)

    @contextmanager
    def turn(self):
        """Inside once this thread's turn comes; out when the block ends (a thread inside already: the
        same turn)."""
        if self.holds():
            yield
            return
        ticket = object()
        with self._cond:
            self._line.append(ticket)
            if not self._open_for(ticket):
                self.waited += 1
                self._cond.wait_for(lambda: self._open_for(ticket))
            self._line.popleft()
            self.inside += 1
            self._cond.notify_all()  # the next in line may go in too, if there is room
        self._holding.turn = True
        try:
            yield
        finally:
            self._holding.turn = False
            self._leave()

    @contextmanager
    def aside(self):
        """Out of the turnstile for the block (waiting for or computing a run), back in at once after it."""
        if not self.holds():
            yield
            return
        self._holding.turn = False
        self._leave()
        try:
            yield
        finally:
            with self._cond:
                self.inside += 1
            self._holding.turn = True

    def _leave(self) -> None:
        with self._cond:
            self.inside -= 1
            self._cond.notify_all()
