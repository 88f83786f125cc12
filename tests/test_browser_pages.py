"""Every page of the registry in a real browser, loaded once and checked in that one tab at every size a person
opens it at (the view `{page}?model=tiny`, a new Streamlit session):

- 1400x900: the whole page screenshotted; no exception, no dialog, its title, its charts (test_browser's check_page);
- 1400x900, 1280x720 (a projector) and 800x900: the first chart of a component page in the first screen, no chart
  text overlapping, cut or hidden, the page no wider than the window (test_browser's check_sizes);
- 1280x720 and 800x900: axe-core finds nothing serious, every chart is a named figure with its numbers
  (test_browser_a11y);
- 1280x720: Tab reaches every control in order with a visible ring (test_browser_keyboard's walk);
- 390x844, a phone: no tick labels overlapping, nothing under a chart's toolbar, nothing wider than the window.

Every page under GPT2VIZ_FULL=1; the README's test command checks a sample of them (VIEWED, tests/sweep.py).
A page's tests share its view (a module-scoped fixture per page: pytest runs them together, in this file's
order), so each page is drawn once instead of once a check (24 pages: four loads a page fewer). Each test sets
the window size it needs. Skipped without Debian's chromium, as test_browser.py is.
"""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import test_browser as pages  # noqa: E402
import test_browser_layout as layout  # noqa: E402
from browser_tabs import app_context, leave, tab  # noqa: E402
from streamlit_server import EXCEPTION, wait_rendered  # noqa: E402
from sweep import sweep  # noqa: E402
from test_browser_a11y import axe_serious, charts_in_words  # noqa: E402
from test_browser_keyboard import problems, walk  # noqa: E402

from gpt2viz.spec.pages import PAGES, href  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
# the sample (sweep.py): the cards of Start, the drawn model, maps and sliders, five charts and selectboxes,
# columns of controls, a table, a lesson's forms
VIEWED = sweep(PAGES, {"start", "overview", "attention", "heads", "whatif", "params", "lesson"},
               key=lambda row: row.url)


@pytest.fixture(scope="module")
def context():
    """One server and one browser context for the module; its address is `.gpt2viz_base`."""
    with app_context(ROOT, *pages.DESKTOP) as context:
        yield context


@pytest.fixture(scope="module", params=VIEWED, ids=[row.url for row in VIEWED])
def view(request, context):
    """(the page's registry row, its tab): the page drawn at 1400x900, kept for every test of the page."""
    row = request.param
    page = tab(context)
    page.set_viewport_size({"width": pages.DESKTOP[0], "height": pages.DESKTOP[1]})
    page.goto(f"{context.gpt2viz_base}{href(row.url)}?model=tiny")
    wait_rendered(page, row.charts, timeout_ms=180_000)
    page.wait_for_timeout(300)  # a11y.js marks the regions that scroll sideways at the next frame
    yield row, page
    leave(page)


def sized(page, row, width: int, height: int) -> None:
    """The window at width x height, the page's charts laid out again (a chart's box is briefly absent while it is)."""
    page.set_viewport_size({"width": width, "height": height})
    wait_rendered(page, row.charts, timeout_ms=60_000)
    page.wait_for_timeout(300)  # Plotly's responsive resize, and a11y.js at the next frame


def test_the_page_draws_whole(view):
    row, page = view
    sized(page, row, *pages.DESKTOP)
    pages.screenshot(page, f"{row.url}-full")
    assert pages.exceptions(page) == []
    assert page.get_by_role("dialog").all_inner_texts() == []  # e.g. Streamlit's "Page not found"
    h1 = page.locator("h1").first.inner_text().strip()
    assert pages.h1_ok(row.url, h1), f"h1 {h1!r} on {row.url}"
    charts = page.locator(pages.CHART).count()
    assert charts >= row.charts, f"{charts} charts on {row.url}"
    # a screen reader's outline: one h1, and no heading more than one level under the one before it (a trial: Start,
    # Lessons, Exercises, Experiments and About went from h1 to h3, the glossary from h3 to h5)
    levels = page.evaluate(layout.HEADINGS_JS)
    assert [lv for lv, _ in levels].count(1) == 1, levels
    assert not layout.level_skips(levels), f"{row.url}: headings skip a level: {layout.level_skips(levels)[:3]}"
    assert page.get_by_role("heading", name=" icon ").count() == 0  # the question's icon read first: "help icon How…"


def test_the_page_reads_at_each_window_size(view):
    row, page = view
    pages.check_sizes(page, row.url)


@pytest.mark.parametrize("size", [(1280, 720), (800, 900)], ids=["1280x720", "800x900"])
def test_axe_finds_nothing_serious_and_every_chart_is_in_words(view, size):
    row, page = view
    sized(page, row, *size)
    assert axe_serious(page, f"/{row.url} at {size[0]}x{size[1]}") == []
    assert charts_in_words(page) == []
    wait_rendered(page, row.charts, timeout_ms=30_000)  # every chart is (still) drawn


def test_tab_reaches_every_control_in_order_with_a_visible_ring(view):
    row, page = view
    sized(page, row, 1280, 720)
    assert page.locator(EXCEPTION).count() == 0
    found = walk(page)
    print(f"{row.url}: {len(found['controls'])} controls, {len(found['stops'])} stops")
    found_problems = problems(found)
    assert not found_problems, f"{row.url}: " + "\n".join(found_problems)


def test_the_page_reads_in_a_phones_window(view):
    row, page = view
    sized(page, row, *layout.PHONE)
    found = page.evaluate(layout.PHONE_JS)
    pages.screenshot(page, f"{row.url}-390x844")  # the whole page
    assert found["ticks"] == [], f"{row.url}: tick labels overlap at 390x844 (chart, axis, a, b): {found['ticks'][:6]}"
    assert found["under"] == [], f"{row.url}: text under the toolbar at 390x844 (chart, text): {found['under'][:6]}"
    assert found["overflow"] <= 1, f"{row.url} is {found['overflow']} px wider than a 390 px window"
