"""A class on the app, spoken in Streamlit's own protocol: what one server holds, and two behind nginx.

No browser: each student is a `st_protocol.Session` (the page load, the websocket and the rerun
messages a browser sends), so the 2 cores serve the app alone and the times are the server's:
from the rerun request to the script-finished message. One process drives every session (asyncio).

Scenarios (all by default, in this order):

- classroom: K students (30) on one server, each with its own text (5 to 200 tokens, spread over
  the class) and mode (full, training, prefill, decode in turn), walking the pages from a different
  start (block and head move along), one view every 3 to 8 s (uniform, seeded), for --minutes;
  every 4th view asks for the view on screen again (the Rerun menu item): it should cost no run.
- burst: the teacher says "open this link now": K students open the same link (the attention page,
  a text no one has asked for) within one second. The server logs each trace run (GPT2VIZ_LOG_RUNS=1):
  the forward pass for that text must run once while the others wait for it.
- lesson: the lecturer's signed link (lessons/attention-demo.json, signed with GPT2VIZ_LESSON_KEY, a
  key made for the run unless set): K students open stop 1 within 5 s, then each steps through the
  stops in the same tab, 3 to 8 s a stop. The server computes the lesson's runs once, when the first
  student opens it: "runs computed" counts every run the server logged in the scenario.
- replicas: two app servers behind a real nginx (Debian's /usr/sbin/nginx, deploy/nginx.conf.template
  filled in with loopback ports; affinity by cookie), the classroom scenario through the proxy; half
  way through, the replica serving the most students is killed (SIGKILL). A student whose websocket
  closes does what the browser does: pings /_stcore/health and opens a new websocket (nginx sends it
  to the living replica), trying again for up to --view-timeout as a browser keeps trying, then asks
  for the same page with the same query string; the recovery time runs from the lost connection to
  that view's script-finished message, and the view must show the student's own text and mode again.

An error is a view that did not finish (timeout, page not found, a closed socket on one server), an
exception the page sent, or a view that is not the student's (its text box or mode box shows
another value). Memory: RSS of each server (VmRSS every 0.5 s, VmHWM at the end) against
runtime + weights after a warm-up view; peak growth is compared with GPT2VIZ_TRACE_BUDGET_MB.

Usage:  .venv/bin/python benchmarks/classroom.py [--sessions K] [--quick] [--minutes M]
            [--scenario all|classroom|burst|lesson|replicas] [--budget-mb 2048] [--threads 1]
The last line: sessions=K views=N errors=N p50_s=X p95_s=X peak_growth_mib=X budget_mib=X (the
one-server classroom; the burst or the replicas' classroom when only that scenario runs).
"""

import argparse
import asyncio
import os
import random
import re
import secrets
import signal
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

from gpt2viz import lesson_file  # noqa: E402
from gpt2viz.tokenizer import encode  # noqa: E402
from gpt2viz.trace_cache import DEFAULT_BUDGET  # noqa: E402
from gpt2viz.ui.pages import PAGES as PAGE_ROWS  # noqa: E402
from gpt2viz.ui.pages import href  # noqa: E402

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


def make_students(k: int, pages: list[str], seed: int = 0) -> list[Student]:
    students = []
    for i in range(k):
        n = MIN_TOKENS + round((MAX_TOKENS - MIN_TOKENS) * i / max(k - 1, 1))
        order = pages[i % len(pages):] + pages[: i % len(pages)]
        students.append(Student(i, session_text(i, n), MODES[i % len(MODES)], order, random.Random(seed * 1000 + i)))
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


async def student(s: Student, base: str, t_end: float, kill: dict | None, view_timeout: float) -> None:
    """Walk the pages, one view every THINK_S seconds, until t_end. A lost connection is recovered
    (kill given: replicas) or counted as an error (one server)."""
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


async def classroom(students: list[Student], base: str, seconds: float, view_timeout: float,
                    kill: dict | None = None) -> float:
    """Every student at once (each starts within its first think time); the wall time."""
    t0 = time.monotonic()
    t_end = t0 + seconds

    async def start(s: Student):
        await asyncio.sleep(s.rng.uniform(0, THINK_S[0]))
        await student(s, base, t_end, kill, view_timeout)

    tasks = [asyncio.create_task(start(s)) for s in students]
    if kill is not None:
        tasks.append(asyncio.create_task(kill_halfway(kill, students, t0 + seconds / 2)))
    results = await asyncio.gather(*tasks, return_exceptions=True)
    for r in results:
        if isinstance(r, Exception) and not isinstance(r, Disconnected):
            print(f"student task failed: {r!r}")
    return time.monotonic() - t0


async def kill_halfway(kill: dict, students: list[Student], at: float) -> None:
    """SIGKILL the replica that served the most students."""
    await asyncio.sleep(max(0.0, at - time.monotonic()))
    counts = {addr: sum(bool(s.served_by) and s.served_by[-1] == addr for s in students) for addr in kill["servers"]}
    victim = max(counts, key=counts.get)
    kill["victim"], kill["victim_students"] = victim, counts[victim]
    kill["t"] = time.monotonic()
    os.killpg(kill["servers"][victim].server.proc.pid, signal.SIGKILL)
    kill["done"] = True


async def burst(students: list[Student], base: str, text: str, view_timeout: float) -> list[View]:
    """Every student opens the same link within BURST_WINDOW_S; one view each."""
    query = urlencode({"model": MODEL, "mode": "full", "text": text}, quote_via=quote)
    views = []

    async def one(s: Student):
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


async def follow_lesson(students: list[Student], base: str, lesson, token: str, view_timeout: float) -> list[View]:
    """Every student opens the lecturer's signed link within LESSON_START_S, then steps through the
    lesson stop by stop in the same tab, reading each stop THINK_S seconds: the lecturer's path."""
    views = []

    async def one(s: Student):
        await asyncio.sleep(s.rng.uniform(0, LESSON_START_S))
        session = None
        try:
            for i, stop in enumerate(lesson.stops):
                page, query = lesson_file.href(stop.page, token, i).lstrip("/").split("?")
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
class AppServer:
    """`streamlit run app.py` (or `script`; tests/streamlit_server.py), warmed up, its memory sampled
    from /proc."""

    def __init__(self, script: str = "app.py"):
        self.server = StreamlitServer(script, ROOT)
        self.addr = f"127.0.0.1:{self.server.port}"
        self.sampler = MemorySampler(self.server.proc.pid)
        self.baseline_kib = 0

    def start(self) -> None:
        """Healthy, then one view of the About page (loads the runtime and the weights): the baseline."""
        self.server.wait_healthy(timeout=180)

        async def warm_up():
            session = await open_session(self.server.base, "about", f"model={MODEL}", time.monotonic() + 120)
            try:
                r = await session.view("about", f"model={MODEL}", timeout=300)
            finally:
                await session.close()
            if not r.ok:
                raise RuntimeError(f"warm-up view failed: {r.error or r.exceptions}")

        asyncio.run(warm_up())
        self.baseline_kib = self.sampler.sample()[0]
        self.sampler.start()

    def mark(self) -> dict:
        return {"t": time.monotonic() - self.sampler.t0, "cpu": cpu_seconds(self.server.proc.pid),
                "log": len(self.log())}

    def since(self, mark: dict) -> dict:
        """Peak RSS (sampled; VmHWM if higher, the kernel's peak since the start), CPU seconds and the
        trace runs the server logged since `mark`."""
        samples = [kib for t, kib, _ in self.sampler.samples if t >= mark["t"]] or [0]
        peak = max(max(samples), _status_kib(self.server.proc.pid, "VmHWM"))
        runs = [(d, float(sec), int(w), kind) for d, kind, sec, w in RUN_LINE.findall(self.log()[mark["log"]:])]
        return {"peak_kib": peak, "growth_mib": (peak - self.baseline_kib) / 1024 if peak else None,
                "cpu": cpu_seconds(self.server.proc.pid) - mark["cpu"], "runs": runs}

    def measure(self, scenario) -> tuple[list, dict, float]:
        """Run a scenario's coroutine: (its views, what the server used meanwhile, wall seconds)."""
        mark, t0 = self.mark(), time.monotonic()
        views = asyncio.run(scenario)
        return views, self.since(mark), time.monotonic() - t0

    def log(self) -> str:
        return self.server.log_tail(n=10**9)

    def stop(self) -> str:
        """Stop; the server's log."""
        log = self.log()
        self.sampler.stop_event.set()
        self.server.stop()
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


def load_line(used: dict, wall: float, budget: int) -> str:
    growth = used["growth_mib"]
    return (f"server CPU {used['cpu']:.0f} s over {wall:.0f} s = {used['cpu'] / wall:.2f} of {os.cpu_count()} cores; "
            f"peak RSS {used['peak_kib'] / 1024:.0f} MiB, growth over runtime + weights {fmt(growth, 0)} MiB "
            f"(budget {budget} MiB: {'within' if growth is not None and growth <= budget else 'OVER'}); "
            f"trace runs {len(used['runs'])} ({sum(r[1] for r in used['runs']):.0f} s of compute; "
            f"{len(used['runs']) - len({r[0] for r in used['runs']})} of a key run before, i.e. evicted); "
            f"load average {os.getloadavg()[0]:.2f}\nruns by kind: {run_kinds(used['runs'])}")


def run_kinds(runs: list[tuple]) -> str:
    """'full 40 (20 s), knockout 27 (15 s), ...': the runs of each kind and their compute, most first."""
    kinds: dict[str, list[float]] = {}
    for _, sec, _, kind in runs:
        kinds.setdefault(kind, []).append(sec)
    return ", ".join(f"{k} {len(v)} ({sum(v):.0f} s)" for k, v in sorted(kinds.items(), key=lambda kv: -sum(kv[1])))


def closing(views: list[View], used: dict, wall: float, budget: int, k: int) -> str:
    """A scenario's last lines (its errors, the server's load) and its final line."""
    if any(v.error for v in views):
        print(error_lines(views))
    print(load_line(used, wall, budget))
    return final_line(k, views, used["growth_mib"], budget)


def final_line(k: int, views: list[View], growth: float | None, budget: int) -> str:
    s = summary(views)
    return (f"sessions={k} views={s['views']} errors={s['errors']} p50_s={fmt(s['p50'])} p95_s={fmt(s['p95'])} "
            f"peak_growth_mib={fmt(growth, 0)} budget_mib={budget}")


# ---------------------------------------------------------------------------- scenarios
def one_server(args, k: int, pages: list[str], seconds: float) -> str | None:
    app = AppServer()
    final = None
    try:
        app.start()
        print(f"\none server {app.addr}: runtime + {MODEL} weights after the warm-up {app.baseline_kib / 1024:.0f} MiB")
        if args.scenario in ("all", "classroom"):
            students = make_students(k, pages)
            mark = app.mark()
            wall = asyncio.run(classroom(students, app.server.base, seconds, args.view_timeout))
            used = app.since(mark)
            views = [v for s in students for v in s.views]
            print(f"\n== classroom: {k} students, {len(pages)} pages, a view every {THINK_S[0]:g}-{THINK_S[1]:g} s "
                  f"for {seconds:.0f} s (texts {MIN_TOKENS}-{MAX_TOKENS} tokens, modes {'/'.join(MODES)})")
            print(page_table(views))
            s = summary(views)
            print(f"all views: {s['views']}, errors {s['errors']}, p50 {fmt(s['p50'])} s, p95 {fmt(s['p95'])} s, "
                  f"max {fmt(s['max'])} s")
            final = closing(views, used, wall, args.budget_mb, k)
        if args.scenario in ("all", "burst"):
            students = make_students(k, pages, seed=2)
            text = session_text(10_000, 100)  # asked by no student before
            views, used, wall = app.measure(burst(students, app.server.base, text, args.view_timeout))
            s = summary(views)
            waited = sum(r[2] for r in used["runs"])
            print(f"\n== burst: {k} students open /{BURST_PAGE} (mode full, {len(encode(text))} tokens, one text) "
                  f"within {BURST_WINDOW_S:g} s; time from opening the link to script-finished")
            print(f"views {s['views']}, drawn {s['views'] - s['errors']}, errors {s['errors']}, p50 {fmt(s['p50'])} s, "
                  f"p95 {fmt(s['p95'])} s, max {fmt(s['max'])} s")
            seconds = ", ".join(f"{run[1]:.2f} s" for run in used["runs"])
            print(f"forward passes (trace runs) for that link: {len(used['runs'])} ({seconds}); "
                  f"askers that waited for it: {waited}")
            final = final or closing(views, used, wall, args.budget_mb, k)
        if args.scenario in ("all", "lesson"):
            lesson = lesson_file.load(LESSON_FILE)
            token = lesson_file.sign(lesson, os.environ[LESSON_KEY_ENV].encode())
            students = make_students(k, pages, seed=3)
            views, used, wall = app.measure(follow_lesson(students, app.server.base, lesson, token,
                                                          args.view_timeout))
            s = summary(views)
            print(f"\n== lesson: {k} students open the signed link of {LESSON_FILE.name!r} ({len(lesson.stops)} stops) "
                  f"within {LESSON_START_S:g} s and step through it, {THINK_S[0]:g}-{THINK_S[1]:g} s a stop")
            print(page_table(views))
            print(f"all views: {s['views']}, errors {s['errors']}, p50 {fmt(s['p50'])} s, p95 {fmt(s['p95'])} s, "
                  f"max {fmt(s['max'])} s; runs computed: {len(used['runs'])} ({run_kinds(used['runs'])})")
            final = final or closing(views, used, wall, args.budget_mb, k)
    finally:
        log = app.stop()
        report_tracebacks(log)
    return final


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
        wall = asyncio.run(classroom(students, proxy.base, seconds, args.view_timeout, kill))
        views = [v for s in students for v in s.views]
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
        growth = max((app.since(m)["growth_mib"] or 0) for app, m in alive)
        return final_line(k, views, growth, args.budget_mb)
    finally:
        if proxy is not None:
            proxy.stop()
        for app in servers:
            report_tracebacks(app.stop())


def report_tracebacks(log: str) -> None:
    found = server_tracebacks(log)
    if found:
        print(f"server log: {sum(found.values())} tracebacks")
        for (frames, last), n in found.items():
            print(f"  {n}×  {last}\n" + "".join(f"        {f}\n" for f in frames), end="")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sessions", type=int, default=None, help="students (30; 8 with --quick)")
    ap.add_argument("--quick", action="store_true", help=f"8 students, {len(QUICK_PAGES)} pages, 1 minute per scenario")
    ap.add_argument("--minutes", type=float, default=None, help="length of the classroom scenarios (3; 1 with --quick)")
    ap.add_argument("--scenario", choices=["all", "classroom", "burst", "lesson", "replicas"], default="all")
    ap.add_argument("--budget-mb", type=int, default=DEFAULT_BUDGET // MIB,
                    help=f"{BUDGET_ENV} of each server (MiB; the app's default)")
    ap.add_argument("--view-timeout", type=float, default=120.0, help="seconds one view may take")
    ap.add_argument("--threads", type=int, default=1,
                    help=f"{THREADS_ENV} of each server: torch's threads (1, as docs/deploy.md advises for a class; "
                         "0 for torch's default, one per core)")
    args = ap.parse_args()
    k = args.sessions or (8 if args.quick else 30)
    seconds = 60 * (args.minutes or (1.0 if args.quick else 3.0))
    pages = QUICK_PAGES if args.quick else PAGES
    if args.scenario in ("all", "replicas") and not os.access(NGINX, os.X_OK):
        sys.exit(f"classroom: no nginx at {NGINX} (apt-get install nginx-light), needed by the replicas scenario")
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
          f"{os.environ.get(THREADS_ENV, 'unset')} · {os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.2f} at the start")
    final = None
    if args.scenario != "replicas":
        final = one_server(args, k, pages, seconds)
    if args.scenario in ("all", "replicas"):
        line = replicas(args, k, pages, seconds)
        final = final or line
    print(final)


if __name__ == "__main__":
    main()
