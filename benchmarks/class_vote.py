"""The class vote, spoken in Streamlit's own protocol: N students answer a lesson stop's question from
their own "browsers" (each a `st_protocol.Session` with its own cookie jar, so its own signed voter id),
the lecturer (another session, after the lecturer password) opens the round, watches the count and
reveals; then `python -m gpt2viz class results` must give exactly the answers sent.

    python benchmarks/class_vote.py --students 200 --processes 2 [--postgres]

starts `gpt2viz class-server --processes N` (or, with --processes 0, one `streamlit run serve.py`) with a
fresh data folder (or a PostgreSQL server it starts, with --postgres), signs a two-stop lesson with a
choice and a number question, and reports:

- opening: the students' sessions opened beforehand, not timed;
- voting: every student sends one answer within --within seconds (spread uniformly, seeded), each
  timed from the press to the script-finished message, with the answer acknowledged on the page
  ("Your answer is in");
- the lecturer's spread: how long after the last acknowledged vote the lecturer's view counts them all;
- stored: the counts per choice in the database against those sent (every vote once);
- with --kill-one, one app process is killed (SIGKILL) half way through the voting: its students'
  websockets close; every vote that a page acknowledged must still be in the database, as it was sent;
- the load average beside the figures, and the compute floor is not relevant here (no model run).

The students all come from 127.0.0.1, as a class behind one NAT address does.
"""

import argparse
import asyncio
import contextlib
import json
import math
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from st_protocol import Disconnected, Session  # noqa: E402

PASSWORD = "lecturer-pass-for-the-benchmark"
CHOICES = ["block 0 head 0", "block 1 head 1", "block 1 head 2", "none of them"]
LESSON = {"title": "The class votes", "weights": {"source": "demo"},
          "text": " people play one good game after work people play one good game",
          "stops": [{"page": "attention", "block": 1, "head": 1, "note": "Predict, then see.",
                     "question": {"text": "Which head copies the word after the earlier 'play'?",
                                  "choices": CHOICES, "answer": 1, "reveal": "after"}},
                    {"page": "params", "question": {"text": "How many parameters has W_O in block 0?",
                                                    "number": 16384, "tolerance": 0}}]}


def signed_query(key: bytes, stop: int = 0) -> str:
    from gpt2viz.teaching import lessons as lf
    return f"lesson={lf.sign(lf.parse(LESSON), key)}&stop={stop}"


async def unlock(lecturer: Session, page: str, query: str) -> None:
    r = await lecturer.view(page, query)
    await lecturer.act(page, query, {r.widgets["Lecturer password"]: PASSWORD, r.widgets["Unlock"]: True})


async def press(lecturer: Session, page: str, query: str, label: str):
    r = await lecturer.view(page, query)
    if label not in r.widgets:
        raise RuntimeError(f"the lecturer's view has no {label!r} button: {sorted(r.widgets)}")
    return await lecturer.act(page, query, {r.widgets[label]: True})


def counted(result) -> int | None:
    """The lecturer's count, from "N answers so far; ..." (None if not on the view)."""
    for text in result.texts:
        words = text.replace("\\", "").split()
        if len(words) > 2 and words[1].startswith("answer"):
            return int(words[0])
    return None


async def vote(student: Session, page: str, query: str, choice: int, delay: float) -> tuple[float, bool]:
    await asyncio.sleep(delay)
    try:
        return await _vote(student, page, query, choice)
    except Disconnected:  # its process was killed: not acknowledged
        return math.nan, False


async def _vote(student: Session, page: str, query: str, choice: int) -> tuple[float, bool]:
    r = await student.view(page, query)
    ids = r.widgets
    t0 = time.perf_counter()
    # a radio sends its option as the page writes it (Streamlit 1.67: string_value)
    done = await student.act(page, query, {ids["Your answer"]: CHOICES[choice], ids["Send my answer"]: True})
    acknowledged = any("Your answer is in" in t.replace("\\", "") for t in done.texts)
    return time.perf_counter() - t0, acknowledged and done.ok


async def class_vote(base: str, key: bytes, students: int, within: float, seed: int = 0, kill=None) -> dict:
    """The vote; `kill`, a function called half way through the voting (a process killed)."""
    page, query = "attention", signed_query(key)
    rng = random.Random(seed)
    lecturer = Session(base)
    await lecturer.open(page, query)
    await unlock(lecturer, page, query)
    opened = await press(lecturer, page, query, "Open the vote")
    if not opened.ok:
        raise RuntimeError(f"opening the vote failed: {opened.error or opened.exceptions}")
    sessions = [Session(base) for _ in range(students)]
    await asyncio.gather(*(s.open(page, query) for s in sessions))  # opened beforehand, not timed
    choices = [rng.randrange(len(CHOICES)) for _ in sessions]
    t0 = time.perf_counter()
    killer = asyncio.get_running_loop().call_later(within / 2, kill) if kill else None
    outcomes = await asyncio.gather(*(vote(s, page, query, c, rng.uniform(0, within))
                                      for s, c in zip(sessions, choices)))
    last_ack = time.perf_counter()
    if killer:
        killer.cancel()
    spread_s = None
    while time.perf_counter() - last_ack < 30:
        if counted(await lecturer.view(page, query)) == sum(ok for _, ok in outcomes):
            spread_s = time.perf_counter() - last_ack
            break
        await asyncio.sleep(0.2)
    revealed = await press(lecturer, page, query, "Reveal the answer")
    acknowledged = {_voter_id(s): c for s, c, (_, ok) in zip(sessions, choices, outcomes) if ok}
    for s in [*sessions, lecturer]:
        with contextlib.suppress(Exception):
            await s.close()
    times = sorted(t for t, ok in outcomes if ok)
    sent = [choices.count(i) for i in range(len(CHOICES))]
    return {"students": students, "acknowledged": sum(ok for _, ok in outcomes), "sent": sent,
            "voting_s": round(last_ack - t0, 2), "vote_p50_s": round(statistics.median(times), 3),
            "vote_p95_s": round(times[int(0.95 * (len(times) - 1))], 3),
            "spread_complete_after_s": None if spread_s is None else round(spread_s, 2),
            "revealed": revealed.ok, "loadavg": os.getloadavg(), "acknowledged_by_voter": acknowledged}


def _voter_id(session: Session) -> str | None:
    value = next((c.value for c in session.cookies if c.name == "gpt2viz_voter"), None)
    return value.split(".")[0] if value else None


def kept(env: dict, key: bytes) -> dict[str, int]:
    """Stop 1, round 1's stored answers by browser id, read from the database itself."""
    from gpt2viz.server import votes
    from gpt2viz.teaching import lessons as lf
    store = votes.Store(votes.where_from_env(env))
    with store._lock:
        rows = store._run([("SELECT voter, answer FROM votes WHERE lesson = ? AND stop = 0 AND round = 1",
                            (lf.digest(lf.sign(lf.parse(LESSON), key)),))], fetch=True)
    store.close()
    return {voter: int(answer) for voter, answer in rows}


def stored(env: dict, key: bytes) -> list[int]:
    """The counts per choice `class results` gives for stop 1, round 1 of the lesson."""
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump(LESSON, f)
        f.flush()
        out = subprocess.run([sys.executable, "-m", "gpt2viz", "class", "results", "--lesson", f.name,
                              "--csv", "-"], capture_output=True, text=True, env=env, cwd=ROOT, check=True).stdout
    import csv
    row = next(r for r in csv.DictReader(out.splitlines()) if r["stop"] == "1" and r["round"] == "1")
    return [int(part.rsplit(": ", 1)[1]) for part in row["counts"].split("; ")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--students", type=int, default=200)
    ap.add_argument("--within", type=float, default=10.0, help="seconds over which the votes arrive")
    ap.add_argument("--processes", type=int, default=2, help="class-server processes (0: one serve.py)")
    ap.add_argument("--postgres", action="store_true", help="a PostgreSQL server the benchmark starts")
    ap.add_argument("--kill-one", action="store_true", help="kill one app process half way through the voting")
    a = ap.parse_args()
    from postgres_server import postgres
    from streamlit_server import StreamlitServer

    key = os.urandom(16).hex().encode()
    data = tempfile.mkdtemp(prefix="gpt2viz-votes-")
    env = dict(os.environ, GPT2VIZ_LESSON_KEY=key.decode(), GPT2VIZ_TEACHER_PASSWORD=PASSWORD,
               GPT2VIZ_DATA_DIR=data, GPT2VIZ_PASSWORD_GUESSES="1000")
    with contextlib.ExitStack() as stack:
        if a.postgres:
            env["GPT2VIZ_DATABASE_URL"] = stack.enter_context(postgres())
        os.environ.update(env)
        if a.processes:
            from streamlit_server import free_port

            from gpt2viz.server.class_server import ClassServer
            server = ClassServer(a.processes, free_port(), address="127.0.0.1")
            stack.callback(server.stop)
            server.start()
            base = server.base
            victim = server.apps[0]
        else:
            srv = stack.enter_context(StreamlitServer(ROOT / "serve.py", ROOT))
            srv.wait_healthy(120)
            base = srv.base
            victim = srv.proc
        kill = (lambda: os.killpg(victim.pid, signal.SIGKILL)) if a.kill_one else None
        report = asyncio.run(class_vote(base, key, a.students, a.within, kill=kill))
        report["stored"] = stored(env, key)
        acknowledged, in_db = report.pop("acknowledged_by_voter"), kept(env, key)
        report["acknowledged_votes_lost"] = sum(in_db.get(v) != c for v, c in acknowledged.items())
        # without a kill every vote sent is stored once; with one, exactly the acknowledged ones are
        report["every_vote_once"] = (len(in_db) == len(acknowledged) if a.kill_one
                                     else report["stored"] == report["sent"])
        report["database"] = "postgresql" if a.postgres else "sqlite"
        report["processes"] = a.processes or 1
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
