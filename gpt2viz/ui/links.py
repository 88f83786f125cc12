"""Links that keep the view: the selection's URL values carried to another page, in the same tab.

Streamlit opens a Markdown link in a new tab, so these are HTML anchors with target="_self" (for
st.markdown with unsafe_allow_html): the page reloads with the same text, weights, mode, block and
head, because those live in the URL. The drawn diagrams' boxes are such links too.
"""

from html import escape

import streamlit as st

from ..anatomy import diagram
from ..model.demo_model import DEMO_PATH
from ..spec.pages import BY_URL, DEFAULT, home
from ..teaching import page_text, tour
from ..teaching.prompts import prompts_for
from . import export
from .anatomy import cat_of, run_values
from .state import Selection, link_label, link_params
from .trained_view import demo_line


def view_href(url: str, **override) -> str:
    """The address of page `url` with this selection's query string (`override` replaces values)."""
    return diagram.page_href(url, {**link_params(), **override}, DEFAULT)


def anchor(label: str, url: str, **override) -> str:
    """An HTML link to page `url` that keeps the selection and the tab (out of a lesson, its label says so)."""
    return f'<a href="{escape(view_href(url, **override))}" target="_self">{escape(link_label(label))}</a>'


def diagram_links(sel: Selection, current: str) -> diagram.Links:
    """Where the diagrams' boxes go: each component's page from the registry, with the values that
    select it there (LayerNorm 2: ln=ln_2), dropout to Training; every link keeps the selection."""
    cat = cat_of(sel)
    parents = {c.id: c.parent for c in cat}
    homes = {c.id: home(c.id, parents) for c in cat}
    return diagram.Links({cid: row.url for cid, (row, _) in homes.items()} | {"dropout": "training"},
                         link_params(), current=current, default=DEFAULT,
                         selects={cid: params for cid, (_, params) in homes.items() if params})


def draw_diagram(kind: str, sel: Selection, current: str, container=st) -> None:
    """One of diagram.py's drawings (overview, block, attention, mlp) of this selection: the run's
    shapes in its mode, every box a link that keeps the selection, the current page's boxes lit."""
    extra = {"head": sel.head} if kind == "attention" else {}
    svg = getattr(diagram, kind)(cat_of(sel), sel.mode, run_values(sel, sel.mode), diagram_links(sel, current),
                                 **extra)
    container.markdown(diagram.scroll_box(svg), unsafe_allow_html=True)
    if link_label(""):  # a box cannot say it on its label
        container.caption("The boxes open their pages outside the lesson, on the lesson's weights and text.")
    export.diagram_download(svg, kind, container)


def next_stop(url: str) -> tuple[str, str] | None:
    """The tour's stop after page `url` (after Start here, its first): (its title, its address keeping
    the view); None off the tour and at its end."""
    i = -1 if url == "start" else tour.stop(url or DEFAULT)
    if i is None or i + 1 == len(tour.TOUR):
        return None
    nxt = tour.TOUR[i + 1].url
    return BY_URL[nxt].title, view_href(nxt)


def tour_next(url: str, sel: Selection) -> None:
    """On a page the tour visits: its place in the tour and a link to the next stop, keeping the view;
    the running tally of parameters met so far; where values matter and the weights are random, a
    link to this page on the demo model's text."""
    i = tour.stop(url or DEFAULT)
    if i is None:
        return
    stop = tour.TOUR[i]
    nxt = tour.TOUR[i + 1].url if i + 1 < len(tour.TOUR) else None
    parts = [anchor("Start here", "start") + f" · {stop.part}, stop {i + 1} of {len(tour.TOUR)}"]
    if nxt:
        parts.append("next: " + anchor(f"{BY_URL[nxt].title} →", nxt))
    cat = cat_of(sel)
    met, added = tour.tally({c.id: c.total for c in cat}, i)
    if stop.part == tour.TOUR[0].part and met:
        parts.append(page_text.tally_line(met, cat.root.total, added, [cat[c].title.lower() for c in stop.adds],
                                          all(c.startswith("block.") for c in stop.adds)))
    if stop.demo and sel.weights.random and DEMO_PATH.is_file():
        line = demo_line(url) if url not in BESIDE else None  # the component pages say it beside their picture
        parts.append("random weights learned nothing" + (f"; on the demo model, {line}" if line else "") + " "
                     + demo_link(url))
    st.caption(" · ".join(parts), unsafe_allow_html=True)


# the component pages that show the demo model's line beside their own picture, not in the tour's line
BESIDE = ("attention", "output", "mlp", "layernorm", "block")


def demo_link(url: str) -> str:
    """A same-tab link to page `url` on the demo model and its ready text (the pair on the patching page)."""
    prompt = prompts_for("demo")["pair" if url == "patch" else "repeat"]
    extra = {"text_b": prompt.text_b} if prompt.text_b else {}
    return anchor("see this page on the demo model →", url, weights="demo", text=prompt.text, **extra)


def demo_beside(url: str, sel: Selection) -> None:
    """On a component page with random weights: what the demo model shows on it, measured, and the
    link to this page on it, right under the picture and what to notice in it."""
    if url not in BESIDE or not sel.weights.random or (line := demo_line(url)) is None:
        return
    st.caption(f":material/school: **Trained, for contrast.** On the demo model, {line} {demo_link(url)}",
               unsafe_allow_html=True)
