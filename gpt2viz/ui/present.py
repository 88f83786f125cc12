"""Presentation mode: `present=1` in the URL, or the sidebar's toggle, for a lecture.

The sidebar and its button are hidden, the type is larger, the page's first chart fills the first
screen (at 1280 x 720 and larger), and a bar in the top right corner, always in view, holds a way
back ("Exit presentation": the toggle itself sits in the hidden sidebar) and a large link to the
next stop. Which stop is next is the caller's: the tour's (links.next_stop), or a lesson's.
"""

from contextlib import nullcontext
from html import escape

import plotly.graph_objects as go
import streamlit as st

FONT_SCALE = 1.4  # the charts' type, as the page's (16 px -> 20 px) and a little more: read from the back row
KEY = "present"  # the toggle's key and its URL key; links that keep the view carry it (state.SELECTION_KEYS)

_CSS = """<style>
[data-testid='stSidebar'], [data-testid='stSidebarCollapsedControl'], [data-testid='stExpandSidebarButton']
  {display: none !important}
html {font-size: 20px}
[data-testid='stMainBlockContainer'] {max-width: none; padding-left: 2.5rem; padding-right: 2.5rem}
.st-key-present-bar {position: fixed; top: .45rem; right: 3.5rem; z-index: 1000000; width: auto !important;
  align-items: center; background: var(--st-background-color, transparent)}
.st-key-present-chart {height: calc(100vh - 14rem) !important; min-height: 22rem; flex: none !important}
.st-key-present-chart > [data-testid='stElementContainer'] {height: 100% !important}
h1 {font-size: 2.4rem !important; padding-top: 0 !important}
.st-key-present-bar a.present-next {font-size: 1.5rem; font-weight: 700; text-decoration: none; padding: .1rem .8rem;
  border-radius: .5rem; border: 2px solid currentColor; white-space: nowrap}
</style>"""


def toggle(container) -> bool:
    """The URL-bound switch (declare it once per run, with the other controls)."""
    return container.toggle("Presentation mode", key=KEY, bind="query-params",
                            help="Hides this sidebar, enlarges the type and the first chart, and shows a large "
                                 "link to the next stop: for a projector. The URL keeps it (present=true).")


def _exit() -> None:
    st.session_state[KEY] = False


def chrome(next_stop: tuple[str, str] | None) -> None:
    """The page's presentation look, the way back, and a large link to `next_stop` (its label and its
    address, opened in this tab) when there is one."""
    st.html(_CSS)
    with st.container(key="present-bar", horizontal=True, gap="small"):
        st.button("Exit presentation", key="present-exit", on_click=_exit, type="tertiary",
                  icon=":material/close_fullscreen:")
        if next_stop:
            label, href = next_stop
            st.markdown(f'<a class="present-next" href="{escape(href)}" target="_self">Next: {escape(label)} →</a>',
                        unsafe_allow_html=True)


def _scale_fonts(node, factor: float, in_font: bool = False) -> None:
    """Every font size in a figure's JSON (a "size" inside a *font dict), multiplied by `factor`. Lists
    of numbers (the data) are not walked."""
    if isinstance(node, dict):
        for key, value in node.items():
            if in_font and key == "size" and isinstance(value, int | float):
                node[key] = round(value * factor, 1)
            else:
                _scale_fonts(value, factor, key.endswith("font"))
    elif isinstance(node, list) and node and isinstance(node[0], dict):
        for item in node:
            _scale_fonts(item, factor, in_font)


def scaled_fonts(fig: go.Figure, factor: float) -> go.Figure:
    """A copy of `fig` whose every font size is `factor` times larger."""
    spec = fig.to_dict()
    _scale_fonts(spec, factor)
    return go.Figure(spec, _validate=False)


def screen(fill: bool):
    """The box the page's first chart fills in presentation mode, the first screen below the title: the
    chart is drawn with height="stretch" and no height of its own."""
    return st.container(key="present-chart") if fill else nullcontext()
