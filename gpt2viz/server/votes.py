"""The class's answers: a question at a lesson stop, voted on in rounds, kept in a real database.

What is stored, and nothing else: the lesson's id (its signature's digest, teaching/lessons.py), the
stop, the round, the question as the lesson asked it, the round's state (open, closed, revealed), and per
vote the anonymous per-browser id (server/voter.py), the answer and the time. No name, no address, no
text typed by a student.

SQLite by default: a file `votes.sqlite3` in the folder GPT2VIZ_DATA_DIR names (created if missing), in
WAL mode so that the class server's processes on one host share it. PostgreSQL when GPT2VIZ_DATABASE_URL
is a `postgresql://` URL (the class server across hosts; psycopg 3). One schema, created and upgraded by
`Store` itself: `schema_version` holds the version, MIGRATIONS the steps from an empty database to it.

A vote is one row per (lesson, stop, round, browser): a second vote from the same browser replaces the
first (the last counts until the round closes). Every call is bounded: a lesson keeps at most
MAX_ROWS_PER_LESSON votes and a stop MAX_ROUNDS rounds; an answer is a choice's index or a finite
number of at most 1e12 in size. A database that cannot be reached raises `Unavailable`, whose one line
the page shows in place of the vote.
"""

import json
import math
import os
import sqlite3
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

DATA_DIR_ENV = "GPT2VIZ_DATA_DIR"
DATABASE_URL_ENV = "GPT2VIZ_DATABASE_URL"
DEFAULT_DATA_DIR = "gpt2viz-data"
SQLITE_NAME = "votes.sqlite3"
MAX_ROWS_PER_LESSON = 20_000  # votes kept for one lesson: 200 students x 100 rounds
MAX_ROUNDS = 20  # rounds of one stop's question
MAX_ANSWER = 1e12  # a number vote, in size
STATES = ("open", "closed", "revealed")

# Every step from an empty database, in order: version i is what MIGRATIONS[:i] made. Version 1 stored
# rounds without their question; version 2 keeps the question with its round, so that `class results`
# gives the share right without the lesson file (a round from version 1 has none: "unknown").
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    ("CREATE TABLE rounds (lesson TEXT NOT NULL, stop INTEGER NOT NULL, round INTEGER NOT NULL, "
     "state TEXT NOT NULL, opened DOUBLE PRECISION NOT NULL, PRIMARY KEY (lesson, stop, round))",
     "CREATE TABLE votes (lesson TEXT NOT NULL, stop INTEGER NOT NULL, round INTEGER NOT NULL, "
     "voter TEXT NOT NULL, answer DOUBLE PRECISION NOT NULL, at DOUBLE PRECISION NOT NULL, "
     "PRIMARY KEY (lesson, stop, round, voter))"),
    ("ALTER TABLE rounds ADD COLUMN question TEXT",
     "CREATE INDEX votes_by_lesson ON votes (lesson, at)"),
)
VERSION = len(MIGRATIONS)


class Unavailable(ConnectionError):
    """The database cannot be reached or used: one line, for the page, the log and the command line."""


class Refused(ValueError):
    """A request the store will not take (a closed round, an answer out of range): one line."""


@dataclass(frozen=True)
class Round:
    number: int  # from 1
    state: str  # one of STATES
    question: dict | None


@dataclass(frozen=True)
class Summary:
    """One round's answers: the voters, the count per choice (or the numbers), the share right."""
    lesson: str
    stop: int
    round: int
    state: str
    question: dict | None
    answers: tuple[float, ...]

    @property
    def voters(self) -> int:
        return len(self.answers)

    def counts(self) -> list[int] | None:
        """Votes per choice, in the question's order (None for a number question or an unknown one)."""
        if not self.question or "choices" not in self.question:
            return None
        out = [0] * len(self.question["choices"])
        for a in self.answers:
            out[int(a)] += 1
        return out

    def right(self) -> int | None:
        """How many answered right (None where the round's question is unknown)."""
        if not self.question:
            return None
        return sum(is_right(self.question, a) for a in self.answers)


def is_right(question: dict, answer: float) -> bool:
    """Whether a vote (a choice's index, or a number) is the question's right answer."""
    if "choices" in question:
        return answer == question["answer"]
    return abs(answer - question["number"]) <= question["tolerance"]


def valid_answer(question: dict, answer) -> float:
    """The answer as stored, or Refused: a choice's index, or a finite number of at most 1e12 in size."""
    if isinstance(answer, bool) or not isinstance(answer, (int, float)):
        raise Refused(f"an answer is a number, not {type(answer).__name__}")
    if not math.isfinite(answer) or abs(answer) > MAX_ANSWER:
        raise Refused(f"an answer is a finite number of at most {MAX_ANSWER:.0e} in size")
    if "choices" in question and (answer != int(answer) or not 0 <= answer < len(question["choices"])):
        raise Refused(f"choice {answer:g} is not one of the {len(question['choices'])} choices")
    return float(answer)


class Store:
    """The votes, in SQLite (a path) or PostgreSQL (a postgresql:// URL). Safe to share between threads."""

    def __init__(self, where: str | Path):
        self.where = str(where)
        self.postgres = self.where.startswith(("postgresql://", "postgres://"))
        self._lock = threading.Lock()
        self._conn = None
        with self._lock:
            self._migrate()

    # ------------------------------------------------------------------ connection
    def _connect(self):
        try:
            if self.postgres:
                import psycopg
                return psycopg.connect(self.where, autocommit=True, connect_timeout=3)
            Path(self.where).parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.where, timeout=10, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")  # WAL: durable at each checkpoint, safe against a crash
            return conn
        except Exception as e:  # noqa: BLE001 - any driver's failure to connect is one line for the page
            raise Unavailable(f"the class vote's database cannot be reached ({type(e).__name__})") from None

    def _sql(self, sql: str) -> str:
        return sql.replace("?", "%s") if self.postgres else sql

    def _run(self, statements: Sequence[tuple[str, tuple]], fetch: bool = False) -> list[tuple]:
        """The statements in one transaction (the lock held); the last one's rows when `fetch`."""
        for attempt in (0, 1):  # a connection the server dropped is made again, once
            try:
                if self._conn is None:
                    self._conn = self._connect()
                cur = self._conn.cursor()
                cur.execute("BEGIN" if self.postgres else "BEGIN IMMEDIATE")
                rows: list[tuple] = []
                try:
                    for sql, args in statements:
                        cur.execute(self._sql(sql), args)
                    rows = list(cur.fetchall()) if fetch else []
                    cur.execute("COMMIT")
                except BaseException:
                    cur.execute("ROLLBACK")
                    raise
                return rows
            except (Refused, Unavailable):
                raise
            except Exception as e:  # noqa: BLE001 - a driver's error: the connection is dropped and made again
                self._close()
                if attempt or _integrity(e):
                    raise Unavailable(f"the class vote's database failed ({type(e).__name__}: {str(e)[:80]})") \
                        from None
        return []

    def _close(self) -> None:
        try:
            if self._conn is not None:
                self._conn.close()
        except Exception:  # noqa: BLE001, S110 - closing a broken connection
            pass
        self._conn = None

    def close(self) -> None:
        with self._lock:
            self._close()

    def _migrate(self) -> None:
        have = self._version()
        if have > VERSION:
            raise Unavailable(f"the class vote's database has schema version {have}, newer than this app's {VERSION}")
        for v in range(have, VERSION):
            steps = [(sql, ()) for sql in MIGRATIONS[v]]
            if v == 0:
                steps.insert(0, ("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)", ()))
                steps.append(("INSERT INTO schema_version (version) VALUES (1)", ()))
            else:
                steps.append(("UPDATE schema_version SET version = ?", (v + 1,)))
            try:
                self._run(steps)
            except Unavailable:
                if self._version() <= v:  # not another process that upgraded it meanwhile
                    raise

    def _version(self) -> int:
        """The schema's version: 0 for an empty database (Unavailable if it cannot be reached)."""
        exists = ("SELECT COUNT(*) FROM information_schema.tables WHERE table_name = 'schema_version'"
                  if self.postgres else "SELECT COUNT(*) FROM sqlite_master WHERE name = 'schema_version'")
        if not int(self._run([(exists, ())], fetch=True)[0][0]):
            return 0
        rows = self._run([("SELECT MAX(version) FROM schema_version", ())], fetch=True)
        return int(rows[0][0] or 0)

    # ------------------------------------------------------------------ the lecturer's side
    def current(self, lesson: str, stop: int) -> Round | None:
        """The stop's latest round, or None before the first."""
        with self._lock:
            rows = self._run([("SELECT round, state, question FROM rounds WHERE lesson = ? AND stop = ? "
                               "ORDER BY round DESC LIMIT 1", (lesson, stop))], fetch=True)
        if not rows:
            return None
        number, state, question = rows[0]
        return Round(int(number), state, json.loads(question) if question else None)

    def open_round(self, lesson: str, stop: int, question: dict) -> Round:
        """A new round of the stop's question, open for votes (the first, or "vote again")."""
        with self._lock:
            rows = self._run([("SELECT COALESCE(MAX(round), 0) FROM rounds WHERE lesson = ? AND stop = ?",
                               (lesson, stop))], fetch=True)
            number = int(rows[0][0]) + 1
            if number > MAX_ROUNDS:
                raise Refused(f"this stop has had {MAX_ROUNDS} rounds, the most one stop keeps")
            self._run([("UPDATE rounds SET state = 'closed' WHERE lesson = ? AND stop = ? AND state = 'open'",
                        (lesson, stop)),
                       ("INSERT INTO rounds (lesson, stop, round, state, opened, question) "
                        "VALUES (?, ?, ?, 'open', ?, ?)",
                        (lesson, stop, number, time.time(), json.dumps(question, separators=(",", ":"))))])
        return Round(number, "open", question)

    def set_state(self, lesson: str, stop: int, state: str) -> Round:
        """Close the latest round, or reveal its answer (which closes it too)."""
        if state not in ("closed", "revealed"):
            raise Refused(f"a round is closed or revealed, not {state!r:.20}")
        now = self.current(lesson, stop)
        if now is None:
            raise Refused("this stop has no round yet")
        with self._lock:
            self._run([("UPDATE rounds SET state = ? WHERE lesson = ? AND stop = ? AND round = ?",
                        (state, lesson, stop, now.number))])
        return Round(now.number, state, now.question)

    # ------------------------------------------------------------------ the students' side
    def vote(self, lesson: str, stop: int, number: int, voter: str, answer) -> float:
        """Store a browser's answer to round `number` (replacing its earlier one), or Refused."""
        now = self.current(lesson, stop)
        if now is None or now.number != number:
            raise Refused("that round is not this stop's current one")
        if now.state != "open":
            raise Refused("the lecturer has closed this round")
        value = valid_answer(now.question or {}, answer)
        if not voter or len(voter) > 64:
            raise Refused("this browser has no class-vote id")
        with self._lock:
            rows = self._run([("SELECT COUNT(*), SUM(CASE WHEN stop = ? AND round = ? AND voter = ? THEN 1 ELSE 0 END) "
                               "FROM votes WHERE lesson = ?", (stop, number, voter, lesson))], fetch=True)
            if int(rows[0][0]) >= MAX_ROWS_PER_LESSON and not rows[0][1]:  # a new row, not a changed vote
                raise Refused(f"this lesson has {MAX_ROWS_PER_LESSON:,} votes, the most one lesson keeps")
            self._run([("INSERT INTO votes (lesson, stop, round, voter, answer, at) VALUES (?, ?, ?, ?, ?, ?) "
                        "ON CONFLICT (lesson, stop, round, voter) DO UPDATE SET answer = excluded.answer, "
                        "at = excluded.at", (lesson, stop, number, voter, value, time.time()))])
        return value

    def my_vote(self, lesson: str, stop: int, number: int, voter: str) -> float | None:
        with self._lock:
            rows = self._run([("SELECT answer FROM votes WHERE lesson = ? AND stop = ? AND round = ? AND voter = ?",
                               (lesson, stop, number, voter))], fetch=True)
        return float(rows[0][0]) if rows else None

    # ------------------------------------------------------------------ results
    def summaries(self, lesson: str | None = None, stop: int | None = None) -> list[Summary]:
        """Every round (of one lesson, of one stop), in order, with its answers."""
        where, args = [], []
        if lesson is not None:
            where.append("r.lesson = ?")
            args.append(lesson)
        if stop is not None:
            where.append("r.stop = ?")
            args.append(stop)
        sql = ("SELECT r.lesson, r.stop, r.round, r.state, r.question, v.answer FROM rounds r LEFT JOIN votes v "
               "ON v.lesson = r.lesson AND v.stop = r.stop AND v.round = r.round"
               + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY r.lesson, r.stop, r.round")
        with self._lock:
            rows = self._run([(sql, tuple(args))], fetch=True)
        out: dict[tuple, list] = {}
        meta: dict[tuple, tuple] = {}
        for lesson_id, s, r, state, question, answer in rows:
            key = (lesson_id, int(s), int(r))
            meta[key] = (state, json.loads(question) if question else None)
            out.setdefault(key, [])
            if answer is not None:
                out[key].append(float(answer))
        return [Summary(k[0], k[1], k[2], meta[k][0], meta[k][1], tuple(v)) for k, v in out.items()]

    def clear(self, lesson: str, before: float | None = None) -> int:
        """Delete a lesson's votes (those before a unix time, with `before`) and its rounds left empty;
        the number of votes deleted."""
        cut = before if before is not None else math.inf
        with self._lock:
            rows = self._run([("SELECT COUNT(*) FROM votes WHERE lesson = ? AND at < ?", (lesson, cut))], fetch=True)
            self._run([("DELETE FROM votes WHERE lesson = ? AND at < ?", (lesson, cut)),
                       ("DELETE FROM rounds WHERE lesson = ? AND opened < ? AND NOT EXISTS (SELECT 1 FROM votes v "
                        "WHERE v.lesson = rounds.lesson AND v.stop = rounds.stop AND v.round = rounds.round)",
                        (lesson, cut))])
        return int(rows[0][0])


def _integrity(e: Exception) -> bool:
    """An error the statement itself caused (not the connection): retrying would give the same."""
    name = type(e).__name__
    return isinstance(e, sqlite3.IntegrityError) or name in ("IntegrityError", "UniqueViolation", "CheckViolation")


def where_from_env(env=os.environ) -> str:
    """The database: GPT2VIZ_DATABASE_URL when it is a PostgreSQL URL, else the SQLite file in
    GPT2VIZ_DATA_DIR (default: ./gpt2viz-data)."""
    url = env.get(DATABASE_URL_ENV, "").strip()
    if url:
        if not url.startswith(("postgresql://", "postgres://")):
            raise Unavailable(f"{DATABASE_URL_ENV} is not a postgresql:// URL")
        return url
    return str(Path(env.get(DATA_DIR_ENV) or DEFAULT_DATA_DIR) / SQLITE_NAME)


RESULT_COLUMNS = ("lesson", "stop", "round", "state", "question", "voters", "counts", "median", "right",
                  "share_right")


def result_rows(summaries: Sequence[Summary]) -> list[dict]:
    """One row per round: the voters, the count per choice ("choice: n; ..."), or the median of the
    numbers, and how many were right (blank where the round's question is unknown)."""
    out = []
    for s in summaries:
        q, counts, right = s.question or {}, s.counts(), s.right()
        ordered = sorted(s.answers)
        n = len(ordered)
        median = "" if not n or counts is not None else (
            ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2)
        out.append({"lesson": s.lesson, "stop": s.stop + 1, "round": s.round, "state": s.state,
                    "question": q.get("text", ""), "voters": n,
                    "counts": "; ".join(f"{c}: {k}" for c, k in zip(q["choices"], counts)) if counts else "",
                    "median": median, "right": "" if right is None else right,
                    "share_right": "" if right is None or not n else round(right / n, 4)})
    return out
