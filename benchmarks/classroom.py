"""A class on the app, spoken in Streamlit's own protocol: what one server holds, and N behind nginx.

No browser: each student is a `st_protocol.Session` (the page load, the websocket and the rerun
messages a browser sends), so the 2 cores serve the app alone and the times are the server's:
from the rerun request to the script-finished message. One process drives every session (asyncio).

Scenarios (--scenario, one or more, run in the order given, replicas last; `all`, the default, is
classroom, burst, lesson and replicas, as before the class scenarios; the class scenarios of issue
24 are `--scenario class start distinct lesson`):

- classroom: K students (30), each with its own text (5 to 200 tokens, spread over the class) and
  mode (full, training, prefill, decode in turn), walking the pages from a different start (block
  and head move along), one view every 3 to 8 s (uniform, seeded), for --minutes; every 4th view
  asks for the view on screen again (the Rerun menu item): it should cost no run.
- class: the same students (texts of their own, new to the server), each starting at a uniform
  time in [0, 30] s, then a view every 3 to 8 s, --views views each (4: about 120 views for 30).
- start ("everyone press enter"): the class, every student starting within 5 s.
- burst: the teacher says "open this link now": K students open the same link (the attention page,
  a text no one has asked for, about 100 tokens, mode full) within one second. The server logs each
  trace run (GPT2VIZ_LOG_RUNS=1): the forward pass for that text must run once while the others wait.
- distinct: the burst on another new text, each student at its own block and head (student i:
  block i % 12, head (5i + i // 12) % 12), one view each, timed from opening the link.
- lesson: the lecturer's signed link (lessons/attention-demo.json, signed with GPT2VIZ_LESSON_KEY, a
  key made for the run unless set): K students open stop 1 within 5 s, then each steps through the
  stops in the same tab, 3 to 8 s a stop. The server computes the lesson's runs once, when the first
  student opens it: "runs computed" counts every run the server logged in the scenario.
- lesson-open: the lecturer says "open this link now": K students open the first stop of the signed
  link (--lesson, lessons/attention-demo.json by default) within 1 s, on a server that has not shown
  that lesson (run it before `lesson`, or give another --lesson); each view from opening the link to
  script-finished. Reported in the order the students opened it: the first student, the thirtieth
  (the K-th), p50 and max, beside one more student opening the same stop once the class has it (the
  lesson's runs cached: the baseline, in the same run), with the runs the server computed.
- replicas: two app servers of its own (whatever --setup says) behind a real nginx (Debian's
  /usr/sbin/nginx, deploy/nginx.conf.template filled in with loopback ports; affinity by cookie),
  the classroom scenario through the proxy; half way through, the replica serving the most students
  is killed (SIGKILL). A student whose websocket closes does what the browser does: pings
  /_stcore/health and opens a new websocket (nginx sends it to the living replica), trying again for
  up to --view-timeout as a browser keeps trying, then asks for the same page with the same query
  string; the recovery time runs from the lost connection to that view's script-finished message,
  and the view must show the student's own text and mode again.

Setups (--setup; the replicas scenario has its own): `one`, one `streamlit run app.py`; `processes`,
`gpt2viz.server.class_server.ClassServer` (what `python -m gpt2viz class-server` runs): N = --processes
(the cores) app processes on loopback behind Debian's nginx on a free port, the same environment
(GPT2VIZ_LOG_RUNS=1, the lesson key, the budget, which it splits N ways, and one torch thread each),
each process warmed up on its own port; `both`, one then the other. Server CPU is the CPU time of
the app processes (summed) over the scenario; "per view" divides it by the views drawn. Trace runs
come from each process's log.

An error is a view that did not finish (timeout, page not found, a closed socket on one server), an
exception the page sent, or a view that is not the student's (its text box or mode box shows
another value). Memory: RSS of each server (VmRSS every 0.5 s, VmHWM at the end) against
runtime + weights after a warm-up view; peak growth (summed over the processes of a setup) is
compared with GPT2VIZ_TRACE_BUDGET_MB (the whole budget, before it is split).

Usage:  .venv/bin/python benchmarks/classroom.py [--sessions K] [--quick] [--minutes M] [--views 4]
            [--scenario all|classroom|class|start|burst|distinct|lesson-open|lesson|replicas ...]
            [--lesson lessons/attention-demo.json]
            [--setup one|processes|both] [--processes N] [--repeat N] [--budget-mb 2048] [--threads 0]
            [--server-log FILE]
Each scenario ends with one line, and the run ends with all of them again, one per scenario and setup:
scenario=S setup=one|processes(N)|replicas(2) sessions=K views=N errors=N p50_s=X p95_s=X
compute_floor_s=X load=X cpu_per_view_s=X runs=N peak_growth_mib=X budget_mib=X
(compute_floor_s: the compute seconds of the runs the server logged, over the cores; load: the 1-minute
load average at the end of the scenario)
With --repeat N (N > 1) everything runs N times, each time on servers started again, and the run ends
with one line per scenario and setup over the N runs (the median and range of p50 and p95) and, where
both setups ran, the one server's p95 over the processes', run by run (`over_runs`).
"""

import argparse
import asyncio
import os
import random
import re
import secrets
import signal
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, urlencode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # streamlit_server: a gpt2viz-independent helper

from load_test import (  # noqa: E402
    MODES,
    MemorySampler,
    _status_kib,
    cpu_seconds,
    fmt,
    pct,
    server_tracebacks,
    session_text,
    table,
)
from nginx_proxy import NGINX, Proxy  # noqa: E402
from st_protocol import Disconnected, Session, ViewResult  # noqa: E402
from streamlit_server import StreamlitServer  # noqa: E402

from gpt2viz.model.tokenizer import encode  # noqa: E402
from gpt2viz.server.class_server import ClassServer, free_port  # noqa: E402
from gpt2viz.server.trace_cache import DEFAULT_BUDGET  # noqa: E402
from gpt2viz.spec.pages import PAGES as PAGE_ROWS  # noqa: E402
from gpt2viz.spec.pages import href  # noqa: E402
from gpt2viz.teaching import lessons  # noqa: E402

BUDGET_ENV = "GPT2VIZ_TRACE_BUDGET_MB"
THREADS_ENV = "GPT2VIZ_THREADS"
PAGES = [href(row.url).lstrip("/") for row in PAGE_ROWS]  # the default page is the root: ""
QUICK_PAGES = ["", "tokens", "attention", "mlp", "output", "generation", "training", "lens"]
MIN_TOKENS, MAX_TOKENS = 5, 200
THINK_S = (3.0, 8.0)
AGAIN_EVERY = 4  # every 4th view asks for the view on screen again (Rerun, or a widget set to its value)
BURST_WINDOW_S = 1.0
BURST_PAGE = "attention"
MODEL = "gpt2"
MIB = 2**20
RUN_LINE = re.compile(r"^run (\w+) \(([^)]*)\): ([\d.]+) s, (\d+) asker", re.MULTILINE)
MAPPED_LINE = re.compile(r"^mapped (\w+) \(", re.MULTILINE)  # another process's run, read from the host's folder


# ---------------------------------------------------------------------------- students and views
@dataclass
class View:
    student: int
    page: str
    seconds: float | None
    error: str | None = None
    after_kill: bool = False
    again: bool = False  # the same view asked again


@dataclass
class Student:
    index: int
    text: str
    mode: str
    order: list[str]
    rng: random.Random
    views: list[View] = field(default_factory=list)
    lost: list[float] = field(default_factory=list)  # when its connection was lost (monotonic)
    recovered: list[float] = field(default_factory=list)  # seconds from lost to the view shown again
    served_by: list[str] = field(default_factory=list)  # the replica of each view (through the proxy)

    def query(self, n: int) -> str:
        view = {"model": MODEL, "mode": self.mode, "text": self.text, "block": (self.index + n // 2) % 12,
                "head": (self.index + n) % 12}
        return urlencode(view, quote_via=quote)


def make_students(k: int, pages: list[str], seed: int = 0, texts_from: int = 0) -> list[Student]:
    """K students, student i with text `session_text(texts_from + i, ...)`: a scenario that gives its
    own texts_from asks for texts no earlier scenario on the same server asked for."""
    students = []
    for i in range(k):
        n = MIN_TOKENS + round((MAX_TOKENS - MIN_TOKENS) * i / max(k - 1, 1))
        order = pages[i % len(pages):] + pages[: i % len(pages)]
        students.append(Student(i, session_text(texts_from + i, n), MODES[i % len(MODES)], order,
                                random.Random(seed * 1000 + i)))
    return students


def problem(r: ViewResult, s: Student) -> str | None:
    """Why a finished view is wrong, or None."""
    if r.error:
        return r.error
    if r.exceptions:
        return "exception: " + " | ".join(r.exceptions)
    if r.boxes.get("Text") != s.text or r.boxes.get("Mode") != s.mode:
        return f"wrong view: text {r.boxes.get('Text', '')[:40]!r}, mode {r.boxes.get('Mode')!r}"
    return None


async def open_session(base: str, page: str, query: str, until: float) -> Session:
    """A new tab at this address, retried (as a browser retries) until `until`."""
    while True:
        session = Session(base)
        try:
            await session.open(page, query, timeout=30)
            return session
        except Disconnected:
            if time.monotonic() > until:
                raise
            await asyncio.sleep(0.5)


async def recover(session: Session, page: str, query: str, until: float, view_timeout: float) -> ViewResult | None:
    """After a lost connection: what the frontend does (health ping, new websocket with the old
    session id) until `until`, then the same view by the same URL. None when it never reconnected."""
    while time.monotonic() < until:
        try:
            await session.reopen(timeout=10)
            return await session.view(page, query, timeout=view_timeout)
        except Disconnected:
            await asyncio.sleep(0.5)
    return None


async def student(s: Student, base: str, t_end: float, kill: dict | None, view_timeout: float,
                  views: int | None = None) -> None:
    """Walk the pages, one view every THINK_S seconds, until t_end or `views` views. A lost
    connection is recovered (kill given: replicas) or counted as an error (one server)."""
    n, walked = 0, 0
    page, query = s.order[0], s.query(0)
    session = await open_session(base, page, query, time.monotonic() + 60)
    try:
        while time.monotonic() < t_end:
            again = n % AGAIN_EVERY == AGAIN_EVERY - 1
            if not again:
                page, query = s.order[walked % len(s.order)], s.query(walked)
                walked += 1
            t0 = time.monotonic()
            try:
                r = await session.view(page, query, timeout=view_timeout)
                s.views.append(View(s.index, page, r.seconds, problem(r, s), kill is not None and kill["done"], again))
                s.served_by.append(session.replica or "")
            except Disconnected as e:
                await lost(session, s, page, query, t0, kill, str(e))
            n += 1
            if views is not None and n >= views:
                break
            pause = s.rng.uniform(*THINK_S) - (time.monotonic() - t0)
            if pause > 0 and await session.closed_within(min(pause, max(0.0, t_end - time.monotonic()))):
                # closed while the student reads the page on screen
                await lost(session, s, page, query, time.monotonic(), kill, "closed while reading")
    finally:
        await session.close()


async def lost(session: Session, s: Student, page: str, query: str, t_lost: float, kill: dict | None,
               why: str) -> None:
    if kill is None:
        s.views.append(View(s.index, page, None, f"disconnected: {why}"))
        raise Disconnected(why)
    s.lost.append(t_lost)
    r = await recover(session, page, query, t_lost + kill["reconnect_s"], kill["view_timeout"])
    if r is None:
        s.views.append(View(s.index, page, None, f"not reconnected within {kill['reconnect_s']:.0f} s", True))
        raise Disconnected(why)
    wrong = problem(r, s)
    if wrong is None:  # the same view, drawn again
        s.recovered.append(time.monotonic() - t_lost)
    s.served_by.append(session.replica or "")
    s.views.append(View(s.index, page, r.seconds, wrong, True))


async def classroom(students: list[Student], base: str, view_timeout: float, seconds: float | None = None,
                    start_window: float = THINK_S[0], views: int | None = None,
                    kill: dict | None = None) -> list[View]:
    """Every student at once: each starts at a uniform time in [0, start_window] s, then walks the
    pages until `seconds` have passed or it drew `views` views (either or both given); the views."""
    assert seconds is not None or views is not None, "a class ends after some seconds or some views"
    t0 = time.monotonic()
    t_end = t0 + seconds if seconds is not None else float("inf")

    async def start(s: Student):
        await asyncio.sleep(s.rng.uniform(0, start_window))
        await student(s, base, t_end, kill, view_timeout, views)

    tasks = [asyncio.create_task(start(s)) for s in students]
    if kill is not None:
        tasks.append(asyncio.create_task(kill_halfway(kill, students, t0 + seconds / 2)))
    results = await asyncio.gather(*tasks, return_exceptions=True)
    for r in results:
        if isinstance(r, Exception) and not isinstance(r, Disconnected):
            print(f"student task failed: {r!r}")
    return [v for s in students for v in s.views]


async def kill_halfway(kill: dict, students: list[Student], at: float) -> None:
    """SIGKILL the replica that served the most students."""
    await asyncio.sleep(max(0.0, at - time.monotonic()))
    counts = {addr: sum(bool(s.served_by) and s.served_by[-1] == addr for s in students) for addr in kill["servers"]}
    victim = max(counts, key=counts.get)
    kill["victim"], kill["victim_students"] = victim, counts[victim]
    kill["t"] = time.monotonic()
    kill["cpu"] = cpu_seconds(kill["servers"][victim].server.proc.pid)  # its CPU up to the kill
    os.killpg(kill["servers"][victim].server.proc.pid, signal.SIGKILL)
    kill["done"] = True


def burst_query(text: str, i: int | None = None) -> str:
    """The burst's link; with a student index i (the distinct burst), its own block and head:
    block i % 12, head (5i + i // 12) % 12, different for every one of the first 144 students."""
    view = {"model": MODEL, "mode": "full", "text": text}
    if i is not None:
        view |= {"block": i % 12, "head": (5 * i + i // 12) % 12}
    return urlencode(view, quote_via=quote)


async def burst(students: list[Student], base: str, text: str, view_timeout: float,
                distinct: bool = False) -> list[View]:
    """Every student opens the link within BURST_WINDOW_S; one view each. The same link for all,
    or (distinct) the same text at each student's own block and head."""
    views = []

    async def one(s: Student):
        query = burst_query(text, s.index if distinct else None)
        await asyncio.sleep(s.rng.uniform(0, BURST_WINDOW_S))
        t0 = time.perf_counter()
        try:
            session = await open_session(base, BURST_PAGE, query, time.monotonic() + 30)
            try:
                r = await session.view(BURST_PAGE, query, timeout=view_timeout)
            finally:
                await session.close()
            s_ = Student(s.index, text, "full", [], s.rng)
            views.append(View(s.index, BURST_PAGE, time.perf_counter() - t0, problem(r, s_)))
        except Disconnected as e:
            views.append(View(s.index, BURST_PAGE, None, f"disconnected: {e}"))

    await asyncio.gather(*(one(s) for s in students))
    return views


LESSON_FILE = ROOT / "lessons" / "attention-demo.json"
LESSON_KEY_ENV = "GPT2VIZ_LESSON_KEY"
LESSON_START_S = 5.0  # the class opens the lecturer's link within this many seconds


async def open_lesson(students: list[Student], base: str, lesson, token: str, view_timeout: float,
                      window: float = BURST_WINDOW_S) -> list[View]:
    """Every student opens the first stop of the signed link within `window` seconds; the views in the
    order the students opened the link."""
    page, query = lessons.href(lesson.stops[0].page, token, 0).lstrip("/").split("?")
    opened = []

    async def one(s: Student):
        await asyncio.sleep(s.rng.uniform(0, window))
        t0, session = time.perf_counter(), None
        try:
            session = await open_session(base, page, query, time.monotonic() + 30)
            r = await session.view(page, query, timeout=view_timeout)
            expected = Student(s.index, lesson.text, lesson.stops[0].mode, [], s.rng)
            opened.append((t0, View(s.index, page, time.perf_counter() - t0, problem(r, expected))))
        except Disconnected as e:
            opened.append((t0, View(s.index, page, None, f"disconnected: {e}")))
        finally:
            if session is not None:
                await session.close()

    await asyncio.gather(*(one(s) for s in students))
    return [view for _, view in sorted(opened, key=lambda x: x[0])]


async def follow_lesson(students: list[Student], base: str, lesson, token: str, view_timeout: float) -> list[View]:
    """Every student opens the lecturer's signed link within LESSON_START_S, then steps through the
    lesson stop by stop in the same tab, reading each stop THINK_S seconds: the lecturer's path."""
    views = []

    async def one(s: Student):
        await asyncio.sleep(s.rng.uniform(0, LESSON_START_S))
        session = None
        try:
            for i, stop in enumerate(lesson.stops):
                page, query = lessons.href(stop.page, token, i).lstrip("/").split("?")
                t0 = time.perf_counter()
                if session is None:
                    session = await open_session(base, page, query, time.monotonic() + 30)
                r = await session.view(page, query, timeout=view_timeout)
                expected = Student(s.index, lesson.text, stop.mode, [], s.rng)
                views.append(View(s.index, page, time.perf_counter() - t0, problem(r, expected)))
                await asyncio.sleep(s.rng.uniform(*THINK_S))
        except Disconnected as e:
            views.append(View(s.index, "lesson", None, f"disconnected: {e}"))
        finally:
            if session is not None:
                await session.close()

    await asyncio.gather(*(one(s) for s in students))
    return views


# ---------------------------------------------------------------------------- servers and proxy
def warm_up(base: str) -> None:
    """One view of the About page (loads the runtime and the weights) on the server at `base`."""

    async def view():
        session = await open_session(base, "about", f"model={MODEL}", time.monotonic() + 120)
        try:
            r = await session.view("about", f"model={MODEL}", timeout=300)
        finally:
            await session.close()
        if not r.ok:
            raise RuntimeError(f"warm-up view failed at {base}: {r.error or r.exceptions}")

    asyncio.run(view())


class Processes:
    """App processes measured as one server: memory of each sampled from /proc, their CPU summed,
    the trace runs their logs show."""

    label = "one"
    base = ""

    def __init__(self, pids: list[int], logs: list):
        self.pids, self.logs = pids, logs  # logs: one callable per process, its log so far
        self.samplers = [MemorySampler(pid) for pid in pids]
        self.baselines = [0] * len(pids)

    @property
    def baseline_kib(self) -> int:
        return sum(self.baselines)

    def sample_baseline(self) -> None:
        """After the warm-up: runtime + weights of each process; sampling starts."""
        self.baselines = [sampler.sample()[0] for sampler in self.samplers]
        for sampler in self.samplers:
            sampler.start()

    def mark(self) -> dict:
        return {"t": time.monotonic(), "cpu": [cpu_seconds(pid) for pid in self.pids],
                "log": [len(log()) for log in self.logs]}

    def since(self, mark: dict) -> dict:
        """Peak RSS (sampled; VmHWM if higher, the kernel's peak since the start), CPU seconds and the
        trace runs the processes logged since `mark`; peaks, growth and CPU summed over the processes."""
        peaks, runs, mapped = [], [], 0
        for i, (sampler, pid, log, seen) in enumerate(zip(self.samplers, self.pids, self.logs, mark["log"])):
            samples = [kib for t, kib, _ in sampler.samples if sampler.t0 + t >= mark["t"]] or [0]
            peaks.append(max(max(samples), _status_kib(pid, "VmHWM")))
            process = (i,) if len(self.pids) > 1 else ()  # a key run again in the same process: evicted
            runs += [((*process, d), float(sec), int(w), kind) for d, kind, sec, w in RUN_LINE.findall(log()[seen:])]
            mapped += len(MAPPED_LINE.findall(log()[seen:]))
        growth = sum(p - b for p, b in zip(peaks, self.baselines)) / 1024 if all(peaks) else None
        return {"peak_kib": sum(peaks), "growth_mib": growth,
                "cpu": sum(cpu_seconds(pid) - c for pid, c in zip(self.pids, mark["cpu"])), "runs": runs,
                "mapped": mapped}

    def measure(self, scenario) -> tuple[list, dict, float]:
        """Run a scenario's coroutine: (its views, what the server used meanwhile, wall seconds)."""
        mark, t0 = self.mark(), time.monotonic()
        views = asyncio.run(scenario)
        return views, self.since(mark), time.monotonic() - t0

    def stop_sampling(self) -> None:
        for sampler in self.samplers:
            sampler.stop_event.set()


class AppServer(Processes):
    """`streamlit run app.py` (or `script`; tests/streamlit_server.py), warmed up, its memory sampled
    from /proc."""

    def __init__(self, script: str = "app.py"):
        self.server = StreamlitServer(script, ROOT)
        self.addr = f"127.0.0.1:{self.server.port}"
        self.base = self.server.base
        super().__init__([self.server.proc.pid], [self.log])

    def start(self) -> None:
        """Healthy, then one view of the About page (loads the runtime and the weights): the baseline."""
        self.server.wait_healthy(timeout=180)
        warm_up(self.server.base)
        self.sample_baseline()

    def describe(self) -> str:
        return f"one server {self.addr}: runtime + {MODEL} weights after the warm-up {self.baseline_kib / 1024:.0f} MiB"

    def log(self) -> str:
        return self.server.log_tail(n=10**9)

    def stop(self) -> str:
        """Stop; the server's log."""
        log = self.log()
        self.stop_sampling()
        self.server.stop()
        return log


class ClassSetup(Processes):
    """`gpt2viz.server.class_server.ClassServer`: N app processes behind nginx on a free loopback port, with
    this process's environment (split by `replica_env`: the budget N ways, one torch thread each).
    Each process is warmed up on its own loopback port (through nginx one cannot choose the
    process); its CPU is its pid's (`streamlit run` is the process ClassServer started, the leader
    of its own process group), its runs are in the log file ClassServer writes for it."""

    def __init__(self, n: int):
        self.cs = ClassServer(n, free_port(), "127.0.0.1", log=sys.stdout)
        self.label = f"processes({n})"
        self.base = self.cs.base
        super().__init__([], [])

    def start(self) -> None:
        self.cs.start(timeout=180)
        super().__init__([proc.pid for proc in self.cs.apps],
                         [lambda i=i: self.cs.app_log(i) for i in range(self.cs.n)])
        for port in self.cs.ports:
            warm_up(f"http://127.0.0.1:{port}")
        self.sample_baseline()

    def describe(self) -> str:
        each = ", ".join(f"127.0.0.1:{port} {kib / 1024:.0f}" for port, kib in zip(self.cs.ports, self.baselines))
        return (f"{self.label}: {self.cs.n} app processes behind nginx at {self.base} (budget "
                f"{self.cs.env[BUDGET_ENV]} MiB each, {THREADS_ENV}={self.cs.env[THREADS_ENV]}); runtime + {MODEL} "
                f"weights after the warm-up {self.baseline_kib / 1024:.0f} MiB in all ({each} MiB)")

    def stop(self) -> str:
        """Stop nginx and the processes; their logs, one after the other."""
        log = "".join(self.cs.app_log(i) for i in range(len(self.cs.apps)))
        self.stop_sampling()
        self.cs.stop()
        return log


# ---------------------------------------------------------------------------- report
def times(views: list[View]) -> list[float]:
    return [v.seconds for v in views if v.error is None and v.seconds is not None]


def page_table(views: list[View]) -> str:
    def label(v: View) -> str:
        return "the same view again" if v.again else "/" + v.page

    rows = []
    for page in dict.fromkeys(label(v) for v in views):
        vs = [v for v in views if label(v) == page]
        t = times(vs)
        rows.append([page, len(vs), sum(1 for v in vs if v.error), fmt(pct(t, 50)), fmt(pct(t, 95)),
                     fmt(max(t) if t else None)])
    return table(rows, ["page", "views", "errors", "p50 s", "p95 s", "max s"])


def error_lines(views: list[View], limit: int = 12) -> str:
    bad = [v for v in views if v.error]
    return "\n".join(f"  s{v.student} /{v.page}: {v.error[:200]}" for v in bad[:limit]) + (
        f"\n  … and {len(bad) - limit} more" if len(bad) > limit else "")


def summary(views: list[View]) -> dict:
    t = times(views)
    return {"views": len(views), "errors": sum(1 for v in views if v.error), "p50": pct(t, 50), "p95": pct(t, 95),
            "max": max(t) if t else None}


def cpu_per_view(used: dict, views: list[View]) -> float | None:
    """Server CPU-seconds over the scenario per view drawn (without an error)."""
    drawn = len(times(views))
    return used["cpu"] / drawn if drawn else None


def load_line(used: dict, wall: float, budget: int, views: list[View] | None = None) -> str:
    growth = used["growth_mib"]
    per_view = f" ({fmt(cpu_per_view(used, views), 3)} s per view drawn)" if views is not None else ""
    return (f"server CPU {used['cpu']:.0f} s{per_view} over {wall:.0f} s = {used['cpu'] / wall:.2f} of "
            f"{os.cpu_count()} cores; "
            f"peak RSS {used['peak_kib'] / 1024:.0f} MiB, growth over runtime + weights {fmt(growth, 0)} MiB "
            f"(budget {budget} MiB: {'within' if growth is not None and growth <= budget else 'OVER'}); "
            f"trace runs {len(used['runs'])} ({sum(r[1] for r in used['runs']):.0f} s of compute, a floor of "
            f"{compute_floor(used):.1f} s on {os.cpu_count()} cores; "
            f"{len(used['runs']) - len({r[0] for r in used['runs']})} of a key run before, i.e. evicted"
            f"{across_processes(used['runs'])}; {used.get('mapped', 0)} mapped from the host's shared runs); "
            f"load average {os.getloadavg()[0]:.2f}\nruns by kind: {run_kinds(used['runs'])}")


def across_processes(runs: list[tuple]) -> str:
    """', N keys run in more than one process' when the runs come from several processes (keys (i, d))."""
    keys = {r[0] for r in runs if len(r[0]) == 2}
    again = len(keys) - len({d for _, d in keys})
    return f", {again} keys run in more than one process" if keys else ""


def run_kinds(runs: list[tuple]) -> str:
    """'full 40 (20 s), knockout 27 (15 s), ...': the runs of each kind and their compute, most first."""
    kinds: dict[str, list[float]] = {}
    for _, sec, _, kind in runs:
        kinds.setdefault(kind, []).append(sec)
    return ", ".join(f"{k} {len(v)} ({sum(v):.0f} s)" for k, v in sorted(kinds.items(), key=lambda kv: -sum(kv[1])))


def all_views_line(views: list[View]) -> str:
    s = summary(views)
    return (f"all views: {s['views']}, errors {s['errors']}, p50 {fmt(s['p50'])} s, p95 {fmt(s['p95'])} s, "
            f"max {fmt(s['max'])} s")


def closing(scenario: str, setup: str, views: list[View], used: dict, wall: float, budget: int, k: int) -> str:
    """A scenario's last lines (its errors, the server's load), its final line printed and returned."""
    if any(v.error for v in views):
        print(error_lines(views))
    print(load_line(used, wall, budget, views))
    line = final_line(scenario, setup, k, views, used, budget)
    print(line)
    return line


def compute_floor(used: dict) -> float:
    """The students' run time (every run the server logged in the scenario, summed) over the cores: the
    fewest seconds in which the server could have computed what the class asked for."""
    return sum(r[1] for r in used["runs"]) / (os.cpu_count() or 1)


def final_line(scenario: str, setup: str, k: int, views: list[View], used: dict, budget: int) -> str:
    s = summary(views)
    return (f"scenario={scenario} setup={setup} sessions={k} views={s['views']} errors={s['errors']} "
            f"p50_s={fmt(s['p50'])} p95_s={fmt(s['p95'])} compute_floor_s={fmt(compute_floor(used))} "
            f"load={os.getloadavg()[0]:.2f} cpu_per_view_s={fmt(cpu_per_view(used, views), 3)} "
            f"runs={len(used['runs'])} mapped={used.get('mapped', 0)} peak_growth_mib={fmt(used['growth_mib'], 0)} "
            f"budget_mib={budget}")


# ---------------------------------------------------------------------------- scenarios
CLASS_START_S = 30.0  # class: every student's first view within 30 s
PRESS_ENTER_S = 5.0  # start: "everyone press enter", every first view within 5 s
CLASS_VIEWS = 4  # views per student in class and start (the 4th asks for the view on screen again)
TEXTS_FROM = {"classroom": 0, "class": 1000, "start": 2000}  # each scenario's texts new to the server
BURST_TEXT, DISTINCT_TEXT = session_text(10_000, 100), session_text(20_000, 100)  # asked by no student before


def run_scenario(name: str, args, target: Processes, k: int, pages: list[str], seconds: float) -> str:
    """One scenario against `target` (one server or the class server's processes); its final line."""
    base, where = target.base, f"[setup {target.label}]"
    if name == "classroom":
        students = make_students(k, pages, texts_from=TEXTS_FROM[name])
        views, used, wall = target.measure(classroom(students, base, args.view_timeout, seconds=seconds))
        print(f"\n== classroom {where}: {k} students, {len(pages)} pages, a view every {THINK_S[0]:g}-{THINK_S[1]:g} s "
              f"for {seconds:.0f} s (texts {MIN_TOKENS}-{MAX_TOKENS} tokens, modes {'/'.join(MODES)})")
        print(page_table(views))
        print(all_views_line(views))
    elif name in ("class", "start"):
        window = CLASS_START_S if name == "class" else PRESS_ENTER_S
        students = make_students(k, pages, seed=4 if name == "class" else 5, texts_from=TEXTS_FROM[name])
        views, used, wall = target.measure(classroom(students, base, args.view_timeout, start_window=window,
                                                     views=args.views))
        print(f"\n== {name} {where}: {k} students (texts {MIN_TOKENS}-{MAX_TOKENS} tokens, modes {'/'.join(MODES)}), "
              f"each first view at a uniform time in [0, {window:g}] s, then one every "
              f"{THINK_S[0]:g}-{THINK_S[1]:g} s, "
              f"{args.views} views each (every {AGAIN_EVERY}th the view on screen again), in {wall:.0f} s")
        print(page_table(views))
        print(all_views_line(views))
    elif name in ("burst", "distinct"):
        distinct = name == "distinct"
        text = DISTINCT_TEXT if distinct else BURST_TEXT
        students = make_students(k, pages, seed=2)
        views, used, wall = target.measure(burst(students, base, text, args.view_timeout, distinct=distinct))
        s = summary(views)
        what = ("at their own block and head (block i % 12, head (5i + i // 12) % 12)" if distinct
                else "the same link")
        print(f"\n== {name} {where}: {k} students open /{BURST_PAGE} (mode full, {len(encode(text))} tokens, one "
              f"text no one asked before) {what} within {BURST_WINDOW_S:g} s; time from opening the link to "
              f"script-finished")
        print(f"views {s['views']}, drawn {s['views'] - s['errors']}, errors {s['errors']}, p50 {fmt(s['p50'])} s, "
              f"p95 {fmt(s['p95'])} s, max {fmt(s['max'])} s")
        passes = ", ".join(f"{run[3]} {run[1]:.2f} s" for run in used["runs"])
        print(f"trace runs for that text: {len(used['runs'])} ({passes}); askers that waited for them: "
              f"{sum(run[2] for run in used['runs'])}")
    elif name == "lesson-open":
        lesson = lessons.load(args.lesson)
        token = lessons.sign(lesson, os.environ[LESSON_KEY_ENV].encode())
        views, used, wall = target.measure(open_lesson(make_students(k, pages, seed=4), base, lesson, token,
                                                       args.view_timeout))
        later, _, _ = target.measure(open_lesson(make_students(1, pages, seed=5), base, lesson, token,
                                                 args.view_timeout, window=0))
        first, kth, warm = views[0].seconds, views[-1].seconds, later[0].seconds
        print(f"\n== lesson-open {where}: {k} students open stop 1 ({lesson.stops[0].page}) of the signed link of "
              f"{Path(args.lesson).name!r} within {BURST_WINDOW_S:g} s, a lesson this server had not shown; "
              f"from opening the link to script-finished, load average {os.getloadavg()[0]:.2f}")
        print(f"{all_views_line(views)}; runs computed: {len(used['runs'])} ({run_kinds(used['runs'])})")
        print(f"first student {fmt(first)} s, student {k} (the last to open) {fmt(kth)} s; one more student "
              f"once the class has it {fmt(warm)} s (the baseline): first {fmt(ratio_of(first, warm))}x, "
              f"student {k} {fmt(ratio_of(kth, warm))}x; errors {sum(1 for v in views + later if v.error)}")
    elif name == "lesson":
        lesson = lessons.load(args.lesson)
        token = lessons.sign(lesson, os.environ[LESSON_KEY_ENV].encode())
        students = make_students(k, pages, seed=3)
        views, used, wall = target.measure(follow_lesson(students, base, lesson, token, args.view_timeout))
        print(f"\n== lesson {where}: {k} students open the signed link of {Path(args.lesson).name!r} "
              f"({len(lesson.stops)} stops) within {LESSON_START_S:g} s and step through it, "
              f"{THINK_S[0]:g}-{THINK_S[1]:g} s a stop")
        print(page_table(views))
        print(f"{all_views_line(views)}; runs computed: {len(used['runs'])} ({run_kinds(used['runs'])})")
    else:
        raise ValueError(f"unknown scenario {name!r}")
    return closing(name, target.label, views, used, wall, args.budget_mb, k)


FINAL_LINE = re.compile(r"^scenario=(\S+) setup=(\S+) .*\bp50_s=(\S+) p95_s=(\S+)", re.MULTILINE)


def over_runs(finals: list[str]) -> list[str]:
    """--repeat: one line per scenario and setup, the median and range of its p50 and p95 over the runs
    (each run on a server of its own), and, where one server and the processes ran the same scenario,
    how many times lower the processes' p95 was than the one server's, run by run (the same run's pair).
    A single run's p95 moves by about a second from run to run on an idle machine: judge the medians."""
    found: dict[tuple[str, str], list[tuple[float | None, float | None]]] = {}
    for scenario, setup, p50, p95 in FINAL_LINE.findall("\n".join(finals)):
        found.setdefault((scenario, setup), []).append(tuple(None if x == "-" else float(x) for x in (p50, p95)))
    lines = []
    for (scenario, setup), runs in found.items():
        said = []
        for i, what in enumerate(("p50", "p95")):
            values = [r[i] for r in runs if r[i] is not None]
            if values:
                said.append(f"{what} median {fmt(statistics.median(values))} s "
                            f"({fmt(min(values))}-{fmt(max(values))} s)")
        lines.append(f"scenario={scenario} setup={setup} runs={len(runs)}: " + ", ".join(said))
    for (scenario, setup), runs in found.items():
        one = found.get((scenario, "one"))
        if not setup.startswith("processes") or one is None:
            continue
        ratios = [a[1] / b[1] for a, b in zip(one, runs) if a[1] and b[1]]
        if ratios:
            lines.append(f"scenario={scenario} one ÷ {setup}, p95 run by run: "
                         f"{', '.join(f'{r:.2f}x' for r in ratios)} (median {statistics.median(ratios):.2f}x)")
    return lines


def ratio_of(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else a / b


def run_setup(args, setup: str, scenarios: list[str], k: int, pages: list[str], seconds: float) -> list[str]:
    """Start one server or the class server, run the scenarios on it in turn, stop it; the final lines."""
    target = AppServer() if setup == "one" else ClassSetup(args.processes)
    finals = []
    try:
        target.start()
        print(f"\n{target.describe()}")
        for name in scenarios:
            finals.append(run_scenario(name, args, target, k, pages, seconds))
    finally:
        report_tracebacks(target.stop())
    return finals


def replicas(args, k: int, pages: list[str], seconds: float) -> str:
    servers = [AppServer(), AppServer()]
    proxy = None
    try:
        for app in servers:
            app.start()
        proxy = Proxy([app.addr for app in servers])
        marks = [app.mark() for app in servers]
        students = make_students(k, pages, seed=1)
        kill = {"servers": {app.addr: app for app in servers}, "done": False, "reconnect_s": args.view_timeout,
                "view_timeout": args.view_timeout}
        t0 = time.monotonic()
        views = asyncio.run(classroom(students, proxy.base, args.view_timeout, seconds=seconds, kill=kill))
        wall = time.monotonic() - t0
        before, after = [v for v in views if not v.after_kill], [v for v in views if v.after_kill]
        print(f"\n== replicas: {k} students through nginx ({proxy.base}, cookie affinity) to "
              f"{' and '.join(app.addr for app in servers)}, {seconds:.0f} s; at {seconds / 2:.0f} s the replica with "
              f"the most students is killed (SIGKILL)")
        first = [s.served_by[0] for s in students if s.served_by]
        print("students per replica at their first view: "
              + ", ".join(f"{app.addr} {first.count(app.addr)}" for app in servers))
        for name, part in (("before the kill", before), ("after the kill", after)):
            s = summary(part)
            print(f"{name}: views {s['views']}, errors {s['errors']}, p50 {fmt(s['p50'])} s, p95 {fmt(s['p95'])} s, "
                  f"max {fmt(s['max'])} s")
        print(page_table(views))
        if any(v.error for v in views):
            print(error_lines(views))
        cut = [s for s in students if s.lost]
        back = [s for s in cut if len(s.recovered) == len(s.lost)]
        rec = [t for s in cut for t in s.recovered]
        print(f"killed {kill.get('victim')} (serving {kill.get('victim_students')} students): "
              f"{len(cut)} sessions lost their connection, {len(back)} of them drew the same view again on the other "
              f"replica; views interrupted {sum(len(s.lost) for s in cut)}, views lost (not drawn again) "
              f"{sum(len(s.lost) - len(s.recovered) for s in cut)}; time to recover p50 {fmt(pct(rec, 50))} s, "
              f"max {fmt(max(rec) if rec else None)} s (connection lost → the same view's script-finished)")
        for app, mark in zip(servers, marks):
            if app.server.proc.poll() is None:
                print(f"{app.addr}: " + load_line(app.since(mark), wall, args.budget_mb))
        alive = [(app, m) for app, m in zip(servers, marks) if app.server.proc.poll() is None]
        used = [app.since(m) for app, m in alive]
        killed = [m["cpu"][0] for app, m in zip(servers, marks) if app.server.proc.poll() is not None]
        runs = [r for app, m in zip(servers, marks) for r in app.since(m)["runs"]]  # a killed one's log stays
        total = {"cpu": sum(u["cpu"] for u in used) + sum(kill.get("cpu", c) - c for c in killed),
                 "growth_mib": max((u["growth_mib"] or 0) for u in used), "runs": runs}
        print(f"both replicas (the killed one up to the kill): server CPU {total['cpu']:.0f} s, "
              f"{fmt(cpu_per_view(total, views), 3)} s per view drawn")
        line = final_line("replicas", f"replicas({len(servers)})", k, views, total, args.budget_mb)
        print(line)
        return line
    finally:
        if proxy is not None:
            proxy.stop()
        for app in servers:
            report_tracebacks(app.stop())


SERVER_LOG: list[Path] = []  # --server-log: where each server's log is appended when it stops


def report_tracebacks(log: str) -> None:
    for path in SERVER_LOG:
        with open(path, "a") as f:
            f.write(f"==== a server's log, stopped at {time.strftime('%H:%M:%S')} ====\n{log}")
    found = server_tracebacks(log)
    if found:
        print(f"server log: {sum(found.values())} tracebacks")
        for (frames, last), n in found.items():
            print(f"  {n}×  {last}\n" + "".join(f"        {f}\n" for f in frames), end="")


SCENARIOS = ["classroom", "class", "start", "burst", "distinct", "lesson-open", "lesson", "replicas"]
ALL = ["classroom", "burst", "lesson", "replicas"]  # --scenario all, as before the class scenarios


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sessions", type=int, default=None, help="students (30; 8 with --quick)")
    ap.add_argument("--quick", action="store_true", help=f"8 students, {len(QUICK_PAGES)} pages, 1 minute per scenario")
    ap.add_argument("--minutes", type=float, default=None, help="length of the classroom scenarios (3; 1 with --quick)")
    ap.add_argument("--scenario", nargs="+", choices=["all", *SCENARIOS], default=["all"],
                    help=f"one or more, run in this order (all: {' '.join(ALL)})")
    ap.add_argument("--setup", choices=["one", "processes", "both"], default="one",
                    help="one server, the class server (N processes behind nginx), or one then the other; "
                         "the replicas scenario has its own two servers")
    ap.add_argument("--processes", type=int, default=os.cpu_count(), help="N of the processes setup (the cores)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="run everything this many times, each time on servers started again, and end with the "
                         "median and range of each scenario's p50 and p95 (a single run's p95 moves by about a second)")
    ap.add_argument("--views", type=int, default=CLASS_VIEWS, help="views per student in class and start")
    ap.add_argument("--budget-mb", type=int, default=DEFAULT_BUDGET // MIB,
                    help=f"{BUDGET_ENV} of each server (MiB; the app's default); the processes setup splits it N ways")
    ap.add_argument("--view-timeout", type=float, default=120.0, help="seconds one view may take")
    ap.add_argument("--lesson", default=str(LESSON_FILE), help="the lesson file of the lesson scenarios")
    ap.add_argument("--threads", type=int, default=0,
                    help=f"{THREADS_ENV} of each server: torch's threads, fixed (0, the default: unset, as the README "
                         "starts the app: every core for a run alone, one beside others; the processes setup has 1)")
    ap.add_argument("--server-log", type=Path, default=None,
                    help="append each server's log here when it stops (its runs, with the seconds each waited in "
                         "line, and the traces evicted)")
    args = ap.parse_args()
    if args.repeat < 1:
        ap.error(f"--repeat must be at least 1, got {args.repeat}")
    SERVER_LOG.extend([args.server_log] if args.server_log else [])
    k = args.sessions or (8 if args.quick else 30)
    seconds = 60 * (args.minutes or (1.0 if args.quick else 3.0))
    pages = QUICK_PAGES if args.quick else PAGES
    scenarios = list(dict.fromkeys(x for name in args.scenario for x in (ALL if name == "all" else [name])))
    setups = ["one", "processes"] if args.setup == "both" else [args.setup]
    served = [name for name in scenarios if name != "replicas"]
    if ("replicas" in scenarios or (served and "processes" in setups)) and not os.access(NGINX, os.X_OK):
        sys.exit(f"classroom: no nginx at {NGINX} (apt-get install nginx-light), needed by the replicas scenario "
                 "and the processes setup")
    import streamlit

    os.environ[BUDGET_ENV] = str(args.budget_mb)  # inherited by the servers
    os.environ["GPT2VIZ_LOG_RUNS"] = "1"
    os.environ.setdefault(LESSON_KEY_ENV, secrets.token_hex(32))  # the lesson scenario signs its link with it
    if args.threads > 0:
        os.environ[THREADS_ENV] = str(args.threads)
    else:
        os.environ.pop(THREADS_ENV, None)
    print(f"gpt2viz classroom · streamlit {streamlit.__version__} protocol, no browser · model {MODEL} (random "
          f"weights) · {k} students · {BUDGET_ENV}={args.budget_mb} · {THREADS_ENV}="
          f"{os.environ.get(THREADS_ENV, 'unset')} · scenarios {' '.join(scenarios)} · setups {' '.join(setups)} · "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at the start")
    finals = []
    for n in range(args.repeat):
        if args.repeat > 1:
            print(f"\n######## run {n + 1} of {args.repeat}: every server started again")
        for setup in setups if served else []:
            finals += run_setup(args, setup, served, k, pages, seconds)
        if "replicas" in scenarios:
            finals.append(replicas(args, k, pages, seconds))
    print("\n" + "\n".join(finals))
    if args.repeat > 1:
        print(f"\nover {args.repeat} runs, each on servers of its own:\n" + "\n".join(over_runs(finals)))


if __name__ == "__main__":
    main()
