"""One real browser pass: every page of the running app in headless Chromium, screenshotted.

A Streamlit server (`streamlit run app.py`) runs for the module; each test opens a new tab (a new
Streamlit session) on a URL (a view is a link: text, weights, model, seed, mode, block, head),
waits for the app to finish running and every Plotly chart to be drawn, then asserts no exception,
no dialog, the page's title and its charts. Screenshots go to test-artifacts/screenshots/{url}-{mode}.png.

Needs Debian's chromium (/usr/bin/chromium, or `chromium` on PATH); without it the module is
skipped, unless GPT2VIZ_REQUIRE_BROWSER=1, which turns the skip into a failure.
"""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from streamlit_server import CHART, EXCEPTION, StreamlitServer, chromium_for_tests, new_context, wait_rendered  # noqa: E402

from gpt2viz.components import component_tree  # noqa: E402
from gpt2viz.config import get_config  # noqa: E402
from gpt2viz.ui.pages import PAGE_TABLE, href  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SHOTS = ROOT / "test-artifacts" / "screenshots"
URLS = [url for _, _, url, _ in PAGE_TABLE]
TITLES = {url: title for _, title, url, _ in PAGE_TABLE}

# Component pages show the component's own title as h1 (the sidebar shows the PAGE_TABLE title);
# the other pages' h1 begins with their PAGE_TABLE title ("Logit lens" → "Logit lens and ...").
COMPONENT_OF = {"overview": "model", "tokens": "embed", "block": "block", "layernorm": "block.ln1",
                "attention": "block.attn", "merge": "block.attn.merge", "mlp": "block.mlp", "output": "unembed"}
MIN_CHARTS = {"overview": 2, "tokens": 3, "block": 3, "layernorm": 4, "attention": 2, "merge": 3, "mlp": 3,
              "output": 2, "modes": 2, "params": 1, "generation": 3, "training": 3, "lens": 1}  # others: 0
OTHER_MODES = [("attention", "decode"), ("output", "decode"), ("attention", "training"), ("output", "training")]


def h1_ok(url: str, h1: str) -> bool:
    cid = COMPONENT_OF.get(url)
    return h1 == component_tree(get_config("tiny"))[cid].title if cid else h1.startswith(TITLES[url])


@pytest.fixture(scope="module")
def context():
    with chromium_for_tests() as b:
        context = new_context(b)
        yield context  # one context: its pages share the HTTP cache; each page is a new session
        context.close()


@pytest.fixture(scope="module")
def server(context):
    server = StreamlitServer("app.py", cwd=ROOT)
    try:
        server.wait_healthy(timeout=60)
        # The first request of this fresh server is a deep link (test_deep_link_on_fresh_server).
        page = open_view(context, server.base, "attention?model=tiny", MIN_CHARTS["attention"])
        server.first_view = {"exceptions": exceptions(page), "h1": page.locator("h1").all_inner_texts()}
        page.close()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def base(server):
    return server.base


def open_view(context, base: str, path: str, min_charts: int = 0):
    page = context.new_page()
    page.goto(base + "/" + path.lstrip("/"))
    wait_rendered(page, min_charts)
    return page


def screenshot(page, name: str) -> None:
    """The whole page: Streamlit scrolls inside stMain, so grow the viewport to its content first."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    height = page.evaluate("() => Math.max(...[...document.querySelectorAll("
                           "\"[data-testid='stMain'], [data-testid='stSidebarContent']\")].map(e => e.scrollHeight))")
    size = page.viewport_size
    page.set_viewport_size({"width": size["width"], "height": min(max(height, size["height"]), 12_000)})
    page.wait_for_timeout(200)  # let Plotly's responsive resize settle
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)
    page.set_viewport_size(size)


def exceptions(page) -> list[str]:
    return page.locator(EXCEPTION).all_inner_texts()


def chart_titles(page) -> list[str]:
    return page.eval_on_selector_all(".gtitle", "els => els.map(e => e.textContent)")


def check_page(context, base: str, url: str, mode: str) -> None:
    page = open_view(context, base, f"{href(url)}?model=tiny&mode={mode}", MIN_CHARTS.get(url, 0))
    try:
        screenshot(page, f"{url}-{mode}")
        assert exceptions(page) == []
        assert page.get_by_role("dialog").all_inner_texts() == []  # e.g. Streamlit's "Page not found"
        h1 = page.locator("h1").first.inner_text().strip()
        assert h1_ok(url, h1), f"h1 {h1!r} on {url}"
        charts = page.locator(CHART).count()
        assert charts >= MIN_CHARTS.get(url, 0), f"{charts} charts on {url} in {mode}"
    finally:
        page.close()


@pytest.mark.parametrize("url", URLS)
def test_page_full(context, base, url):
    check_page(context, base, url, "full")


@pytest.mark.parametrize("url,mode", OTHER_MODES)
def test_page_other_modes(context, base, url, mode):
    check_page(context, base, url, mode)


def test_out_of_range_link_warns(context, base):
    page = open_view(context, base, "attention?model=tiny&block=99&head=-3&mode=sideways", MIN_CHARTS["attention"])
    try:
        assert exceptions(page) == []
        warnings = page.locator("[data-testid='stSidebar'] [data-testid='stAlert']").all_inner_texts()
        for key in ("block", "head", "mode"):
            assert any("link" in w and f"{key}=" in w for w in warnings), (key, warnings)
        assert any("block 0 head 0" in t for t in chart_titles(page))  # what is shown instead
    finally:
        page.close()


@pytest.mark.parametrize("block,head", [(0, 0), (1, 2)])
def test_url_chooses_block_and_head(context, base, block, head):
    page = open_view(context, base, f"attention?model=tiny&block={block}&head={head}", MIN_CHARTS["attention"])
    try:
        titles = chart_titles(page)
        assert any(f"block {block} head {head}" in t for t in titles), titles
        assert not any(f"block {1 - block}" in t for t in titles), titles
    finally:
        page.close()


def test_slider_changes_view_and_link(context, base):
    """In one session, as a user does it: the Block slider redraws the charts and updates the URL."""
    page = open_view(context, base, "attention?model=tiny&block=0", MIN_CHARTS["attention"])
    try:
        page.get_by_test_id("stSlider").filter(has_text="Block").get_by_role("slider").focus()
        page.keyboard.press("ArrowRight")
        wait_rendered(page, MIN_CHARTS["attention"], must_see="block 1 head 0")
        assert exceptions(page) == []
        assert "block=1" in page.url
    finally:
        page.close()


def test_deep_link_on_fresh_server(server):
    """A shared link is often the first request a restarted server sees. Regression: with a folder
    named pages/ beside app.py, Streamlit ran a deep link's page file alone, without app.py (a
    KeyError on session_state["view"]), until app.py had run once in the server process."""
    assert server.first_view["exceptions"] == [], "first request to a fresh server, straight to /attention"
    assert h1_ok("attention", server.first_view["h1"][0])


@pytest.mark.parametrize("mode", ["full", "decode"])
def test_export_downloads_the_tensors_of_the_view(context, base, mode):
    """The export button writes its file only when clicked: what arrives is the view's tensors,
    exactly as a direct run records them."""
    from safetensors.numpy import load

    from gpt2viz.modes import Mode, run
    from gpt2viz.tokenizer import encode
    from gpt2viz.ui.state import DEFAULT_TEXT
    from gpt2viz.weights import random_model

    page = open_view(context, base, f"attention?model=tiny&block=1&mode={mode}", MIN_CHARTS["attention"])
    try:
        with page.expect_download(timeout=60_000) as download:
            page.get_by_role("button", name="block1-attention").click()
        tensors = load(Path(download.value.path()).read_bytes())
        assert exceptions(page) == []
    finally:
        page.close()
    trace = run(random_model(get_config("tiny"), 0), encode(DEFAULT_TEXT), Mode(mode))
    names = [f"blocks.1.attn.{s}" for s in ("q", "k", "v", "scores", "pattern", "z")]
    assert sorted(tensors) == sorted(names)
    for name in names:
        assert (tensors[name] == trace[name].numpy()).all(), name


def test_a_diagram_box_opens_its_page_in_the_same_tab_with_the_view(context, base):
    """The block diagram is a drawing whose boxes are links: clicking Attention opens the Attention
    page in this tab, with the same text, model, mode and block; and a mode chosen in the sidebar
    (not from the link) is what the diagram's shapes and links then carry."""
    page = open_view(context, base, "block?model=tiny&block=1&text=Hello%20world%20again", MIN_CHARTS["block"])
    try:
        tabs = len(context.pages)
        mode = page.get_by_test_id("stSelectbox").filter(has=page.get_by_text("Mode", exact=True))
        mode.get_by_role("combobox").click()
        page.keyboard.type("decode")
        page.keyboard.press("Enter")
        page.wait_for_url("**mode=decode**")
        wait_rendered(page, 1)
        diagram = page.locator("svg[aria-label='tiny Transformer block']")
        assert "decode: T = 1" in diagram.text_content()
        screenshot(page, "block-diagram-decode")
        diagram.locator("a[data-target='block.attn']").click()
        page.wait_for_url("**/attention?**")
        wait_rendered(page, MIN_CHARTS["attention"])
        assert len(context.pages) == tabs and exceptions(page) == []
        assert h1_ok("attention", page.locator("h1").first.inner_text().strip())
        for kept in ("text=Hello%20world%20again", "model=tiny", "mode=decode", "block=1"):
            assert kept in page.url, (kept, page.url)
        assert any("block 1 head 0" in t for t in chart_titles(page))
    finally:
        page.close()
