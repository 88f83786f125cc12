"""Accessibility in a real browser: axe-core (as the pinned `axe-playwright-python` bundles it) on a few pages
presented (`present=1`) and on every page of the exported attention lesson (file://), failing on
any serious or critical violation, with its rule, page and elements in the message; then a signed lesson driven by the
keyboard alone: Tab to "next →" and Enter, Tab to "← back" and Enter, the freed Head slider moved with
an arrow key, a box of the drawn diagram followed with Tab and Enter. The focus ring is screenshotted
(test-artifacts/screenshots/a11y-focus-*.png). Every page of the registry, plain, at 1280x720 and 800x900:
tests/test_browser_pages.py, with this file's axe_serious and charts_in_words.

One server (with a lesson key), one browser context, the tabs reused (browser_tabs). Skipped without
Debian's chromium, as test_browser.py is.
"""

import sys
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import exported  # noqa: E402
from browser_tabs import leave, tab  # noqa: E402
from exported import DEMO  # noqa: E402
from streamlit_server import CHART, EXCEPTION, StreamlitServer, chromium_for_tests, new_context, wait_rendered  # noqa: E402
from sweep import sweep  # noqa: E402

from gpt2viz.teaching import lessons as lf  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SHOTS = ROOT / "test-artifacts" / "screenshots"
KEY = "browser-a11y-key-0123456789abcdef"
SERIOUS = ("serious", "critical")
# presented: a component page with its diagram, a chart page, a lesson's stop; and in a narrow window, where
# the bar's Exit button shows only its icon
PRESENTED = [("overview", 1280, 720), ("attention", 1280, 720), ("whatif", 1280, 720), ("attention", 800, 900)]
# Violations in Streamlit's own markup that the app cannot mend: (rule, a piece of the element's selector).
# None at streamlit 1.67 on these pages; an entry here names its upstream issue.
STREAMLIT_OWN: tuple[tuple[str, str], ...] = ()

# What has the focus: enough to find a control by its words and to say where Tab went.
FOCUSED_JS = """() => {
  const e = document.activeElement;
  if (!e) return null;
  const box = e.closest("[data-testid]");
  return {tag: e.tagName.toLowerCase(), text: (e.innerText || e.textContent || "").trim().slice(0, 80),
          label: e.getAttribute("aria-label") || "", role: e.getAttribute("role") || "",
          target: e.getAttribute("data-target") || "", testid: box ? box.dataset.testid : "",
          slider: e.closest("[data-testid='stSlider']")?.innerText.split("\\n")[0] || ""};
}"""


@pytest.fixture(scope="module")
def context():
    """The module's browser context at 1280x720, and (as `.base`) the address of its server, which signs lessons."""
    with chromium_for_tests() as b, pytest.MonkeyPatch.context() as env:
        env.setenv(lf.KEY_ENV, KEY)  # the server inherits it
        with StreamlitServer("app.py", cwd=ROOT) as server:
            server.wait_healthy(timeout=60)
            context = new_context(b, 1280, 720)
            context.gpt2viz_base = server.base
            yield context
            context.close()


@pytest.fixture(scope="module")
def base(context):
    return context.gpt2viz_base


def axe_serious(page, where: str) -> list[str]:
    """Each serious or critical violation axe finds in `page`, one line: rule, impact, where, elements."""
    from axe_playwright_python.sync_playwright import Axe

    found = []
    for v in Axe().run(page).response["violations"]:
        if v["impact"] not in SERIOUS:
            continue
        targets = [" ".join(map(str, n["target"])) for n in v["nodes"]]
        targets = [t for t in targets if not any(v["id"] == rule and piece in t for rule, piece in STREAMLIT_OWN)]
        if targets:
            found.append(f"{v['id']} ({v['impact']}) on {where}: {targets[:4]}")
    return found


# Every chart's box: role figure, named by the sentence under it (stating a number of this run), and a
# "Show the numbers" table with numbers in it. In the app (Streamlit's chart box) and in the exported site.
CHART_WORDS_JS = r"""(selector) => [...document.querySelectorAll(selector)].map(c => {
  const named = document.getElementById(c.getAttribute("aria-labelledby") || "");
  const words = named && named.closest(".gpt2viz-figure-words");
  const fold = words && words.querySelector(".gpt2viz-show");
  // the app keeps a table in data-numbers until the fold is first opened; the site writes it in place
  const table = fold && fold.dataset.numbers ? new DOMParser().parseFromString(fold.dataset.numbers, "text/html")
                                             : fold;
  const cells = table ? [...table.querySelectorAll("td")].map(td => td.textContent) : [];
  return {role: c.getAttribute("role"), name: named ? named.textContent : "",
          summary: words ? words.querySelector(".gpt2viz-show summary")?.textContent : "", cells: cells.length,
          numbers: cells.some(t => /\d/.test(t))};
})"""


def charts_in_words(page, selector: str = CHART) -> list[str]:
    """What is missing from any chart's box (its role, its sentence with a number, its table of numbers)."""
    missing = []
    for i, c in enumerate(page.evaluate(CHART_WORDS_JS, selector)):
        if c["role"] != "figure" or not any(ch.isdigit() for ch in c["name"]):
            missing.append(f"chart {i + 1}: role {c['role']!r}, name {c['name'][:80]!r}")
        elif c["summary"] != "Show the numbers" or not c["numbers"] and "draws no values" not in c["name"]:
            missing.append(f"chart {i + 1}: numbers {c['summary']!r}, {c['cells']} cells")
    return missing


def open_view(context, url: str, size: tuple[int, int] | None = None):
    page = tab(context)  # at the context's size, unless another is given
    if size:
        page.set_viewport_size({"width": size[0], "height": size[1]})
    page.goto(url)
    wait_rendered(page, 0, timeout_ms=180_000)
    page.wait_for_timeout(300)  # a11y.js marks the regions that scroll sideways at the next frame
    assert page.locator(EXCEPTION).count() == 0, page.locator(EXCEPTION).first.inner_text()[:300]
    return page




@pytest.mark.parametrize("url,width,height", PRESENTED)
def test_axe_finds_nothing_serious_on_the_presented_page(context, base, url, width, height):
    page = open_view(context, f"{base}/{url}?present=1", (width, height))
    try:
        assert axe_serious(page, f"/{url}?present=1 at {width}x{height}") == []
        assert charts_in_words(page) == []
    finally:
        leave(page)


def test_axe_finds_nothing_serious_in_the_exported_lesson(context):
    """Every page of the exported lesson (its index and each stop), at 1280x720 and (in the full run) 800x900."""
    out, _ = exported.demo_site()
    pages = sorted(out.glob("*.html"))
    assert len(pages) >= 3
    page = tab(context)
    try:
        for width, height in sweep([(1280, 720), (800, 900)], {(1280, 720)}):
            page.set_viewport_size({"width": width, "height": height})
            for path in pages:
                page.goto(path.as_uri())
                page.wait_for_load_state("load")
                page.wait_for_timeout(300)
                assert axe_serious(page, f"{path.name} of the exported lesson at {width}x{height}") == []
                assert charts_in_words(page, ".chart") == []
    finally:
        page.set_viewport_size({"width": 1280, "height": 720})
        leave(page)


# ---- the keyboard alone -------------------------------------------------------------------------------

def focused(page) -> dict:
    return page.evaluate(FOCUSED_JS) or {}


def tab_to(page, wanted, limit: int = 250) -> dict:
    """Press Tab until the focused element is `wanted` (a predicate on `focused`); fail naming where Tab went."""
    seen = []
    for _ in range(limit):
        page.keyboard.press("Tab")
        now = focused(page)
        if wanted(now):
            return now
        seen.append(now.get("text") or now.get("label") or now.get("tag"))
    raise AssertionError(f"not reached in {limit} Tabs; Tab went through {seen[:60]} ...")


def query(page) -> dict:
    return {k: v[0] for k, v in parse_qs(urlparse(page.url).query).items()}


def test_a_lesson_by_keyboard_alone(context, base):
    lesson = lf.load(DEMO)
    page = tab(context)
    page.goto(base + lf.href(lesson.stops[0].page, lf.sign(lesson, KEY.encode()), 0))
    try:
        page.get_by_text("stop 1 of 6").first.wait_for(timeout=180_000)
        wait_rendered(page, 0, timeout_ms=180_000)
        page.locator("body").focus()
        page.keyboard.press("Tab")  # the first stop of Tab: Streamlit's skip link
        assert focused(page)["text"] == "Skip to main content", focused(page)

        tab_to(page, lambda f: f["text"] == "next →")
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / "a11y-focus-next.png"))
        page.keyboard.press("Enter")
        page.get_by_text("stop 2 of 6").first.wait_for(timeout=120_000)
        wait_rendered(page, 0, timeout_ms=120_000)
        assert query(page)["stop"] == "1" and urlparse(page.url).path == "/attention"

        page.locator("body").focus()
        tab_to(page, lambda f: f["text"] == "← back")
        page.keyboard.press("Enter")
        page.get_by_text("stop 1 of 6").first.wait_for(timeout=120_000)
        wait_rendered(page, 0, timeout_ms=120_000)
        assert query(page)["stop"] == "0"

        # the lesson frees the head: its slider takes the arrow keys
        page.locator("body").focus()
        tab_to(page, lambda f: f["label"] == "Head")  # the slider's thumb
        page.screenshot(path=str(SHOTS / "a11y-focus-slider.png"))
        before = query(page).get("head", "0")
        page.keyboard.press("ArrowRight")
        page.wait_for_function(f"!location.search.includes('head={before}&') && location.search.includes('head=')",
                               timeout=60_000)
        wait_rendered(page, 0, timeout_ms=120_000)
        assert query(page)["head"] == str(int(before) + 1)

        # a box of the drawn diagram: Tab reaches it, Enter follows it
        h1 = page.locator("h1").first.inner_text()
        page.locator("body").focus()
        box = tab_to(page, lambda f: f["tag"] == "a" and f["target"] == "block.attn.merge")
        page.screenshot(path=str(SHOTS / "a11y-focus-diagram.png"))
        page.keyboard.press("Enter")
        page.wait_for_url("**/merge?**", timeout=60_000)
        wait_rendered(page, 0, not_h1=h1, timeout_ms=120_000)
        assert page.locator(EXCEPTION).count() == 0
        assert page.locator("h1").first.inner_text() != h1, box
    finally:
        leave(page)
