"""The Lessons page's builder keeps what the lecturer typed and added (title, text B, the stop being
written, its page values, who may change what, the stops) while they leave it to set a stop's view and
come back, and across a reload: in the session, and in the page's address (`draft`), bounded as a
lesson link is; a value too long, or not a draft, is said in one line and left. The browser half (the
app's navigation, a reload, a fresh browser) is in test_browser_lesson_builder.py."""

import random
import string
import sys
from pathlib import Path

import pytest

from gpt2viz.teaching import lessons as lf

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_links import run  # noqa: E402


def build(at):
    at.text_input(key="lesson_title").input("Heads, one by one").run()
    at.text_input(key="lesson_text_b").input(" The dog sat on the rug").run()
    at.selectbox(key="lesson_page").select("whatif").run()
    at.text_input(key="lesson_note").input("Predict first.").run()
    at.text_input(key="lesson_values").input('{"part": "MLP"}').run()
    at.button(key="lesson_add").click().run()
    at.text_input(key="lesson_note").input("The next one, half written").run()
    at.multiselect(key="lesson_free").select("head").run()
    assert not at.exception
    return at


def builder(at) -> dict:
    return {"title": at.text_input(key="lesson_title").value, "text_b": at.text_input(key="lesson_text_b").value,
            "page": at.selectbox(key="lesson_page").value, "note": at.text_input(key="lesson_note").value,
            "free": at.multiselect(key="lesson_free").value, "stops": at.session_state["_lesson_draft_stops"]}


TYPED = {"title": "Heads, one by one", "text_b": " The dog sat on the rug", "page": "whatif",
         "note": "The next one, half written", "free": ["head"],
         "stops": [{"page": "whatif", "mode": "full", "block": 0, "head": 0, "note": "Predict first.",
                    "values": {"part": "MLP"}}]}


def test_the_builder_survives_three_other_pages_and_a_fresh_session_from_its_address():
    at = build(run("lesson", model="tiny"))
    assert builder(at) == TYPED
    for page in ("attention", "mlp", "whatif"):  # where a lecturer sets a stop's view
        at.switch_page(f"views/{page}.py").run()
        assert not at.exception
    at.switch_page("views/lesson.py").run()
    assert builder(at) == TYPED
    address = at.query_params["draft"]
    address = address if isinstance(address, str) else address[-1]
    again = run("lesson", model="tiny", draft=address)  # a reload, or the address in another browser
    assert builder(again) == TYPED and not again.warning


def test_a_draft_too_long_or_not_a_draft_is_said_in_one_line_and_left():
    for value, said in (("A" * (lf.MAX_TOKEN_CHARS + 1), f"{lf.MAX_TOKEN_CHARS + 1:,} characters, at most 6,000"),
                        ("not-a-draft!", "not a draft of this page")):
        at = run("lesson", model="tiny", draft=value)
        assert not at.exception
        assert [w.value for w in at.warning] == [f"The lesson draft in this address was not restored: {said}."]
        assert at.text_input(key="lesson_title").value == "" and at.session_state["_lesson_draft_stops"] == []


def test_a_draft_inflating_past_the_bound_or_holding_a_bad_stop_is_bounded():
    bomb = lf.draft_token({"title": "x", "note": "a" * 200_000})[:lf.MAX_TOKEN_CHARS]
    with pytest.raises(lf.LessonError, match="more than 65,536 bytes"):
        lf.read_draft(bomb)
    token = lf.draft_token({"title": "t" * 500, "note": "ok", "stops": [{"page": "attention"}, {"page": "nowhere"},
                                                                          {"page": "whatif", "values": "junk"}]})
    fields, stops, dropped = lf.read_draft(token)
    assert fields == {"note": "ok"} and stops == [{"page": "attention"}] and dropped == 2  # the title over its cap
    words = random.Random(0)
    notes = ["".join(words.choices(string.ascii_letters, k=lf.MAX_NOTE)) for _ in range(lf.MAX_STOPS)]
    with pytest.raises(lf.LessonError, match="at most 6,000"):  # a whole lesson's worth of notes, incompressible
        lf.draft_token({"stops": [{"page": "attention", "note": n} for n in notes]})


def test_a_draft_longer_than_a_link_stays_in_the_session_and_says_the_address_does_not_keep_it():
    words = random.Random(1)
    at = run("lesson", model="tiny")
    at.text_input(key="lesson_title").input("Long").run()
    assert "draft" in at.query_params
    at.session_state["_lesson_draft_stops"] = [
        {"page": "attention", "note": "".join(words.choices(string.ascii_letters, k=lf.MAX_NOTE))}
        for _ in range(lf.MAX_STOPS)]
    at.run()
    assert not at.exception and "draft" not in at.query_params
    (said,) = [c.value for c in at.caption if "Not kept in this page's address" in c.value]
    assert "at most 6,000" in said and "save the lesson as a file" in said
    assert at.text_input(key="lesson_title").value == "Long"
