"""What a new session's first view costs the server, page by page, against a later view.

In a class every student's first view is a new Streamlit session's, and one Python process serves
them all: its CPU per first view is what 30 students queue on. This measures server CPU (utime +
stime of the server process, from /proc) around views spoken in Streamlit's own protocol
(`st_protocol.Session`, no browser, so a browser on the same cores measures nothing here):

  first   a new session: the page's HTTP GET, the websocket, the first run of the script (the frame,
          the sidebar's controls, the navigation, the page), to its script-finished message
  later   the same session, the same page at another block and head (the next run)

The text's trace is cached before (one untimed view of the page by another session), unless
--uncached: then every round opens a text no one asked before, and `first` includes its run.
Each page: --rounds rounds (5), the median. `--app bare` measures benchmarks/bare_app.py instead:
Streamlit's floor (the same URL-bound controls, a top navigation, one small heatmap).

Usage:  .venv/bin/python benchmarks/first_view.py [--pages attention,mlp] [--rounds 5] [--tokens 40]
            [--uncached] [--mode full] [--app gpt2viz|bare] [--threads 0]
The last line: `first_view attention: first=X later=Y` (CPU-s, medians) for the first page.
"""

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import quote, urlencode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from load_test import cpu_seconds, session_text, table  # noqa: E402
from st_protocol import Session  # noqa: E402
from streamlit_server import StreamlitServer  # noqa: E402

from gpt2viz.spec.pages import PAGES as PAGE_ROWS  # noqa: E402
from gpt2viz.spec.pages import href  # noqa: E402

MODE = ["full"]  # the mode of every view (--mode)
SETTLE_S = 0.3  # after a session closes, before the next mark: its teardown is not the next view's


def query(text: str, block: int, head: int) -> str:
    return urlencode({"model": "gpt2", "mode": MODE[0], "text": text, "block": block, "head": head}, quote_via=quote)


async def one_round(base: str, pid: int, page: str, text: str) -> tuple[float, float, float, float]:
    """(first view CPU-s, later view CPU-s, first view wall s, later view wall s) of one new session."""
    session = Session(base)
    c0 = cpu_seconds(pid, children=False)
    t0 = time.perf_counter()
    await session.open(page, query(text, 1, 2))
    first = await session.view(page, query(text, 1, 2))
    c1, t1 = cpu_seconds(pid, children=False), time.perf_counter()
    later = await session.view(page, query(text, 3, 5))
    c2, t2 = cpu_seconds(pid, children=False), time.perf_counter()
    await session.close()
    for r in (first, later):
        if not r.ok:
            raise RuntimeError(f"/{page}: {r.error or r.exceptions}")
    await asyncio.sleep(SETTLE_S)
    return c1 - c0, c2 - c1, t1 - t0, t2 - t1


async def measure(base: str, pid: int, pages: list[str], rounds: int, tokens: int, uncached: bool) -> list[list]:
    rows = []
    for p, page in enumerate(pages):
        texts = [session_text(1000 * p + r, tokens) for r in range(rounds)] if uncached else \
            [session_text(0, tokens)] * rounds
        if not uncached:  # the trace cached by another session first
            warm = Session(base)
            await warm.open(page, query(texts[0], 0, 0))
            await warm.view(page, query(texts[0], 0, 0))
            await warm.close()
            await asyncio.sleep(SETTLE_S)
        got = [await one_round(base, pid, page, text) for text in texts]
        first, later, wall_first, wall_later = (statistics.median(g[i] for g in got) for i in range(4))
        rows.append(["/" + page, first, later, wall_first, wall_later])
        print(f"  /{page}: first {first:.3f} CPU-s, later {later:.3f} CPU-s "
              f"(each round: {', '.join(f'{g[0]:.2f}/{g[1]:.2f}' for g in got)})", flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pages", default="attention", help="comma-separated url paths, or 'all'")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--tokens", type=int, default=40, help="tokens of the text")
    ap.add_argument("--uncached", action="store_true", help="a new text every round: the run is part of the view")
    ap.add_argument("--mode", choices=["full", "training", "prefill", "decode"], default="full")
    ap.add_argument("--app", choices=["gpt2viz", "bare"], default="gpt2viz")
    ap.add_argument("--threads", type=int, default=0, help="GPT2VIZ_THREADS of the server (0, the default: unset)")
    args = ap.parse_args()
    if args.app == "bare":
        script, pages = str(ROOT / "benchmarks" / "bare_app.py"), ["attention"]
    else:
        script = "app.py"
        names = [row.url for row in PAGE_ROWS] if args.pages == "all" else args.pages.split(",")
        pages = [href(name).lstrip("/") for name in names]  # the Overview is the root: ""
    MODE[0] = args.mode
    if args.threads > 0:
        os.environ["GPT2VIZ_THREADS"] = str(args.threads)
    print(f"first_view · {args.app} · {args.rounds} rounds · {args.tokens} tokens · "
          f"{'uncached' if args.uncached else 'trace cached'} · {args.mode} · "
          f"load average {os.getloadavg()[0]:.2f}", flush=True)
    with StreamlitServer(script, cwd=ROOT) as server:
        server.wait_healthy(timeout=180)
        pid = server.proc.pid
        # the process's own start (imports, the weights) is not a view's: one untimed view of each page
        asyncio.run(measure(server.base, pid, pages[:1], 1, 8, False))
        rows = asyncio.run(measure(server.base, pid, pages, args.rounds, args.tokens, args.uncached))
    print(table([[r[0]] + [f"{x:.3f}" for x in r[1:]] for r in rows],
                ["page", "first view CPU-s", "later view CPU-s", "first wall s", "later wall s"]))
    print(f"load average {os.getloadavg()[0]:.2f} at the end")
    r = rows[0]
    print(f"first_view {r[0].lstrip('/') or 'overview'}: first={r[1]:.3f} later={r[2]:.3f}")


if __name__ == "__main__":
    main()
