"""What leaves the app: a chart's picture, a drawn diagram, the whole page as a handout.

- Every chart's camera button saves an SVG at a projector's size (`image_options`); the figure
  already carries where its numbers come from in its corner (anatomy.plot), so the picture does too.
- A drawn diagram downloads as the SVG the page shows (`diagram_download`).
- "Download this page" writes one standalone HTML file (gpt2viz.teaching.handout) of the charts and notices
  this run drew. They are recorded as the page draws them (`record`, `notes`), and the file is built
  only when the button is clicked: it is over a megabyte (the Plotly bundle it carries is 1.5 MB).
"""

import re
from collections.abc import Callable
from dataclasses import dataclass, field

import plotly.graph_objects as go
import streamlit as st

from ..spec.pages import BY_URL
from ..teaching import handout

# the picture's layout size and its scale: a 16:9 slide, 1600 x 900 px once scaled
IMAGE_WIDTH, IMAGE_HEIGHT, IMAGE_SCALE = 1280, 720, 1.25
_KEY = "_page_record"
HANDOUT_HELP = ("One HTML file with this page's charts (interactive, working offline) and its key numbers, "
                "for a handout or a course site. 1.5 MB and more: the charting library is inside.")


@dataclass
class PageRecord:
    """What this run of a page drew, in order: its charts (figure, caption) and its notice lines."""
    url: str
    title: str
    source: str  # where the page's numbers come from (weights, text, mode)
    charts: list[tuple[go.Figure, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    diagrams: list[str] = field(default_factory=list)  # the drawn diagrams' SVG
    # a chart of this run was Streamlit's element (ui/anatomy.plot): so are the rest, one Plotly a tab
    streamlit_charts: bool = False


def begin(url: str, title: str, source: str) -> None:
    """A new, empty record for this run of page `url` (call before the page runs)."""
    st.session_state[_KEY] = PageRecord(url, title, source)


def _page() -> PageRecord | None:
    return st.session_state.get(_KEY)


def record(fig: go.Figure, caption: str) -> None:
    """A chart as its page draws it (before the browser's theme), with its caption of where its numbers come from."""
    if (page := _page()) is not None:
        page.charts.append((fig, caption))


def streamlit_charts(drawn: bool = False) -> bool:
    """True once a chart of this run was drawn by Streamlit's element; `drawn`: one is, from now on."""
    page = _page()
    if page is not None and drawn:
        page.streamlit_charts = True
    return page is not None and page.streamlit_charts


def charts_recorded() -> int:
    """How many charts this run has drawn so far."""
    page = _page()
    return len(page.charts) if page else 0


def notes(lines: list[str]) -> None:
    """The key numbers the page says about a chart."""
    if (page := _page()) is not None:
        page.notes.extend(lines)


def slug(text: str) -> str:
    """A file name's part: "Attention · block 1 head 2" -> "attention-block-1-head-2"."""
    return re.sub(r"[^a-z0-9]+", "-", re.sub(r"<[^>]+>", " ", text).lower()).strip("-")[:60]


def image_options(layout: dict) -> dict:
    """Plotly's `toImageButtonOptions` for a figure of this layout (plotly JSON): an SVG of 1600 x 900 px
    (a figure taller than a slide keeps its height), named after the page and the chart's title
    ("attention-block-1-head-2.svg": the page's name once where the title starts with it)."""
    page = _page()
    where, title = slug(page.url) if page else "gpt2viz", slug((layout.get("title") or {}).get("text") or "")
    name = title if title == where or title.startswith(where + "-") else "-".join(s for s in (where, title) if s)
    return {"format": "svg", "filename": name, "width": IMAGE_WIDTH, "scale": IMAGE_SCALE,
            "height": max(IMAGE_HEIGHT, layout.get("height") or 0)}


def diagram_download(svg: str, name: str, container=st) -> None:
    """The drawn diagram as a file: the same SVG, its boxes' links relative to the app. The page's
    handout shows it too."""
    page = _page()
    if page is not None:
        page.diagrams.append(svg)
    file_name = f"{slug(page.url) if page else 'gpt2viz'}-{name}-diagram.svg"
    container.download_button("Diagram (.svg)", svg, file_name=file_name, mime="image/svg+xml",
                              key=f"diagram-{name}", icon=":material/download:", on_click="ignore",
                              type="tertiary")


def page_html(page: PageRecord, frame: Callable[[go.Figure, str], go.Figure]) -> str:
    """The handout of a recorded page (gpt2viz.teaching.handout.build), its charts framed by `frame`."""
    return handout.build(page.title, page.source, [frame(fig, caption) for fig, caption in page.charts], page.notes,
                         page.diagrams)


def download_page(frame: Callable[[go.Figure, str], go.Figure], container=st) -> None:
    """"Download this page": the handout of what this run draws, built when clicked. `frame(fig,
    caption)`: a chart as the page shows it on a light background, its caption in the corner."""
    page = _page()
    row = BY_URL.get(page.url) if page is not None else None
    if page is None or row is not None and not row.handout:  # a page of text or forms: an empty handout
        return

    def data() -> str:
        return page_html(page, frame)

    container.download_button("Download this page (.html)", data, file_name=f"gpt2viz-{slug(page.url)}.html",
                              mime="text/html", key="handout", icon=":material/download:", on_click="ignore",
                              help=HANDOUT_HELP)
