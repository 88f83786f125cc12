"""Where a finished chart is the app's own box (plots/chart_box.py), drawn in the browser by assets/charts.js
with Plotly's cartesian bundle (static/plotly-cartesian.min.js), instead of st.plotly_chart.

Why: Streamlit's chart element carries Plotly's full bundle (4.85 MB) in a chunk that every new tab
evaluates, 790 ms of a new tab's main thread (a Chrome trace, docs/performance.md). Every chart this app
draws is a bar, heatmap or scatter, which the cartesian bundle draws (1.50 MB, plotly.js v4.1.1, the
version plotly 7.1.0 writes its figures for). Streamlit's element stays where the box cannot stand in:
a chart that answers clicks (on_select), the projector's chart that fills the screen, a trace the bundle
lacks, and a server whose static serving is off (started without the project's settings,
`server.enableStaticServing`)."""

import functools
import json

import streamlit as st

from ..spec.paths import PLOTLY_BUNDLE


def available() -> bool:
    """True where Streamlit serves the app's static/ folder and the bundle is there (asked for every chart:
    the option is read each time, the file looked for once)."""
    return bool(st.get_option("server.enableStaticServing")) and _bundle_shipped()


@functools.cache
def _bundle_shipped() -> bool:
    return PLOTLY_BUNDLE.is_file()


# pages whose first chart answers clicks (drawn by Streamlit's element, and so the page's other charts:
# ui/anatomy.plot), at the default text; tests/test_app.py checks every page against it
STREAMLITS_FIRST = ("attention",)


@functools.cache
def later_script() -> str:
    """A script that names the pages whose tab needs the app's bundle late or never (their URLs; "" for the
    default page's address when it is one): the registry's pages without charts and STREAMLITS_FIRST. On
    them assets/charts.js loads it only when a box comes."""
    from ..spec.pages import DEFAULT, PAGES

    later = {row.url for row in PAGES if not row.charts} | set(STREAMLITS_FIRST)
    urls = sorted(later) + [""] * (DEFAULT in later)
    return f"<script>window.gpt2vizLater = {json.dumps(urls)};</script>"
