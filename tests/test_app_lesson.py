"""A signed lesson link opens on its stop with the lesson's values (a value
added to the link by hand changes nothing), the pinned controls locked, the note shown, and next and
back step to the end; a tampered, expired or unverifiable link says so in one line and shows nothing
of the lesson; the Lessons page opens a file (a malformed one names its field), builds a lesson, and
signs it only after the lecturer's password (GPT2VIZ_TEACHER=1 alone does not let a session sign).
The browser half is in test_browser_lesson.py."""

import json
import re
import sys
from html import unescape
from pathlib import Path

import pytest
from app_charts import charts
from streamlit.testing.v1 import AppTest

from gpt2viz.teaching import lessons as lf

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_app import h1_ok  # noqa: E402
from test_links import run  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
KEY = "lecture-key-" + "x" * 20
DEMO, PARAMS = ROOT / "lessons" / "attention-demo.json", ROOT / "lessons" / "parameters.json"


@pytest.fixture(autouse=True)
def lesson_key(monkeypatch):
    monkeypatch.setenv(lf.KEY_ENV, KEY)
    monkeypatch.delenv("GPT2VIZ_TEACHER_PASSWORD", raising=False)


def token(path=DEMO, **kw) -> str:
    return lf.sign(lf.load(path), KEY.encode(), **kw)


def visit(page: str, **params) -> AppTest:
    """A fresh session on /page?params, as a browser opening a link runs it."""
    at = run(page, **params)
    assert not at.exception, at.exception[0].value
    return at


def links(at: AppTest) -> dict[str, str]:
    """The stop bar's same-tab links by label: ← back, next →."""
    found = {}
    for m in at.markdown:
        for href, label in re.findall(r'<a href="([^"]+)" target="_self">([^<]+)</a>', m.value):
            found[unescape(label)] = unescape(href)
    return found


def shown(at: AppTest) -> str:
    return " ".join(e.value for kind in ("markdown", "info", "caption") for e in at.get(kind) if hasattr(e, "value"))


def test_a_lesson_link_opens_its_stop_and_a_value_added_by_hand_changes_nothing():
    at = visit("attention", lesson=token(), stop="1", block="0", head="3", text="hacked", mode="decode")
    sb = at.sidebar
    assert (sb.slider(key="block").value, sb.slider(key="head").value) == (1, 2)
    assert sb.text_area(key="text").value == lf.load(DEMO).text and sb.selectbox(key="mode").value == "full"
    assert sb.radio(key="weights").value == "demo"
    # pinned and locked; the lesson leaves the head free
    assert sb.slider(key="block").disabled and sb.text_area(key="text").disabled and sb.radio(key="weights").disabled
    assert not sb.slider(key="head").disabled
    assert not at.warning, [w.value for w in at.warning]  # the lesson's values are no "link asked for" notes
    assert "stop 2 of 6" in shown(at) and "induction head" in at.info[0].value
    assert set(at.query_params) == {"lesson", "stop"}  # the hand-edited keys are gone from the URL
    nav = links(at)
    assert nav["← back"].startswith("/attention?lesson=") and nav["← back"].endswith("&stop=0")
    assert nav["next →"].startswith("/output?lesson=") and nav["next →"].endswith("&stop=2")


@pytest.mark.parametrize("stop", ["6", "-1", "abc", "9" * 20, "[x](https://e.x)"])
def test_a_stop_the_lesson_does_not_have_is_said_and_stop_1_shown(stop):
    """The trial's links: each landed on stop 1 without a word, and the URL counts from 0."""
    at = run("overview", lesson=token(), stop=stop)  # the link's first run, as a browser opens it
    assert not at.exception
    (said,) = [w.value for w in at.warning]
    assert f"stop=`{stop[:24]!r}`" in said and "Showing stop 1" in said  # a code span: no Markdown link draws
    assert "stop 1 of 6" in shown(at)


def test_a_student_cannot_change_a_locked_control():
    """A forged value sent for a disabled control (as a hand-made websocket message would) is dropped:
    the lesson's block stays."""
    at = visit("attention", lesson=token(), stop="1")
    block = at.sidebar.slider(key="block")
    block.proto.disabled = False  # what a browser cannot do; AppTest refuses it otherwise
    block.set_value(0).run()
    assert at.sidebar.slider(key="block").value == 1
    at.sidebar.slider(key="head").set_value(0).run()  # free
    assert at.sidebar.slider(key="head").value == 0


@pytest.mark.parametrize("path", [DEMO, PARAMS], ids=["attention-demo", "parameters"])
def test_a_shipped_lesson_steps_by_its_next_links_to_the_end(path):
    lesson, tok = lf.load(path), token(path)
    href = lf.href(lesson.stops[0].page, tok, 0)
    for i, stop in enumerate(lesson.stops):
        page, query = href.lstrip("/").split("?")
        params = dict(kv.split("=", 1) for kv in query.split("&"))
        assert (page or "overview", params["stop"]) == (stop.page, str(i))
        at = visit(page or "overview", **params)
        assert h1_ok(stop.page, at.title[0].value), at.title[0].value
        assert f"stop {i + 1} of {len(lesson.stops)}" in shown(at) and stop.note in [x.value for x in at.info]
        assert (at.sidebar.selectbox(key="mode").value, at.sidebar.radio(key="weights").value) == \
            (stop.mode, lesson.weights["source"])
        nav = links(at)
        assert ("← back" in nav) == (i > 0) and ("next →" in nav) == (i + 1 < len(lesson.stops))
        href = nav.get("next →", "")
    assert href == ""


def test_a_what_if_stop_sets_the_pages_own_controls_locked():
    at = visit("whatif", lesson=token(), stop="3", part="MLP", method="mean")
    assert (at.radio(key="part").value, at.radio(key="method").value) == ("head", "zero")
    assert at.radio(key="part").disabled and at.radio(key="method").disabled


def test_a_stop_opened_on_another_page_goes_to_the_stops():
    at = visit("mlp", lesson=token(), stop="5")
    assert at.text_area(key="text_b").value == lf.load(DEMO).text_b and at.text_area(key="text_b").disabled
    assert at.title[0].value.startswith("Compare and patch")


def nothing_of_the_lesson(at: AppTest, needle: str) -> None:
    (error,) = at.error
    assert needle in error.value and "\n" not in error.value
    assert "Attention on the demo model" not in shown(at) and not at.sidebar.text_area(key="text").disabled
    assert at.sidebar.radio(key="weights").value == "random"


def test_a_tampered_link_says_so_and_shows_nothing_of_it():
    payload, tag = token().split(".")
    other = lf.sign(lf.parse(json.loads(DEMO.read_text()) | {"text": " people play one good game"}),
                    b"another-server-key-000")
    nothing_of_the_lesson(visit("attention", lesson=f"{other.split('.')[0]}.{tag}", stop="0"),
                          "signature does not match")
    nothing_of_the_lesson(visit("attention", lesson=payload[:-2] + "AA." + tag, stop="0"), "signature does not match")


def test_an_expired_link_says_when_and_shows_nothing_of_it():
    nothing_of_the_lesson(visit("attention", lesson=token(expires=1_700_000_000), stop="0"),
                          "expired on 2023-11-14 22:13 UTC")


def test_without_a_key_a_link_cannot_be_checked(monkeypatch):
    tok = token()
    monkeypatch.delenv(lf.KEY_ENV)
    nothing_of_the_lesson(visit("attention", lesson=tok, stop="0"), "cannot check lesson links")


def test_opening_the_first_stop_computes_every_stops_run_once():
    from gpt2viz.ui.cache import demo_weights, trace_cache
    from gpt2viz.ui.lesson_view import stop_runs

    lesson = lf.load(DEMO)
    visit("attention", lesson=token(), stop="0")
    weights = demo_weights()
    keys = {(k[1], k[2]) for k in trace_cache()._items if k[0] == weights.key}
    runs = stop_runs(lesson, weights.model.config.n_positions)
    assert len(runs) == 2 and {(ids, mode.value) for ids, mode in runs} <= keys  # text A and text B, full


# ---------------------------------------------------------------------------- the Lessons page
def lessons_page() -> AppTest:
    return visit("lesson", model="tiny")


def test_a_malformed_file_names_its_field_in_one_line():
    at = lessons_page()
    bad = json.loads(DEMO.read_text())
    bad["stops"][2]["page"] = "outptu"
    at.file_uploader(key="lesson_upload").set_value(("mine.json", json.dumps(bad).encode(), "application/json")).run()
    (error,) = at.error
    assert error.value.startswith("stops[2].page: 'outptu' is not a page") and "\n" not in error.value
    at.file_uploader(key="lesson_upload").set_value(("mine.toml", b"title = ", "application/toml")).run()
    assert at.error[0].value.startswith("mine.toml: not valid TOML")


def test_a_file_opened_here_steps_in_this_session():
    at = lessons_page()
    at.selectbox(key="lesson_shipped").select("Where the parameters live").run()
    assert "8 stops" in shown(at)
    at.button(key="open_file").click().run()
    assert not at.exception and "stop 1 of 8" in shown(at) and "opened from a file" in shown(at)
    assert at.sidebar.selectbox(key="model").value == "gpt2" and at.sidebar.selectbox(key="model").disabled
    assert not at.sidebar.text_area(key="text").disabled  # the lesson leaves the text free
    (nxt,) = [p for p in at.get("page_link") if p.proto.label == "next →"]
    assert "stop=1" in nxt.proto.query_string and nxt.proto.page.endswith("tokens")


def build(at: AppTest) -> AppTest:
    at.text_input(key="lesson_title").input("Two heads").run()
    at.sidebar.slider(key="block").set_value(1).run()
    at.text_input(key="lesson_note").input("Which head looks back?").run()
    at.button(key="lesson_add").click().run()
    at.selectbox(key="lesson_page").select("output").run()
    at.button(key="lesson_add").click().run()
    return at


def test_building_a_lesson_gives_its_file():
    at = build(lessons_page())
    (download,) = at.main.get("download_button")  # the sidebar holds the page's handout
    assert not at.error and "Add stop 3" in [b.label for b in at.button]
    assert any("Stop 3 would be" in c.value for c in at.caption)


def test_signing_needs_the_lecturers_password(monkeypatch):
    monkeypatch.setenv("GPT2VIZ_TEACHER_PASSWORD", "correct horse")
    at = build(lessons_page())
    at.text_input(key="lecturer_password").input("wrong")  # a form sends it with its button
    at.button(key="FormSubmitter:lecturer-Unlock signing").click().run()
    assert "Wrong password." in [e.value for e in at.error]
    at.text_input(key="lecturer_password").input("correct horse")
    at.button(key="FormSubmitter:lecturer-Unlock signing").click().run()
    at.radio(key="lesson_sign_which").set_value("the lesson built above").run()
    at.button(key="lesson_sign").click().run()
    (code,) = at.code
    tok = re.search(r"lesson=([^&]+)&stop=0", code.value).group(1)
    lesson = lf.verify(tok, KEY.encode())
    assert lesson.title == "Two heads" and [(s.page, s.block, s.note) for s in lesson.stops] == \
        [("attention", 1, "Which head looks back?"), ("output", 1, "")]
    assert lesson.weights == {"source": "random", "model": "tiny", "seed": 0}
    (qr,) = [e for e in at.main.children.values() if e.type == "image"]  # the link as a QR code, for the projector
    assert "QR code" in qr.proto.imgs[0].caption and qr.proto.imgs[0].url.startswith("data:image/svg+xml")


def test_teacher_mode_alone_does_not_let_a_session_sign(monkeypatch):
    monkeypatch.setenv("GPT2VIZ_TEACHER", "1")
    at = build(lessons_page())
    assert "GPT2VIZ_TEACHER_PASSWORD" in shown(at)
    assert "Sign the link" not in [b.label for b in at.button] and not at.code


def test_without_a_key_the_page_says_how_to_set_one(monkeypatch):
    monkeypatch.delenv(lf.KEY_ENV)
    monkeypatch.setenv("GPT2VIZ_TEACHER_PASSWORD", "correct horse")
    at = lessons_page()
    assert "GPT2VIZ_LESSON_KEY" in shown(at) and "openssl rand -hex 32" in shown(at)
    assert not [t for t in at.text_input if t.key == "lecturer_password"]


def test_a_checkpoint_lesson_opens_on_that_checkpoint_or_says_it_is_missing(hf_cache_tiny):
    def lesson(name):
        return lf.sign(lf.parse({"title": "Real weights", "text": "Hello world", "stops": [{"page": "attention"}],
                                 "weights": {"source": "hf-cache", "checkpoint": name}}), KEY.encode())
    at = visit("attention", lesson=lesson("gpt2"), stop="0")
    picker = at.sidebar.selectbox(key="checkpoint")
    assert picker.value == "gpt2" and picker.disabled
    assert "tiny from model.safetensors" in " ".join(c.value for c in at.sidebar.caption)
    at = visit("attention", lesson=lesson("gpt2-xl"), stop="0")  # its words, and what its numbers need
    (line,) = at.warning
    assert line.value.startswith("This lesson's numbers need the checkpoint gpt2-xl on the lecturer's server")
    assert [h.value for h in at.header] == ["Real weights"] and not at.error and not charts(at)


def test_a_built_stop_takes_the_pages_own_controls_and_a_bad_one_is_named():
    at = lessons_page()
    at.selectbox(key="lesson_page").select("whatif").run()
    at.text_input(key="lesson_values").input('{"part": "MLP", "method": "mean"}').run()
    at.button(key="lesson_add").click().run()
    assert len(at.main.get("download_button")) == 1  # a valid lesson: its file is offered
    assert at.session_state["_lesson_draft_stops"][0]["values"] == {"part": "MLP", "method": "mean"}
    at.selectbox(key="lesson_page").select("whatif").run()
    at.text_input(key="lesson_values").input('{"part": "wheel"}').run()
    at.button(key="lesson_add").click().run()
    (error,) = at.error
    assert error.value.startswith("stops[1].values.part: 'wheel' is not one of head, attention, MLP, neuron")


def test_links_at_a_stop_carry_the_lessons_view_and_say_they_leave_it():
    """The in-page links of a stop carry the lesson's weights and text and the way back, and say that
    they leave the lesson; a page link in the lecturer's note carries them too (its own values win)."""
    d = json.loads(DEMO.read_text())
    d["stops"][1]["note"] = "Compare [the MLP](/mlp?block=0) and [logits](/glossary#logit)."
    signed = lf.sign(lf.parse(d), KEY.encode())
    at = visit("attention", lesson=signed, stop="1")
    out = {label: href for label, href in links(at).items() if label not in ("← back", "next →")}
    assert out and all(label.endswith("(leaves the lesson)") for label in out), out
    for href in out.values():
        query = dict(re.findall(r"[?&]([a-z_]+)=([^&]*)", href))
        assert query["weights"] == "demo" and query["from_lesson"] == signed and query["from_stop"] == "1", href
    mlp, glossary = re.findall(r"\]\((/[^)]+)\)", at.info[0].value)
    assert mlp.startswith("/mlp?weights=demo&text=%20people%20play") and "&block=0&" in mlp and "from_stop=1" in mlp
    assert glossary.startswith("/glossary?weights=demo&text=") and glossary.endswith("#logit")


def test_a_page_reached_from_a_stop_offers_the_way_back():
    signed = token()
    at = visit("merge", weights="demo", from_lesson=signed, from_stop="3")
    (back,) = [m.value for m in at.caption if "back to the lesson" in m.value]
    assert "Attention on the demo model" in back and f'href="/whatif?lesson={signed}&amp;stop=3"' in back
    at = visit("merge", weights="demo", from_lesson=signed.replace(".", ".A", 1), from_stop="3")
    assert not [m.value for m in at.caption if "back to the lesson" in m.value]  # not signed here: no way back


def test_the_builder_records_the_pages_own_controls_as_the_lecturer_left_them():
    """Set on the Experiments page itself ("no mask"), the experiment goes with the stop added afterwards,
    the stop table shows it, students may be let change it, and the lesson's link opens on it, locked."""
    at = visit("experiments", model="tiny")
    at.radio(key="experiment").set_value("no mask").run()
    at.switch_page("views/lesson.py").run()
    at.selectbox(key="lesson_page").select("experiments").run()
    assert any('{"experiment": "no mask"}' in c.value for c in at.caption)
    at.button(key="lesson_add").click().run()
    assert at.session_state["_lesson_draft_stops"][0]["values"] == {"experiment": "no mask"}
    assert any("no mask" in d.value.to_string() for d in at.dataframe)  # the stop table shows it
    assert "experiment" in at.multiselect(key="lesson_free").options
    lesson = lf.parse({"title": "t", "weights": {"source": "random", "model": "tiny"}, "text": "Hi there",
                       "stops": at.session_state["_lesson_draft_stops"]})
    signed = lf.sign(lesson, KEY.encode())
    opened = visit("experiments", lesson=signed, stop="0", experiment="no scale")
    assert opened.radio(key="experiment").value == "no mask" and opened.radio(key="experiment").disabled
    free = lf.parse({**lesson.as_dict(), "free": ["experiment"]})
    assert "experiment" not in free.locked(0)


def test_the_builder_writes_a_stops_question_and_a_bad_answer_is_named():
    at = lessons_page()
    at.text_input(key="lesson_q_text").input("Which head copies?").run()
    at.text_area(key="lesson_q_choices").input("1.0\n1.1\n\n1.2").run()
    at.text_input(key="lesson_q_answer").input("2").run()
    at.selectbox(key="lesson_q_reveal").select("hidden until the answer is revealed").run()
    at.button(key="lesson_add").click().run()
    assert at.session_state["_lesson_draft_stops"][0]["question"] == {
        "text": "Which head copies?", "choices": ["1.0", "1.1", "1.2"], "answer": 1, "reveal": "after"}
    assert len(at.main.get("download_button")) == 1  # a valid lesson
    at.text_input(key="lesson_q_text").input("How many parameters has W_O?").run()
    at.text_input(key="lesson_q_answer").input("589824").run()
    at.button(key="lesson_add").click().run()
    assert at.session_state["_lesson_draft_stops"][1]["question"] == {
        "text": "How many parameters has W_O?", "number": 589824.0, "tolerance": 0.0}
    at.text_input(key="lesson_q_text").input("Which?").run()
    at.text_area(key="lesson_q_choices").input("a\nb").run()
    at.text_input(key="lesson_q_answer").input("three").run()
    at.button(key="lesson_add").click().run()
    (error,) = at.error
    assert error.value.startswith("stops[2].question.answer: expected a whole number")
