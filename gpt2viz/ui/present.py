"""Presentation mode: `present=1` in the URL, or the sidebar's toggle, for a lecture.

The sidebar and its button are hidden, the type is larger, the page's first chart fills the first
screen (at 1280 x 720 and larger), and a bar in the top right corner, always in view, holds a way
back ("Exit presentation": the toggle itself sits in the hidden sidebar) and a large link to the
next stop. Which stop is next is the caller's: the tour's (links.next_stop), or a lesson's, whose bar
also holds a large "back" and the class's place ("stop 3 of 6 · Output"), and whose stop's note
stands under the bar as a caption (the chart below it keeps to the first screen: `chrome`'s
`note_lines`).
"""

import math
from contextlib import nullcontext
from html import escape

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from ..plots.axes import LABEL_PITCH, MODEBAR_PX, TICK_PX, UPRIGHT_ANGLES, short
from ..teaching.chart_text import as_array

FONT_SCALE = 1.4  # the charts' type, as the page's (16 px -> 20 px) and a little more: read from the back row
# ... and none of it smaller than the page's body text presented (html's 20 px, _CSS): a 13 px tick label was 18.2 px,
# a value in a cell 15.4 px, the source line 15 px (tests/test_browser_projector_type.py measures them at 1280x720)
BODY_PX = 20
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
/* narrower still, the top bar's four menus end at 488 px: the bar keeps right of them (before, at 800 px, the way
   back lay over the "Reference" menu), as far right as the window goes, the next stop's name cut short where it has
   no room */
@media (max-width: 900px) {
  .st-key-present-bar {right: 1rem; max-width: calc(100vw - 25rem - 1rem); flex-wrap: nowrap}
  .st-key-present-bar [data-testid='stElementContainer']:has(a.present-next) {min-width: 0; flex-shrink: 1}
  .st-key-present-bar a.present-next {display: block; overflow: hidden; text-overflow: ellipsis}
}
@media (max-width: 767px) {  /* the menus folded away (into the hidden sidebar): the bar has the width */
  .st-key-present-bar {max-width: calc(100vw - 2rem)}
}
/* a phone (a presented link shared with the class): the charts' type is the projector's, so they keep a
   projector's narrowest width and scroll sideways, rather than squeeze their plots between their labels */
@media (max-width: 640px) {
  [data-testid='stMainBlockContainer'] {padding-left: 1rem; padding-right: 1rem}
  [data-testid='stElementContainer']:has(:is([data-testid='stPlotlyChart'], .gpt2viz-chart)) {overflow-x: auto}
  [data-testid='stElementContainer'] > [data-testid='stFullScreenFrame']:has(:is([data-testid='stPlotlyChart'],
    .gpt2viz-chart)) {min-width: 32rem}
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


def caption_scale(factor: float) -> float:
    """How much larger a chart's 11 px source line is drawn when its type is `factor` times larger: no smaller
    than the body text where the type is scaled (presented)."""
    return max(factor, BODY_PX / 11) if factor != 1 else 1.0


def _scale_fonts(node, factor: float, floor: float = 0, in_font: bool = False) -> None:
    """Every font size in a figure's JSON (a "size" inside a *font dict), multiplied by `factor`, and no
    smaller than `floor`. Lists of numbers (the data) are not walked."""
    if isinstance(node, dict):
        for key, value in node.items():
            if in_font and key == "size" and isinstance(value, int | float):
                node[key] = max(round(value * factor, 1), floor)
            else:
                _scale_fonts(value, factor, floor, key.endswith("font"))
    elif isinstance(node, list) and node and isinstance(node[0], dict):
        for item in node:
            _scale_fonts(item, factor, floor, in_font)


def _labels_to_the_browser(layout: dict, factor: float, floor: float) -> None:
    """A token axis that wrote each of its labels (axes.token_axis), at a size that `floor` makes larger than
    they were fitted to (or shrunk to keep them all), left to the browser instead (as axes.fit_rows does): at
    `floor` it writes as many as its length has room for, every k-th; hover still names every row."""
    for name, axis in layout.items():
        if not (name[1:5] == "axis" and isinstance(axis, dict) and axis.get("tickmode") == "array"):
            continue
        size = (axis.get("tickfont") or {}).get("size")
        vals, text = axis.get("tickvals") or (), axis.get("ticktext") or ()
        if axis.get("type") == "category" and size is not None and size * factor < floor and \
                list(text) == [short(str(v)) for v in vals]:
            axis.update(tickmode="auto", tickvals=None, ticktext=None)


def _plot_px(layout: dict) -> float | None:
    """The height of a figure's plot area (between its top and bottom margins), or None with no height set."""
    height, margin = layout.get("height"), layout.get("margin") or {}
    return height - margin.get("t", 100) - margin.get("b", 80) if height else None


def _room_for_rows(layout: dict, floor: float, plot_px: float | None) -> None:
    """A figure drawn at its own height made as much taller as its margins grew for the larger type, so that its
    plot area keeps `plot_px` (its height before), and taller still where a y axis whose rows each carry a label
    (bars beside their tokens, a map's heads) has less than LABEL_PITCH `floor`-sized labels a row in its panel
    (its domain's share of the plot area). Before, the margins took their growth from the plot, and only a figure
    of one plot was made taller for its rows: presented, a decode page's map of 12 heads had 11 px a row for 20 px
    labels."""
    if not plot_px or plot_px <= 0:
        return
    need = plot_px
    for name, axis in layout.items():
        rows = len(axis.get("tickvals") or ()) if name.startswith("yaxis") and isinstance(axis, dict) else 0
        if rows >= 2:
            low, high = axis.get("domain") or (0, 1)
            need = max(need, rows * LABEL_PITCH * floor / (high - low))
    margin = layout.get("margin") or {}
    layout["height"] = round(margin.get("t", 100) + margin.get("b", 80) + need)


def _upright_labels(layout: dict) -> None:
    """Category axes whose labels the browser may turn 45° turned upright instead (axes.UPRIGHT_ANGLES), with
    the margin they need measured by the browser: at `floor` size, labels it found room for at 45° touched."""
    for name, axis in layout.items():
        if name.startswith("xaxis") and isinstance(axis, dict) and -45 in (axis.get("autotickangles") or ()):
            axis.update(autotickangles=list(UPRIGHT_ANGLES), automargin=True)


def _nice_below(x: float) -> float:
    """The largest 1, 2 or 5 times a power of ten that is at most x (x > 0)."""
    power = 10.0 ** math.floor(math.log10(x))
    return next(m * power for m in (5, 2, 1) if m * power <= x)


def _fewer_ticks_on_short_panels(spec: dict) -> None:
    """Value axes of panels stacked three or more high (LayerNorm's stages) write one tick, a round number
    inside the panel's values (0.05 on one, 2 on the next: the panels' scales are the lesson): at `floor` size,
    the four or five the browser chose for a panel a fifth of the screen high touched, and two still did."""
    layout = spec["layout"]
    axes = {name: axis for name, axis in layout.items() if name.startswith("yaxis") and isinstance(axis, dict)}
    if len(axes) < 3:
        return
    for name, axis in axes.items():
        if axis.get("type") not in (None, "linear", "-") or axis.get("tickmode") not in (None, "auto"):
            continue
        ref = "y" + name[5:]
        values = [np.asarray(as_array(t.get("y")), dtype=float) for t in spec.get("data") or ()
                  if (t.get("yaxis") or "y") == ref and t.get("y") is not None]
        values = [v[np.isfinite(v)] for v in values]
        far = max((float(x) for v in values if v.size for x in (v.max(), v.min())), key=abs, default=0.0)
        if far:  # on the side the values reach farthest, inside them
            nice = math.copysign(_nice_below(abs(far)), far)
            axis.update(tickmode="array", tickvals=[nice], ticktext=[f"{nice:g}"])  # one: a fifth of a screen
        else:
            axis["nticks"] = 2


def scaled_fonts(fig: go.Figure, factor: float, floor: float | None = None) -> go.Figure:
    """A copy of `fig` as `scaled_spec` leaves its dict."""
    return go.Figure(scaled_spec(fig.to_dict(), factor, floor), _validate=False)


def scaled_spec(spec: dict, factor: float, floor: float | None = None) -> dict:
    """`spec` (a figure's plotly JSON dict, changed in place and returned) with every font size `factor`
    times larger and at least `floor` (BODY_PX when the type is scaled at all: none of a presented chart's
    text is smaller than the page's), and the room above its plot (its title, subtitle, a legend or panel
    titles there; not the toolbar's strip) too: a subtitle at the projector's size overlapped the plot's
    first tick label, and a legend above it the plot."""
    floor = (BODY_PX if factor != 1 else 0) if floor is None else floor
    layout = spec.setdefault("layout", {})
    plot_px = _plot_px(layout)
    _labels_to_the_browser(layout, factor, floor)
    _scale_fonts(spec, factor, floor)
    margin = layout.get("margin") or {}
    if margin.get("t", 0) > MODEBAR_PX:
        margin["t"] = round(MODEBAR_PX + (margin["t"] - MODEBAR_PX) * factor)
    if floor:  # the tick labels' room below and left of the plot: as much more as the floor adds to them
        grow = {side: max(1.0, floor / (TICK_PX * factor)) for side in ("b", "l")}
        # left of a y axis whose margin was sized from its labels (axes.fixed_margins: no automargin), as much
        # more as its labels are drawn larger: at 1.1 times for labels 1.5 times larger, the axis title lay
        # over a decode map's one row label
        if any(name.startswith("yaxis") and isinstance(axis, dict) and axis.get("automargin") is False
               for name, axis in layout.items()):
            grow["l"] = max(factor, floor / TICK_PX)
        for side, times in grow.items():
            if margin.get(side):
                margin[side] = round(margin[side] * times)
        _upright_labels(layout)
        _room_for_rows(layout, floor, plot_px)
        _fewer_ticks_on_short_panels(spec)
        for trace in spec.get("data") or ():
            if trace.get("type") == "bar" and trace.get("text") is not None:
                trace["constraintext"] = "none"  # a bar's value at `floor`, not shrunk to the bar's thickness
    return spec


def folded(presenting: bool, label: str = "About this page"):
    """Where a page's introduction goes: in presentation mode a closed one-line expander, so that the page's
    first chart starts in the first screen (the lecturer says the introduction); else the page itself."""
    return st.expander(label, icon=":material/info:") if presenting else nullcontext()


MIN_PLOT_PX = 240  # a filled chart's plot area at least: twelve rows at the projected type, two colour bars' ticks
AUTOMARGIN_PX = 48  # what plotly's automatic margins add to a figure's own, for tick labels and legends (7-46 px seen)


def screen(fill: bool, frame_px: int = 0):
    """The box the page's first chart fills in presentation mode, the first screen below the title: the
    chart is drawn with height="stretch" and no height of its own. `frame_px`: the chart's own margins (its
    titles above the plot, its tick labels below): the box is at least those and MIN_PLOT_PX tall, so that
    on a small projector under a lesson's note the chart runs past the first screen rather than squeeze its
    plot to a strip (a map 82 px tall, its colour bars' ticks on top of each other, at 1280 x 720)."""
    if not fill:
        return nullcontext()
    if frame_px:
        least = int(frame_px) + AUTOMARGIN_PX + MIN_PLOT_PX
        st.html(f"<style>.st-key-present-chart {{min-height: max(20rem, {least}px) !important}}</style>")
    return st.container(key="present-chart")
