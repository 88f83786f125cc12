"""The lesson builder keeps what the lecturer typed along the path the builder sends them on (headless
Debian chromium, a server of its own): type a title and text B on the Lessons page and add a stop, open
three other pages by the app's navigation to set the next stop's view, come back by the navigation:
everything is there; reload: still there; the page's address opened in a fresh browser (no session,
cookies or storage): the same builder. Screenshots in test-artifacts/screenshots/builder-*.png."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from streamlit_server import StreamlitServer, chromium_for_tests, new_context, wait_rendered  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SHOTS = ROOT / "test-artifacts" / "screenshots"
TITLE, TEXT_B = "Heads, one by one", " The dog sat on the rug"


@pytest.fixture(scope="module")
def browser():
    with chromium_for_tests() as b:
        yield b


@pytest.fixture(scope="module")
def base():
    with StreamlitServer("app.py", cwd=ROOT) as server:
        server.wait_healthy(timeout=60)
        yield server.base


def typed(page) -> tuple[str, str, int]:
    """The builder's title, text B and the stops its table lists (once its stops are drawn: they come below the
    title, and on a loaded machine a moment after it)."""
    page.get_by_role("button", name="Remove the last stop").first.wait_for(timeout=60_000)
    return (page.get_by_label("Title").input_value(), page.get_by_label("Text B, for Compare and patch").input_value(),
            page.get_by_role("button", name="Remove the last stop").count())


def settled_url(page, quiet_s: float = 1.5, timeout_s: float = 30) -> str:
    """The page's address once it has not changed for `quiet_s`: the app writes the draft into it at
    the end of a run, which on a loaded machine comes a moment after the widgets show their values."""
    import time

    last, since, start = page.url, time.monotonic(), time.monotonic()
    while time.monotonic() - since < quiet_s and time.monotonic() - start < timeout_s:
        page.wait_for_timeout(100)
        if page.url != last:
            last, since = page.url, time.monotonic()
    return last


def navigate(page, section: str, item: str, h1: str) -> None:
    page.get_by_test_id("stTopNavSection").filter(has_text=section).click()
    page.get_by_role("menuitem", name=item, exact=True).click()
    page.get_by_role("heading", level=1, name=h1).first.wait_for(timeout=120_000)
    wait_rendered(page, timeout_ms=120_000)


def test_the_builder_keeps_the_title_across_three_pages_a_reload_and_a_fresh_browser(browser, base):
    context = new_context(browser, 1280, 720)
    page = context.new_page()
    page.goto(base + "/lesson?weights=demo")
    wait_rendered(page, timeout_ms=120_000)
    for label, value in (("Title", TITLE), ("Text B, for Compare and patch", TEXT_B)):
        page.get_by_label(label).fill(value)
        page.get_by_label(label).press("Enter")
        wait_rendered(page, timeout_ms=60_000)
    page.get_by_role("button", name="Add stop 1").click()
    page.get_by_role("button", name="Remove the last stop").wait_for(timeout=60_000)
    wait_rendered(page, timeout_ms=60_000)
    assert typed(page) == (TITLE, TEXT_B, 1)
    for section, item, h1 in (("The model", "Attention", "Attention"), ("The model", "MLP", "MLP"),
                              ("Classroom", "What if", "What if")):
        navigate(page, section, item, h1)
    navigate(page, "Classroom", "Lessons", "Lessons")
    page.get_by_label("Title").wait_for(timeout=60_000)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "builder-after-three-pages.png"), full_page=True)
    assert typed(page) == (TITLE, TEXT_B, 1)
    page.wait_for_function("new URLSearchParams(location.search).has('draft')", timeout=30_000)
    page.reload()
    wait_rendered(page, timeout_ms=120_000)
    page.get_by_label("Title").wait_for(timeout=60_000)
    assert typed(page) == (TITLE, TEXT_B, 1)
    address = settled_url(page)  # what a lecturer copies once the page has settled
    context.close()
    fresh = new_context(browser, 800, 900)
    try:
        again = fresh.new_page()
        again.goto(address)
        wait_rendered(again, timeout_ms=120_000)
        again.get_by_label("Title").wait_for(timeout=60_000)
        assert typed(again) == (TITLE, TEXT_B, 1)
        again.screenshot(path=str(SHOTS / "builder-fresh-800.png"), full_page=True)
    finally:
        fresh.close()
