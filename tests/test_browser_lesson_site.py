"""A lesson's static site in a browser (headless Debian chromium), opened from file:// with every request
that is not a local file refused and recorded: each stop's charts drawn, no request to any host, the
relative links from the index to every stop and from each stop to the next, and the freed head switched
in the page without a server. tests/test_lesson_export.py checks the files themselves."""

import sys
from pathlib import Path

import pytest

from gpt2viz.teaching import lessons as lf
from gpt2viz.teaching import site

sys.path.insert(0, str(Path(__file__).resolve().parent))
import exported  # noqa: E402
from exported import DEMO  # noqa: E402
from streamlit_server import chromium_for_tests  # noqa: E402

LESSON = lf.load(DEMO)
PAGES = [s.page for s in LESSON.stops]


@pytest.fixture(scope="module")
def demo_site() -> Path:
    return exported.demo_site()[0]


@pytest.fixture(scope="module")
def browser():
    with chromium_for_tests() as b:
        yield b


@pytest.fixture
def offline(browser):
    """A page whose requests other than file:// are refused, and listed in `.asked`."""
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    asked: list[str] = []

    def gate(route):
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            asked.append(route.request.url)
            route.abort()
    context.route("**/*", gate)
    page = context.new_page()
    page.asked = asked
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.errors = errors
    yield page
    context.close()


def drawn(page) -> int:
    """Charts plotly has drawn in the variant in view (each has its SVG)."""
    page.wait_for_function("document.querySelectorAll('.variant:not([hidden]) .chart.drawn .main-svg').length > 0",
                           timeout=20_000)
    return page.evaluate("document.querySelectorAll('.variant:not([hidden]) .chart.drawn').length")


def test_every_stop_opens_from_file_with_its_charts_drawn_and_no_request_to_any_host(demo_site, offline):
    for i, p in enumerate(PAGES):
        offline.goto((demo_site / site.stop_file(i, p)).as_uri())
        assert drawn(offline) >= 2, p
        assert offline.locator(".note").inner_text().strip()[:30] == LESSON.stops[i].note[:30]
    assert offline.asked == [] and offline.errors == []


def test_the_index_and_next_links_walk_the_whole_lesson(demo_site, offline):
    offline.goto((demo_site / "index.html").as_uri())
    offline.get_by_role("link", name="Stop 1: Attention").click()
    for i, p in enumerate(PAGES):
        offline.wait_for_url(f"**/{site.stop_file(i, p)}")
        assert drawn(offline) >= 2
        if i + 1 < len(PAGES):
            offline.locator("nav.bar").first.get_by_role("link", name="next →").click()
    offline.locator("nav.bar").first.get_by_role("link", name="← back").click()
    offline.wait_for_url(f"**/{site.stop_file(len(PAGES) - 2, PAGES[-2])}")
    offline.locator("nav.bar").first.get_by_role("link", name=LESSON.title).click()
    offline.wait_for_url("**/index.html")
    assert offline.asked == [] and offline.errors == []


def test_the_freed_head_switches_in_the_page_and_its_fragment_names_it(demo_site, offline):
    offline.goto((demo_site / site.stop_file(1, PAGES[1])).as_uri())
    drawn(offline)
    assert offline.evaluate("document.querySelector('.variant:not([hidden])').dataset.key") == "head=2"
    first_title = offline.locator(".variant:not([hidden]) .chart .gtitle").first.text_content()
    assert "head 2" in first_title
    offline.get_by_role("button", name="0", exact=True).click()
    assert drawn(offline) >= 2 and offline.url.endswith("#head=0")
    assert "head 0" in offline.locator(".variant:not([hidden]) .chart .gtitle").first.text_content()
    offline.goto((demo_site / site.stop_file(1, PAGES[1])).as_uri() + "#head=3")
    drawn(offline)
    assert offline.evaluate("document.querySelector('.variant:not([hidden])').dataset.key") == "head=3"
    assert offline.asked == [] and offline.errors == []
