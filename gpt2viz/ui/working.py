"""What a page shows while it computes: a spinner that says what runs (and for how long it has),
under it the run's progress block by block, or that this session waits for the same run another
session started, or for its turn on the server. Everything goes once the result is there."""

from collections.abc import Iterator
from contextlib import contextmanager

import streamlit as st

from ..server.trace_cache import Progress, Status

QUEUED = "Waiting for a turn: other runs are using the server's cores and memory."


def status_text(s: Status) -> str:
    """One line for the progress bar: what the run is at, and whose run it is."""
    steps = f"{s.what} ({s.done:,} of {s.total:,} steps)" if s.total else "starting"
    if s.state == "shared":
        return f"Another session started this same run; waiting for it, not running it twice: {steps}"
    return steps[:1].upper() + steps[1:]


@contextmanager
def working(text: str) -> Iterator[Progress]:
    """`with working("Running gpt2 on 1,024 tokens…") as progress:` then hand `progress` to the cache."""
    slot = st.empty()
    shown: list[str] = []

    def show(s: Status) -> None:
        line = QUEUED if s.state == "queued" else status_text(s)
        if shown[-1:] == [line]:
            return
        shown.append(line)
        if s.state == "queued":
            slot.caption(":material/hourglass_top: " + line)
        else:
            slot.progress(s.done / s.total if s.total else 0.0, text=line)

    try:
        with st.spinner(text, show_time=True):
            yield Progress(show)
    finally:
        slot.empty()
