"""Every chart in words and in numbers, under the chart: its sentence and its "Show the numbers"
table (gpt2viz.teaching.chart_text builds both from the figure's own data). assets/a11y.js gives the
chart's box role="figure" and the sentence as its accessible name.

The words of a figure are kept, by a digest of the figure, for the next session that draws the same one:
a class that opens one link draws the same figures thirty times, and building a map's table (every cell
as its hover says it) was a third of the attention page's script time."""

import hashlib
import threading
from collections import OrderedDict

import orjson
import streamlit as st

from ..teaching import chart_text

KEPT_CHARS = 32 * 2**20  # the words kept at most, in characters, over all figures (least recently used out)
_kept: OrderedDict[bytes, str] = OrderedDict()
_kept_chars = 0
_lock = threading.Lock()


def in_words(spec: dict, ident: str, folded: bool = False) -> None:
    """Under a chart just drawn: its sentence (element id `ident`, unique on the page) and its table,
    folded, its table put in the page when the fold is opened (assets/a11y.js); `folded`: the sentence folded
    too (presentation mode, where the chart fills the screen)."""
    st.html(figure_html(spec, ident, folded))


def figure_html(spec: dict, ident: str, folded: bool) -> str:
    """chart_text.figure_html(spec, ident, folded, lazy=True), from the kept words when this figure was said."""
    try:
        key = hashlib.blake2b(orjson.dumps([spec, ident, folded], option=orjson.OPT_SERIALIZE_NUMPY),
                              digest_size=16).digest()
    except TypeError:  # a value orjson cannot write: said anew
        return chart_text.figure_html(spec, ident, folded=folded, lazy=True)
    with _lock:
        if (said := _kept.get(key)) is not None:
            _kept.move_to_end(key)
            return said
    said = chart_text.figure_html(spec, ident, folded=folded, lazy=True)
    _keep(key, said)
    return said


def _keep(key: bytes, said: str) -> None:
    global _kept_chars
    if len(said) > KEPT_CHARS // 4:
        return
    with _lock:
        if key in _kept:
            return
        _kept[key] = said
        _kept_chars += len(said)
        while _kept_chars > KEPT_CHARS:
            _, old = _kept.popitem(last=False)
            _kept_chars -= len(old)
