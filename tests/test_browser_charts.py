"""The app's own chart box (gpt2viz/ui/chart_element.py, drawn by assets/charts.js) in chromium: drawn with
Plotly's cartesian bundle and without Streamlit's chart chunk (the full bundle, which a new tab paid for);
a student's hostile text in its labels shown as text and run nowhere; a box Streamlit replaces freed; drawn
again at a narrower width; the full-screen button Streamlit's element had. Skipped without Debian's
chromium, as test_browser.py is."""

import html
import sys
from pathlib import Path
from urllib.parse import quote

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from browser_tabs import leave, tab  # noqa: E402
from exported import PAYLOADS  # noqa: E402
from streamlit_server import EXCEPTION, StreamlitServer, chromium_for_tests, new_context, wait_rendered  # noqa: E402

from gpt2viz.spec.pages import BY_URL  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BOX = ".gpt2viz-chart"

LOADED_JS = """() => performance.getEntriesByType("resource").map(e => new URL(e.name).pathname)"""
# every box drawn, its plot inside it, and no plot left behind by a box Streamlit replaced
DRAWN_JS = """() => ({boxes: document.querySelectorAll(".gpt2viz-chart").length,
  drawn: [...document.querySelectorAll(".gpt2viz-chart")]
    .filter(b => b.querySelector(":scope > .js-plotly-plot .main-svg")).length,
  plots: document.querySelectorAll(".js-plotly-plot").length,
  streamlits: document.querySelectorAll("[data-testid='stPlotlyChart']").length,
  pwned: window.__pwned === undefined ? null : window.__pwned,
  labelled: [...document.querySelectorAll(".gpt2viz-chart")].every(b => b.getAttribute("role") === "figure"
    && document.getElementById(b.getAttribute("aria-labelledby"))),
  width: document.querySelector(".gpt2viz-chart .main-svg")?.getBoundingClientRect().width})"""


@pytest.fixture(scope="module")
def context():
    with chromium_for_tests() as b, StreamlitServer("app.py", cwd=ROOT) as server:
        server.wait_healthy(timeout=60)
        context = new_context(b, 1400, 900)
        context.gpt2viz_base = server.base
        yield context
        context.close()


def open_page(context, path: str, charts: int):
    page = tab(context)
    page.goto(f"{context.gpt2viz_base}/{path}")
    wait_rendered(page, charts)
    return page


def test_charts_are_drawn_with_the_cartesian_bundle_not_streamlits_chunk(context):
    page = open_page(context, "mlp?model=tiny", BY_URL["mlp"].charts)
    try:
        drawn = page.evaluate(DRAWN_JS)
        assert drawn["boxes"] == drawn["drawn"] == drawn["plots"] >= BY_URL["mlp"].charts and drawn["streamlits"] == 0
        assert drawn["labelled"], "each box is a figure named by its sentence"
        loaded = page.evaluate(LOADED_JS)
        assert any(p.endswith("/app/static/plotly-cartesian.min.js") for p in loaded), loaded
        assert not any("/PlotlyChart." in p for p in loaded), "Streamlit's chart chunk (Plotly's full bundle) loaded"
        # the toolbar of Streamlit's element (theme.CONFIG), with no "Share chart..." (plotly.js 4 uploads it)
        titles = page.eval_on_selector_all(f"{BOX} .modebar-btn", "els => els.map(e => e.dataset.title)")
        assert titles == ["Download plot", "Zoom", "Reset axes", "Fullscreen"] * drawn["boxes"], titles
    finally:
        leave(page)


def test_a_hostile_text_is_drawn_as_text_in_the_labels_and_runs_nowhere(context):
    """The student's text is the first chart's bar labels, a token each ("4·␣--&gt;", escaped for Plotly's
    text): every payload, and the two for which the sanitiser Streamlit runs over st.html drops an attribute
    ("-->", "]>"). The labels, unescaped, spell the text exactly; the caption shows its quotes as quotes."""
    text = " ".join(PAYLOADS) + ' --> ]> & "done"'
    page = open_page(context, f"tokens?model=tiny&text={quote(text)}", BY_URL["tokens"].charts)
    try:
        assert page.locator(EXCEPTION).count() == 0
        drawn = page.evaluate(DRAWN_JS)
        assert drawn["boxes"] == drawn["drawn"] >= BY_URL["tokens"].charts and drawn["pwned"] is None, drawn
        labels = page.locator(f"{BOX} .js-plotly-plot").first.evaluate("gd => gd.data[0].x")
        spelled = "".join(html.unescape(label.split("·", 1)[1]) for label in labels).replace("␣", " ")
        assert spelled == text
        assert page.locator(f"{BOX} img, {BOX} script, {BOX} iframe, {BOX} details").count() == 0
        caption = " ".join(page.eval_on_selector_all(f"{BOX} .annotation-text", "els => els.map(e => e.textContent)"))
        assert "“<img src=x onerror=\"win" in caption and "&quot;" not in caption, caption
    finally:
        leave(page)


def test_a_hostile_texts_handout_draws_with_the_bundle_offline_and_runs_nothing(context, tmp_path):
    """"Download this page" of the same hostile text: the file carries the cartesian bundle inline (not the
    whole plotly.js), and opened with the network cut off it draws every chart, runs no payload, spells the
    text in the labels and offers no "Share chart..."."""
    text = " ".join(PAYLOADS) + ' --> ]> & "done"'
    page = open_page(context, f"tokens?model=tiny&text={quote(text)}", BY_URL["tokens"].charts)
    try:
        drawn = page.locator(BOX).count()
        with page.expect_download(timeout=120_000) as download:
            page.get_by_test_id("stSidebar").get_by_role("button", name="Download this page (.html)").click()
        path = tmp_path / download.value.suggested_filename
        download.value.save_as(path)
    finally:
        leave(page)
    body = path.read_text(encoding="utf-8")
    assert body.count("plotly.js (cartesian - minified) v") == 1 and "plotly.js v" not in body
    offline = context.browser.new_context()
    try:
        handout = offline.new_page()
        handout.route("**/*", lambda r: r.abort() if r.request.url.startswith("http") else r.continue_())
        handout.goto(path.resolve().as_uri())
        handout.wait_for_function("(n) => [...document.querySelectorAll('.plotly-graph-div')]"
                                  ".filter(d => d.querySelector('.main-svg')).length === n", arg=drawn, timeout=30_000)
        assert handout.locator(".plotly-graph-div").count() == drawn
        assert handout.evaluate("() => window.__pwned === undefined")
        labels = handout.locator(".js-plotly-plot").first.evaluate("gd => gd.data[0].x")
        assert "".join(html.unescape(label.split("·", 1)[1]) for label in labels).replace("␣", " ") == text
        handout.locator(".js-plotly-plot").first.hover()
        titles = handout.eval_on_selector_all(".modebar-btn", "els => els.map(e => e.dataset.title)")
        assert titles and "Share chart..." not in " ".join(titles), titles
    finally:
        offline.close()


def test_a_replaced_chart_leaves_no_plot_and_a_narrower_window_draws_narrower(context):
    page = open_page(context, "mlp?model=tiny&block=0", BY_URL["mlp"].charts)
    try:
        slider = page.get_by_test_id("stSlider").filter(has_text="Block").get_by_role("slider")
        for block in (1, 0, 1):
            slider.focus()
            page.keyboard.press("ArrowRight" if block else "ArrowLeft")
            wait_rendered(page, BY_URL["mlp"].charts, must_see=f"block {block}'s")
        drawn = page.evaluate(DRAWN_JS)
        assert drawn["plots"] == drawn["boxes"] == drawn["drawn"] >= BY_URL["mlp"].charts, drawn
        # the charts the script holds: the replaced boxes' were purged, not kept (6 of them by now)
        assert page.evaluate("window.gpt2vizCharts.drawn()") == drawn["boxes"]
        wide = drawn["width"]
        page.set_viewport_size({"width": 900, "height": 900})
        page.wait_for_function(f"() => document.querySelector('{BOX} .main-svg').getBoundingClientRect().width"
                               f" < {wide}")
        assert page.evaluate(DRAWN_JS)["width"] < wide
    finally:
        leave(page)  # the next view's tab is back at the context's size (browser_tabs.tab)


def test_a_page_whose_first_chart_answers_clicks_draws_them_all_with_streamlits_element(context):
    """The attention map is Streamlit's element (a click picks a cell): so are the page's other charts, and
    the tab never loads the app's bundle beside Streamlit's (window.gpt2vizLater)."""
    page = open_page(context, "attention?model=tiny", BY_URL["attention"].charts)
    try:
        drawn = page.evaluate(DRAWN_JS)
        assert drawn["boxes"] == 0 and drawn["streamlits"] == drawn["plots"] >= BY_URL["attention"].charts, drawn
        assert not any(p.endswith("/plotly-cartesian.min.js") for p in page.evaluate(LOADED_JS))
    finally:
        leave(page)


def test_a_page_without_charts_does_not_load_the_library(context):
    """The registry's chartless pages (in window.gpt2vizLater) spare a new tab the bundle's 0.3 s."""
    page = open_page(context, "glossary?model=tiny", 0)
    try:
        assert page.evaluate("window.gpt2vizLater").count("glossary") == 1
        assert not any("plotly" in p.lower() for p in page.evaluate(LOADED_JS))
    finally:
        leave(page)


def test_a_library_that_does_not_load_is_said_in_each_box_and_tried_again(context):
    """The bundle's request fails (a dropped connection, a proxy that does not pass /app/static/): each box
    says so in one line, once, and the next run's boxes load it again."""
    fresh = new_context(context.browser, 1400, 900)  # no cached bundle
    try:
        page = fresh.new_page()
        page.route("**/plotly-cartesian.min.js", lambda route: route.abort())
        page.goto(f"{context.gpt2viz_base}/mlp?model=tiny&block=0")
        page.wait_for_function("() => { const boxes = [...document.querySelectorAll('.gpt2viz-chart')];"
                               f" return boxes.length >= {BY_URL['mlp'].charts}"
                               " && boxes.every(b => b.textContent.startsWith('This chart could not be drawn')); }")
        said = page.eval_on_selector_all(BOX, "els => els.map(e => e.textContent)")
        assert set(said) == {"This chart could not be drawn: the chart library did not load."}
        assert page.locator(EXCEPTION).count() == 0
        page.unroute("**/plotly-cartesian.min.js")
        page.get_by_test_id("stSlider").filter(has_text="Block").get_by_role("slider").focus()
        page.keyboard.press("ArrowRight")
        wait_rendered(page, BY_URL["mlp"].charts, must_see="block 1's")
        drawn = page.evaluate(DRAWN_JS)
        assert drawn["boxes"] == drawn["drawn"] >= BY_URL["mlp"].charts, drawn
    finally:
        fresh.close()
