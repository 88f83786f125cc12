"""A page as one standalone HTML file, for a handout or a course site: the page's title,
where its numbers come from, its charts (interactive, plotly.js written inline once, so the file
opens offline in any browser) and its key numbers (the lines of what to notice).

Pure: plotly figures and strings in, an HTML string out (the Plotly bundle read from the package's
file); no streamlit import."""

import re
from collections.abc import Sequence
from html import escape

import plotly.graph_objects as go
import plotly.io as pio
from plotly.offline import get_plotlyjs

from ..spec.bundle import draws
from ..spec.paths import PLOTLY_BUNDLE
from . import chart_text

# charts keep the widths they have on screen, centred; the text reads at a print size
_STYLE = ("body{font-family:'Source Sans',system-ui,sans-serif;color:#262730;max-width:1100px;margin:2rem auto;"
          "padding:0 1rem}h1{margin-bottom:.2rem}.source{color:#808495;margin-top:0}"
          ".chart,.diagram{margin:1.5rem 0}li{margin:.3rem 0}" + chart_text.STYLE)


# a static page's charts: plotly.js 4's "Share chart..." button (showSendToCloud, on by default) uploads the
# chart, a student's text in its labels, to Plotly's cloud; it is left out, here and in the app (plots/theme.py)
OFFLINE_CONFIG = {"displaylogo": False, "responsive": True, "showSendToCloud": False}


def build(title: str, source: str, figures: Sequence[go.Figure], notes: Sequence[str],
          diagrams: Sequence[str] = ()) -> str:
    """The handout of a page: `figures` in the order drawn, each with its sentence (its accessible name)
    and its "Show the numbers" table (teaching.chart_text), `notes` (Markdown-ish lines, kept as text)
    under "Key numbers", then `diagrams` (gpt2viz.anatomy.diagram's SVG; their boxes' links, which lead into
    the app, are left out). plotly.js goes inline once, before the first chart: the app's cartesian
    bundle (1.5 MB) when it draws every chart, as every page's does, else the whole library plotly.py
    ships (4.8 MB); the file is that plus the charts' data, whatever their number."""
    specs = [untemplated(fig) for fig in figures]
    charts = [pio.to_html(spec, include_plotlyjs=False, full_html=False, default_width="100%",
                          config=OFFLINE_CONFIG, validate=False) for spec in specs]
    if charts:
        charts[0] = library(specs) + charts[0]
    key = "".join(f"<li>{escape(_plain(line))}</li>" for line in notes)
    parts = [f"<h1>{escape(title)}</h1>", f'<p class="source">{escape(source)}</p>',
             *(f'<div class="chart" role="figure" aria-labelledby="chart-{i}">{c}</div>'
               + chart_text.figure_html(spec, f"chart-{i}")
               for i, (c, spec) in enumerate(zip(charts, specs))),
             f"<h2>Key numbers</h2><ul>{key}</ul>" if notes else "",
             *(f'<div class="diagram">{unlinked(svg)}</div>' for svg in diagrams)]
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
            f"<style>{_STYLE}</style></head><body>{''.join(parts)}</body></html>")


def library(specs: Sequence[dict]) -> str:
    """plotly.js as an inline script: the cartesian bundle when it draws every one of `specs`, else the
    whole library plotly.py ships. Neither holds "</script" or "<!--", which would end the script early
    (tests/test_export.py)."""
    code = PLOTLY_BUNDLE.read_text(encoding="utf-8") if all(map(draws, specs)) else get_plotlyjs()
    return f"<script>{code}</script>"


def untemplated(fig: go.Figure | dict) -> dict:
    """The figure's JSON (a figure, or the dict of one) without its `template: null` (the app's figures
    carry their look themselves, theme.themed), which plotly.io.to_html cannot read; unvalidated, so no
    default template comes back."""
    spec = fig.to_dict() if isinstance(fig, go.Figure) else {**fig, "layout": dict(fig.get("layout", {}))}
    spec.get("layout", {}).pop("template", None)
    return spec


def unlinked(svg: str) -> str:
    """A diagram without its links: each <a href=…> of a box becomes a plain group."""
    return re.sub(r"<a\b[^>]*>", "<g>", svg).replace("</a>", "</g>")


_EMPHASIS = re.compile(r"(?<![\w*])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![\w*])")  # one *word* or *words*, in italics


def _plain(line: str) -> str:
    """A notice line without its Markdown emphasis and Streamlit's :material/...: icons."""
    for mark in ("**", "`"):
        line = line.replace(mark, "")
    line = _EMPHASIS.sub(r"\1", line)  # *followed* -> followed
    return " ".join(w for w in line.split(" ") if not (w.startswith(":material/") and w.endswith(":")))


NOT_SENTENCES = (build,  # one page's figures and notices laid out as an HTML file
                 library,  # plotly.js as an inline script
                 unlinked)  # an SVG with its links taken out
