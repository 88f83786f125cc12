"""A signed lesson link opens on stop 1 with the pinned controls
locked, next and back step in the same tab; a tampered and an expired link say so in one line; the
Lessons page names a malformed file's field, builds a lesson and signs its link after the password.
Presented (`present=1`, or the toggle at any stop) at 1280x720 and 1920x1080, a lesson hides the
sidebar, says where the class is, puts the stop's note under large back and next links and its first
chart in the first screen, through next, back and a reload. Every link at a stop stays in the lesson or
carries its weights and text (and says it leaves); each, and the address the navigation writes,
reopens in a fresh browser as the view the student saw.

A Streamlit server for the module, started with a lesson key and a lecturer password; each test a
new tab (a new session). Screenshots in test-artifacts/screenshots/lesson-*.png. Skipped without
Debian's chromium, as test_browser.py is.
"""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from browser_tabs import leave, tab  # noqa: E402
from streamlit_server import EXCEPTION, StreamlitServer, chromium_for_tests, new_context, wait_rendered  # noqa: E402
from sweep import sweep  # noqa: E402

from gpt2viz.teaching import lessons as lf  # noqa: E402
from gpt2viz.ui import present  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SHOTS = ROOT / "test-artifacts" / "screenshots"
KEY, PASSWORD = "browser-lesson-key-0123456789", "correct horse"
DEMO = ROOT / "lessons" / "attention-demo.json"


@pytest.fixture(scope="module")
def context():
    with chromium_for_tests() as b:
        context = new_context(b, 1400, 900)
        yield context
        context.close()


@pytest.fixture(scope="module")
def base(context):
    with pytest.MonkeyPatch.context() as env:  # the server inherits them
        env.setenv(lf.KEY_ENV, KEY)
        env.setenv("GPT2VIZ_TEACHER_PASSWORD", PASSWORD)
        with StreamlitServer("app.py", cwd=ROOT) as server:
            server.wait_healthy(timeout=60)
            yield server.base


def link(**kw) -> str:
    lesson = lf.load(DEMO)
    return lf.href(lesson.stops[0].page, lf.sign(lesson, KEY.encode(), **kw), 0)


def open_tab(context, url: str):
    page = tab(context)
    page.goto(url)
    wait_rendered(page, 0, timeout_ms=120_000)
    return page


def wait_for_text(page, text: str) -> None:
    page.get_by_text(text, exact=False).first.wait_for(timeout=120_000)
    wait_rendered(page, 0, timeout_ms=120_000)


def errors(page) -> list[str]:
    """Each error's text, without its icon's name (a Material icon is a ligature: its name is its text)."""
    return [[line for line in e.splitlines() if line.strip()][-1]
            for e in page.locator("[data-testid='stAlertContentError']").all_inner_texts()]


def shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"lesson-{name}.png"))


def test_a_lesson_link_opens_locked_and_steps_in_the_same_tab(context, base):
    page = open_tab(context, base + link())
    wait_for_text(page, "stop 1 of 6 · Attention")
    assert page.locator(EXCEPTION).count() == 0
    assert "previous-token head" in page.locator("[data-testid='stAlertContentInfo']").first.inner_text()
    sidebar = page.locator("[data-testid='stSidebar']")
    assert sidebar.locator("textarea").first.is_disabled()  # the text is pinned
    assert sidebar.get_by_text("The lesson sets").count() == 1
    shot(page, "stop1")
    pages_before = len(context.pages)
    page.get_by_text("next →").click()
    wait_for_text(page, "stop 2 of 6")
    assert "stop=1" in page.url and "/attention?lesson=" in page.url and len(context.pages) == pages_before
    page.get_by_text("next →").click()
    wait_for_text(page, "stop 3 of 6")
    assert "/output?lesson=" in page.url and "stop=2" in page.url
    page.get_by_text("← back").click()
    wait_for_text(page, "stop 2 of 6")
    assert "induction head" in page.locator("[data-testid='stAlertContentInfo']").first.inner_text()
    leave(page)


@pytest.mark.parametrize("kind,needle", [("tampered", "signature does not match"), ("expired", "expired on")])
def test_a_bad_link_says_so_in_one_line_and_shows_nothing_of_it(context, base, kind, needle):
    url = base + link(expires=1_700_000_000) if kind == "expired" else base + link().replace(".", ".A", 1)
    page = open_tab(context, url)
    (error,) = errors(page)
    assert needle in error
    assert page.get_by_text("Attention on the demo model").count() == 0 and page.get_by_text("stop 1 of").count() == 0
    shot(page, kind)
    leave(page)


def test_the_lessons_page_names_a_malformed_files_field(context, base, tmp_path):
    bad = json.loads(DEMO.read_text())
    bad["stops"][1]["mode"] = "sideways"
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(bad))
    page = open_tab(context, base + "/lesson")
    page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(str(path))
    wait_for_text(page, "stops[1].mode")
    (error,) = errors(page)
    assert error.startswith("stops[1].mode: 'sideways' is not one of full,")
    leave(page)


def test_the_lessons_page_builds_and_signs_a_link_that_opens(context, base):
    page = open_tab(context, base + "/lesson?model=tiny")
    page.get_by_label("Title").fill("Built in the browser")
    page.get_by_label("Note or question for this stop").fill("Look at the diagonal.")
    page.get_by_role("button", name="Add stop 1").click()
    wait_for_text(page, "Add stop 2")
    page.get_by_label("Lecturer password").fill(PASSWORD)
    page.get_by_role("button", name="Unlock signing").click()
    wait_for_text(page, "Sign the link")
    page.get_by_text("the lesson built above").click()
    wait_rendered(page, 0)
    page.get_by_role("button", name="Sign the link").click()
    wait_for_text(page, "characters.")
    url = page.locator("[data-testid='stCode'] code").first.inner_text().strip()
    assert url.startswith(base + "/attention?lesson=") and url.endswith("&stop=0")
    shot(page, "signed")
    student = open_tab(context, url)
    wait_for_text(student, "Built in the browser")
    assert student.get_by_text("Look at the diagonal.").count() == 1
    leave(page)
    leave(student)


def test_devtools_history_navigation_does_not_change_a_locked_lesson(context, base):
    """One devtools line: push a URL with other values, then fire popstate (as back and forward do)."""
    page = open_tab(context, base + link())
    wait_for_text(page, "stop 1 of 6")
    lesson = lf.load(DEMO)
    forged = page.url + "&text=hacked&mode=decode&block=1"
    page.evaluate("url => { history.pushState({}, '', url); dispatchEvent(new PopStateEvent('popstate')); }", forged)
    page.wait_for_timeout(1500)
    wait_rendered(page, 0, timeout_ms=120_000)
    sidebar = page.locator("[data-testid='stSidebar']")
    assert sidebar.locator("textarea").first.input_value() == lesson.text
    mode = sidebar.get_by_role("combobox", name="Mode").input_value()
    block = sidebar.locator("[data-testid='stSlider']").filter(has_text="Block").first.inner_text()
    assert mode == "full", mode
    assert block.split() == ["Block", "0", "0", "1"], block  # the label, the thumb's value, the range
    assert page.get_by_text("stop 1 of 6").count() == 1


# ---- a lesson on the projector --------------------------------------------------------------------
CHART = ":is([data-testid='stPlotlyChart'], .gpt2viz-chart)"


def projected(page, size: tuple[int, int], place: str) -> None:
    """The stop presented: no sidebar, the page's type enlarged, the class's place and large back and
    next in the top bar, the note under it, and the first chart between the note and the screen's foot."""
    page.locator(".present-place", has_text=place).wait_for(timeout=120_000)
    wait_rendered(page, 1, timeout_ms=120_000)
    page.wait_for_timeout(300)  # Plotly's responsive resize
    assert not page.get_by_test_id("stSidebar").is_visible()
    assert page.evaluate("getComputedStyle(document.documentElement).fontSize") == "20px"
    w, h = size
    nxt = page.locator("a.present-next")
    if nxt.count():
        box = nxt.bounding_box()
        assert box["y"] + box["height"] < 80 and box["height"] >= 40, box
    note = page.locator(".st-key-present-note").bounding_box()
    chart = page.locator(CHART).first.bounding_box()
    assert note["y"] < 0.3 * h and note["y"] + note["height"] <= chart["y"], (note, chart)
    assert chart["height"] >= 0.5 * h, (chart, size)
    # the picture itself (plotly's plot area) is readable and most of it in the first screen: where the screen leaves
    # less than MIN_PLOT_PX for it, the chart runs past the screen's foot rather than squeeze the plot
    top, tall = page.evaluate("""() => { const c = document.querySelector('.st-key-present-chart .js-plotly-plot');
                                         return [c.getBoundingClientRect().top + c._fullLayout._size.t,
                                                 c._fullLayout._size.h]; }""")
    assert tall >= present.MIN_PLOT_PX and min(h, top + tall) - top >= 0.8 * present.MIN_PLOT_PX, (top, tall, size)
    if h >= 1080:
        assert chart["y"] + chart["height"] <= h, (chart, size)
    assert page.locator(EXCEPTION).count() == 0


@pytest.mark.parametrize("size", sweep([(1280, 720), (1920, 1080)], {(1280, 720)}))  # both in the full run
def test_a_lesson_presents_through_next_back_and_a_reload(context, base, size):
    page = tab(context)
    page.set_viewport_size({"width": size[0], "height": size[1]})
    page.goto(base + link() + "&present=1")
    projected(page, size, "stop 1 of 6 · Attention")
    assert "previous-token head" in page.locator(".st-key-present-note").inner_text()
    shot(page, f"present-stop1-{size[0]}x{size[1]}")
    page.locator("a.present-next").click()
    projected(page, size, "stop 2 of 6 · Attention")
    page.locator("a.present-next").click()
    projected(page, size, "stop 3 of 6 · Output")
    assert "present=true" in page.url and "stop=2" in page.url and "/output?lesson=" in page.url
    shot(page, f"present-stop3-{size[0]}x{size[1]}")
    page.locator("a.present-back").click()
    projected(page, size, "stop 2 of 6 · Attention")
    page.reload()
    projected(page, size, "stop 2 of 6 · Attention")
    assert "induction head" in page.locator(".st-key-present-note").inner_text()
    leave(page)


def test_the_lecturer_presents_from_any_stop_with_the_toggle(context, base):
    page = tab(context)
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(base + link().replace("stop=0", "stop=3"))
    wait_for_text(page, "stop 4 of 6 · What if")
    page.get_by_test_id("stSidebar").get_by_text("Presentation mode").click()
    page.locator(".present-place", has_text="stop 4 of 6 · What if").wait_for(timeout=120_000)
    wait_rendered(page, 1, timeout_ms=120_000)
    assert not page.get_by_test_id("stSidebar").is_visible()
    assert page.locator("a.present-back").is_visible() and page.locator("a.present-next").is_visible()
    assert "Predict first" in page.locator(".st-key-present-note").inner_text()
    page.locator("a.present-next").click()
    page.locator(".present-place", has_text="stop 5 of 6 · What if").wait_for(timeout=120_000)
    assert "present=true" in page.url and "stop=4" in page.url
    page.get_by_role("button", name="Exit").click()
    page.get_by_test_id("stSidebar").wait_for(state="visible", timeout=30_000)
    wait_for_text(page, "stop 5 of 6 · What if")
    leave(page)


# ---- a lesson keeps its students --------------------------------------------------------------------
VIEW_JS = """() => {
  const side = document.querySelector("[data-testid='stSidebar']");
  const radio = [...side.querySelectorAll("[data-testid='stRadio']")].find(r => r.innerText.startsWith("Weights"));
  const checked = radio?.querySelector("input:checked");
  const thumb = label => [...side.querySelectorAll("[data-testid='stSlider']")]
      .find(s => s.innerText.includes(label))?.querySelector("[data-testid='stSliderThumbValue']")?.innerText;
  return {weights: checked?.closest("label")?.innerText.trim(), text: side.querySelector("textarea")?.value,
          block: thumb("Block"), head: thumb("Head")};
}"""
# the app's own links of a page, by kind: an HTML anchor (same tab), a drawn diagram's box, a page
# link, a Markdown link (a new tab); none of the page's section anchors (#...) or other sites
LINKS_JS = """() => [...document.querySelectorAll("[data-testid='stMain'] a")].map(a => ({
    href: a.getAttribute("href") || a.getAttribute("xlink:href") || "", text: a.textContent.trim(),
    box: !!a.closest("svg"), page_link: !!a.closest("[data-testid='stPageLink']"),
    new_tab: a.getAttribute("target") === "_blank"}))
  .filter(l => l.href && !l.href.startsWith("#") && !/^[a-z]+:/.test(l.href))"""


def view(page) -> dict:
    page.wait_for_selector("[data-testid='stSidebar'] textarea")
    return page.evaluate(VIEW_JS)


def test_every_link_at_a_stop_keeps_the_lessons_view(context, base):
    """At stop 2 (block 1, head 2 on the demo model): every link either stays in the lesson or carries the
    lesson's weights and text, and says when it leaves; each distinct address, opened in a fresh browser,
    shows the lesson's weights and text; the page a link leads to offers the way back to the stop; leaving
    by the top navigation writes an address that reopens as the same view."""
    from urllib.parse import parse_qs, urlsplit

    lesson = lf.load(DEMO)
    page = tab(context)
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(base + link().replace("stop=0", "stop=1"))
    wait_for_text(page, "stop 2 of 6")
    page.get_by_test_id("stPageLink").first.wait_for(timeout=120_000)  # the footer's, last drawn
    found = page.evaluate(LINKS_JS)
    assert any(f["box"] for f in found) and any(f["page_link"] for f in found), found
    views = {}
    for f in found:
        query = {k: v[0] for k, v in parse_qs(urlsplit(f["href"]).query).items()}
        if "lesson" in query:  # back and next
            assert query["stop"] in ("0", "2"), f
            continue
        assert query.get("weights") == "demo" and query.get("text") == lesson.text, f
        if not (f["box"] or f["new_tab"]):  # a box's caption says it for all of them; a new tab leaves nothing
            assert f["text"].endswith("(leaves the lesson)"), f
        if f["box"]:
            assert page.get_by_text("The boxes open their pages outside the lesson").count() == 1
        url = f["href"] if f["href"].startswith("/") else "/" + f["href"]
        key = (urlsplit(url).path, tuple(sorted((k, v) for k, v in query.items() if not k.startswith("from_"))))
        views.setdefault(key, url)
    page.get_by_test_id("stTopNavSection").filter(has_text="The model").click()
    page.get_by_role("menuitem", name="Tokens and embeddings").click()
    page.wait_for_url("**/tokens?**weights=demo**", timeout=120_000)
    wait_rendered(page, timeout_ms=120_000)
    page.wait_for_timeout(500)
    views[("navigation",)] = page.url.removeprefix(base)
    leave(page)
    assert len(views) >= 5, views
    fresh = new_context(context.browser, 1280, 720)  # no session, cookies or storage of the first
    try:
        for url in views.values():
            again = tab(fresh)
            again.goto(base + url)
            wait_rendered(again, timeout_ms=120_000)
            shown = view(again)
            for _ in range(60):  # a heavy page (Who wrote the answer sweeps its heads) may still draw its sidebar
                if shown["weights"] is not None:
                    break
                again.wait_for_timeout(1000)
                shown = view(again)
            assert shown["weights"] == "demo" and shown["text"] == lesson.text, (url, shown)
            assert again.locator(EXCEPTION).count() == 0, url
            if "from_lesson=" in url:  # the way back to the stop it left
                back = again.get_by_role("link", name="← back to the lesson, stop 2")
                assert "stop=1" in back.get_attribute("href") and "lesson=" in back.get_attribute("href"), url
            leave(again)
    finally:
        fresh.close()


def test_signing_at_localhost_warns_and_takes_the_address_students_open(context, base):
    """This server is at 127.0.0.1: the address field starts there and says students cannot open it; the
    link signed starts with the address typed instead."""
    page = open_tab(context, base + "/lesson?model=tiny")
    page.get_by_role("button", name="Add stop 1").click()
    wait_for_text(page, "Add stop 2")
    page.get_by_label("Lecturer password").fill(PASSWORD)
    page.get_by_role("button", name="Unlock signing").click()
    wait_for_text(page, "Sign the link")
    field = page.get_by_role("textbox", name="The address students open")
    assert field.input_value() == base
    assert "students cannot open" in page.locator("[data-testid='stAlertContentWarning']").inner_text()
    field.fill("http://class.example.edu:8501/")
    field.press("Enter")
    page.get_by_text("names this computer itself").wait_for(state="detached", timeout=60_000)
    page.get_by_text("the lesson built above").click()
    wait_rendered(page, 0)
    page.get_by_role("button", name="Sign the link").click()
    wait_for_text(page, "characters.")
    url = page.locator("[data-testid='stCode'] code").first.inner_text().strip()
    assert url.startswith("http://class.example.edu:8501/attention?lesson="), url
    shot(page, "signed-base")
    leave(page)
