"""Every chart in words and in numbers, under the chart: its sentence and its "Show the numbers"
table (gpt2viz.teaching.chart_text builds both from the figure's own data). assets/a11y.js gives the
chart's box role="figure" and the sentence as its accessible name."""

import streamlit as st

from ..teaching import chart_text


def in_words(spec: dict, ident: str, folded: bool = False) -> None:
    """Under a chart just drawn: its sentence (element id `ident`, unique on the page) and its table,
    folded, its table put in the page when the fold is opened (assets/a11y.js); `folded`: the sentence folded
    too (presentation mode, where the chart fills the screen)."""
    st.html(chart_text.figure_html(spec, ident, folded=folded, lazy=True))
