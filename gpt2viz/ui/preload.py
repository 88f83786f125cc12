"""What the browser loads ahead of need: Streamlit's Plotly chart chunk (4.7 MB of JavaScript), where
Streamlit's element draws the app's charts (a server without static serving: ui/chart_element.py).

Streamlit fetches and compiles that chunk only when a page's first chart arrives, and a server's first
page waits seconds before its first chart (torch's import, the weights, the first run) with the browser
idle meanwhile. `plotly_script` is a script that first_paint.py draws under the preview's diagram: the
browser imports the chunk at once (the same URL, so Streamlit's own import later finds it loaded).
Measured from `streamlit run` to the whole first page (benchmarks/bench_app.py --cold-only, idle, 3
starts a run): 5.75-5.96 s before, 4.92-5.47 s after (6 starts), the diagram unchanged. Drawn with every
run's first elements instead, it slowed the diagram (2.1-3.0 s) and a new tab's view (p50 2.37 s)."""

import functools
import json
from pathlib import Path

import streamlit as st


@functools.cache
def plotly_chunk() -> str | None:
    """The file name of Streamlit's Plotly chart chunk ("PlotlyChart.<hash>.js"); None if not exactly one."""
    found = sorted((Path(st.__file__).parent / "static" / "static" / "js").glob("PlotlyChart.*.js"))
    return found[0].name if len(found) == 1 else None


def plotly_script() -> str:
    """A script that imports the chunk next to Streamlit's own main script (whatever the base URL), or ""."""
    chunk = plotly_chunk()
    if chunk is None:
        return ""
    return ("<script>(() => { const main = document.querySelector(\"script[src*='static/js/index.']\");\n"
            f"if (main) import(main.src.replace(/index\\.[^/]*\\.js.*$/, {json.dumps(chunk)})).catch(() => {{}});"
            " })();</script>")
