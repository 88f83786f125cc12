"""A lesson's static site runs none of a lesson's text and says only what holds on a static page: its
Markdown without raw HTML and with links only to http(s) and the site's own pages (the app's own
HTML, its links and drawings, kept but cleaned); no "(leaves the lesson)" on a phrase that is no link,
no sentence about a sidebar it does not have, no path of the machine that wrote it; the export prints
its result and nothing else; a lesson whose weights are not here is refused, by the command, by the
Lessons page's button, and as a student's link (its words, no page of other weights). The browser half
(every page opened in chromium, the payloads' flag unset) is in test_browser_site_safety.py."""

import json
import re
import sys
from html import unescape
from html.parser import HTMLParser
from pathlib import Path

import pytest
from app_charts import charts
from markdown_it import MarkdownIt

from gpt2viz import lesson_site
from gpt2viz.spec.paths import APP_ROOT
from gpt2viz.teaching import lessons as lf
from gpt2viz.teaching import site
from gpt2viz.ui import state

sys.path.insert(0, str(Path(__file__).resolve().parent))
from exported import PAYLOADS, export, hostile_lesson  # noqa: E402
from test_links import run  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
IOI = ROOT / "lessons" / "ioi-gpt2.json"  # GPT-2 small's checkpoint: not on this machine (the tests' hub is empty)
KEY = "lecture-key-" + "z" * 20


@pytest.fixture(autouse=True)
def no_checkpoints(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hub"))


# ---------------------------------------------------------------------------- Markdown and the app's HTML
def markup(html: str) -> list[tuple[str, list[tuple[str, str]]]]:
    """Every element of `html`: its tag and attributes, as a browser's parser reads them."""
    found = []

    class Read(HTMLParser):
        def handle_starttag(self, tag, attrs):
            found.append((tag, [(k, v or "") for k, v in attrs]))
    Read().feed(html)
    return found


def runs(html: str) -> list[str]:
    """The elements and attributes of `html` that run or fetch something."""
    bad = []
    for tag, attrs in markup(html):
        if tag in ("script", "iframe", "img", "object", "embed", "frame"):
            bad.append(tag)
        for k, v in attrs:
            if k.startswith("on") or k in ("srcdoc", "src") or \
                    re.match(r"(?i)\s*(javascript|data|vbscript):", re.sub(r"[\x00-\x20]", "", v)):
                bad.append(f"{tag} {k}={v}")
    return bad


@pytest.mark.parametrize("payload", PAYLOADS)
def test_a_lesson_text_is_text_and_the_apps_html_keeps_nothing_that_runs(payload):
    as_text = site.markdown(payload)
    assert [tag for tag, _ in markup(as_text)] == ["p"], as_text  # Markdown's paragraph: the rest is text
    assert runs(site.markdown(payload, html=True)) == []  # as if the app wrote it with unsafe_allow_html
    trusting = MarkdownIt("commonmark", {"html": True})  # raw HTML and any link: what the site once did, and more
    trusting.validateLink = lambda url: True
    assert runs(trusting.render(payload)) != []  # (the check sees each payload)


def test_links_are_http_or_the_sites_own_and_app_links_follow_base():
    md = ("[a](https://example.org) [b](stop-2-attention.html) [c](#scores) [d](data:text/html,x) "
          "[e](vbscript:x) [f](file:///etc/passwd) [g](//evil.example) [h](/attention?head=1)")
    html = site.markdown(md)
    assert re.findall(r'href="([^"]*)"', html) == ["https://example.org", "stop-2-attention.html", "#scores"]
    live = site.markdown(md, base="https://class.example.org")
    assert 'href="https://class.example.org/attention?head=1"' in live
    assert 'href="javascript' not in site.markdown("[x](/mlp)", base="javascript:alert(1)//")


def test_a_picture_in_a_note_is_a_link_to_it_named_by_its_words():
    """A lesson note's ![alt](url) showed as "!" and a link: the site fetches no picture, so it is a link named
    "alt (picture)"; an unsafe address is no picture and no link; the words are escaped."""
    html = site.markdown("See ![the map](https://example.org/map.png) and ![](https://example.org/b.png)")
    assert 'See <a href="https://example.org/map.png">the map (picture)</a>' in html and "!" not in html
    assert '<a href="https://example.org/b.png">picture</a>' in html
    assert runs(html) == [] and "<img" not in html
    assert "<b>" not in site.markdown("![<b>x</b>](https://example.org/x.png)")
    assert 'href="javascript' not in site.markdown("![x](javascript:alert(1))")


def test_an_app_link_left_unlinked_loses_leaves_the_lesson_and_a_drawing_keeps_its_boxes():
    assert site.LEAVES == state.LEAVES
    html = site.markdown(f'see <a href="/mlp?block=0" target="_self">the MLP{state.LEAVES}</a> now', html=True)
    assert html.strip() == "<p>see the MLP now</p>"
    svg = '<svg viewBox="0 0 9 9"><a href="/mlp"><rect x="1" width="3"/><text x="1">MLP</text></a></svg>'
    kept = site.markdown(svg, html=True)
    assert '<rect x="1" width="3"></rect><text x="1">MLP</text>' in kept and "<a" not in kept
    assert '<a href="https://c.example/mlp">' in site.markdown(svg, base="https://c.example", html=True)


# ---------------------------------------------------------------------------- the export of a hostile lesson
@pytest.fixture(scope="module")
def hostile_site(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile")
    src = folder / "lesson.json"
    src.write_text(json.dumps(hostile_lesson()), encoding="utf-8")
    done = export(src, folder / "site")
    assert done.returncode == 0, done.stderr[-2000:]
    return folder / "site", done


def test_the_export_prints_its_result_and_nothing_else(hostile_site):
    out, done = hostile_site
    assert done.stderr == ""  # no "missing ScriptRunContext", no widget warning, no progress off a terminal
    assert done.stdout.count("\n") == 1 and done.stdout.startswith(f"{out}: 7 files")


def test_no_page_says_what_holds_only_in_the_app_or_names_a_path_of_this_machine(hostile_site):
    out, _ = hostile_site
    pages = {p.name: unescape(p.read_text(encoding="utf-8")) for p in out.glob("*.html")}
    assert len(pages) == 6
    whatif, patch = pages["stop-3-whatif.html"], pages["stop-4-patch.html"]
    assert "The view's block and head, above, choose where." in whatif  # the page's own sentence, said for here
    assert "PATH = 'assets/demo-model/model.safetensors'" in pages["stop-2-attention.html"]
    for name, html in pages.items():
        assert "leaves the lesson" not in html and "outside the lesson" not in html, name
        assert "sidebar" not in html.lower(), (name, re.findall(r"[^.>]*sidebar[^.<]*", html, re.I)[:3])
        assert str(APP_ROOT) not in html and str(Path.home()) not in html, name
    assert "Text A is the lesson's text" in patch


def test_no_page_carries_an_element_or_attribute_that_runs(hostile_site):
    """The files themselves (the browser test opens them): every payload shown as text, none as markup."""
    out, _ = hostile_site
    for path in out.glob("*.html"):
        html = path.read_text(encoding="utf-8")
        scripts = re.findall(r"<script\b[^>]*>", html)
        assert scripts in ([], ['<script src="plotly.min.js">', '<script type="application/json" id="figures">',
                                "<script>"]), (path.name, scripts)  # the page's own, and only on a stop's page
        assert runs(re.sub(r"<script\b[^>]*>.*?</script>", "", html, flags=re.S)) == [], path.name
        assert "&lt;img src=x onerror=" in html, path.name  # the title at least, as text


# ---------------------------------------------------------------------------- weights that are not here
def test_the_command_refuses_a_lesson_whose_weights_are_not_here_in_one_line(tmp_path, capsys):
    from gpt2viz.cli import main

    assert main(["lesson", "export", str(IOI), "--out", str(tmp_path / "site")]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1, captured
    assert captured.err.startswith("gpt2viz: error: this lesson's numbers need the checkpoint gpt2 ")
    assert "python -m gpt2viz download gpt2" in captured.err and not (tmp_path / "site").exists()


def test_lesson_check_warns_and_does_not_say_the_claims_are_checked(capsys):
    from gpt2viz.cli import main

    assert main(["lesson", "check", str(IOI)]) == 0
    captured = capsys.readouterr()
    assert "4 published claims not measurable here" in captured.out and "checked live" not in captured.out
    assert captured.err.strip() == ("gpt2viz: warning: this lesson's numbers need the checkpoint gpt2 "
                                    "(`python -m gpt2viz download gpt2` fetches it), which this machine does not have")
    assert main(["lesson", "check", str(ROOT / "lessons" / "induction-demo.json")]) == 0
    captured = capsys.readouterr()
    assert "checked live" in captured.out and captured.err == ""


def test_the_zip_of_a_lesson_whose_weights_are_not_here_is_refused_too():
    with pytest.raises(RuntimeError, match=r"the export stopped: gpt2viz: error: this lesson's numbers need the "
                                           r"checkpoint gpt2 "):
        lesson_site.zipped(lf.load(IOI))


def test_the_lessons_page_button_is_off_with_one_line_for_such_a_lesson():
    at = run("lesson")
    at.session_state["_lecturer"] = True
    at.selectbox(key="lesson_shipped").select(lf.load(IOI).title).run()
    assert not at.exception
    assert at.button(key="site-open_file").disabled
    said = [c.value for c in at.caption if "this machine does not have" in c.value]
    assert said == [":material/cloud_off: This lesson's numbers need the checkpoint gpt2 (`python -m gpt2viz download "
                    "gpt2` fetches it), which this machine does not have: its website is not written."]


def test_a_students_link_to_such_a_lesson_shows_its_words_as_text_and_what_it_needs(monkeypatch):
    monkeypatch.setenv(lf.KEY_ENV, KEY)
    d = lf.load(IOI).as_dict() | {"title": PAYLOADS[0] + " [x](javascript:alert(1))"}
    d["stops"][0]["note"] = PAYLOADS[1] + " **first**"
    token = lf.sign(lf.parse(d), KEY.encode())
    at = run("output", lesson=token, stop="0")
    assert not at.exception and not at.error
    (line,) = at.warning
    assert line.value == ("This lesson's numbers need the checkpoint gpt2 on the lecturer's server, which this "
                          "server does not have: below are its notes without them.")
    (title,) = at.header
    assert "\\<img" in title.value and "\\[x\\]\\(javascript\\:" in title.value  # shown as typed, never as markup
    notes = [m.value for m in at.markdown if m.value.startswith("**Stop ")]
    assert len(notes) == 4 and "\\<script\\>" in notes[0] and "\\*\\*first\\*\\*" in notes[0]
    assert len([c for c in at.caption if c.value.startswith("Published: ")]) == 4
    assert not charts(at) and not at.sidebar.get("slider")  # no page of other weights


def test_a_base_that_is_not_http_is_refused_in_one_line(tmp_path, capsys):
    from gpt2viz.cli import main

    demo = ROOT / "lessons" / "attention-demo.json"
    assert main(["lesson", "export", str(demo), "--out", str(tmp_path / "s"), "--base", "javascript:alert(1)//"]) == 2
    assert capsys.readouterr().err == "gpt2viz: error: --base 'javascript:alert(1)//' is not an http(s) address\n"
    stop = site.StopPage("Attention", "", "", (), live="javascript:alert(1)")
    assert "javascript" not in site.stop_html(site.Site("L", "", (), [stop]), 0, ["attention"])


def test_a_checkpoints_code_panel_names_it_where_hugging_face_keeps_it(hf_cache_tiny):
    lesson = lf.parse({"title": "Real", "weights": {"source": "hf-cache", "checkpoint": "gpt2"}, "text": "Hello world",
                       "stops": [{"page": "attention"}]})
    assert lf.missing_weights(lesson.weights) is None
    stop = lesson_site.stop_page(lesson, 0)
    html = site.stop_html(site.Site("Real", lesson_site.source_line(lesson), (), [stop]), 0, ["attention"])
    assert str(hf_cache_tiny.parents[3]) not in html  # the machine's own cache folder
    assert "~/.cache/huggingface/hub/models--openai-community--gpt2/snapshots/abc/model.safetensors" in html
