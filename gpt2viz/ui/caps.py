"""Token caps on a shared server: the heavy pages run on the start of a long text, and a sweep takes
short texts only, so that two students on 1,024-token texts do not hold the cores for a minute a view.

Only where the visitor is not local (ui/visitor.py): on the operator's own machine every page runs
the whole text. Each cap is said on the page, in one line, where it applies.
"""

from collections.abc import Callable
from dataclasses import replace

import streamlit as st

from ..spec.pages import BY_URL
from ..teaching import page_text
from .cache import longest_that_fits
from .state import Selection
from .visitor import is_local

# tokens a page runs on, at most: a training run costs about three forward passes and holds the
# activations for the backward one; What if runs the text twice (before and after the knock-out);
# the head finder and About run it once or twice without gradients; Who wrote the answer records
# every tensor of the run (a full trace) and sets What if's knock-outs beside it; Which path carries it
# runs the text as Who wrote the answer does (its links carry that page's answer at that page's position)
HEAVY_TOKENS = {"training": 256, "whatif": 256, "heads": 512, "about": 512, "attribution": 256, "paths": 256}
SWEEP_TOKENS = 64  # a sweep runs the text once per head (144 on gpt2), as patching (64) once per cell
# removing a sender along each path runs every receiver (410 on gpt2) on the positions up to the one patched, as a
# sweep does: at position 255 it held both cores for 55 s, at 63 for 13 s (a head of block 0, random gpt2, 2 threads)
PATH_POSITIONS = SWEEP_TOKENS


def token_cap(page: str) -> int | None:
    return None if is_local() else HEAVY_TOKENS.get(page)


def capped(sel: Selection, page: str, fits: Callable[[int], bool] | None = None, shortest: int = 1) -> Selection:
    """The selection with its tokens cut to the page's cap on this server, said in one line. `fits`:
    whether the page's run of n tokens fits what this server gives one run; on a shared server a text
    whose run would not is cut to the longest start that fits (of at least `shortest` tokens), said so,
    rather than refused: a class server's process (512 MiB) refused the Training page a 161-token text."""
    cap = token_cap(page)
    if cap is None:
        return sel
    n = min(cap, len(sel.ids))
    if fits is not None and not fits(n) and fits(shortest):
        lo = longest_that_fits(fits, shortest, n - 1)
        st.info(page_text.memory_cap_note(BY_URL[page].title, lo, len(sel.ids)), icon=":material/memory:")
        return replace(sel, ids=sel.ids[:lo])
    if len(sel.ids) <= cap:
        return sel
    st.info(page_text.cap_note(BY_URL[page].title, cap, len(sel.ids)), icon=":material/timer:")
    return replace(sel, ids=sel.ids[:cap])


def paths_refused(position: int) -> bool:
    """True (and said in one line) when this server does not remove a sender along its paths at `position`."""
    if is_local() or position < PATH_POSITIONS:
        return False
    st.warning(page_text.paths_refusal(PATH_POSITIONS, position), icon=":material/timer:")
    return True


def sweep_refused(n_tokens: int) -> bool:
    """True (and said in one line) when this server does not sweep a text this long."""
    if is_local() or n_tokens <= SWEEP_TOKENS:
        return False
    st.warning(page_text.sweep_refusal(SWEEP_TOKENS, n_tokens), icon=":material/timer:")
    return True
