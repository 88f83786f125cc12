"""The demo model's line for a page (gpt2viz/teaching/trained.py), measured once a process: the
demo model run on its ready texts, kept while the file is the same."""

import streamlit as st

from ..model.demo_model import DEMO_PATH
from ..teaching import trained
from ..teaching.prompts import DEMO_PAIR, DEMO_REPEAT
from .cache import demo_weights


@st.cache_resource(show_spinner=False)
def _lines(stamp: int) -> dict[str, str]:  # stamp: the file's mtime, so a retrained model is measured again
    return trained.lines(trained.measure(demo_weights().model, DEMO_REPEAT, DEMO_PAIR))


def demo_line(url: str) -> str | None:
    """What the demo model shows on page `url`, or None (no such line, or no demo model file)."""
    if not DEMO_PATH.is_file():
        return None
    return _lines(DEMO_PATH.stat().st_mtime_ns).get(url)
