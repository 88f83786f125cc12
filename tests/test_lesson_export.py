"""A lesson as a static site (`python -m gpt2viz lesson export`): the index and a page per stop, linked
by relative links; plotly.js written once; nothing asked of another host; every figure the very one the
app draws at that stop (opened here by a signed link, the way a student opens it), for each head the
lesson frees; the sweep the fifth stop's note points at computed and included; free controls past 16
pictures said to be fixed; every page a lesson may name exported; the Lessons page's button giving the
same files as a zip. The browser half (file://, network blocked) is in test_browser_lesson_site.py."""

import io
import math
import re
import sys
import zipfile
from pathlib import Path

import pytest
from app_charts import charts

from gpt2viz import lesson_site
from gpt2viz.spec.pages import BY_URL
from gpt2viz.spec.paths import PLOTLY_BUNDLE
from gpt2viz.teaching import lessons as lf
from gpt2viz.teaching import site

sys.path.insert(0, str(Path(__file__).resolve().parent))
from exported import DEMO, export, figures, hrefs, variants  # noqa: E402
from exported import demo_site as shared_demo_site  # noqa: E402
from test_links import run  # noqa: E402

KEY = "lecture-key-" + "y" * 20
LESSON = lf.load(DEMO)
PAGES = [s.page for s in LESSON.stops]


@pytest.fixture(scope="module")
def demo_site() -> tuple[Path, str]:
    return shared_demo_site()


def page(out: Path, i: int) -> str:
    return (out / site.stop_file(i, PAGES[i])).read_text(encoding="utf-8")


def test_the_command_writes_an_index_a_page_per_stop_and_plotly_once_and_says_size_and_time(demo_site):
    out, stdout = demo_site
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted(["index.html", site.PLOTLY_JS, *(site.stop_file(i, p) for i, p in enumerate(PAGES))])
    assert re.search(rf"{len(PAGES) + 2} files, \d+\.\d MB, written in \d+\.\d s", stdout), stdout
    for i in range(len(PAGES)):
        html = page(out, i)
        assert html.count(f'<script src="{site.PLOTLY_JS}"></script>') == 1
        assert "plotly.js v" not in html  # the library is beside the pages, not in them


def test_the_index_links_every_stop_and_each_stop_its_neighbours_by_relative_links(demo_site):
    out, _ = demo_site
    index = (out / "index.html").read_text(encoding="utf-8")
    assert LESSON.title in index and "the demo model" in index and LESSON.text.strip() in index
    assert [h for h in hrefs(index)] == [site.stop_file(i, p) for i, p in enumerate(PAGES)]
    for i in range(len(PAGES)):
        html = page(out, i)
        links = set(hrefs(html))
        assert "index.html" in links
        assert (i > 0) == any(h == site.stop_file(i - 1, PAGES[i - 1]) for h in links if i > 0)
        assert (i + 1 < len(PAGES)) == any(h == site.stop_file(i + 1, PAGES[i + 1]) for h in links
                                           if i + 1 < len(PAGES))
        for href in links:
            assert not href.startswith("/"), href  # no link into an app that is not there
            if href.startswith("#"):
                assert f'id="{href[1:]}"' in html, href  # a heading of the same variant
            elif "://" not in href:
                assert (out / href).is_file(), href


def test_no_page_asks_another_host_for_anything(demo_site):
    out, _ = demo_site
    for path in out.glob("*.html"):
        html = path.read_text(encoding="utf-8")
        fetched = re.findall(r'<(?:script|link|img|iframe|source)\b[^>]*\b(?:src|href)="([^"]+)"', html)
        assert all("://" not in u and not u.startswith("//") for u in fetched), (path.name, fetched)
        assert "@import" not in html and "url(http" not in html


def test_each_stop_shows_its_note_source_numbers_shapes_parameters_and_code(demo_site):
    out, _ = demo_site
    for i, s in enumerate(LESSON.stops):
        html = page(out, i)
        assert site.markdown(s.note).strip()[3:60] in html  # the note, as the app writes it
        assert f"stop {i + 1} of {len(PAGES)}" in html and "Numbers from: demo model trained here" in html
        assert "<h3>Code</h3>" in html and '<pre class="code">' in html, s.page
    attention = page(out, 1)
    assert "Shapes in each mode" in attention and "Parameters" in attention and "132,096" in attention
    assert '<div class="metric">' in page(out, 3)  # What if's numbers


def test_the_freed_head_is_drawn_for_every_head_and_the_lessons_own_is_shown_first(demo_site):
    out, _ = demo_site
    for i, s in enumerate(LESSON.stops):
        html = page(out, i)
        shown = variants(html)
        assert set(shown) <= {f"head={h}" for h in range(4)} | {"fixed"}
        if s.page == "attention":
            assert set(shown) == {f"head={h}" for h in range(4)}
            assert f'data-key="head={s.head}" data-default' in html


def assert_same_data(a, b, where: str = "data") -> None:
    """Two figures' data alike: every string, key and length equal, every number within float32 rounding.
    The export and this test each run the stop in their own session, and torch may take another thread
    count or kernel for each (an attention weight of 0.54281539 against 0.54281535 was seen in CI), so a
    number is compared within 1e-5 relative (about 100 float32 ulps: a 768-long dot product, √768 ≈ 28
    roundings deep, then a softmax) and 1e-7 absolute, never bit for bit."""
    if isinstance(a, dict) and isinstance(b, dict):
        assert sorted(a) == sorted(b), (where, sorted(a), sorted(b))
        for k in a:
            assert_same_data(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), (where, len(a), len(b))
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same_data(x, y, f"{where}[{i}]")
    elif isinstance(a, float) or isinstance(b, float):
        assert isinstance(a, (int, float)) and isinstance(b, (int, float)), (where, a, b)
        assert math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-7), (where, a, b)
    else:
        assert a == b, (where, a, b)


def test_every_exported_figure_is_the_one_the_page_draws_at_that_stop(demo_site, monkeypatch):
    """Each stop opened by its signed link in a fresh session (as a student opens it), the freed head set
    in the sidebar and the page's compute buttons clicked: the same figures, data and layout, in order."""
    out, _ = demo_site
    monkeypatch.setenv(lf.KEY_ENV, KEY)
    token = lf.sign(LESSON, KEY.encode())
    compared = 0
    for i, s in enumerate(LESSON.stops):
        at = run(s.page, lesson=token, stop=str(i))
        assert not at.exception, at.exception[0].value
        for key, exported in variants(page(out, i)).items():
            if key != "fixed":
                at.sidebar.slider(key="head").set_value(int(key.split("=")[1])).run()
            for button in ("sweep_heads", "sweep_mlps", "run_patch"):
                found = [b for b in at.get("button") if b.key == button]
                if found:
                    found[0].click().run()
            drawn = [c.figure for c in charts(at)]
            assert len(drawn) == len(exported) >= 2, (s.page, key)
            for a, b in zip(drawn, exported):
                assert_same_data(a["data"], b["data"])
                assert a["layout"].get("title") == b["layout"].get("title")
                compared += 1
    assert compared >= 24 * 2


def test_the_fifth_stops_sweep_that_its_note_points_at_is_included(demo_site):
    out, _ = demo_site
    assert "sweep of every head below" in LESSON.stops[4].note and "press “Sweep every head”" in LESSON.stops[4].note
    titles = [f["layout"]["title"]["text"].replace(" <br>", " ") for f in variants(page(out, 4))["head=3"]]
    assert any("knocked out" in t and "head" in t for t in titles), titles  # Δ log p with each head knocked out
    assert any("each MLP knocked out" in t for t in titles), titles


def test_a_free_control_past_sixteen_pictures_is_fixed_here_and_said(tmp_path):
    """random tiny weights: 4 heads × 2 blocks = 8 pictures; the 4 modes would make 32, so the mode is
    fixed, and so is the text (not a few values)."""
    lesson = lf.parse({"title": "Too many", "weights": {"source": "random", "model": "tiny", "seed": 0},
                       "text": " The cat sat on the mat", "free": ["head", "block", "mode", "text"],
                       "stops": [{"page": "attention", "block": 1, "head": 3}]})
    stop = lesson_site.stop_page(lesson, 0)
    assert len(stop.variants) == 8 and stop.fixed == ("text", "mode")
    assert stop.variants[stop.default].values == {"head": 3, "block": 1}
    html = site.stop_html(site.Site("Too many", "", lesson.free, [stop]), 0, ["attention"])
    assert "change the mode; this page shows the lesson's value only" in html
    assert "change the text;" in html


def test_every_page_a_lesson_may_name_exports(tmp_path):
    lesson = lf.parse({"title": "Every page", "weights": {"source": "random", "model": "tiny", "seed": 0},
                       "text": " The cat sat on the mat", "text_b": " The dog sat on the rug",
                       "stops": [{"page": p} for p in lf.PAGES]})
    done = lesson_site.export(lesson, tmp_path / "every")
    for i, p in enumerate(lf.PAGES):
        html = (tmp_path / "every" / site.stop_file(i, p)).read_text(encoding="utf-8")
        assert "cannot be exported" not in html, (p, re.findall(r"cannot be exported: [^<]*", html))
        assert "this static page does not show" not in html, p
        assert len(figures(html)) >= BY_URL[p].charts, p
    assert done.bytes == sum(f.stat().st_size for f in done.files) > PLOTLY_BUNDLE.stat().st_size  # pages and bundle
    assert (tmp_path / "every" / site.PLOTLY_JS).read_bytes() == PLOTLY_BUNDLE.read_bytes()  # Plotly's cartesian one


def test_the_session_keys_read_back_are_the_apps():
    from gpt2viz.ui import export as ui_export
    from gpt2viz.ui import lesson_view

    assert lesson_site.LOCAL == lesson_view.LOCAL and lesson_site.RECORD == ui_export._KEY


def test_the_stop_bar_and_note_are_left_to_the_site_page_and_nothing_else_is(demo_site):
    """The app's own bar and note are not drawn twice: before the page's title, only its breadcrumb."""
    out, _ = demo_site
    html = page(out, 1)
    assert html.count(LESSON.stops[1].note[:60]) == 1 and "opened from a file" not in html
    body = html.split('<section class="variant"', 1)[1]
    before_title = body.split("<h1", 1)[0]
    assert before_title.count("<div") == 1 and "Causal self-attention" in before_title  # the breadcrumb


def test_a_page_that_cannot_run_says_so_on_its_stop_page():
    stop = site.StopPage("Attention", "", "", (), cannot="ValueError: no such head")
    html = site.stop_html(site.Site("L", "", (), [stop]), 0, ["attention"])
    assert "This page cannot be exported: ValueError: no such head" in html


def test_base_adds_a_link_to_the_view_live_and_app_links_point_there(tmp_path):
    lesson = lf.parse({"title": "Live", "weights": {"source": "random", "model": "tiny", "seed": 0},
                       "text": " The cat", "stops": [{"page": "attention", "block": 1, "head": 2}]})
    stop = lesson_site.stop_page(lesson, 0, base="https://class.example.org/")
    html = site.stop_html(site.Site("Live", "", (), [stop], base="https://class.example.org"), 0, ["attention"])
    live = 'href="https://class.example.org/attention?weights=random&amp;model=tiny&amp;seed=0'
    assert live in html and "block=1&amp;head=2" in html and "Open this view live" in html
    assert not re.search(r'href="/[a-z]', html)


def test_the_command_says_what_is_missing_in_one_line(tmp_path, capsys):
    from gpt2viz.cli import main

    assert main(["lesson", "export", str(DEMO)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "gpt2viz: error: lesson export needs --out DIR (the folder to write the site in)"
    bad = tmp_path / "bad.json"
    bad.write_text('{"title": "x"}')
    done = export(bad, tmp_path / "out")
    assert done.returncode != 0 and "weights: missing" in done.stderr and "Traceback" not in done.stderr


def test_the_lessons_page_button_gives_the_same_site_as_a_zip(demo_site):
    out, _ = demo_site
    at = run("lesson")
    at.session_state["_lecturer"] = True  # the lecturer gave the password
    at.selectbox(key="lesson_shipped").select(LESSON.title).run()
    assert not at.exception
    at.button(key="site-open_file").click().run(timeout=900)
    assert not at.exception and not at.error, [e.value for e in at.error]
    saves = [b for b in at.get("download_button") if b.proto.label.startswith("Save the website")]
    assert len(saves) == 1
    data = at.session_state["_site_zip"][1]
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        assert sorted(z.namelist()) == sorted(p.name for p in out.iterdir())
        for name in z.namelist():
            assert z.read(name) == (out / name).read_bytes(), name
