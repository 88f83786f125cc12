"""How the pages fit a window from 800 px wide (a laptop) to a projector's 1280x720 and beyond:
the sidebar's width in a narrow window, and tables wider than the page."""

import streamlit as st
import streamlit.components.v2 as components

from .text import html_text

NARROW_WINDOW_PX = 1100  # below this window width the sidebar narrows to NARROW_SIDEBAR_PX
NARROW_SIDEBAR_PX = 224  # from Streamlit's 300 px: 800 px windows keep 576 px for the page
# the page's content in an 800 px window: 800 - NARROW_SIDEBAR_PX - 2 x 16 px of padding
NARROWEST_PAGE_PX = 800 - NARROW_SIDEBAR_PX - 32
# a phone's window (390 px wide, as a 6.1" phone's): no sidebar, 16 px of padding each side, and columns
# stacked, so every chart is this wide. Titles and captions are wrapped to it outside presentation mode
# (plotly cuts a title at the figure's edge; the server does not know the window's width)
PHONE_PAGE_PX = 390 - 32
# presented (ui/present.py): no sidebar, 2.5rem of padding each side at 20 px a rem, from 1280 px up
PROJECTOR_PAGE_PX = 1280 - 100
CELL_CHAR_PX = 7.5  # a character of a table's cell (14 px), generously; plus CELL_PAD_PX each side
CELL_PAD_PX = 12
# "⇆", not an icon: the icon font's name for it ("swap_horiz") showed as text until the font loaded
SCROLL_NOTE = ("⇆ {n} columns: where the window is too narrow for them, the table scrolls "
               "sideways; its first column stays.")


def column_widths(rows: list[dict]) -> dict[str, int]:
    """Each column as wide (px) as its header or its longest cell: nothing in it is cut with "…"."""
    return {col: int(2 * CELL_PAD_PX + CELL_CHAR_PX * max(len(str(col)), *(len(str(r[col])) for r in rows)))
            for col in rows[0]}


def scrolls(widths: dict[str, int]) -> bool:
    """Whether a table of these column widths (px) is wider than the page in an 800 px window."""
    return sum(widths.values()) > NARROWEST_PAGE_PX


TABLE_CLASS = "gpt2viz-table"  # app.py styles it; assets/a11y.js names it a region when it scrolls sideways


def table_html(rows: list[dict]) -> str:
    """The rows (dicts of the same keys, in order) as one line of HTML for st.markdown: a header row, no
    index column, every cell's text escaped (ui/text.html_text)."""
    head = "".join(f'<th scope="col">{html_text(k)}</th>' for k in rows[0])
    body = "".join("<tr>" + "".join(f"<td>{html_text(r[k])}</td>" for k in rows[0]) + "</tr>" for r in rows)
    return f'<div class="{TABLE_CLASS}"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def wide_table(rows: list[dict], **kwargs) -> None:
    """A table that may be wider than the page: every cell whole, the first column pinned
    at the left while the rest scroll under it, and a line above that says so when it may."""
    if not rows:
        return
    widths = column_widths(rows)
    config = {col: st.column_config.Column(width=px, pinned=i == 0) for i, (col, px) in enumerate(widths.items())}
    if scrolls(widths):  # a table that fits the narrowest page says nothing of scrolling
        st.caption(SCROLL_NOTE.format(n=len(rows[0])))
    st.dataframe(rows, hide_index=True, column_config=config, **kwargs)


# a heading's id, scrolled to the top of the window, from the page's own document (no frame); again while
# the run draws what follows it, for a second and a half (with less below it, the page could not scroll so
# far), unless the reader scrolls first
_SCROLL = components.component("gpt2viz-scroll-to", isolate_styles=False, js="""
export default function ({ data }) {
  const scroll = () => document.getElementById(data.anchor)?.scrollIntoView({ block: "start" });
  const timers = [0, 150, 400, 800, 1500].map(ms => setTimeout(scroll, ms));
  const stop = () => timers.forEach(clearTimeout);
  for (const e of ["wheel", "touchmove"]) window.addEventListener(e, stop, { once: true });
}
""")


def scroll_to(anchor: str, n: int = 0) -> None:
    """Scroll the window to the heading drawn with `anchor` (st.subheader(..., anchor=...)) above this call.
    `n`: a new number each time (the n-th click): a component of the same key is not run again."""
    _SCROLL(data={"anchor": anchor}, key=f"scroll-{anchor}-{n}", height=0)
