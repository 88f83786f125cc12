"""Uploads on a class server: K students upload the same checkpoint at once, and what an
idle session costs after it visited every page. Spoken in Streamlit's protocol (st_protocol.Session,
whose `upload` does what the browser's file uploader does), against `streamlit run app.py` with
GPT2VIZ_ALLOW_UPLOAD=1, GPT2VIZ_THREADS=1 and the trace budget given.

- uploads: K sessions (6) open the app with `?weights=upload`; then, all at once, each PUTs the
  file and asks for the view with the file in its uploader (as the browser does after an upload),
  and once more (the next rerun). Per student: the HTTP status, the seconds to the loaded view, and
  what the sidebar says (the model in use, or the one-line refusal); exceptions are counted. RSS of
  the server: the peak (sampled every 0.5 s, or the kernel's VmHWM if higher) and what it holds 5 s
  later, the students still connected, against the RSS after the warm-up view (runtime + gpt2).
  With --proxy, through deploy/nginx.conf.template, which lets 2 uploads arrive at once: a student
  whose upload it refuses (503) sends it again 3 s later, as one would click again. With
  --script serve.py, straight to the server that lets 2 uploads in at once (the others wait).
- idle: on a fresh server, one session visits every page (the shared traces are computed), then N
  sessions (30) each visit every page and stay connected; RSS growth per idle session is the RSS
  after them, less the RSS after the first, over N.

Make the checkpoint first (random gpt2 weights in the Hugging Face layout, 475 MiB; never commit it):
    .venv/bin/python benchmarks/upload_class.py --make /tmp/gpt2-random.safetensors
    .venv/bin/python benchmarks/upload_class.py --file /tmp/gpt2-random.safetensors [--students 6]
        [--budget-mb 2048] [--idle 30] [--scenario all|uploads|idle] [--proxy] [--script serve.py]
"""

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from classroom import PAGES, AppServer, open_session  # noqa: E402
from load_test import _status_kib, table  # noqa: E402
from nginx_proxy import Proxy  # noqa: E402

from gpt2viz.model.weights import random_model, save_safetensors  # noqa: E402
from gpt2viz.spec.config import get_config  # noqa: E402

UPLOAD_QUERY = "weights=upload"
IDLE_QUERY = "model=gpt2"
VIEW_TIMEOUT = 600.0
RETRY_AFTER_S, RETRY_FOR_S = 3.0, 600.0  # behind the proxy, a refused upload (503) is sent again
MIB = 2**20


def rss_mib(app: AppServer) -> float:
    return _status_kib(app.server.proc.pid, "VmRSS") / 1024


def model_said(view) -> str | None:
    """The sidebar's one-line refusal, or the caption naming the uploaded model in use."""
    return (view.errors or [c for c in view.captions if "from an upload" in c] or [None])[0]


async def prepare(base: str) -> tuple[object, str | None]:
    """A student's tab on `?weights=upload`: the session and its uploader's widget id."""
    session = await open_session(base, "", UPLOAD_QUERY, time.monotonic() + 120)
    first = await session.view("", UPLOAD_QUERY, timeout=VIEW_TIMEOUT)
    return session, first.uploaders.get("model.safetensors")


async def upload(session, uploader: str, data: bytes, t0: float) -> dict:
    status, tries = await session.upload(uploader, "model.safetensors", data), 1
    while status == 503 and time.monotonic() - t0 < RETRY_FOR_S:  # the proxy's limit: the student tries again
        await asyncio.sleep(RETRY_AFTER_S)
        status, tries = await session.upload(uploader, "model.safetensors", data), tries + 1
    put_s = time.monotonic() - t0
    loaded = await session.view("", UPLOAD_QUERY, timeout=VIEW_TIMEOUT)
    loaded_s = time.monotonic() - t0
    again = await session.view("", UPLOAD_QUERY, timeout=VIEW_TIMEOUT)
    said = model_said(loaded) or "nothing about the upload"
    return {"status": status, "tries": tries, "put_s": put_s, "loaded_s": loaded_s, "said": said,
            "exceptions": loaded.exceptions + again.exceptions, "error": loaded.error or again.error,
            "again_same": model_said(again) == said}


async def uploads(app: AppServer, base: str, data: bytes, k: int) -> tuple[list[dict], float]:
    tabs = await asyncio.gather(*(prepare(base) for _ in range(k)))
    if any(uploader is None for _, uploader in tabs):
        raise RuntimeError("the sidebar offers no upload")
    t0 = time.monotonic()  # all at once
    results = await asyncio.gather(*(upload(session, uploader, data, t0) for session, uploader in tabs))
    await asyncio.sleep(5)
    held = rss_mib(app)
    for session, _ in tabs:
        await session.close()
    return results, held


def run_uploads(args, data: bytes) -> None:
    app = AppServer(args.script)
    app.start()
    proxy = Proxy([app.addr]) if args.proxy else None
    try:
        base_mib = app.baseline_kib / 1024
        mark = app.mark()
        base = proxy.base if proxy else app.server.base
        results, held = asyncio.run(uploads(app, base, data, args.students))
        peak = app.since(mark)["peak_kib"] / 1024
        rows = [[i + 1, r["status"], r["tries"], f"{r['put_s']:.1f}", f"{r['loaded_s']:.1f}", len(r["exceptions"]),
                 r["error"] or "", "yes" if r["again_same"] else "no", r["said"][:110]] for i, r in enumerate(results)]
        print(table(rows, ["student", "PUT", "tries", "stored s", "view s", "exceptions", "error", "said again",
                           "the sidebar says"]))
        print(f"file {len(data) / MIB:,.0f} MiB; RSS after the warm-up (runtime + gpt2) {base_mib:,.0f} MiB; "
              f"peak {peak:,.0f} MiB; held 5 s after, students connected: {held:,.0f} MiB")
        print(f"uploads students={args.students} script={args.script} proxy={'nginx' if proxy else 'none'} "
              f"peak_mib={peak:.0f} "
              f"held_mib={held:.0f} base_mib={base_mib:.0f} "
              f"exceptions={sum(len(r['exceptions']) for r in results)}")
    finally:
        if proxy:
            proxy.stop()
        log = app.stop()
        if "Traceback" in log:
            print(log[log.index("Traceback"):][:3000])


async def visit_all(base: str, views: list) -> object:
    session = await open_session(base, PAGES[0], IDLE_QUERY, time.monotonic() + 120)
    for page in PAGES:
        r = await session.view(page, IDLE_QUERY, timeout=VIEW_TIMEOUT)
        views.append(r)
    return session


async def idle(app: AppServer, n: int, at_once: int = 3) -> tuple[float, float, list]:
    views: list = []
    first = await visit_all(app.server.base, views)
    await asyncio.sleep(3)
    before = rss_mib(app)
    sessions, gate = [first], asyncio.Semaphore(at_once)

    async def one():
        async with gate:
            sessions.append(await visit_all(app.server.base, views))
    await asyncio.gather(*(one() for _ in range(n)))
    await asyncio.sleep(10)
    after = rss_mib(app)
    for s in sessions:
        await s.close()
    return before, after, views


def run_idle(args) -> None:
    app = AppServer()
    app.start()
    try:
        before, after, views = asyncio.run(idle(app, args.idle))
        bad = [v for v in views if not v.ok]
        print(f"idle: {args.idle} sessions, {len(views)} views ({len(PAGES)} pages each), {len(bad)} not ok; RSS "
              f"{before:,.0f} MiB after the first session's visit, {after:,.0f} MiB with {args.idle} more connected: "
              f"{(after - before) / args.idle:.1f} MiB per idle session")
        print(f"idle sessions={args.idle} per_session_mib={(after - before) / args.idle:.1f} errors={len(bad)}")
    finally:
        app.stop()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--make", help="write a random gpt2 model.safetensors here and exit")
    p.add_argument("--file", help="the checkpoint the students upload")
    p.add_argument("--students", type=int, default=6)
    p.add_argument("--idle", type=int, default=30)
    p.add_argument("--budget-mb", type=int, default=2048)
    p.add_argument("--scenario", choices=["all", "uploads", "idle"], default="all")
    p.add_argument("--proxy", action="store_true", help="the students upload through deploy/nginx.conf.template")
    p.add_argument("--script", default="app.py", help="what the server runs: app.py, or serve.py (its upload gate)")
    args = p.parse_args()
    if args.make:
        save_safetensors(random_model(get_config("gpt2"), seed=25), args.make)
        print(f"{args.make}: {Path(args.make).stat().st_size / MIB:,.0f} MiB")
        return
    os.environ.update(GPT2VIZ_ALLOW_UPLOAD="1", GPT2VIZ_TRACE_BUDGET_MB=str(args.budget_mb), GPT2VIZ_THREADS="1")
    if args.scenario in ("all", "uploads"):
        if not args.file:
            p.error("--file: the checkpoint to upload (make one with --make)")
        run_uploads(args, Path(args.file).read_bytes())
    if args.scenario in ("all", "idle"):
        run_idle(args)


if __name__ == "__main__":
    main()
