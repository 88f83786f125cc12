"""The class's answers in a real database: SQLite (a file, WAL) and PostgreSQL (a server the test starts),
through the same `Store`: rounds, one vote per browser per round (the last counts), bounds, the schema's
upgrade from its first version, results and clearing, and a database that is not there."""

import csv
import json
import math
import sqlite3

import pytest
from app_charts import charts
from postgres_server import postgres

from gpt2viz.server import votes
from gpt2viz.server.votes import MIGRATIONS, Refused, Store, Unavailable
from gpt2viz.teaching import lessons as lf

CHOICE = {"text": "Which head?", "choices": ["1.0", "1.1", "1.2"], "answer": 1}
NUMBER = {"text": "How many parameters has W_O?", "number": 589824, "tolerance": 0}


@pytest.fixture(scope="module")
def pg_url():
    with postgres() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgres"])
def store(request, tmp_path):
    if request.param == "sqlite":
        s = Store(tmp_path / "data" / "votes.sqlite3")
    else:
        url = request.getfixturevalue("pg_url")
        s = Store(url)
        with s._lock:  # a clean database for each test
            s._run([("DELETE FROM votes", ()), ("DELETE FROM rounds", ())])
    yield s
    s.close()


def test_a_round_counts_each_browser_once_and_the_last_vote(store):
    r = store.open_round("L", 2, CHOICE)
    assert (r.number, r.state) == (1, "open")
    store.vote("L", 2, 1, "browser-a", 0)
    store.vote("L", 2, 1, "browser-a", 1)  # changed their mind: the last counts
    store.vote("L", 2, 1, "browser-b", 2)
    store.vote("L", 2, 1, "browser-c", 1)
    [s] = store.summaries("L")
    assert s.voters == 3 and s.counts() == [0, 2, 1] and s.right() == 2
    assert store.my_vote("L", 2, 1, "browser-a") == 1.0


def test_a_closed_round_takes_no_vote_and_a_second_round_starts_empty(store):
    store.open_round("L", 0, CHOICE)
    store.vote("L", 0, 1, "a", 1)
    store.set_state("L", 0, "closed")
    with pytest.raises(Refused, match="closed"):
        store.vote("L", 0, 1, "b", 1)
    assert store.set_state("L", 0, "revealed").state == "revealed"
    r2 = store.open_round("L", 0, CHOICE)  # vote again
    assert r2.number == 2
    with pytest.raises(Refused, match="current"):
        store.vote("L", 0, 1, "a", 2)  # a forged round: the old one
    store.vote("L", 0, 2, "a", 2)
    first, second = store.summaries("L", 0)
    assert (first.counts(), second.counts()) == ([0, 1, 0], [0, 0, 1])


@pytest.mark.parametrize("answer", [3, -1, 0.5, math.nan, math.inf, 1e13, "1", True, None])
def test_an_answer_out_of_range_is_refused_and_not_stored(store, answer):
    store.open_round("L", 1, CHOICE)
    with pytest.raises(Refused):
        store.vote("L", 1, 1, "a", answer)
    assert store.summaries("L")[0].voters == 0


def test_a_number_question_keeps_the_numbers_and_grades_within_the_tolerance(store):
    store.open_round("L", 3, NUMBER | {"tolerance": 10})
    for voter, value in (("a", 589824), ("b", 589830), ("c", 12)):
        store.vote("L", 3, 1, voter, value)
    with pytest.raises(Refused):
        store.vote("L", 3, 1, "d", 2e12)
    [s] = store.summaries("L")
    assert sorted(s.answers) == [12, 589824, 589830] and s.right() == 2 and s.counts() is None


def test_a_lesson_keeps_a_bounded_number_of_votes(store, monkeypatch):
    monkeypatch.setattr(votes, "MAX_ROWS_PER_LESSON", 3)
    store.open_round("L", 0, CHOICE)
    for v in "abc":
        store.vote("L", 0, 1, v, 0)
    with pytest.raises(Refused, match="the most one lesson keeps"):
        store.vote("L", 0, 1, "d", 0)
    store.vote("L", 0, 1, "a", 2)  # a browser that voted may still change its vote: no new row
    assert store.summaries("L")[0].counts() == [2, 0, 1]


def test_rounds_of_one_stop_are_bounded(store, monkeypatch):
    monkeypatch.setattr(votes, "MAX_ROUNDS", 2)
    store.open_round("L", 0, CHOICE)
    store.open_round("L", 0, CHOICE)
    with pytest.raises(Refused, match="rounds"):
        store.open_round("L", 0, CHOICE)


def test_clear_deletes_one_lessons_votes_and_keeps_the_others(store):
    for lesson in ("L", "M"):
        store.open_round(lesson, 0, CHOICE)
        store.vote(lesson, 0, 1, "a", 1)
    assert store.clear("L") == 1
    assert [s.lesson for s in store.summaries()] == ["M"]


def _v1(path):
    """A database as the first schema version left it, with one round and one vote."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    for sql in MIGRATIONS[0]:
        conn.execute(sql)
    conn.execute("INSERT INTO schema_version VALUES (1)")
    conn.execute("INSERT INTO rounds VALUES ('L', 0, 1, 'closed', 0)")
    conn.execute("INSERT INTO votes VALUES ('L', 0, 1, 'a', 1, 0)")
    conn.close()


def test_the_schema_upgrades_from_its_first_version_keeping_the_votes(tmp_path):
    path = tmp_path / "votes.sqlite3"
    _v1(path)
    store = Store(path)
    [s] = store.summaries("L")
    assert (s.voters, s.question, s.right()) == (1, None, None)  # a version-1 round has no question
    assert store._version() == votes.VERSION == 2
    store.open_round("L", 0, CHOICE)  # and the upgraded schema takes a new round with its question
    assert store.current("L", 0).question == CHOICE


def test_the_postgres_schema_upgrades_from_its_first_version(pg_url):
    import psycopg
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA old")
        conn.execute("SET search_path TO old")
        conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        for sql in MIGRATIONS[0]:
            conn.execute(sql)
        conn.execute("INSERT INTO schema_version VALUES (1)")
        conn.execute("INSERT INTO votes VALUES ('L', 0, 1, 'a', 1, 0)")
    store = Store(pg_url + "?options=-csearch_path%3Dold")
    assert store._version() == votes.VERSION
    with store._lock:
        assert store._run([("SELECT COUNT(*) FROM votes", ())], fetch=True)[0][0] == 1
    store.close()


def test_a_newer_schema_than_the_apps_is_refused_in_one_line(tmp_path):
    path = tmp_path / "votes.sqlite3"
    Store(path).close()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("UPDATE schema_version SET version = 99")
    conn.close()
    with pytest.raises(Unavailable, match="newer than this app's"):
        Store(path)


def test_a_database_that_is_not_there_is_one_line():
    with pytest.raises(Unavailable) as e:
        Store("postgresql://nobody@127.0.0.1:1/none")
    assert "\n" not in str(e.value) and "cannot be reached" in str(e.value)


VOTER = """
import sys
from gpt2viz.server.votes import Store
path, n, start = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
s = Store(path)
for i in range(n):
    s.vote("L", 0, 1, f"p{start}-{i}", i % 3)
s.close()
"""


def test_processes_sharing_the_sqlite_file_lose_no_vote(tmp_path):
    """The class server's processes on one host: each its own connection to the one WAL file. New
    interpreters (not multiprocessing's spawn, which re-imports the __main__ an AppTest left in a worker)."""
    import subprocess
    import sys

    path = tmp_path / "votes.sqlite3"
    Store(path).open_round("L", 0, CHOICE)
    procs = [subprocess.Popen([sys.executable, "-c", VOTER, str(path), "40", str(k)]) for k in range(3)]
    assert [p.wait(300) for p in procs] == [0, 0, 0]
    [s] = Store(path).summaries("L")
    assert s.voters == 120 and s.counts() == [3 * sum(i % 3 == c for i in range(40)) for c in range(3)]


def test_where_the_votes_live_follows_the_environment(tmp_path):
    assert votes.where_from_env({"GPT2VIZ_DATA_DIR": str(tmp_path)}) == str(tmp_path / "votes.sqlite3")
    assert votes.where_from_env({"GPT2VIZ_DATABASE_URL": "postgresql://u@h/db"}) == "postgresql://u@h/db"
    with pytest.raises(Unavailable):
        votes.where_from_env({"GPT2VIZ_DATABASE_URL": "mysql://u@h/db"})


# ---------------------------------------------------------------------------- the lesson file's question
def _lesson(question):
    return {"title": "T", "weights": {"source": "demo"}, "text": " people play",
            "stops": [{"page": "attention", "question": question}]}


def test_a_stop_takes_a_choice_or_a_number_question_and_a_link_carries_it():
    for q in (CHOICE | {"reveal": "after"}, NUMBER):
        lesson = lf.parse(_lesson(q))
        assert lesson.stops[0].question == q
        key = b"k" * 32
        assert lf.verify(lf.sign(lesson, key), key).stops[0].question == q


@pytest.mark.parametrize("question, says", [
    ({"text": "Q", "choices": ["a"], "answer": 0}, "2 to 6 choices"),
    ({"text": "Q", "choices": list("abcdefg"), "answer": 0}, "2 to 6 choices"),
    ({"text": "Q", "choices": ["a", "b"], "answer": 2}, "answer: 2 is not between 0 and 1"),
    ({"text": "Q", "choices": ["a", "a"], "answer": 0}, "two choices are the same"),
    ({"text": "Q" * 301, "choices": ["a", "b"], "answer": 0}, "at most 300"),
    ({"text": "Q", "choices": ["a" * 81, "b"], "answer": 0}, "at most 80"),
    ({"text": "Q", "number": 1}, "tolerance: missing"),
    ({"text": "Q", "number": 1, "tolerance": -1}, "below 0"),
    ({"text": "Q", "number": 1e13, "tolerance": 0}, "finite number"),
    ({"text": "Q", "choices": ["a", "b"], "answer": 0, "number": 1}, "either choices"),
    ({"text": "Q", "choices": ["a", "b"], "answer": 0, "reveal": "before"}, "reveal"),
    ({"choices": ["a", "b"], "answer": 0}, "text: missing"),
    ({"text": "Q", "choices": ["a", "b"], "answer": 0, "why": 1}, "unknown field"),
])
def test_a_bad_question_is_one_line_that_names_the_field(question, says):
    with pytest.raises(lf.LessonError) as e:
        lf.parse(_lesson(question))
    assert says in str(e.value) and "\n" not in str(e.value) and "stops[0].question" in str(e.value)


def test_a_lesson_with_questions_at_every_stop_fits_a_link():
    q = {"text": "Q" * 300, "choices": [c * 80 for c in "abcdef"], "answer": 0}
    lesson = lf.parse({"title": "T", "weights": {"source": "demo"}, "text": " people play",
                       "stops": [{"page": "attention", "question": q | {"text": f"{i}" + "Q" * 299}}
                                 for i in range(6)]})
    token = lf.sign(lesson, b"k" * 32)
    assert len(token) < 8 * 1024


# ---------------------------------------------------------------------------- the command line
def test_class_results_and_clear_on_the_command_line(tmp_path, monkeypatch, capsys):
    from gpt2viz.cli import main

    key = "k" * 32
    monkeypatch.setenv("GPT2VIZ_LESSON_KEY", key)
    monkeypatch.setenv("GPT2VIZ_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("GPT2VIZ_DATABASE_URL", raising=False)
    path = tmp_path / "lesson.json"
    path.write_text(json.dumps(_lesson(CHOICE)))
    token = lf.sign(lf.load(path), key.encode())
    store = Store(tmp_path / "votes.sqlite3")
    ident = lf.digest(token)
    store.open_round(ident, 0, CHOICE)
    for voter, choice in (("a", 0), ("b", 1), ("c", 1)):
        store.vote(ident, 0, 1, voter, choice)
    store.open_round("another lesson", 0, CHOICE)
    assert main(["class", "results", "--lesson", str(path), "--csv", str(tmp_path / "r.csv")]) == 0
    rows = list(csv.DictReader((tmp_path / "r.csv").read_text().splitlines()))
    assert [(r["voters"], r["counts"], r["right"], r["share_right"]) for r in rows] == \
        [("3", "1.0: 1; 1.1: 2; 1.2: 0", "2", "0.6667")]
    link = f"http://h/attention?lesson={token}&stop=0"
    assert main(["class", "results", "--lesson", link]) == 0
    assert "3 voters, 2 right" in capsys.readouterr().out
    assert main(["class", "clear", "--lesson", link, "--before", "not a day"]) == 2
    assert "YYYY-MM-DD" in capsys.readouterr().err
    assert main(["class", "clear", "--lesson", link]) == 0
    assert "deleted 3 votes" in capsys.readouterr().out
    assert [s.lesson for s in store.summaries()] == ["another lesson"]


def test_class_results_without_the_database_is_one_line(monkeypatch, capsys):
    from gpt2viz.cli import main

    monkeypatch.setenv("GPT2VIZ_DATABASE_URL", "postgresql://nobody@127.0.0.1:1/none")
    assert main(["class", "results"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot be reached" in err


# ---------------------------------------------------------------------------- the page, without a database
def test_a_stop_with_a_question_still_shows_when_the_database_is_down(monkeypatch):
    """The lesson shows as always; the question says in one line that the class vote is unavailable; a
    `reveal: after` stop draws its charts (there is no vote to wait for)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from test_links import run

    key = "a-key-for-the-vote-page-test-xxxx"
    monkeypatch.setenv(lf.KEY_ENV, key)
    monkeypatch.setenv("GPT2VIZ_DATABASE_URL", "postgresql://nobody@127.0.0.1:1/none")
    lesson = lf.parse(_lesson(CHOICE | {"reveal": "after"}) | {"text": " people play one good game people play"})
    at = run("attention", lesson=lf.sign(lesson, key.encode()), stop="0")
    assert not at.exception, at.exception[0].value
    said = " ".join(e.value for kind in ("markdown", "caption") for e in at.get(kind))
    assert "Which head?" in said and "The class vote is unavailable right now" in said
    assert len(charts(at)) >= 1  # the page's charts: nothing holds them back


# ---------------------------------------------------------------------------- the static site's self-check
def test_the_static_export_asks_each_question_as_a_self_check_with_no_request(tmp_path):
    """`lesson export` writes a choice and a number question as a question with its answer folded under
    it (escaped), the app's vote box not at all; opened from file://, the pages ask nothing of a network
    and the answer shows once opened."""
    import sys
    from pathlib import Path

    from gpt2viz.lesson_site import export

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from streamlit_server import chromium_for_tests, new_context

    choice = CHOICE | {"text": "Which <b>head</b>?", "reveal": "after"}
    lesson = lf.parse({"title": "Q", "weights": {"source": "random", "model": "tiny"}, "text": " people play",
                       "stops": [{"page": "params", "question": choice}, {"page": "params", "question": NUMBER}]})
    done = export(lesson, tmp_path / "site", "", lambda line: None)
    pages = sorted(p for p in done.files if p.name.startswith("stop-"))
    first, second = (p.read_text() for p in pages)
    assert "Which &lt;b&gt;head&lt;/b&gt;?" in first and "<b>head</b>" not in first
    assert "<summary>Show the answer</summary><p>The answer: B: 1.1." in first
    assert "The answer: 589,824." in second and "Your answer: a number." in second
    assert "class vote" not in first + second and "Send my answer" not in first + second
    with chromium_for_tests() as browser:
        context = new_context(browser, 1280, 720)
        page = context.new_page()
        asked = []
        page.on("request", lambda r: asked.append(r.url) if not r.url.startswith(("file:", "data:")) else None)
        page.goto(pages[0].as_uri())
        assert not page.get_by_text("The answer: B: 1.1.").is_visible()
        page.get_by_text("Show the answer").click()
        assert page.get_by_text("The answer: B: 1.1.").is_visible()
        page.goto(pages[1].as_uri())
        context.close()
    assert asked == []
