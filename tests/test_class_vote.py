"""The class vote through the class server (`class-server --processes 2`, nginx in front), in Streamlit's
own protocol, with SQLite and with a real PostgreSQL: 30 students vote, the lecturer's view counts
them and reveals, `class results` gives exactly the counts sent; a second tab, a reload, a forged
widget state and a forged id each count once or not at all; before the reveal a student's view shows
neither the others' answers nor the right one."""

import asyncio
import contextlib
import os
import sys
from pathlib import Path

import pytest
from postgres_server import postgres
from streamlit_server import free_port

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import class_vote as cv  # noqa: E402
from st_protocol import Session  # noqa: E402

from gpt2viz.server.class_server import ClassServer, nginx_path  # noqa: E402

KEY = b"a-lesson-key-for-the-class-vote-test"
PAGE = "attention"


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def class_server(request, tmp_path_factory):
    if nginx_path() is None:
        if os.environ.get("GPT2VIZ_REQUIRE_NGINX"):
            pytest.fail("nginx is missing")
        pytest.skip("nginx is missing (apt-get install nginx)")
    env = dict(os.environ, GPT2VIZ_LESSON_KEY=KEY.decode(), GPT2VIZ_TEACHER_PASSWORD=cv.PASSWORD,
               GPT2VIZ_DATA_DIR=str(tmp_path_factory.mktemp("votes")), GPT2VIZ_PASSWORD_GUESSES="100")
    env.pop("GPT2VIZ_DATABASE_URL", None)
    with contextlib.ExitStack() as stack:
        if request.param == "postgres":
            env["GPT2VIZ_DATABASE_URL"] = stack.enter_context(postgres())
        server = ClassServer(2, free_port(), address="127.0.0.1", env=env, log=open(os.devnull, "w"))  # noqa: SIM115
        stack.callback(server.stop)
        server.start()
        yield server, env


def test_thirty_students_vote_and_results_give_exactly_the_counts_sent(class_server):
    server, env = class_server
    report = asyncio.run(cv.class_vote(server.base, KEY, students=30, within=3.0, seed=request_seed(env)))
    assert report["acknowledged"] == 30
    assert report["spread_complete_after_s"] is not None  # the lecturer's view counted every vote
    assert report["revealed"]
    assert cv.stored(env, KEY) == report["sent"]


def request_seed(env) -> int:
    return 1 if "GPT2VIZ_DATABASE_URL" in env else 0


async def _student_path(base: str) -> dict:
    """One browser's tabs: vote, vote again in a second tab, reload; a forged choice; a forged id."""
    query = cv.signed_query(KEY, stop=0)
    lecturer = Session(base)
    await lecturer.open(PAGE, query)
    await cv.unlock(lecturer, PAGE, query)
    await cv.press(lecturer, PAGE, query, "Vote again")  # the earlier test's round is over: a new one
    tab = Session(base)
    await tab.open(PAGE, query)
    before = await tab.view(PAGE, query)
    ids = before.widgets
    voted = await tab.act(PAGE, query, {ids["Your answer"]: cv.CHOICES[0], ids["Send my answer"]: True})
    second = Session(base)  # a second tab of the same browser: its cookies
    second.cookies = tab.cookies
    second._http = tab._http
    await second.open(PAGE, query)
    ids2 = (await second.view(PAGE, query)).widgets
    again = await second.act(PAGE, query, {ids2["Your answer"]: cv.CHOICES[2], ids2["Send my answer"]: True})
    await tab.close()
    await tab.reopen()  # a reload
    reloaded = await tab.view(PAGE, query)
    forged = await tab.act(PAGE, query, {ids["Your answer"]: "<script>alert(1)</script>", ids["Send my answer"]: True})
    stranger = Session(base)  # a made-up id, sent without the page's cookie
    stranger.cookies.set_cookie(_cookie("gpt2viz_voter", "A" * 22 + ".forgedtagforgedtagforg"))
    await stranger._connect(30)
    assert "Your answer" not in (await stranger.view(PAGE, query)).widgets  # no answer box without an id
    # the real tab's widget ids, forged into the stranger's rerun
    strange = await stranger.act(PAGE, query, {ids["Your answer"]: cv.CHOICES[3], ids["Send my answer"]: True})
    counts = await lecturer.view(PAGE, query)
    for s in (lecturer, tab, second, stranger):
        await s.close()
    return {"before": before, "voted": voted, "again": again, "reloaded": reloaded, "forged": forged,
            "strange": strange, "counted": cv.counted(counts)}


def _cookie(name: str, value: str):
    import http.cookiejar
    return http.cookiejar.Cookie(0, name, value, None, False, "127.0.0.1", False, False, "/", True, False, None,
                                 False, None, None, {})


def _said(result) -> str:
    return " ".join(t.replace("\\", "") for t in result.texts + result.captions)


def test_a_second_tab_a_reload_and_forgeries_count_once_and_nothing_leaks_before_the_reveal(class_server):
    server, env = class_server
    seen = asyncio.run(_student_path(server.base))
    assert all(r.ok for r in seen.values() if hasattr(r, "ok"))
    assert "Your answer is in: 'block 0 head 0'" in _said(seen["voted"])
    assert "Your answer is in: 'block 1 head 2'" in _said(seen["again"])  # the last counts
    assert "Your answer is in: 'block 1 head 2'" in _said(seen["reloaded"])  # the same browser after a reload
    assert "Your answer is in: 'block 1 head 2'" in _said(seen["forged"])  # a choice the page does not offer: none
    assert "no class-vote id" in _said(seen["strange"])
    assert seen["counted"] == 1  # one browser, one vote, whatever it sent
    for name in ("before", "voted", "again", "reloaded"):  # no count, no spread, no answer before the reveal
        said = _said(seen[name])
        assert "so far" not in said and "The answer:" not in said and "which is right" not in said
        assert "✓" not in said and "most chosen" not in said


def test_a_server_without_the_vote_cookie_says_so_to_the_lecturer_and_the_students(monkeypatch, tmp_path):
    """Under a bare `streamlit run app.py` (the README's command) no browser gets a class-vote id: the students
    were told to reload, which never helped (a trial). Now the lecturer is told before opening the vote, and
    a student that the server takes no votes."""
    from streamlit_server import StreamlitServer

    for name, value in {"GPT2VIZ_LESSON_KEY": KEY.decode(), "GPT2VIZ_TEACHER_PASSWORD": cv.PASSWORD,
                        "GPT2VIZ_DATA_DIR": str(tmp_path), "GPT2VIZ_PASSWORD_GUESSES": "100"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("GPT2VIZ_DATABASE_URL", raising=False)

    async def visit(base: str) -> tuple[str, str]:
        query = cv.signed_query(KEY, stop=0)
        lecturer = Session(base)
        await lecturer.open(PAGE, query)
        await cv.unlock(lecturer, PAGE, query)
        told = _said(await lecturer.view(PAGE, query))
        await cv.press(lecturer, PAGE, query, "Open the vote")
        student = Session(base)
        await student.open(PAGE, query)
        seen = _said(await student.view(PAGE, query))
        for s in (lecturer, student):
            await s.close()
        return told, seen

    with StreamlitServer("app.py", cwd=ROOT) as server:
        server.wait_healthy(120)
        told, seen = asyncio.run(visit(server.base))
    assert "gives browsers no class-vote id, so no student can vote" in told, told
    assert "This server takes no votes" in seen and "reload the page" not in seen, seen
