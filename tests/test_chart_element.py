"""The app's own chart box (gpt2viz/plots/chart_box.py, ui/chart_element.py): its figure is JSON in an
attribute that no text breaks out of and the sanitiser keeps, read back exactly; the bundle it loads is the
plotly.js version plotly.py writes figures for and draws the traces the app's check lists; and it stands in
for st.plotly_chart only where static serving is on. In the browser: test_browser_charts.py."""

import json
import re

import plotly.io as pio
import plotly.offline
import pytest
from exported import PAYLOADS
from streamlit import config as st_config

from gpt2viz.plots.chart_box import ATTRIBUTE, DEFAULT_HEIGHT_PX, drawn, element_html
from gpt2viz.spec.bundle import TRACES, draws
from gpt2viz.spec.paths import APP_ROOT as ROOT
from gpt2viz.spec.paths import PLOTLY_BUNDLE as BUNDLE
from gpt2viz.ui import chart_element

HOSTILE = " ".join(PAYLOADS) + ' --> ]> </style> </title> & "quoted" \'single\' \u2028 \u2029 ␣'


def figure(title: str = HOSTILE, **layout) -> dict:
    return {"data": [{"type": "bar", "x": [HOSTILE, "b"], "y": [1.5, -2.0], "hovertemplate": "%{x}<extra></extra>"}],
            "layout": {"title": {"text": title}, **layout}}


def attribute(body: str) -> str:
    return re.search(rf"{ATTRIBUTE}='([^']*)'", body).group(1)


def test_a_hostile_text_stays_inside_the_attribute_and_reads_back_exactly():
    spec, config = figure(), {"displaylogo": False, "toImageButtonOptions": {"filename": HOSTILE}}
    body = element_html(spec, config, labelled_by='gpt2viz-chart-1"><script>')
    # markup: the box's own tags alone; in the attribute, nothing the sanitiser drops it for ("-->", "]>",
    # "</style"), no quote that ends it and no entity
    assert body.count("<") == 2 and body.startswith('<div class="gpt2viz-chart"') and body.endswith("></div>")
    assert not re.search(r"[<>'&]", attribute(body)) and body.count("'") == 2
    assert 'aria-labelledby="gpt2viz-chart-1&quot;&gt;&lt;script&gt;"' in body
    assert drawn(body) == (json.loads(pio.to_json(spec, validate=False)), config)


def test_the_box_reserves_the_charts_height():
    assert 'style="height:300px"' in element_html(figure(height=300), {})
    assert 'style="height:412.5px"' in element_html(figure(height=412.5), {})
    assert f'style="height:{DEFAULT_HEIGHT_PX}px"' in element_html(figure(), {})


def test_other_html_holds_no_chart():
    assert drawn('<div class="gpt2viz-figure-words" data-figure="x"><p>a chart of 3 bars</p></div>') is None
    assert drawn(f'<p {ATTRIBUTE}="{{}}">not the box</p>') is None


def test_the_bundle_is_the_plotly_js_plotly_py_writes_for_and_draws_the_listed_traces():
    js = BUNDLE.read_text(encoding="utf-8")
    banner = re.search(r"plotly\.js \(cartesian - minified\) v(\d+\.\d+\.\d+)", js[:300])
    assert banner and banner.group(1) == plotly.offline.get_plotlyjs_version()
    assert set(re.findall(r'moduleType:"trace",name:"(\w+)"', js)) == TRACES
    assert "MIT License" in (BUNDLE.parent / "plotly-cartesian.LICENSE").read_text(encoding="utf-8")


def test_a_trace_the_bundle_lacks_is_left_to_streamlits_element():
    assert draws(figure()) and draws({"data": [{"y": [1]}]})  # plotly's default type, scatter
    assert not draws({"data": [{"type": "bar"}, {"type": "sankey"}]})


@pytest.fixture
def static_serving():
    before = st_config.get_option("server.enableStaticServing")
    yield lambda on: st_config.set_option("server.enableStaticServing", on)
    st_config.set_option("server.enableStaticServing", before)


def test_the_box_stands_in_only_where_static_serving_is_on(static_serving):
    static_serving(True)
    assert chart_element.available()
    static_serving(False)  # a server started without the project's settings
    assert not chart_element.available()


def test_the_scripts_hold_no_text_that_streamlits_sanitiser_drops_them_for():
    """DOMPurify (Streamlit's st.html) removes a script whose text has "<" before a letter, "/" or "!": the
    charts would then stay blank, with no error anywhere."""
    for name in ("charts.js", "a11y.js"):
        script = (ROOT / "assets" / name).read_text(encoding="utf-8")
        assert not re.search(r"<[/\w!]", script), name


def test_no_chart_offers_to_upload_itself():
    """plotly.js 4 shows "Share chart..." by default, which uploads the chart (a student's text in its
    labels) to Plotly's cloud: off in the app's charts, the handout's and the lesson site's."""
    import plotly.graph_objects as go

    from gpt2viz.plots.theme import CONFIG
    from gpt2viz.teaching import handout, site

    assert CONFIG["showSendToCloud"] is False and site.CHART_CONFIG["showSendToCloud"] is False
    page = handout.build("A page", "random tiny", [go.Figure(go.Bar(y=[1, 2]))], [])
    assert re.search(r'"showSendToCloud":\s*false', page) and not re.search(r'"showSendToCloud":\s*true', page)
