"""A lesson's promises, written as the attacks a student can make from a browser: devtools'
`history.pushState` and a `popstate` to change a locked lesson's view; answering an exercise again
to read the right answer and score it; guessing the lecturer's password from many sessions."""

import asyncio
import sys
from pathlib import Path
from urllib.parse import quote, urlencode

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))

from st_protocol import Session, Shown  # noqa: E402
from streamlit_server import StreamlitServer  # noqa: E402

from gpt2viz.teaching import lessons as lf  # noqa: E402

KEY = "promises-lesson-key-0123456789"
DEMO = ROOT / "lessons" / "attention-demo.json"


@pytest.fixture(scope="module")
def server():
    with pytest.MonkeyPatch.context() as env:  # the server inherits them
        env.setenv(lf.KEY_ENV, KEY)
        with StreamlitServer("app.py", cwd=ROOT) as s:
            s.wait_healthy(timeout=120)
            yield s


def test_history_navigation_does_not_change_a_locked_lesson(server):
    """What `history.pushState({}, "", "?lesson=…&stop=1&text=hacked&mode=decode&block=0")` and a
    `popstate` event make the browser send: a rerun marked as history navigation with that query."""
    lesson = lf.load(DEMO)
    token = lf.sign(lesson, KEY.encode())
    link = urlencode({"lesson": token, "stop": "1"}, quote_via=quote)
    forged = urlencode({"lesson": token, "stop": "1", "text": "hacked", "mode": "decode", "block": "0"},
                       quote_via=quote)

    async def attack():
        s = Session(server.base)
        await s.open("attention", link)
        first = await s.view("attention", link)
        second = await s.view("attention", forged, history=True)
        third = await s.view("attention", forged)  # and a plain rerun after it
        await s.close()
        return first, second, third

    shown = Shown()  # what the tab's sidebar shows after each view
    for i, view in enumerate(asyncio.run(attack())):
        assert view.ok, view.error or view.exceptions
        boxes = shown.after(view)
        assert (boxes["Text"], boxes["Mode"], boxes["Block"]) == (lesson.text, "full", "1"), (i, boxes)


# ---------------------------------------------------------------------------- exercises
def exercises_page():
    from test_app import open_page

    return open_page("exercises", set=3, questions=2)


def answer(at, e, text: str, i: int = 0):
    at.text_input(key=f"answer-{e.id}").input(text)
    at.button[i].click().run()
    assert not at.exception, at.exception[0].value
    return at


def wrong(e) -> str:
    return "[1, 2, 3]" if e.kind == "shape" else f"{e.answer[0] + 1000:,}"


def score(at) -> str:
    return next(m.value for m in at.markdown if "Score:" in m.value)


def test_a_wrong_answer_gets_a_hint_not_the_answer_and_a_second_try():
    from gpt2viz.teaching import exercises as ex

    e = ex.exercise_set(3, 2)[0]
    at = answer(exercises_page(), e, wrong(e))
    (said,) = [x.value for x in at.error]
    assert "Hint:" in said and "One more try" in said and e.answer_text not in said
    assert not any(e.worked.splitlines()[0] in m.value for m in at.markdown)  # the working waits
    at = answer(at, e, wrong(e))
    assert any("Ask your lecturer" in x.value for x in at.error)
    assert any(e.method.splitlines()[0] in m.value for m in at.markdown)  # the method, in symbols
    assert not any(e.worked.splitlines()[-1] in m.value for m in at.markdown)  # "So the shape is **[...]**"


def page_text(at) -> str:
    """Everything the page shows as text: markdown, alerts, captions, expanders' labels."""
    return " ".join(str(x.value) for kind in ("markdown", "error", "success", "warning", "info", "caption")
                    for x in getattr(at, kind)) + " ".join(x.label for x in at.expander)


@pytest.mark.parametrize("which", [0, 1], ids=["shape", "count"])
def test_two_wrong_tries_never_show_the_answer_so_a_new_tab_has_nothing_to_copy(which):
    """The answer, shown after two wrong tries in one tab, scored as correct in a new tab: now no tab
    ever shows it to a student who did not give it, and the new tab is a fresh attempt under the same rule."""
    from gpt2viz.teaching import exercises as ex

    e = ex.exercise_set(3, 2)[which]
    first_tab = answer(answer(exercises_page(), e, wrong(e), which), e, wrong(e), which)
    shown = page_text(first_tab)
    assert e.answer_text not in shown and "Ask your lecturer" in shown
    if e.kind == "params":
        assert str(e.answer[0]) not in shown.replace(",", "")
    new_tab = answer(exercises_page(), e, wrong(e), which)  # a fresh attempt: a hint, one more try
    (said,) = [x.value for x in new_tab.error]
    assert "Hint:" in said and "One more try" in said and e.answer_text not in page_text(new_tab)


def test_an_answer_typed_after_the_last_try_scores_nothing():
    from gpt2viz.teaching import exercises as ex

    e = ex.exercise_set(3, 2)[0]
    at = answer(answer(exercises_page(), e, wrong(e)), e, wrong(e))
    assert "Score: 0 of 2" in score(at)
    at = answer(at, e, e.answer_text)  # an answer found elsewhere, typed after the last try
    assert "Score: 0 of 2" in score(at) and not at.success
    assert at.text_input(key=f"answer-{e.id}").disabled


# ---------------------------------------------------------------------------- the lecturer's password
def lecturer_guesses(monkeypatch, allowed: str):
    from test_app_lesson import KEY as LESSON_KEY
    from test_app_lesson import lessons_page

    import gpt2viz.ui.visitor as visitor
    from gpt2viz.ui.lesson_view import password_guesses

    monkeypatch.setenv(lf.KEY_ENV, LESSON_KEY)
    monkeypatch.setenv("GPT2VIZ_TEACHER_PASSWORD", "correct horse")
    monkeypatch.setenv("GPT2VIZ_PASSWORD_GUESSES", allowed)
    password_guesses.clear()
    address = ["10.0.0.7"]
    monkeypatch.setattr(visitor, "visitor_address", lambda: address[0])  # the page imports it on each run

    def guess(password: str, at=None, where: str = "10.0.0.7"):
        address[0] = where
        at = at or lessons_page()  # a new session unless given one
        at.text_input(key="lecturer_password").input(password)
        at.button(key="FormSubmitter:lecturer-Unlock signing").click().run()
        return at
    return guess


def test_wrong_passwords_are_limited_per_address_and_logged(monkeypatch, caplog):
    """Many sessions guessing from one address: past the address's limit, even the right password waits there."""
    from gpt2viz.ui.lesson_view import password_guesses

    guess = lecturer_guesses(monkeypatch, "2")
    with caplog.at_level("WARNING", logger="gpt2viz.server.guesses"):
        for _ in range(2):
            assert "Wrong password." in [e.value for e in guess("wrong").error]
    logged = [r.getMessage() for r in caplog.records if "wrong lecturer password" in r.getMessage()]
    assert len(logged) == 2 and "address 10.0.0.7" in logged[0]
    refused = guess("correct horse")
    (said,) = [e.value for e in refused.error]
    assert said.startswith("Too many wrong passwords from here: try again in") and "\n" not in said
    assert "Sign the link" not in [b.label for b in refused.button]
    password_guesses.clear()


def test_one_attacker_cannot_lock_the_lecturer_out(monkeypatch):
    """Ten wrong passwords a minute from anyone locked the lecturer out too. Now an attacker failing on
    and on from another session and address locks only itself; the lecturer's right password opens."""
    from gpt2viz.ui.lesson_view import password_guesses

    guess = lecturer_guesses(monkeypatch, "4")
    attacker = None
    for _ in range(6):  # past its session's limit (2) and its address's (4), in new sessions and the same one
        attacker = guess("wrong", None if attacker is None or _ % 2 else attacker, where="10.0.0.66")
    assert any(e.value.startswith("Too many wrong passwords from here") for e in attacker.error)
    lecturer = guess("correct horse", where="10.0.0.7")
    assert not lecturer.error and lecturer.session_state["_lecturer"]
    password_guesses.clear()


def test_a_session_out_of_guesses_leaves_its_address_s_other_sessions_theirs(monkeypatch):
    from gpt2viz.ui.lesson_view import password_guesses

    guess = lecturer_guesses(monkeypatch, "6")
    one = guess("wrong")
    for _ in range(3):
        one = guess("wrong", one)
    assert one.error[0].value.startswith("Too many wrong passwords from here")  # its own 3 of 3
    other = guess("correct horse")  # the same address (4 of 6 used), another session
    assert not other.error and other.session_state["_lecturer"]
    password_guesses.clear()


def test_the_guess_limit_forgets_after_its_window():
    from gpt2viz.server.guesses import GuessLimit

    now = [0.0]
    limit = GuessLimit(2, 60, clock=lambda: now[0])
    limit.failed("a", "here")
    now[0] = 10
    limit.failed("b", "here")
    assert limit.wait("c", "here") == 50 and limit.wait("c", "there") == 0
    now[0] = 30
    assert limit.wait("c", "here") == 30
    now[0] = 60
    assert limit.wait("c", "here") == 0 and limit.wait("a", "there") == 0  # a's own one guess is its limit: gone
    limit.failed("a", "there")
    assert limit.wait("a", "elsewhere") == 60 and limit.wait("d", "there") == 0  # per session: 1 of 1


# ---------------------------------------------------------------------------- the server's key
@pytest.mark.parametrize("key", ["short", None], ids=["short", "missing"])
def test_a_bad_key_is_the_lecturers_business_not_the_students(monkeypatch, caplog, key):
    from test_app_lesson import KEY as LESSON_KEY
    from test_app_lesson import lessons_page, visit

    import gpt2viz.ui.lesson_view as lv

    token = lf.sign(lf.load(DEMO), LESSON_KEY.encode())
    if key is None:
        monkeypatch.delenv(lf.KEY_ENV, raising=False)
    else:
        monkeypatch.setenv(lf.KEY_ENV, key)
    monkeypatch.setattr(lv, "_logged", set())
    with caplog.at_level("WARNING", logger="gpt2viz.ui.lesson_view"):
        student = visit("attention", lesson=token, stop="0")
    (said,) = [e.value for e in student.error]
    assert said == lf.CANNOT_CHECK and "characters" not in said and lf.KEY_ENV not in said
    assert [r.getMessage() for r in caplog.records if "lesson links can be neither" in r.getMessage()]
    lecturer = lessons_page()
    page = " ".join(e.value for kind in ("error", "info") for e in lecturer.get(kind))
    assert lf.KEY_ENV in page and (key is None or "5 characters, at least 16" in page)


def test_the_lessons_page_says_a_links_notes_are_readable():
    from test_app_lesson import lessons_page

    assert any("readable by anyone who has the link" in c.value for c in lessons_page().caption)
