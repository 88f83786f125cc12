"""The lecturer's kit in AppTest: presentation mode from the URL and its way back,
charts whose camera button saves a slide-sized SVG, diagrams and the page as downloads. The browser
half (the files themselves, the screen at 1280x720) is in test_browser.py."""


from test_app import charts, open_page

from gpt2viz.plots.theme import LIGHT
from gpt2viz.ui import export
from gpt2viz.ui.anatomy import framed


def image_options(chart) -> dict:
    return chart.config["toImageButtonOptions"]


def test_every_chart_saves_an_svg_the_size_of_a_slide_named_after_page_and_chart():
    at = open_page("attention", block=1, head=2)
    options = [image_options(c) for c in charts(at)]
    assert len(options) >= 2
    for o in options:
        assert o["format"] == "svg" and o["width"] * o["scale"] == 1600 and o["height"] * o["scale"] >= 900
    assert options[0]["filename"] == "attention-block-1-head-2"  # the page's name once
    assert options[1]["filename"] == "attention-every-head-of-block-1"


def test_the_handout_holds_the_pages_charts_its_source_and_key_numbers():
    at = open_page("attention", block=1)
    page = at.session_state["_page_record"]
    html = export.page_html(page, framed)
    drawn = charts(at)
    assert len(page.charts) == len(drawn) >= 2
    assert html.count('class="plotly-graph-div"') == len(drawn)
    # the app's cartesian bundle, inline once whatever the charts, not the whole plotly.js (a third of its size)
    assert html.count("plotly.js (cartesian - minified) v") == 1 and "plotly.js v" not in html
    assert len(html.encode()) < 2_000_000, len(html.encode())
    assert "<h1>Attention</h1>" in html and page.source in html and "block 1 head 0" in html
    assert page.notes and all(line.replace("**", "").split(":")[0][:40] in html for line in page.notes)
    assert LIGHT.heading in html  # printed on white, whatever the browser's theme
    labels = [b.proto.label for b in at.get("download_button")]
    assert "Download this page (.html)" in labels
    assert [b.proto.deferred_file_id != "" for b in at.get("download_button")
            if b.proto.label.startswith("Download this page")] == [True]  # built when clicked


def test_a_page_of_text_or_forms_offers_no_empty_handout():
    """A trial's Exercises handout: 1 KB of a heading and the source line, no exercise."""
    for url in ("exercises", "glossary"):
        at = open_page(url)
        assert not at.exception
        assert not [b for b in at.get("download_button") if b.proto.label.startswith("Download this page")], url


def test_present_1_hides_the_page_chrome_and_offers_the_next_stop():
    at = open_page("attention", present=1)
    assert not at.exception and at.session_state["present"] is True
    assert at.query_params["present"] in ("true", ["true"])  # a bound toggle takes true or false, not 1
    html = " ".join(e.proto.body for e in at.get("html"))
    assert "display: none" in html and "stSidebar" in html
    nxt = [m.value for m in at.markdown if "present-next" in m.value]
    assert len(nxt) == 1 and "Next: Merge and project →" in nxt[0]
    assert 'href="/merge?' in nxt[0] and "present=true" in nxt[0] and "model=tiny" in nxt[0]
    first, second = (c.figure["layout"] for c in charts(at)[:2])
    assert first.get("height") is None and second["height"]  # the first fills the screen, the next keep theirs
    assert not [c for c in at.caption if "›" in c.value]  # no breadcrumb above the title
    at.button(key="present-exit").click().run()
    assert at.session_state["present"] is False
    assert not [m for m in at.markdown if "present-next" in m.value]
    assert [c for c in at.caption if "›" in c.value]
    plain = charts(at)[0].figure["layout"]
    assert plain["height"] and first["title"]["font"]["size"] == round(plain["title"]["font"]["size"] * 1.4, 1)


def test_a_drawn_diagram_downloads_as_svg_and_stands_in_the_handout_without_links():
    at = open_page("block")
    buttons = [b.proto for b in at.get("download_button") if b.proto.label == "Diagram (.svg)"]
    assert len(buttons) == 1 and buttons[0].url  # the SVG itself is small: sent with the page
    page = at.session_state["_page_record"]
    assert len(page.diagrams) == 1 and "<a " in page.diagrams[0]
    html = export.page_html(page, framed)
    assert 'aria-label="tiny Transformer block"' in html and "LayerNorm 1" in html
    assert "<a " not in html.split('class="diagram"')[1]  # its links lead into the app, not from a file


def test_presenting_start_here_leads_to_the_tours_first_stop_and_the_last_to_nothing():
    first = open_page("start", present=1)
    assert [m.value for m in first.markdown if "present-next" in m.value and "Next: Overview →" in m.value]
    last = open_page("training", present=1)
    assert not last.exception and not [m for m in last.markdown if "present-next" in m.value]
    assert last.button(key="present-exit")  # the way back, with no next


def test_the_handout_writes_emphasis_as_plain_words():
    """A page's *followed* reached the handout with its asterisks; a product's stars stay."""
    from gpt2viz.teaching.handout import _plain

    assert _plain("the word that *followed* it, **bold**, *two words*") == "the word that followed it, bold, two words"
    assert _plain("2 * 3 * 4 and a*b*c") == "2 * 3 * 4 and a*b*c"


def test_a_handout_whose_chart_the_bundle_cannot_draw_carries_the_whole_plotly_js():
    """The cartesian bundle draws every chart the pages draw (tests/test_chart_corpus.py); a figure of
    another trace gets plotly.py's whole library, inline once, so that its handout still draws it."""
    import plotly.graph_objects as go

    from gpt2viz.teaching import handout

    bars = go.Figure(go.Bar(y=[1, 2]))
    sunburst = go.Figure(go.Sunburst(labels=["a", "b"], parents=["", "a"]))  # a trace the bundle lacks
    page = handout.build("A page", "random tiny", [bars, sunburst, bars], [])
    assert page.count("plotly.js v") == 1 and "cartesian" not in page.split("plotly.js v")[0][-200:]
    assert page.count('class="plotly-graph-div"') == 3
    only_bars = handout.build("A page", "random tiny", [bars], [])
    assert only_bars.count("plotly.js (cartesian - minified) v") == 1 and "plotly.js v" not in only_bars


def test_neither_library_can_end_its_inline_script_early():
    """The handout writes plotly.js inside <script>: "</script" would end it and "<!--" would change how
    the browser finds its end."""
    from plotly.offline import get_plotlyjs

    from gpt2viz.spec.paths import PLOTLY_BUNDLE

    for code in (PLOTLY_BUNDLE.read_text(encoding="utf-8"), get_plotlyjs()):
        assert "</script" not in code.lower() and "<!--" not in code
