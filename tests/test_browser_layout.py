"""Presented on a projector, and what a click on a map opens; the measure of a phone's window.

Presented (`present=1`) at 1280x720 and 1920x1080, at a lesson's stop (whose note stands under the bar), the
page's first chart starts in the first screen (out of a lesson: tests/test_browser_projector_type.py, on the view
it measures). PHONE_JS measures a page in a window: no two tick labels of one chart's axis overlap (each label's
box as drawn, turned labels as the turned quadrilaterals they are), no text of a chart lies under plotly's toolbar
(where it shows on a tap or hover), how far the page is wider than the window; tests/test_browser_pages.py runs it
on every page at 390x844 (a 6.1" phone; columns stack, no sidebar).

One server, one browser context, tabs reused (browser_tabs); a view is opened once and resized for the
two projectors. Skipped without Debian's chromium, as test_browser.py is.
"""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from browser_tabs import leave, tab  # noqa: E402
from streamlit_server import CHART, EXCEPTION, StreamlitServer, chromium_for_tests, new_context, wait_rendered  # noqa: E402
from sweep import sweep  # noqa: E402

from gpt2viz.spec.pages import PAGES  # noqa: E402
from gpt2viz.teaching import lessons as lf  # noqa: E402
from gpt2viz.ui import present  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SHOTS = ROOT / "test-artifacts" / "screenshots"
PHONE = (390, 844)
PROJECTORS = [(1280, 720), (1920, 1080)]
KEY = "browser-layout-key-0123456789"
CHARTED = [row for row in PAGES if row.charts]  # the pages that draw a chart in every mode
# a lecturer's note of three lines on the smallest projector (the chart gives up room for it)
NOTE = ("Look at the first chart before anything else: where is the largest value, and which position holds it? "
        "Say it aloud, then change one control and say what moved, and by how much, before reading the numbers "
        "below the chart.")


@pytest.fixture(scope="module")
def app():
    """(a browser context at a phone's size, the server's address): one of each for the module; the server
    signs and opens lessons with KEY."""
    with pytest.MonkeyPatch.context() as env, chromium_for_tests() as browser:
        env.setenv(lf.KEY_ENV, KEY)  # the server inherits it
        with StreamlitServer("app.py", cwd=ROOT) as server:
            server.wait_healthy(timeout=60)
            context = new_context(browser, *PHONE)
            yield context, server.base
            context.close()


def open_view(context, url: str, charts: int):
    page = tab(context)
    page.goto(url)
    wait_rendered(page, charts, timeout_ms=120_000)
    return page


def measured(app, path: str, charts: int, measure):
    """What `measure(page)` finds on the view at `path` (with no exception shown), the tab then left."""
    context, base = app
    page = open_view(context, base + path, charts)
    try:
        assert page.locator(EXCEPTION).count() == 0
        return measure(page)
    finally:
        leave(page)


# Per chart: pairs of tick labels of one axis that overlap (each label's box as drawn: getBBox through the
# screen transform, so a turned label is its turned quadrilateral, 15% of its line box's height inset as the
# glyphs leave it), and the texts whose box meets the toolbar's (plotly lays it out, hidden until a hover or
# a tap, at the chart's top right).
PHONE_JS = r"""
() => {
  const quad = t => {
    const b = t.getBBox(), m = t.getScreenCTM(), dy = b.height * 0.15, dx = 0.5;
    return [[b.x + dx, b.y + dy], [b.x + b.width - dx, b.y + dy], [b.x + b.width - dx, b.y + b.height - dy],
            [b.x + dx, b.y + b.height - dy]].map(([x, y]) => [m.a * x + m.c * y + m.e, m.b * x + m.d * y + m.f]);
  };
  const span = (pts, [ux, uy]) => { const v = pts.map(([x, y]) => x * ux + y * uy);
                                    return [Math.min(...v), Math.max(...v)]; };
  const normals = pts => pts.map((p, i) => { const q = pts[(i + 1) % 4], n = Math.hypot(q[0] - p[0], q[1] - p[1]) || 1;
                                             return [(p[1] - q[1]) / n, (q[0] - p[0]) / n]; });
  const overlap = (a, b) => [...normals(a), ...normals(b)].every(u => {
    const [a0, a1] = span(a, u), [b0, b1] = span(b, u);
    return Math.min(a1, b1) - Math.max(a0, b0) > 0.5; });
  const ticks = [], under = [];
  document.querySelectorAll(".js-plotly-plot").forEach((chart, c) => {
    const axes = new Map();
    for (const t of chart.querySelectorAll(".xtick text, .ytick text, [class*='tick'] > text")) {
      const axis = t.parentElement.getAttribute("class") || "";
      if (!/^[xy]\d*tick$/.test(axis) || !t.textContent.trim() || !t.getBBox().width) continue;
      if (!axes.has(axis)) axes.set(axis, []);
      axes.get(axis).push([t.textContent, quad(t)]);
    }
    for (const [axis, labels] of axes)
      for (let i = 0; i < labels.length; i++)
        for (let j = i + 1; j < labels.length; j++)
          if (overlap(labels[i][1], labels[j][1])) ticks.push([c, axis, labels[i][0], labels[j][0]]);
    const bar = chart.querySelector(".modebar");
    if (!bar) return;
    const r = bar.getBoundingClientRect();
    const box = [[r.left, r.top], [r.right, r.top], [r.right, r.bottom], [r.left, r.bottom]];
    for (const t of chart.querySelectorAll("text"))
      if (t.textContent.trim() && !t.closest(".hoverlayer") && t.getBBox().width && overlap(quad(t), box))
        under.push([c, t.textContent]);
  });
  return {ticks, under, overflow: document.documentElement.scrollWidth - window.innerWidth};
}
"""


# A panel's title or a chart's subtitle (an annotation) that lies over a tick label of the same chart by more than
# 4 px both ways (a box is its line's height: 3 px of a colour bar's title above its top tick is no overlap), or one
# cut at the chart's edge: [chart, text, the label or "cut"]. A decode page's merge chart had its lower panel's
# title on the map's tick labels, and its upper one cut at 800 px.
PANEL_TITLES_JS = r"""() => {
  const found = [];
  const box = e => e.getBoundingClientRect();
  const meet = (a, b) => Math.min(a.right, b.right) - Math.max(a.left, b.left) > 4 &&
                         Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 4;
  document.querySelectorAll(".js-plotly-plot").forEach((chart, c) => {
    const edge = box(chart.querySelector("svg.main-svg"));
    const labels = [...chart.querySelectorAll("g[class$='tick'] text")].filter(t => t.textContent.trim());
    for (const title of chart.querySelectorAll("g.annotation text, text.gtitle-subtitle")) {
      if (!title.textContent.trim()) continue;
      if (box(title).right > edge.right + 1 || box(title).left < edge.left - 1)
        found.push([c, title.textContent.slice(0, 30), "cut"]);
      for (const label of labels.filter(l => meet(box(title), box(l))))
        found.push([c, title.textContent.slice(0, 30), label.textContent.slice(0, 12)]);
    }
  });
  return found;
}"""


HEADINGS_JS = """() => [...document.querySelectorAll('[data-testid=stMain] :is(h1, h2, h3, h4, h5, h6)')]
  .map(h => [Number(h.tagName[1]), h.textContent.slice(0, 40)])"""
# the outline a screen reader reads: the headings drawn, each at its aria-level where assets/a11y.js set one
READ_HEADINGS_JS = """() => [...document.querySelectorAll('[data-testid=stMain] :is(h1, h2, h3, h4, h5, h6)')]
  .filter(h => h.getClientRects().length)
  .map(h => [Number(h.getAttribute('aria-level') || h.tagName[1]), h.textContent.slice(0, 40)])"""


def level_skips(levels: list) -> list:
    """Pairs of neighbouring headings where the second is more than one level under the first."""
    return [(a, b) for a, b in zip(levels, levels[1:]) if b[0] > a[0] + 1]


DIAGRAM = "[data-testid='stMarkdown'] svg[role='figure']"  # a drawn diagram (gpt2viz/anatomy/diagram.py)


def first_chart_tops(page, name: str) -> dict:
    """The top (px from the window's top) of the first chart, or drawn diagram where one comes first, at each
    projector's size, in the same tab; what the window shows, screenshotted ({name}-{w}x{h}.png)."""
    return {size: top for size, (top, _) in first_chart_boxes(page, name).items()}


def first_chart_boxes(page, name: str) -> dict:
    """As first_chart_tops, with the height of the plot area (plotly's, between its margins) of the chart that
    fills the first screen, or None where none does (a drawn diagram first): {(w, h): (top, plot height)}."""
    boxes = {}
    for w, h in PROJECTORS:
        page.set_viewport_size({"width": w, "height": h})
        page.wait_for_timeout(300)  # let the layout settle
        boxes[(w, h)] = page.evaluate(f"""() => {{
          const first = document.querySelector(`{CHART}, {DIAGRAM}`).getBoundingClientRect().top;
          const filled = document.querySelector(".st-key-present-chart .js-plotly-plot");
          return [first, filled ? filled._fullLayout._size.h : null]; }}""")
        page.screenshot(path=str(SHOTS / f"{name}-{w}x{h}.png"))
    return boxes


def assert_in_first_screen(url: str, tops: dict, where: str) -> None:
    late = {size: round(top) for size, top in tops.items() if top > size[1] - 100}
    assert not late, f"{url} {where}: the first chart starts at {late} (px), not in the first screen"


@pytest.fixture(scope="module")
def lesson_token() -> str:
    """One lesson, a stop on every charted page, each with a three-line note."""
    lesson = lf.parse({"title": "Every page", "weights": {"source": "random", "model": "tiny"},
                       "text": "The quick brown fox jumps over the lazy dog because",
                       "stops": [{"page": row.url, "note": NOTE} for row in CHARTED]})
    return lf.sign(lesson, KEY.encode())


# the lesson stops on every charted page; the sample (tests/sweep.py) presents the stops of the drawn model, maps,
# five charts, columns of controls and four charts under controls
STOPS = sweep(range(len(CHARTED)), {"overview", "attention", "heads", "whatif", "patch"}, key=lambda i: CHARTED[i].url)


@pytest.mark.parametrize("i", STOPS, ids=[CHARTED[i].url for i in STOPS])
def test_presented_every_lesson_stop_shows_its_first_chart_in_the_first_screen(app, lesson_token, i):
    row = CHARTED[i]

    def measure(page):
        page.locator(".st-key-present-note").wait_for(timeout=60_000)
        page.wait_for_timeout(100)  # assets/a11y.js numbers the headings at the next frame
        read = page.evaluate(READ_HEADINGS_JS)  # the question hidden under the note: no level skipped
        assert not level_skips(read), f"{row.url} presented at a stop: {level_skips(read)[:3]}"
        return first_chart_boxes(page, f"{row.url}-lesson-present")

    boxes = measured(app, lf.href(row.url, lesson_token, i) + "&present=1", row.charts, measure)
    assert_in_first_screen(row.url, {size: top for size, (top, _) in boxes.items()}, f"at stop {i + 1} of a lesson")
    # under a three-line note on the smallest projector, the chart runs past the first screen rather than squeeze
    # its plot to a strip (an attention map was 82 px tall, its colour bars' ticks on top of each other)
    squeezed = {size: plot for size, (_, plot) in boxes.items() if plot is not None and plot < present.MIN_PLOT_PX}
    assert not squeezed, f"{row.url} at stop {i + 1}: the filled chart's plot area is {squeezed} px tall"


def test_a_click_on_a_cell_of_the_score_map_takes_its_score_apart(app):
    """A click on cell (query 6, key 2) of the scores map puts qi and kj in the URL, takes that score apart in
    the dot-product section and scrolls to it; a click on the pattern map, likewise."""
    context, base = app
    page = open_view(context, f"{base}/attention?model=tiny", 2)  # 10 tokens: a 10 x 10 map
    try:
        page.set_viewport_size({"width": 1400, "height": 900})
        page.wait_for_timeout(300)
        for subplot, (i, j) in (("xy", (6, 2)), ("x2y", (8, 5))):
            area = page.locator(".js-plotly-plot").first.locator(f".nsewdrag[data-subplot='{subplot}']")
            area.scroll_into_view_if_needed()
            box = area.bounding_box()
            x, y = box["x"] + (j + 0.5) * box["width"] / 10, box["y"] + (i + 0.5) * box["height"] / 10
            page.mouse.move(x, y)
            page.wait_for_timeout(300)  # plotly finds the point under the pointer on the next frame
            page.mouse.click(x, y)
            page.wait_for_function(f"() => /[?&]qi={i}(\\.0)?(&|$)/.test(location.search) && "
                                   f"/[?&]kj={j}(\\.0)?(&|$)/.test(location.search)", timeout=60_000)
            wait_rendered(page, 2, must_see=f"Query {i} and key {j} of block 0 head 0")
            try:  # the scroll, once the page's script has loaded
                page.wait_for_function("() => { const t = document.getElementById('dot-product')"
                                       "?.getBoundingClientRect().top; return t >= 0 && t < 300; }", timeout=20_000)
            except Exception:
                top = page.locator("#dot-product").bounding_box()["y"]
                raise AssertionError(f"the dot product's heading is at {top} px after the click, not in view") from None
            page.wait_for_timeout(1600)  # its last try
        assert page.locator(EXCEPTION).count() == 0
    finally:
        leave(page)


# the presentation bar's controls (the way back, back, the next stop) that lie on a menu of the top bar, each as
# [the control's text, the menu's text]; the controls drawn past the window's right edge; the next link's width
BAR_JS = """() => {
  const box = e => e.getBoundingClientRect();
  const shown = e => box(e).width > 0 && box(e).height > 0;
  const menus = [...document.querySelectorAll("header nav *, header [data-testid^='stTopNav'] *")]
    .filter(e => shown(e) && !e.children.length);
  const controls = [...document.querySelectorAll(".st-key-present-bar :is(button, a)")].filter(shown);
  const on = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  const next = document.querySelector(".st-key-present-bar a.present-next");
  return {menus: menus.length,
          over: controls.flatMap(c => menus.filter(m => on(box(c), box(m)))
                                           .map(m => [c.textContent.trim(), m.textContent.trim()])),
          past: controls.filter(c => box(c).right > innerWidth).map(c => c.textContent.trim()),
          next: next ? box(next).width : null};
}"""


@pytest.mark.parametrize("kind", ["tour", "lesson"])
def test_presented_the_bar_keeps_clear_of_the_top_bars_menus(app, lesson_token, kind):
    """From a projector down to the narrowest window that still shows the top bar's menus (768 px), the
    presentation bar's controls lie on none of them and inside the window, and the next stop's link keeps a
    readable width: at 800 px the attention page's "Next: Merge and project →" put the way back on the
    "Reference" menu. The tour's longest next label and a lesson's back and next."""
    attention = next(i for i, row in enumerate(CHARTED) if row.url == "attention")
    path = ("/attention?model=tiny&present=1" if kind == "tour"
            else lf.href("attention", lesson_token, attention) + "&present=1")

    def measure(page):
        page.locator(".st-key-present-bar a.present-next").wait_for(timeout=60_000)
        found = {}
        for width in (1280, 1100, 900, 800, 770):
            page.set_viewport_size({"width": width, "height": 900})
            page.wait_for_timeout(300)
            found[width] = page.evaluate(BAR_JS)
            if width == 800:
                page.screenshot(path=str(SHOTS / f"present-bar-{kind}-800x900.png"))
        return found

    for width, bar in measured(app, path, 2, measure).items():
        assert bar["menus"], f"{kind} at {width} px: the top bar's menus were not found"
        assert bar["over"] == [], f"{kind} at {width} px: the presentation bar lies on the menus: {bar['over']}"
        assert bar["past"] == [], f"{kind} at {width} px: past the window's right edge: {bar['past']}"
        # "Next →" alone is 69 px at the narrow windows' type: at least "Next" shows
        assert bar["next"] >= 60, f"{kind} at {width} px: the next link is {bar['next']} px wide"


def test_presented_on_a_phone_a_chart_keeps_its_width_and_scrolls_sideways(app):
    """A presented link opened on a phone (a lecturer shares it with the class): the attention map, drawn in the
    projector's type, keeps 32rem (640 px) and scrolls sideways inside its own box, the page no wider than the
    window. Before, squeezed into 290 px beside its 1.5x labels, its three panels were a few pixels wide and their
    titles lay on each other."""
    def measure(page):
        page.wait_for_function("() => document.querySelector('.js-plotly-plot')?._fullLayout?.width", timeout=60_000)
        page.wait_for_timeout(300)
        page.screenshot(path=str(SHOTS / "present-attention-390x844.png"))
        return page.evaluate("""() => { const gd = document.querySelector('.js-plotly-plot');
          const box = gd.closest("[data-testid='stElementContainer']");
          return {width: gd._fullLayout.width, plot: gd._fullLayout._size.w, scrolls: box.scrollWidth > box.clientWidth,
                  page: document.documentElement.scrollWidth - innerWidth}; }""")

    chart = measured(app, "/attention?model=tiny&present=1", 2, measure)
    assert chart["width"] >= 600 and chart["plot"] >= 300, chart  # the map's panels between its margins
    assert chart["scrolls"] and chart["page"] <= 0, chart


def test_on_a_phone_the_drawn_model_keeps_a_readable_width_and_scrolls_sideways(app):
    """The Overview's drawn model on a phone keeps 40rem (640 px) and scrolls sideways in its own box, the page no
    wider than the window: shrunk to the phone's 358 px, its labels were 5 px tall."""
    def measure(page):
        page.locator(DIAGRAM).first.wait_for(timeout=60_000)
        return page.evaluate(f"""() => {{ const svg = document.querySelector(`{DIAGRAM}`);
          const box = svg.parentElement.parentElement;
          return {{width: svg.getBoundingClientRect().width, scrolls: box.scrollWidth > box.clientWidth,
                  page: document.documentElement.scrollWidth - innerWidth}}; }}""")

    drawn = measured(app, "/?model=tiny", 1, measure)
    assert drawn["width"] >= 600 and drawn["scrolls"] and drawn["page"] <= 0, drawn


@pytest.mark.parametrize("present_", [True, False], ids=["presented", "page"])
def test_charts_side_by_side_have_their_plots_level(app, present_):
    """What if's "Before" and "After" bars, side by side at 1280x720: their plot areas start and end level, whichever
    title takes more lines (presented, "After knocking out head 0.0 (same tokens)" took a second line, and only the
    first chart of the row filled the screen: the "After" bars ended 35 px higher)."""
    def measure(page):
        page.set_viewport_size({"width": 1280, "height": 720})
        page.wait_for_timeout(500)
        return page.evaluate("""() => [...document.querySelectorAll('.js-plotly-plot')].slice(0, 2).map(gd => {
          const top = gd.getBoundingClientRect().top + gd._fullLayout._size.t;
          return [Math.round(top), Math.round(top + gd._fullLayout._size.h)]; })""")

    path = "/whatif?model=tiny" + ("&present=1" if present_ else "")
    (top_a, end_a), (top_b, end_b) = measured(app, path, 2, measure)
    assert abs(top_a - top_b) <= 2 and abs(end_a - end_b) <= 2, ((top_a, end_a), (top_b, end_b))
