"""Figures are serialised by orjson: it is installed (requirements.txt pins it), plotly's "auto" engine
picks it, and the JSON Streamlit's st.plotly_chart sends is what plotly.io.to_json makes with it."""

import re
from pathlib import Path

import plotly.io
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]


def test_orjson_is_pinned_and_installed():
    import orjson

    pins = dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)", (ROOT / "requirements.txt").read_text(), re.M))
    assert pins.get("orjson") == orjson.__version__


def test_plotly_serialises_with_orjson(monkeypatch):
    """The engine plotly.io.to_json uses when the caller names none (Streamlit names none) calls orjson."""
    import orjson
    import plotly.graph_objects as go

    assert plotly.io.json.config.default_engine in ("auto", "orjson")
    used, real = [], orjson.dumps

    def dumps(*args, **kwargs):
        used.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(orjson, "dumps", dumps)
    plotly.io.to_json(go.Figure(go.Heatmap(z=[[1.0, 2.0], [3.0, 4.0]])), validate=False)
    assert used, "plotly.io.to_json did not call orjson.dumps"


def test_the_charts_are_sent_as_plotlys_orjson_json(monkeypatch):
    """A chart's JSON (the app's box, plots/chart_box.py, as st.plotly_chart's spec) is plotly.io.to_json's
    output with engine "auto" (then orjson): spied on the Overview page's first run on the tiny model."""
    engines = []
    real = plotly.io.to_json

    def spy(fig, *args, engine=None, **kwargs):
        engines.append(engine or plotly.io.json.config.default_engine)
        return real(fig, *args, engine=engine, **kwargs)

    monkeypatch.setattr(plotly.io, "to_json", spy)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params["model"] = "tiny"
    at.run()
    assert not at.exception
    assert engines and set(engines) <= {"auto", "orjson"}
