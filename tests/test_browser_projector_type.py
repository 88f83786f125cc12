"""The charts' type on a projector: presented (`present=1`) at 1280x720, the lecturer's view of the smallest
projector, every page that draws a chart is opened and every text of every chart is measured against the
page's body text (the computed font-size of its paragraphs, 20 px presented):

- no text drawn in a chart (tick labels, titles, panel titles, legends, colour bars, values in cells, notes,
  the source line in its corner; the hover's labels are not drawn until a pointer asks) is smaller than the
  body text (a text's size as drawn, its transforms' scale included: plotly shrinks a bar's value to fit by
  one; an exponent in "2×10⁻⁵" is set smaller, by plotly, as the page's own are);
- no two tick labels of one axis overlap at that size (tests/test_browser_layout.py's measure, there in a
  phone's window), and no text lies under plotly's toolbar;
- no value written in a heatmap's cell is wider than its cell;
- the first chart (or the drawn diagram where one comes first) starts in the first screen, at 1280x720 and
  at 1920x1080 (the window resized in the same tab; tests/test_browser_layout.py's measure, which checks it
  at a lesson's stops too).

The smallest size of each page and the body's are printed (pytest -s). Screenshots of the first screen:
test-artifacts/screenshots/{url}-type-1280x720.png. One server, one browser context, tabs reused
(browser_tabs). Skipped without Debian's chromium, as test_browser.py is.
"""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from browser_tabs import app_context, leave, tab  # noqa: E402
from streamlit_server import EXCEPTION, wait_rendered  # noqa: E402
from sweep import sweep  # noqa: E402
from test_browser_layout import (  # noqa: E402
    PANEL_TITLES_JS,
    assert_in_first_screen,
    first_chart_tops,
)
from test_browser_layout import PHONE_JS as OVERLAPS_JS  # noqa: E402

from gpt2viz.spec.pages import BY_URL, PAGES, href  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SHOTS = ROOT / "test-artifacts" / "screenshots"
CHARTED = [row for row in PAGES if row.charts]
# the sample (tests/sweep.py): the drawn model, maps, five charts, columns of controls, four charts under controls
TYPED = sweep(CHARTED, {"overview", "attention", "heads", "whatif", "patch"}, key=lambda row: row.url)

# The body text's size (the commonest computed font-size of the page's paragraphs) and every drawn text of
# every chart: its size (its own or a tspan's, the smallest), its words, the chart, and whether it is a
# heatmap cell's value wider than its cell.
TYPE_JS = r"""() => {
  const sizes = new Map();
  for (const p of document.querySelectorAll("[data-testid='stMain'] [data-testid='stMarkdownContainer'] p")) {
    if (p.closest("[data-testid='stCaptionContainer'], .gpt2viz-figure-words, small, summary") ||
        !p.checkVisibility() || !p.textContent.trim()) continue;
    const s = parseFloat(getComputedStyle(p).fontSize);
    sizes.set(s, (sizes.get(s) || 0) + p.textContent.length);
  }
  const body = [...sizes.entries()].sort((a, b) => b[1] - a[1])[0]?.[0] ?? null;
  const texts = [], wide = [];
  document.querySelectorAll(".js-plotly-plot").forEach((chart, c) => {
    for (const t of chart.querySelectorAll("svg text")) {
      if (!t.textContent.trim() || t.closest(".hoverlayer") || !t.getBBox().width) continue;
      // as drawn: its font-size times the scale of its transforms (plotly shrinks a bar's text by a transform)
      const m = t.getScreenCTM(), scale = Math.sqrt(Math.abs(m.a * m.d - m.b * m.c));
      texts.push({chart: c, px: Math.round(parseFloat(getComputedStyle(t).fontSize) * scale * 100) / 100,
                  words: t.textContent.slice(0, 40),
                  cls: t.getAttribute("class") || ""});
    }
    for (const g of chart.querySelectorAll("g.hm")) {  // a heatmap's values in its cells, against its cells' pitch
      const cells = [...g.querySelectorAll("g.heatmap-label text")].filter(t => t.textContent.trim()).map(t => {
        const r = t.getBoundingClientRect();
        return {x: (r.left + r.right) / 2, w: r.width, words: t.textContent};
      });
      const xs = [...new Set(cells.map(l => Math.round(l.x)))].sort((a, b) => a - b);
      const pitch = Math.min(...xs.slice(1).map((x, i) => x - xs[i]));
      for (const l of cells) if (l.w > pitch - 2) wide.push([c, l.words, Math.round(l.w), pitch]);
    }
  });
  return {body, texts, wide};
}"""


# An axis title that lies over one of its axis's tick labels: [chart, title, label] (boxes as drawn, 1 px spare).
TITLE_OVER_LABELS_JS = r"""() => {
  const found = [];
  const box = e => e.getBoundingClientRect();
  const meet = (a, b) => a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1;
  document.querySelectorAll(".js-plotly-plot").forEach((chart, c) => {
    for (const title of chart.querySelectorAll("text[class$='title']")) {
      const axis = (title.getAttribute("class").match(/^([xy]\d*)title$/) || [])[1];
      if (!axis || !title.textContent.trim()) continue;
      for (const label of chart.querySelectorAll(`g.${axis}tick text`)) {
        if (label.textContent.trim() && meet(box(title), box(label)))
          found.push([c, title.textContent.slice(0, 20), label.textContent.slice(0, 20)]);
      }
    }
  });
  return found;
}"""


@pytest.fixture(scope="module")
def context():
    """The module's browser context at 1280x720, and (as `.gpt2viz_base`) the address of its server."""
    with app_context(ROOT, 1280, 720) as context:
        yield context


DECODE = [BY_URL["attention"], BY_URL["merge"]]  # one row of a map; a map of the heads above the vector they merge into


@pytest.mark.parametrize("row,mode", [(row, "full") for row in TYPED] + [(row, "decode") for row in DECODE],
                         ids=[row.url for row in TYPED] + [f"{row.url}-decode" for row in DECODE])
def test_presented_charts_type_is_no_smaller_than_the_body_text(context, row, mode):
    """In decode, the attention map has one row: its label as long as the text's last token, beside the axis title."""
    page = tab(context)
    try:
        page.goto(f"{context.gpt2viz_base}{href(row.url)}?model=tiny&present=1&mode={mode}")
        wait_rendered(page, row.charts, timeout_ms=180_000)
        page.wait_for_timeout(300)
        assert page.locator(EXCEPTION).count() == 0
        found = page.evaluate(TYPE_JS)
        overlaps = page.evaluate(OVERLAPS_JS)
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"{row.url}-type-1280x720.png"), timeout=120_000)  # slow under load, not stuck
        body, texts = found["body"], found["texts"]
        assert body and texts, f"{row.url}: body text {body} px, {len(texts)} chart texts"
        smallest = min(t["px"] for t in texts)
        print(f"{row.url}: body {body} px, chart text {smallest}..{max(t['px'] for t in texts)} px, {len(texts)} texts")
        small = sorted({(t["px"], t["words"], t["cls"]) for t in texts if t["px"] < body - 0.05})
        assert not small, f"{row.url}: {len(small)} chart texts smaller than the body's {body} px: {small[:8]}"
        wide = found["wide"]
        assert wide == [], f"{row.url}: values wider than their cells (chart, value, px, cell px): {wide[:6]}"
        assert overlaps["ticks"] == [], f"{row.url}: tick labels overlap presented: {overlaps['ticks'][:6]}"
        assert overlaps["under"] == [], f"{row.url}: text under the toolbar presented: {overlaps['under'][:6]}"
        over = page.evaluate(TITLE_OVER_LABELS_JS)
        assert over == [], f"{row.url}: an axis title over its labels presented (chart, title, label): {over[:6]}"
        panels = page.evaluate(PANEL_TITLES_JS)
        assert panels == [], f"{row.url}: a panel title over tick labels or cut presented: {panels[:6]}"
        assert_in_first_screen(row.url, first_chart_tops(page, f"{row.url}-present"), "presented")
    finally:
        leave(page)


def test_in_a_narrow_window_the_decode_merge_charts_titles_are_whole_and_clear(context):
    """At 800x900 with the sidebar open (not presented), on the decode page of Merge and project: no panel title
    is cut at the chart's edge or lies on tick labels (its map's title was cut after "feature wit", and the bars'
    title lay on the map's tick labels)."""
    page = tab(context)
    try:
        page.set_viewport_size({"width": 800, "height": 900})
        page.goto(f"{context.gpt2viz_base}/merge?model=tiny&mode=decode")
        wait_rendered(page, BY_URL["merge"].charts, timeout_ms=180_000)
        page.wait_for_timeout(300)
        assert page.locator(EXCEPTION).count() == 0
        panels = page.evaluate(PANEL_TITLES_JS)
        assert panels == [], f"merge, decode, 800 px: a panel title over tick labels or cut: {panels[:6]}"
    finally:
        page.set_viewport_size({"width": 1280, "height": 720})
        leave(page)
