"""The lecturer's charts and pages in a real browser. At 1280x720: up to 32 tokens every query and key of a
heatmap is written (turned or smaller, none dropped), so the Generation step's new token's key has its
label; the logit lens writes each cell's predicted token in it. Every address reopens in a fresh
browser as the same chart. At 800x900 the demo model's note is one line. Skipped without Debian's
chromium, as test_browser.py is."""

import sys
import time
from pathlib import Path
from urllib.parse import quote

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from browser_tabs import leave, tab  # noqa: E402
from streamlit_server import CHART, EXCEPTION, StreamlitServer, chromium_for_tests, new_context, wait_rendered  # noqa: E402
from sweep import sweep  # noqa: E402

from gpt2viz.model.demo_model import DEMO_PATH  # noqa: E402
from gpt2viz.teaching.prompts import DEMO_REPEAT  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SHOTS = ROOT / "test-artifacts" / "screenshots"
PROJECTOR = (1280, 720)
DEMO = "weights=demo&text=" + quote(DEMO_REPEAT.text)

pytestmark = pytest.mark.skipif(not DEMO_PATH.is_file(), reason="no demo model shipped")


@pytest.fixture(scope="module")
def context():
    with chromium_for_tests() as b:
        context = new_context(b, *PROJECTOR)
        yield context
        context.close()


@pytest.fixture(scope="module")
def base(context):
    with StreamlitServer("app.py", cwd=ROOT) as server:
        server.wait_healthy(timeout=60)
        yield server.base


# the tick labels each chart draws, by axis: {chart title: {"x": [...], "y": [...], "x2": [...]}}
TICKS_JS = r"""() => Object.fromEntries([...document.querySelectorAll(".js-plotly-plot")].map(gd => {
  const axes = {};
  for (const t of gd.querySelectorAll("g[class$='tick'] > text")) {
    const name = t.parentElement.getAttribute("class").replace("tick", "");
    (axes[name] = axes[name] || []).push(t.textContent);
  }
  return [gd.querySelector(".gtitle")?.textContent ?? "", axes];
}))"""


def open_at(browser_context, url: str, min_charts: int = 1):
    page = tab(browser_context)
    page.goto(url)
    wait_rendered(page, min_charts, timeout_ms=180_000)
    page.wait_for_timeout(500)
    assert page.locator(EXCEPTION).count() == 0, url
    return page


def ticks(page, title_start: str) -> dict:
    drawn = page.evaluate(TICKS_JS)
    (axes,) = [axes for title, axes in drawn.items() if title.startswith(title_start)]
    return axes


@pytest.mark.parametrize("present", ["", "&present=1"])
def test_the_generation_steps_new_key_and_every_query_and_key_are_labelled(context, base, present):
    """At step 3 the new token reads 14 keys; the one it adds, "13·␣work", has its label, as every other
    key; on Attention every one of the 12 keys, on the scores and the pattern alike, and every query (presented,
    as many queries as the screen's height has room for at the keys' size)."""
    url = base + "/generation?" + DEMO + "&step=3" + present
    page = open_at(context, url, 2)
    keys = ticks(page, "Step 3: the new token")["x"]
    page.screenshot(path=str(SHOTS / f"labels-generation-step{present[1:8]}-1280x720.png"))
    assert len(keys) == 14 and keys[-1] == "13·␣work", keys
    leave(page)
    page = open_at(context, base + "/attention?" + DEMO + "&block=1&head=3" + present)
    maps = ticks(page, "Attention · block 1 head 3")
    page.screenshot(path=str(SHOTS / f"labels-attention{present[1:8]}-1280x720.png"))
    assert len(maps["x"]) == 12 and len(maps["x2"]) == 12, maps
    # presented, the map is as tall as the screen leaves it: its queries at the keys' size, as many as fit (every
    # one at 1920 x 1080; at 1280 x 720 every k-th, hover naming each); shrunk to fit, they were 7 px
    assert len(maps["y"]) == 12 if not present else 3 <= len(maps["y"]) <= 12, maps
    leave(page)
    fresh = new_context(context.browser, *PROJECTOR)  # the address, in a browser that never saw it
    try:
        again = open_at(fresh, url, 2)
        assert ticks(again, "Step 3: the new token")["x"] == keys
    finally:
        fresh.close()


def test_the_lens_writes_each_cells_predicted_token(context, base):
    page = open_at(context, base + "/lens?" + DEMO)
    written = page.locator(CHART).first.evaluate(
        "el => [...el.querySelectorAll('.hm text, g.textpoint text, text.heatmap-text')].map(t => t.textContent)")
    cells = page.locator(CHART).first.locator(".js-plotly-plot").evaluate("gd => gd.data[0].text")
    page.screenshot(path=str(SHOTS / "labels-lens-1280x720.png"))
    assert cells and all(all(c for c in row) for row in cells), cells
    assert len(written) >= sum(len(row) for row in cells) // 2, written[:20]
    leave(page)


def test_the_demo_models_note_is_one_line_with_more_in_a_narrow_window(context, base):
    """At 800x900 on the demo weights the note about the demo model is one line that says "more" (it was a
    nine-line paragraph above every chart); opened, it says the whole note."""
    page = tab(context)
    page.set_viewport_size({"width": 800, "height": 900})
    page.goto(base + "/attention?" + DEMO)
    wait_rendered(page, 1, timeout_ms=180_000)
    note = page.locator(".st-key-demo-note summary")
    box = note.bounding_box()
    page.screenshot(path=str(SHOTS / "demo-note-800x900.png"))
    assert box["height"] <= 56 and note.inner_text().rstrip().endswith("more"), (box, note.inner_text())
    note.click()
    page.get_by_text("knows no English: no grammar").wait_for(timeout=30_000)
    leave(page)


def settled_top(page, timeout_s: float = 60.0) -> float:
    """The first chart's top once the page's layout stops moving (the same y twice, 0.5 s apart): on a
    busy machine a box above it can still be drawing when the app reports itself idle."""
    end, last = time.monotonic() + timeout_s, None
    while True:
        y = page.locator(CHART).first.bounding_box()["y"]
        if y == last or time.monotonic() > end:
            return y
        last = y
        page.wait_for_timeout(500)


@pytest.mark.parametrize("size", sweep([PROJECTOR, (1920, 1080)], {PROJECTOR}))  # the tighter; both in the full run
@pytest.mark.parametrize("path", sweep(["whatif", "patch", "generation", "lens"], {"whatif", "patch"}))  # the tightest
def test_presented_every_pages_first_chart_starts_in_the_first_screen(context, base, path, size):
    """Presented on the demo weights, the page's first chart starts in the upper 70% of the first screen
    (What if and Compare and patch put it at y = 690 of 720, under their introduction and controls); the
    introduction is one line that opens; the address reopens in a fresh browser, presented."""
    url = f"{base}/{path}?{DEMO}&present=1"
    page = tab(context)
    page.set_viewport_size({"width": size[0], "height": size[1]})
    page.goto(url)
    wait_rendered(page, 1, timeout_ms=180_000)
    page.wait_for_timeout(500)
    assert page.locator(EXCEPTION).count() == 0
    top = settled_top(page)
    page.screenshot(path=str(SHOTS / f"present-{path}-{size[0]}x{size[1]}.png"))
    assert top <= 0.7 * size[1], (path, size, top)  # 200 px of it and more in view at 720
    assert not page.get_by_test_id("stSidebar").is_visible()
    written = page.url  # the address the app wrote, in a browser that never saw this one
    leave(page)
    if size != PROJECTOR:
        return
    fresh = new_context(context.browser, *size)
    try:
        again = fresh.new_page()
        again.goto(written)
        wait_rendered(again, 1, timeout_ms=180_000)
        again.wait_for_timeout(500)
        assert abs(settled_top(again) - top) <= 8, written
        assert not again.get_by_test_id("stSidebar").is_visible() and "weights=demo" in written
    finally:
        fresh.close()
