"""What a page shows while it computes: a spinner that says what runs (and for how long it has),
under it the run's progress block by block, or that this session waits for the same run another
session started, or for its turn on the server, and, once steps are done, about how long the rest takes
(at the pace of the steps so far). Everything goes once the result is there."""

import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, nullcontext
from contextvars import ContextVar

import streamlit as st

from ..server.trace_cache import Progress, Status

_where: ContextVar = ContextVar("gpt2viz_progress_where", default=None)  # see progress_in


def queued(ahead: int) -> str:
    """The line of a run waiting for its turn: how many runs are ahead of it (computing, or asked first)."""
    runs = "1 run is" if ahead == 1 else f"{ahead:,} runs are"
    return f"Waiting for a turn: {runs} ahead of this one on the server's cores and memory."


def status_text(s: Status) -> str:
    """One line for the progress bar: what the run is at, and whose run it is."""
    steps = f"{s.what} ({s.done:,} of {s.total:,} steps)" if s.total else "starting"
    if s.state == "shared":
        return f"Another session started this same run; waiting for it, not running it twice: {steps}"
    return steps[:1].upper() + steps[1:]


def left(seconds: float) -> str:
    """'about 12 s left', in words a reader takes in at a glance."""
    if seconds < 1:
        return "under a second left"
    if seconds < 90:
        return f"about {seconds:.0f} s left"
    return f"about {seconds / 60:.0f} min left"


class Pace:
    """The time the rest of a run takes at the pace of its steps so far, from the first step seen."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self.clock, self.start = clock, None

    def rest(self, done: int, total: int) -> str:
        """'' until a step is done after the first one seen; then `left(...)` for the steps to go."""
        now = self.clock()
        if self.start is None:
            self.start = (now, done)
            return ""
        t0, done0 = self.start
        if not total or done <= done0 or done >= total:
            return ""
        return left((now - t0) / (done - done0) * (total - done))


def with_rest(line: str, pace: Pace, done: int, total: int) -> str:
    rest = pace.rest(done, total)
    return f"{line} · {rest}" if rest else line


def progress_bar(label: str) -> Callable[[int, int], None]:
    """A progress bar for a computation that counts its runs (a sweep): `label: 3 of 12 runs · about 4 s left`."""
    bar, pace = st.progress(0.0, text=label), Pace()
    return lambda done, total: bar.progress(done / total, text=with_rest(f"{label}: {done} of {total} runs", pace,
                                                                         done, total))


@contextmanager
def progress_in(box) -> Iterator[None]:
    """The progress of the runs asked for inside this block shows in `box` (a container the page made
    under its title, on the first screen) instead of where each run is asked for, further down."""
    token = _where.set(box)
    try:
        yield
    finally:
        _where.reset(token)


@contextmanager
def working(text: str) -> Iterator[Progress]:
    """`with working("Running gpt2 on 1,024 tokens…") as progress:` then hand `progress` to the cache."""
    spinning = ExitStack()
    with _where.get() or nullcontext():  # the slot and the spinner where progress_in says, else here
        slot = st.empty()
        spinning.enter_context(st.spinner(text, show_time=True))
    shown: list[str] = []
    pace = Pace()

    def show(s: Status) -> None:
        line = queued(s.ahead) if s.state == "queued" else with_rest(status_text(s), pace, s.done, s.total)
        if shown[-1:] == [line]:
            return
        shown.append(line)
        if s.state == "queued":
            slot.caption(":material/hourglass_top: " + line)
        else:
            slot.progress(s.done / s.total if s.total else 0.0, text=line)

    try:
        with spinning:
            yield Progress(show)
    finally:
        slot.empty()
