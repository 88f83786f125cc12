"""Links that keep the view: the shared controls' URL values carried to another page, in the same tab.

Streamlit opens a Markdown link in a new tab, so these are HTML anchors with target="_self" (for
st.markdown with unsafe_allow_html): the page reloads with the same text, weights, mode, block and
head, because those live in the URL.
"""

from html import escape

import streamlit as st

from .. import diagram, tour
from .pages import DEFAULT

VIEW_KEYS = ("text", "weights", "model", "seed", "checkpoint", "mode", "block", "head")  # the shared controls


def view_query() -> dict[str, str]:
    """The shared controls' values in the current URL (a value at its default is not in the URL)."""
    return {k: st.query_params[k] for k in VIEW_KEYS if k in st.query_params}


def view_href(url: str, **override) -> str:
    """The address of page `url` with this view's query string (`override` replaces values)."""
    return diagram.page_href(url, {**view_query(), **override}, DEFAULT)


def anchor(label: str, url: str, **override) -> str:
    """An HTML link to page `url` that keeps the view and the tab."""
    return f'<a href="{escape(view_href(url, **override))}" target="_self">{escape(label)}</a>'


def diagram_links(current: str) -> diagram.Links:
    """Where the diagrams' boxes go: each component's page (dropout: Training), with this view."""
    from .anatomy import HOME  # the page of each component

    return diagram.Links({**HOME, "dropout": "training"}, view_query(), current=current, default=DEFAULT)


def tour_next(url: str) -> None:
    """On a page the tour visits: its place in the tour and a link to the next stop, keeping the view."""
    from .pages import TITLES

    i = tour.stop(url or DEFAULT)
    if i is None:
        return
    nxt = tour.TOUR[i + 1][0] if i + 1 < len(tour.TOUR) else None
    parts = [anchor("Start here", "start") + f" · stop {i + 1} of {len(tour.TOUR)}"]
    if nxt:
        parts.append("next: " + anchor(f"{TITLES[nxt]} →", nxt))
    st.caption(" · ".join(parts), unsafe_allow_html=True)


def draw_diagram(kind: str, view, current: str) -> None:
    """One of diagram.py's drawings (overview, block, attention, mlp) of this view: the run's shapes
    in its mode, every box a link that keeps the view, the boxes of page `current` highlighted."""
    from .anatomy import cat_of, run_values

    extra = {"head": view.head} if kind == "attention" else {}
    svg = getattr(diagram, kind)(cat_of(view), view.mode.value, run_values(view, view.mode), diagram_links(current),
                                 **extra)
    st.markdown(svg, unsafe_allow_html=True)
