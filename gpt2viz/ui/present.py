"""Presentation mode: `present=1` in the URL, or the sidebar's toggle, for a lecture.

The sidebar and its button are hidden, the type is larger, the page's first chart fills the first
screen (at 1280 x 720 and larger), and a bar in the top right corner, always in view, holds a way
back ("Exit presentation": the toggle itself sits in the hidden sidebar) and a large link to the
next stop. Which stop is next is the caller's: the tour's (links.next_stop), or a lesson's, whose bar
also holds a large "back" and the class's place ("stop 3 of 6 · Output"), and whose stop's note
stands under the bar as a caption (the chart below it keeps to the first screen: `chrome`'s
`note_lines`).
"""

from contextlib import nullcontext
from html import escape

import plotly.graph_objects as go
import streamlit as st

from ..plots.axes import MODEBAR_PX

FONT_SCALE = 1.4  # the charts' type, as the page's (16 px -> 20 px) and a little more: read from the back row
KEY = "present"  # the toggle's key and its URL key; links that keep the view carry it (state.SELECTION_KEYS)

_CSS = """<style>
[data-testid='stSidebar'], [data-testid='stSidebarCollapsedControl'], [data-testid='stExpandSidebarButton']
  {display: none !important}
html {font-size: 20px}
[data-testid='stMainBlockContainer'] {max-width: none; padding-left: 2.5rem; padding-right: 2.5rem}
.st-key-present-bar {position: fixed; top: .45rem; right: 3.5rem; z-index: 1000000; width: auto !important;
  align-items: center; background: var(--st-background-color, transparent)}
.st-key-present-chart {height: calc(100vh - 14rem - var(--present-note, 0rem)) !important; min-height: 20rem;
  flex: none !important}
.st-key-present-chart > [data-testid='stElementContainer'] {height: 100% !important}
h1 {font-size: 2.4rem !important; padding-top: 0 !important}
.st-key-present-bar a.present-next, .st-key-present-bar a.present-back {font-size: 1.5rem; font-weight: 700;
  text-decoration: none; padding: .1rem .8rem; border-radius: .5rem; border: 2px solid currentColor;
  white-space: nowrap}
.st-key-present-bar [data-testid='stPageLink'] p {font-size: 1.5rem; font-weight: 700}
.st-key-present-bar .present-place {font-size: 1.1rem; font-weight: 600; white-space: nowrap}
/* a window narrower than a projector's: the bar keeps to the right of the top bar's navigation */
@media (max-width: 1100px) {
  .st-key-present-bar [data-testid='stElementContainer']:has(.present-place) {display: none}
  .st-key-present-exit [data-testid='stMarkdownContainer'] {position: absolute; width: 1px; height: 1px;
    overflow: hidden; clip-path: inset(50%); white-space: nowrap}  /* its word out of sight, still its name */
  .st-key-present-bar a.present-next, .st-key-present-bar a.present-back {font-size: 1rem; padding: 0 .4rem}
}
.st-key-present-note {margin-bottom: .6rem}
.st-key-present-note p {font-size: 1.05rem; line-height: 1.5; margin: 0; color: var(--st-gray-color, #6b6f80)}
</style>"""
NOTE_LINE_REM = 1.6  # a line of the stop's note (1.05rem type, 1.5 line height): what the chart gives up for it
QUESTION_REM = 3.2  # the page's question under its title, which the note stands for (the lecturer's question)
# the note's characters per line at the narrowest projector (1280 px less 2 x 2.5rem of padding, at ~10 px a
# character): the lines it takes there, an upper bound at any larger screen
NOTE_CHARS_PER_LINE = 110


def toggle(container) -> bool:
    """The URL-bound switch (declare it once per run, with the other controls)."""
    return container.toggle("Presentation mode", key=KEY, bind="query-params",
                            help="Hides this sidebar, enlarges the type and the first chart, and shows a large "
                                 "link to the next stop: for a projector. The URL keeps it (present=true).")


def _exit() -> None:
    st.session_state[KEY] = False


def _link(cls: str, text: str, href: str) -> None:
    st.markdown(f'<a class="{cls}" href="{escape(href)}" target="_self">{escape(text)}</a>', unsafe_allow_html=True)


def chrome(next_stop: tuple[str, object] | None, back=None, place: str = "", note: str = "", link=_link) -> None:
    """The page's presentation look, the way back, and a large link to `next_stop` (its label and its
    address, opened in this tab) when there is one. A lesson's stop adds `back` (the previous stop),
    `place` (where the class is) and its `note`, drawn under the bar; `link(css_class, text, target)`
    draws a link to `back` or to next_stop's target (by default an address)."""
    lines = -(-len(note) // NOTE_CHARS_PER_LINE) if note else 0
    st.html(_CSS + (f"<style>:root {{--present-note: {lines * NOTE_LINE_REM + 1 - QUESTION_REM:.1f}rem}}\n"
                    ".st-key-page-question {display: none}</style>" if lines else ""))
    with st.container(key="present-bar", horizontal=True, gap="small"):
        st.button("Exit" if place else "Exit presentation", key="present-exit", on_click=_exit, type="tertiary",
                  icon=":material/close_fullscreen:", help="Exit presentation mode: the sidebar comes back")
        if back is not None:
            link("present-back", "← Back", back)
        if place:
            st.markdown(f'<span class="present-place">{escape(place)}</span>', unsafe_allow_html=True)
        if next_stop:
            label, href = next_stop
            link("present-next", f"Next: {label} →" if label else "Next →", href)
    if note:
        st.container(key="present-note").markdown(note)


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
    """A copy of `fig` whose every font size is `factor` times larger, and the room above its plot (its
    title, subtitle, a legend or panel titles there; not the toolbar's strip) too: a subtitle at the
    projector's size overlapped the plot's first tick label, and a legend above it the plot."""
    spec = fig.to_dict()
    _scale_fonts(spec, factor)
    margin = spec.setdefault("layout", {}).get("margin") or {}
    if margin.get("t", 0) > MODEBAR_PX:
        margin["t"] = round(MODEBAR_PX + (margin["t"] - MODEBAR_PX) * factor)
    return go.Figure(spec, _validate=False)


def folded(presenting: bool, label: str = "About this page"):
    """Where a page's introduction goes: in presentation mode a closed one-line expander, so that the page's
    first chart starts in the first screen (the lecturer says the introduction); else the page itself."""
    return st.expander(label, icon=":material/info:") if presenting else nullcontext()


def screen(fill: bool):
    """The box the page's first chart fills in presentation mode, the first screen below the title: the
    chart is drawn with height="stretch" and no height of its own."""
    return st.container(key="present-chart") if fill else nullcontext()
