"""Two (or more) checkouts of the app, side by side in one run: is a change faster in the browser?

On a shared 2-core machine the same view change measured 0.58 s and 0.76 s an hour apart, so
medians from separate runs cannot show a 20 % change. Here every checkout gets its own
`streamlit run` server, one headless chromium tab visits them in turn (round r starts at checkout
r mod n), and in each visit the Block slider of the attention page takes three steps; the last two
are timed. Two measures per step:
  wall       key press → the new block's charts drawn (tests/streamlit_server.py `wait_rendered`)
  renderer   main-thread busy time of the page's renderer over that step (Chrome's
             Performance.getMetrics TaskDuration): the browser's share, less sensitive to waits
Ratios are each checkout's median over the first checkout's (the baseline), from the same run.

Usage:  .venv/bin/python benchmarks/ab_app.py BASELINE_DIR OTHER_DIR [...] [--tokens 256] [--rounds 6]
        e.g. git worktree add /tmp/before HEAD~3 && .venv/bin/python benchmarks/ab_app.py /tmp/before .
"""

import argparse
import contextlib
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_app import ATTENTION_CHARTS, long_text, press_slider, table  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402
from streamlit_server import StreamlitServer, launch_chromium, new_context, wait_rendered  # noqa: E402


def busy_seconds(cdp) -> float:
    return next(m["value"] for m in cdp.send("Performance.getMetrics")["metrics"] if m["name"] == "TaskDuration")


def visit(page, cdp, base: str, query: str) -> list[tuple[float, float]]:
    """Open the attention page at block 0, take three Block steps (0→1→0→1); (wall, renderer) of
    the last two."""
    page.goto(f"{base}/attention{query}")
    wait_rendered(page, ATTENTION_CHARTS, must_see="block 0 head", timeout_ms=180_000)
    steps = []
    for s in range(3):
        block = 1 - s % 2
        time.sleep(0.3)  # let the previous step's idle work settle
        busy0, t0 = busy_seconds(cdp), time.perf_counter()
        press_slider(page, "Block", "ArrowRight" if block else "ArrowLeft")()
        wait_rendered(page, ATTENTION_CHARTS, must_see=f"block {block} head")
        if s:
            steps.append((time.perf_counter() - t0, busy_seconds(cdp) - busy0))
    return steps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dirs", nargs="+", help="app checkouts; the first is the baseline")
    ap.add_argument("--tokens", type=int, default=256, help="text length T (0: the default text)")
    ap.add_argument("--rounds", type=int, default=6)
    a = ap.parse_args()
    dirs = [str(Path(d).resolve()) for d in a.dirs]
    query = "?model=gpt2&block=0&head=0" + (f"&text={quote(long_text(a.tokens))}" if a.tokens else "")
    samples = {d: [] for d in dirs}
    with contextlib.ExitStack() as stack, sync_playwright() as p:
        servers = {d: stack.enter_context(StreamlitServer("app.py", Path(d))) for d in dirs}
        for server in servers.values():
            server.wait_healthy(180)
        page = new_context(launch_chromium(p)).new_page()
        cdp = page.context.new_cdp_session(page)
        cdp.send("Performance.enable")
        for r in range(a.rounds):
            for d in dirs[r % len(dirs):] + dirs[:r % len(dirs)]:
                samples[d] += visit(page, cdp, servers[d].base, query)
    base_wall = statistics.median(w for w, _ in samples[dirs[0]])
    base_busy = statistics.median(b for _, b in samples[dirs[0]])
    rows = []
    for d in dirs:
        wall, busy = (statistics.median(x[i] for x in samples[d]) for i in (0, 1))
        rows.append([d, f"{wall:.3f} s", f"{wall / base_wall:.2f}", f"{busy:.3f} s", f"{busy / base_busy:.2f}",
                     str(len(samples[d]))])
    print(f"Block slider steps on the attention page, T = {a.tokens or 'default text'}, {a.rounds} rounds "
          f"(medians; ratios over {dirs[0]})")
    print(table(rows, ["checkout", "wall", "÷ base", "renderer", "÷ base", "steps"]))


if __name__ == "__main__":
    main()
