"""Load test: K real browser sessions at once on one app server, every page each, memory watched.

One `streamlit run app.py` (tests/streamlit_server.py, random weights, GPT2VIZ_TRACE_BUDGET_MB set
by --budget-mb) and one headless Debian chromium (playwright, never `playwright install`) with K
browser contexts: K users, each with its own cookies, storage and HTTP cache (each loads Streamlit's
JavaScript once, as a first visit does). Why one browser and not K: the machine has 2 cores and
the server needs them; K browsers would add K browser, GPU and network-service processes (and
their start-up) to the same cores and memory for nothing the test measures, while K contexts still
give K renderers and K independent Streamlit sessions. asyncio drives the K sessions concurrently
from one thread (the sync API cannot share a browser across threads).

Session i (i = 0..K-1) has its own text, of 5 to 200 tokens spread over the sessions, and its own
mode (full, training, prefill, decode in turn), and opens every page of PAGES (href: the
default page at /) by URL, starting at page i so that sessions hit different pages at once. A view
counts as rendered when tests/streamlit_server.py's predicate holds (script idle, nothing stale,
every Plotly chart drawn; its _SETTLED_JS, polled every 100 ms rather than every frame to spare the
CPU K pages share) and the sidebar's text and mode boxes show a value (see `rendered`); the time is
from goto to rendered. The browsers share the 2 cores with the server, so the times are those of
this machine under K sessions, not of K users on their own machines (the report gives both CPUs).

Errors (target 0): an exception shown on the page, a dialog (e.g. "Connection error", "Page not
found"), a timeout, a crashed page, a JavaScript error in the page, no h1, a warning that the link
was ignored, or a view that is not the session's own (text box or mode of another session).

Memory: RSS of the streamlit process and its children, from /proc (VmRSS; VmHWM of the streamlit
process at the end), every 0.5 s. Before the sessions, one warm-up view (/about, no trace) loads
the app and the model weights, so "baseline" is runtime + weights, and peak − baseline is what the
traces, the in-flight runs and the sessions took. The trace cache budget covers cached traces,
cached step-by-step generations and the estimated peak of every run in flight, so the target is
peak − baseline ≤ budget (figures being built and Streamlit's per-session state are outside it).

Bounded: a total timeout (--timeout-min, default 15) stops starting views and cuts waits short; a
watchdog ends the process if shutting down hangs.

Usage:  .venv/bin/python benchmarks/load_test.py [--quick] [--sessions K] [--model gpt2]
                                                 [--budget-mb 1024] [--timeout-min 15]
"""

import argparse
import asyncio
import contextlib
import os
import signal
import statistics
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import quote, urlencode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # streamlit_server: a gpt2viz-independent helper

from streamlit_server import _SETTLED_JS, APP_IDLE, StreamlitServer, chromium_path, launch_chromium  # noqa: E402

from gpt2viz.anatomy.params import closed_form_total  # noqa: E402
from gpt2viz.model.modes import Mode  # noqa: E402
from gpt2viz.model.tokenizer import encode  # noqa: E402
from gpt2viz.spec.config import PRESETS, get_config  # noqa: E402
from gpt2viz.spec.pages import PAGES, href  # noqa: E402

BUDGET_ENV = "GPT2VIZ_TRACE_BUDGET_MB"
MODES = ["full", "training", "prefill", "decode"]
PAGES = [row.url for row in PAGES]
QUICK_PAGES = ["overview", "tokens", "attention", "mlp", "generation", "training"]
MIN_TOKENS, MAX_TOKENS = 5, 200
POLL_MS = 100
SAMPLE_S = 0.5
MIB = 2**20

# What a rendered view shows that could be wrong, in one round trip.
INSPECT_JS = """
() => {
  const texts = sel => [...document.querySelectorAll(sel)].map(e => e.innerText);
  return {
    exceptions: texts("[data-testid='stException']"),
    dialogs: texts("[role='dialog']"),
    h1: texts("h1"),
    text: document.querySelector("[data-testid='stSidebar'] textarea")?.value ?? null,
    mode: document.querySelector("[data-testid='stSidebar'] input[aria-label='Mode']")?.value ?? null,
    warnings: texts("[data-testid='stSidebar'] [data-testid='stAlert']"),
    charts: document.querySelectorAll("[data-testid='stPlotlyChart'], .gpt2viz-chart").length,
  };
}
"""

SIDEBAR_DRAWN_JS = """
() => !!(document.querySelector("[data-testid='stSidebar'] textarea")?.value
         && document.querySelector("[data-testid='stSidebar'] input[aria-label='Mode']")?.value)
"""

WORDS = ["every", "reader", "brings", "a", "different", "sentence", "to", "the", "model", "and", "watches",
         "how", "attention", "moves", "the", "residual", "stream", "through", "each", "block", "while", "the",
         "cache", "of", "keys", "and", "values", "grows", "one", "token", "at", "a", "time", "until", "the",
         "logits", "choose", "what", "comes", "next"]


# ---------------------------------------------------------------------------- sessions and views
@dataclass
class View:
    session: int
    page: str
    seconds: float | None = None  # goto → rendered, when it rendered
    error: str | None = None
    charts: int = 0


@dataclass
class Session:
    index: int
    text: str
    tokens: int
    mode: str
    order: list[str]
    views: list[View] = field(default_factory=list)
    not_started: int = 0
    js_errors: list[str] = field(default_factory=list)


def session_text(i: int, n_tokens: int) -> str:
    """A text of at most n_tokens GPT-2 tokens, whole words, different for every session."""
    text = f"Reader {i} says:"
    for j in range(10 * n_tokens):
        candidate = f"{text} {WORDS[(7 * i + j) % len(WORDS)]}"
        if len(encode(candidate)) > n_tokens:
            break
        text = candidate
    return text


def make_sessions(k: int, pages: list[str]) -> list[Session]:
    sessions = []
    for i in range(k):
        n = MIN_TOKENS + round((MAX_TOKENS - MIN_TOKENS) * i / max(k - 1, 1))
        text = session_text(i, n)
        order = pages[i % len(pages):] + pages[: i % len(pages)]
        sessions.append(Session(i, text, len(encode(text)), MODES[i % len(MODES)], order))
    return sessions


def address(base: str, page: str, model: str, s: Session) -> str:
    query = urlencode({"model": model, "mode": s.mode, "text": s.text}, quote_via=quote)
    return f"{base}{href(page)}?{query}"


def problems(seen: dict, s: Session) -> str | None:
    """Why a rendered view is wrong, or None."""
    if seen["exceptions"]:
        return "exception: " + " | ".join(" ".join(e.split())[:300] for e in seen["exceptions"])
    if seen["dialogs"]:
        return "dialog: " + " | ".join(" ".join(d.split())[:200] for d in seen["dialogs"])
    if not seen["h1"]:
        return "no h1 (page not drawn)"
    if seen["text"] != s.text:
        return f"wrong view: text box shows {str(seen['text'])[:60]!r}, not this session's text (h1 {seen['h1'][0]!r})"
    if seen["mode"] != s.mode:
        return f"wrong view: mode box shows {seen['mode']!r}, not {s.mode!r} (h1 {seen['h1'][0]!r})"
    if seen["warnings"]:
        return "sidebar warning: " + " | ".join(" ".join(w.split())[:200] for w in seen["warnings"])
    return None


async def rendered(page, timeout_s: float, stage: list[str] | None = None) -> None:
    """tests/streamlit_server.py's wait_rendered (min_charts 0), for the async API, and then the
    sidebar's text box and mode box drawn with a value. The helper's predicate does not cover them:
    Streamlit loads each widget's code on first use (TextArea, Selectbox chunks) and shows nothing
    meanwhile, so under load it held while they were still missing (30 of 160 views in a K = 10 run)."""
    t_end = time.monotonic() + timeout_s
    left = lambda: max(1.0, (t_end - time.monotonic()) * 1000)  # noqa: E731
    stage = [] if stage is None else stage
    stage[:] = ["the script to end"]
    await page.wait_for_selector(APP_IDLE, state="attached", timeout=left())
    stage[:] = ["the page to settle (charts drawn)"]
    await page.wait_for_function(_SETTLED_JS, arg=[0, None, None], timeout=left(), polling=POLL_MS)
    stage[:] = ["the sidebar's text and mode boxes"]
    await page.wait_for_function(SIDEBAR_DRAWN_JS, timeout=left(), polling=POLL_MS)


async def run_session(browser, s: Session, base: str, model: str, deadline: float, view_timeout: float,
                      ready: asyncio.Event, start_gate: asyncio.Event) -> None:
    from playwright.async_api import Error as PlaywrightError
    from playwright.async_api import TimeoutError as PlaywrightTimeout

    context = await browser.new_context(viewport={"width": 1400, "height": 1000})
    crashed = {"now": False}

    async def new_page():
        page = await context.new_page()
        page.on("crash", lambda _: crashed.__setitem__("now", True))
        page.on("pageerror", lambda e: s.js_errors.append(str(e).splitlines()[0][:200] if str(e) else repr(e)))
        return page

    page = await new_page()
    ready.set()
    await start_gate.wait()
    try:
        for n, url in enumerate(s.order):
            now = time.monotonic()
            if now >= deadline:
                s.not_started = len(s.order) - n
                break
            limit = min(view_timeout, deadline - now)
            view = View(s.index, url)
            s.views.append(view)
            js_before = len(s.js_errors)
            t0 = time.perf_counter()
            stage = ["the page to load"]
            try:
                await page.goto(address(base, url, model, s), timeout=limit * 1000)
                await rendered(page, limit - (time.perf_counter() - t0), stage)
                view.seconds = time.perf_counter() - t0
                seen = await page.evaluate(INSPECT_JS)
                view.charts = seen["charts"]
                view.error = problems(seen, s)
            except PlaywrightTimeout:
                cut = " (total timeout reached)" if limit < view_timeout else ""
                view.error = f"timeout after {time.perf_counter() - t0:.0f} s waiting for {stage[0]}{cut}"
            except PlaywrightError as e:
                view.error = ("page crashed: " if crashed["now"] else "browser error: ") + str(e).splitlines()[0][:200]
            if view.error is None and len(s.js_errors) > js_before:
                view.error = "JavaScript error: " + s.js_errors[js_before]
            if crashed["now"]:
                crashed["now"] = False
                with contextlib.suppress(PlaywrightError):
                    await page.close()
                page = await new_page()
    finally:
        await context.close()


# ---------------------------------------------------------------------------- memory from /proc
def _ppid_map() -> dict[int, int]:
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parents[int(entry)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    return parents


def _tree(root: int, parents: dict[int, int]) -> set[int]:
    found, frontier = {root}, [root]
    while frontier:
        p = frontier.pop()
        kids = [c for c, pp in parents.items() if pp == p and c not in found]
        found.update(kids)
        frontier.extend(kids)
    return found


def _status_kib(pid: int, key: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


class MemorySampler(threading.Thread):
    """Every SAMPLE_S: RSS of the server's process tree, and of this process's other descendants
    (playwright's driver and chromium)."""

    def __init__(self, server_pid: int):
        super().__init__(daemon=True)
        self.server_pid = server_pid
        self.samples: list[tuple[float, int, int]] = []  # (t, server KiB, browser side KiB)
        self.stop_event = threading.Event()
        self.t0 = time.monotonic()
        self.browser_cpu: dict[int, float] = {}

    def sample(self) -> tuple[int, int]:
        parents = _ppid_map()
        server = _tree(self.server_pid, parents)
        browser = _tree(os.getpid(), parents) - server - {os.getpid()}
        for p in browser:  # CPU of the browser side, per process (it exits before the end)
            self.browser_cpu[p] = max(self.browser_cpu.get(p, 0.0), cpu_seconds(p, children=False))
        return sum(_status_kib(p, "VmRSS") for p in server), sum(_status_kib(p, "VmRSS") for p in browser)

    def run(self) -> None:
        while not self.stop_event.is_set():
            srv, brw = self.sample()
            self.samples.append((time.monotonic() - self.t0, srv, brw))
            self.stop_event.wait(SAMPLE_S)

    def peak(self, which: int = 1) -> tuple[float, int]:
        t, *kib = max(self.samples, key=lambda x: x[which]) if self.samples else (0.0, 0, 0)
        return t, kib[which - 1]


def cpu_seconds(pid: int, children: bool = True) -> float:
    """utime + stime of a process (and of its waited-for children); 0 if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return sum(int(x) for x in fields[11:15 if children else 13]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


# ---------------------------------------------------------------------------- report
def pct(values: list[float], q: int) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def fmt(x: float | None, digits: int = 2) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def table(rows: list[list], header: list[str]) -> str:
    rows = [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
    line = lambda r: "  ".join(c.ljust(w) if i == 0 else c.rjust(w)  # noqa: E731
                               for i, (c, w) in enumerate(zip(r, widths)))
    return "\n".join([line(header), "  ".join("-" * w for w in widths)] + [line(r) for r in rows])


def server_tracebacks(log: str) -> dict[tuple[tuple[str, ...], str], int]:
    """Distinct tracebacks of the server log: (the frames in this project's code, the last line) → count."""
    found: dict = {}
    for chunk in log.split("Traceback (most recent call last):")[1:]:
        lines = chunk.strip("\n").splitlines()
        frames, last = [], ""
        for j, line in enumerate(lines):
            if line.startswith("  File "):
                if str(ROOT) in line and "/.venv/" not in line:
                    frames.append(line.strip() + " · " + (lines[j + 1].strip() if j + 1 < len(lines) else ""))
            elif not line.startswith(" ") and line.strip():
                last = line.strip()[:300]
                break
        key = (tuple(frames), last)
        found[key] = found.get(key, 0) + 1
    return found


def trace_mib(model: str, n_tokens: int, mode: str) -> float:
    from gpt2viz.ui.cache import full_trace_bytes  # the app's own estimate (imports streamlit, torch)
    weights = SimpleNamespace(model=SimpleNamespace(config=get_config(model)))
    return full_trace_bytes(weights, n_tokens, Mode(mode)) / MIB


def report(args, sessions: list[Session], sampler: MemorySampler, mem: dict, wall: float, log: str) -> None:
    views = [v for s in sessions for v in s.views]
    ok = [v.seconds for v in views if v.error is None and v.seconds is not None]
    errors = [v for v in views if v.error]
    budget = args.budget_mb

    print(f"\nSessions (each opens {len(sessions[0].order)} pages by URL; times: goto → rendered, in s)")
    rows = []
    for s in sessions:
        t = [v.seconds for v in s.views if v.error is None and v.seconds is not None]
        full = trace_mib(args.model, s.tokens, s.mode)
        rows.append([f"s{s.index}", s.mode, s.tokens, f"{full:.0f}", "yes" if 4 * full <= budget else "per page",
                     len(s.views), sum(1 for v in s.views if v.error), s.not_started,
                     fmt(statistics.median(t) if t else None), fmt(max(t) if t else None), fmt(sum(t), 1)])
    print(table(rows, ["session", "mode", "tokens", "full trace MiB", "trace shared", "views", "errors",
                       "not run", "median", "max", "sum"]))
    print("(full trace MiB: every tensor of the run; recorded whole and shared by the pages while 4× it fits the "
          "budget, else each page records only what it shows)")

    print("\nPages (all sessions)")
    rows = []
    for url in dict.fromkeys(v.page for v in views):
        vs = [v for v in views if v.page == url]
        t = [v.seconds for v in vs if v.error is None and v.seconds is not None]
        rows.append([url, len(vs), sum(1 for v in vs if v.error), fmt(statistics.median(t) if t else None),
                     fmt(pct(t, 95)), fmt(max(t) if t else None), max((v.charts for v in vs), default=0)])
    print(table(rows, ["page", "views", "errors", "median s", "p95 s", "max s", "charts"]))

    print(f"\nErrors: {len(errors)}")
    for v in errors:
        print(f"  s{v.session} /{v.page}: {v.error}")
    js = [(s.index, e) for s in sessions for e in s.js_errors]
    if js:
        print(f"JavaScript errors in pages: {len(js)}, e.g. " + "; ".join(f"s{i}: {e}" for i, e in js[:3]))
    tracebacks = server_tracebacks(log)
    print(f"Server log: {sum(tracebacks.values())} tracebacks, {len(log.splitlines())} lines")
    for (frames, last), n in tracebacks.items():
        print(f"  {n}×  {last}\n" + "".join(f"        {f}\n" for f in frames), end="")

    weights_mib = closed_form_total(get_config(args.model)) * 4 / MIB
    t_peak, peak = sampler.peak(1)
    _, browser_peak = sampler.peak(2)
    print(f"\nMemory, MiB (server: streamlit process + children, RSS from /proc every {SAMPLE_S} s, "
          f"{len(sampler.samples)} samples)")
    rows = [
        ["server after /_stcore/health (app not run yet)", f"{mem['health'] / 1024:.0f}"],
        [f"server after warm-up (runtime + {args.model} weights)",
         f"{mem['baseline'] / 1024:.0f}" if mem["baseline"] else "-"],
        [f"server peak RSS, sampled (at {t_peak:.0f} s)", f"{peak / 1024:.0f}"],
        ["server VmHWM at the end (kernel's peak of the streamlit process)", f"{mem['hwm'] / 1024:.0f}"],
        ["server RSS at the end", f"{mem['end'] / 1024:.0f}"],
        [f"{args.model} weights, fp32 ({closed_form_total(get_config(args.model)):,} parameters)",
         f"{weights_mib:.0f}"],
        [f"trace cache budget ({BUDGET_ENV})", f"{budget}"],
        ["weights + budget", f"{weights_mib + budget:.0f}"],
    ]
    if mem["baseline"]:
        grown = (max(peak, mem['hwm']) - mem['baseline']) / 1024  # the kernel's peak sees spikes between samples
        rows.append(["peak − baseline (traces, in-flight runs, sessions; the higher peak)", f"{grown:.0f}"])
        rows.append([f"within the budget (peak − baseline ≤ {budget})", "yes" if grown <= budget else "NO"])
    rows.append(["browser side peak (chromium + playwright driver)", f"{browser_peak / 1024:.0f}"])
    print(table(rows, ["", "MiB"]))
    if sampler.samples:
        step = max(1, len(sampler.samples) // 20)
        print(f"server RSS timeline, MiB (every {step * SAMPLE_S:g} s from health): "
              + " ".join(f"{srv / 1024:.0f}" for _, srv, _ in sampler.samples[::step]))
    browser_cpu = sum(sampler.browser_cpu.values())
    print(f"\nCPU seconds over {wall:.0f} s of load × {os.cpu_count()} cores = {wall * os.cpu_count():.0f} s: "
          f"server {mem['server_cpu']:.0f} s, browser side {browser_cpu:.0f} s (sampled; both include the warm-up); "
          f"load average at start {mem['load_start']}, at end {mem['load_end']}")
    print(f"Throughput: {len(ok)} rendered views in {wall:.0f} s ({60 * len(ok) / wall:.1f} per minute)")
    med = statistics.median(ok) if ok else None
    print(f"load_test: {len(sessions)} sessions, {len(views)} views, {len(errors)} errors, median {fmt(med)} s, "
          f"p95 {fmt(pct(ok, 95))} s, peak RSS {peak / 1024:.0f} MiB")


# ---------------------------------------------------------------------------- main
async def drive(args, sessions: list[Session], base: str, deadline: float, warmed) -> float:
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await launch_chromium(p)  # returns the launch coroutine under the async API
        try:
            if not args.no_warmup:  # load the app and the weights once, outside the measurement
                context = await browser.new_context()
                page = await context.new_page()
                await page.goto(f"{base}/about?model={args.model}", timeout=300_000)
                await rendered(page, 300)
                await context.close()
                warmed()
            gate, ready = asyncio.Event(), [asyncio.Event() for _ in sessions]
            tasks = [asyncio.create_task(run_session(browser, s, base, args.model, deadline, args.view_timeout,
                                                     r, gate))
                     for s, r in zip(sessions, ready)]
            await asyncio.wait_for(asyncio.gather(*(r.wait() for r in ready)), timeout=120)  # every tab open
            t0 = time.perf_counter()
            gate.set()
            done, pending = await asyncio.wait(tasks, timeout=max(1.0, deadline - time.monotonic()) + 60)
            for t in pending:
                t.cancel()
            for t in done:
                if t.exception() is not None:
                    print(f"session task failed: {t.exception()!r}")
            return time.perf_counter() - t0
        finally:
            await browser.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sessions", type=int, default=None, help="concurrent browser sessions (10; 3 with --quick)")
    ap.add_argument("--model", default="gpt2", choices=list(PRESETS), help="random weights of this preset")
    ap.add_argument("--budget-mb", type=int, default=1024, help=f"{BUDGET_ENV} of the server (MiB)")
    ap.add_argument("--timeout-min", type=float, default=15.0, help="total timeout: stop starting and waiting")
    ap.add_argument("--view-timeout", type=float, default=180.0, help="seconds one view may take")
    ap.add_argument("--quick", action="store_true", help=f"3 sessions and {len(QUICK_PAGES)} pages")
    ap.add_argument("--no-warmup", action="store_true", help="no warm-up view: weight loading falls in the load")
    args = ap.parse_args()
    k = args.sessions or (3 if args.quick else 10)
    pages = QUICK_PAGES if args.quick else PAGES
    if chromium_path() is None:
        sys.exit("no chromium (/usr/bin/chromium or `chromium` on PATH)")
    import streamlit

    sessions = make_sessions(k, pages)
    print(f"gpt2viz load test · streamlit {streamlit.__version__} · {chromium_path()} · model {args.model} "
          f"(random weights) · {k} sessions × {len(pages)} pages · {BUDGET_ENV}={args.budget_mb} · "
          f"total timeout {args.timeout_min:g} min, view timeout {args.view_timeout:g} s")
    print(f"one chromium, {k} browser contexts (one per session), driven concurrently by asyncio; "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")

    os.environ[BUDGET_ENV] = str(args.budget_mb)  # inherited by the server
    server = StreamlitServer("app.py", ROOT)
    total_s = args.timeout_min * 60
    watchdog = threading.Timer(total_s + 240, _hard_stop, args=(server,))
    watchdog.daemon = True
    watchdog.start()
    sampler = MemorySampler(server.proc.pid)
    mem = {"baseline": 0, "load_start": f"{os.getloadavg()[0]:.2f}"}
    log = ""
    try:
        server.wait_healthy(timeout=120)
        mem["health"] = sampler.sample()[0]
        sampler.start()
        deadline = time.monotonic() + total_s

        def warmed() -> None:  # after the warm-up view: runtime + weights loaded
            mem["baseline"] = sampler.sample()[0]

        wall = asyncio.run(drive(args, sessions, server.base, deadline, warmed))
        mem["hwm"] = _status_kib(server.proc.pid, "VmHWM")
        mem["end"] = sampler.sample()[0]
        mem["server_cpu"] = cpu_seconds(server.proc.pid)
        mem["load_end"] = f"{os.getloadavg()[0]:.2f}"
        log = Path(server.log.name).read_text(errors="replace")
    finally:
        sampler.stop_event.set()
        server.stop()
        watchdog.cancel()
    report(args, sessions, sampler, mem, wall, log)


def _hard_stop(server: StreamlitServer) -> None:
    print("load_test: watchdog: shutdown hung past the total timeout; killing the server and exiting", flush=True)
    try:
        os.killpg(server.proc.pid, signal.SIGKILL)
    finally:
        os._exit(3)


if __name__ == "__main__":
    main()
