"""What the "What if" page costs: one knock-out, and the sweep over every head.

GPT-2 small (124M) with random weights (seed 0), fp32, CPU, torch.no_grad().

  knockout   gpt2viz.analysis.whatif.knockout at the app's default text (10 tokens), one head zeroed, everything
             recorded (what the page runs), after a first run; the median of --rounds runs.
  plain      gpt2viz.model.modes.run on the same text, everything recorded: what a knock-out is compared to.
  sweep      gpt2viz.analysis.whatif.sweep: every head knocked out one at a time (12 x 12 = 144 runs) at T = 20,
             `--batch` knock-outs a run (rows of one batch that starts at the block they touch).
  sweep B=1  the same, one knock-out a run (with --unbatched): what batching saves.

At 1,024 tokens (--long; the page's long-text case), per block b of the knock-out (head b.3, zero):
  plain      modes.run on the text, recording the logits only: a plain forward pass, the baseline.
  resumed    what the page runs now: analysis.whatif.knockout_from, from the clean trace's resid_pre of
             block b, recording nothing but the relative changes, unembedding the last position only.
  full       what the page ran before (at blocks 0, n/2 and n-1; its cost does not depend on b): the
             knock-out run from the tokens, recording what the page's clean trace records, then the
             page's numbers from it (the probabilities, the loss at every position, changed_most).
  Target: resumed <= (n_layer - b) / n_layer x plain + 0.2 s, both measured in the same round.
  Then the MLP sweep (12 knock-outs) resumed against from the tokens, and with --long-heads the heads'.

Targets: knockout <= 0.5 s, the 144-head sweep <= 15 s. The machine is shared: the load
average and the CPU time the process got (against wall time) are printed beside every figure.

The page in a browser (--page; issue 40: What if on a 600-word text on gpt2 settles within 10 s idle):
`streamlit run app.py` on random gpt2, headless Debian chromium at 1280x720, each view in a new
browser context (a new session, no HTTP cache), the server warm (the model loaded before). Per round:
  600 words  /whatif with tests/test_browser_progress.py's 600-word text (650 tokens), a word added per
             round so that no run is cached: goto -> settled (script idle, every chart drawn), the
             script run's start -> a progress line in the first screen (browser clock), and the server's
             CPU seconds (utime + stime) over the view.
  default    the same page on the default text, a word added per round: the baseline of the same run.
  forward    this process, the server idle: gpt2's plain forward pass over the 650 tokens (logits
             only, 2 threads): the compute floor of one of the page's two runs.
Ratios: 600 words over default, and over forward.

Usage:  .venv/bin/python benchmarks/bench_whatif.py [--rounds 5] [--batch 12] [--unbatched] [--threads N]
                                                   [--long] [--long-rounds 1] [--long-heads]
        .venv/bin/python benchmarks/bench_whatif.py --page [--page-rounds 3]
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, uninstalled

import torch

from gpt2viz.analysis.whatif import (
    Target,
    changed_most,
    knockout,
    knockout_from,
    log_probs,
    loss_per_position,
    sweep,
)
from gpt2viz.model.modes import run
from gpt2viz.model.tokenizer import encode
from gpt2viz.model.weights import random_model
from gpt2viz.spec.config import get_config
from gpt2viz.ui.state import DEFAULT_TEXT
from gpt2viz.ui.whatif_view import NEEDS

SWEEP_TEXT = "When Mary and John went to the store, John gave a drink to Mary because she was thirsty and"


def timed(fn) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def line(label: str, wall: float, cpu: float, target: float | None = None) -> None:
    goal = f" (target <= {target:g} s: {'met' if wall <= target else 'missed'})" if target else ""
    print(f"{label:34s} {wall:7.3f} s wall, {cpu:7.3f} s CPU · load {os.getloadavg()[0]:.1f}{goal}")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--batch", type=int, default=12)
    p.add_argument("--unbatched", action="store_true")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--long", action="store_true", help="the 1,024-token case, per block")
    p.add_argument("--long-rounds", type=int, default=1)
    p.add_argument("--long-heads", action="store_true", help="and the 144-head sweep at 1,024 tokens")
    p.add_argument("--long-blocks", default="all", help="the blocks to time at 1,024 tokens: all, or e.g. 0,6,11")
    p.add_argument("--long-only", action="store_true", help="the 1,024-token case alone (implies --long)")
    p.add_argument("--page", action="store_true", help="the page on a 600-word text in a browser, alone")
    p.add_argument("--page-rounds", type=int, default=3)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    model = random_model(get_config("gpt2"), 0)
    if a.page:
        page_case(model, a.page_rounds)
        return
    ids = encode(DEFAULT_TEXT)
    long_ids = encode(SWEEP_TEXT)[:20]
    assert len(long_ids) == 20, len(long_ids)
    print(f"gpt2 random seed 0 · torch {torch.__version__} · {torch.get_num_threads()} threads · "
          f"{os.cpu_count()} CPUs · T = {len(ids)} (knock-out), {len(long_ids)} (sweep)")

    if a.long_only:
        long_case(model, a)
        return
    target = Target(5, "head", 3)
    knockout(model, ids, target, "zero")  # the first run: allocator and kernels warmed
    for label, fn in (("plain run, all recorded", lambda: run(model, ids)),
                      ("knock-out (head 5.3, zero)", lambda: knockout(model, ids, target, "zero"))):
        times = [timed(fn) for _ in range(a.rounds)]
        line(f"{label}, median of {a.rounds}", statistics.median(t[0] for t in times),
             statistics.median(t[1] for t in times), 0.5 if "knock" in label else None)

    token = int(run(model, long_ids, names=["logits"])["logits"][0, -1].argmax())
    for batch in [a.batch] + ([1] if a.unbatched else []):
        wall, cpu = timed(lambda b=batch: sweep(model, long_ids, "head", "zero", token, batch=b))
        line(f"sweep 144 heads, batch {batch}", wall, cpu, 15)
    wall, cpu = timed(lambda: sweep(model, long_ids, "mlp", "zero", token, batch=a.batch))
    line("sweep 12 MLPs", wall, cpu)
    if a.long:
        long_case(model, a)


def long_text(n: int) -> list[int]:
    ids = encode(" ".join([SWEEP_TEXT] * 60))[:n]
    assert len(ids) == n, len(ids)
    return ids


def long_case(model, a) -> None:
    """Per block: the plain run, the resumed knock-out (and the full one at three blocks), median of rounds."""
    ids, n = long_text(1024), model.config.n_layer
    clean = run(model, ids, names=NEEDS)  # the page's clean trace (not timed: the page has it already)
    knockout_from(model, clean, Target(0, "head", 3), "zero", every_position=False)  # warm; W_U^T W_U once
    print(f"\nT = 1,024 · {a.long_rounds} round(s) a block · load {os.getloadavg()[0]:.1f}")

    def full(target):
        trace = knockout(model, ids, target, "zero", names=NEEDS)
        return log_probs(trace).exp(), loss_per_position(trace), changed_most(clean, trace)

    print("per block: wall s (CPU s of this process); the target and the verdict on wall, then on CPU (the machine "
          "is shared: CPU time is less inflated by other processes)")
    print(f"{'block':>5} {'plain':>14} {'resumed':>14} {'target':>14} {'wall':>12} {'CPU':>12} "
          f"{'full (before)':>14}  load")
    for b in range(n) if a.long_blocks == "all" else map(int, a.long_blocks.split(",")):
        target = Target(b, "head", 3)
        rounds = [(timed(lambda: run(model, ids, names=["logits"])),
                   timed(lambda t=target: knockout_from(model, clean, t, "zero", every_position=False)),
                   timed(lambda t=target: full(t)) if b in (0, n // 2, n - 1) else (float("nan"),) * 2)
                  for _ in range(a.long_rounds)]
        (pw, pc), (rw, rc), (fw, fc) = [[statistics.median(r[i][j] for r in rounds) for j in range(2)]
                                        for i in range(3)]
        gw, gc = ((n - b) / n * t + 0.2 for t in (pw, pc))
        verdicts = [f"{r / g:.2f} {'met' if r <= g else 'MISSED'}" for r, g in ((rw, gw), (rc, gc))]
        print(f"{b:5d} {pw:6.2f} ({pc:5.2f}) {rw:6.2f} ({rc:5.2f}) {gw:6.2f} ({gc:5.2f}) {verdicts[0]:>12} "
              f"{verdicts[1]:>12} {fw:6.2f} ({fc:5.2f})  {os.getloadavg()[0]:.1f}", flush=True)
    token = int(clean["logits"][0, -1].argmax())
    parts = [("mlp", 12)] + ([("head", 144)] if a.long_heads else [])
    for part, count in parts:
        plain = timed(lambda: run(model, ids, names=["logits"]))[0]
        old = timed(lambda p=part: sweep(model, ids, p, "zero", token, batch=a.batch))[0]
        new = timed(lambda p=part: sweep(model, ids, p, "zero", token, batch=a.batch, clean=clean))[0]
        print(f"sweep {count} {part}s at T = 1,024: from the tokens {old:.2f} s, resumed {new:.2f} s "
              f"({new / plain:.2f} plain runs; plain {plain:.2f} s) · load {os.getloadavg()[0]:.1f}", flush=True)


def page_case(model, rounds: int) -> None:
    """What if on the 600-word text in chromium against the default text and a plain forward pass."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from urllib.parse import quote

    from load_test import cpu_seconds
    from playwright.sync_api import sync_playwright
    from streamlit_server import StreamlitServer, launch_chromium, new_context, wait_rendered
    from test_browser_progress import RECORD, TEXT_600

    root = Path(__file__).resolve().parents[1]

    def view(browser, server, text: str) -> tuple[float, float | None, float]:
        """(goto -> settled s, run start -> progress in the first screen s or None, server CPU-s)."""
        context = new_context(browser, 1280, 720)
        try:
            page = context.new_page()
            page.add_init_script(RECORD)
            cpu, t0 = cpu_seconds(server.proc.pid, children=False), time.perf_counter()
            page.goto(f"{server.base}/whatif?model=gpt2&text={quote(text)}")
            wait_rendered(page, 1, timeout_ms=600_000)
            wall, cpu = time.perf_counter() - t0, cpu_seconds(server.proc.pid, children=False) - cpu
            seen, start = page.evaluate("window.__seen"), page.evaluate("window.__runStart ?? null")
            shown = next((s["t"] for s in seen if s["inView"] and start is not None and s["t"] >= start), None)
            return wall, None if shown is None else (shown - start) / 1e3, cpu
        finally:
            context.close()

    ids = encode(TEXT_600)
    rows: dict[str, list] = {"600 words": [], "default": [], "forward": []}
    with sync_playwright() as p, StreamlitServer("app.py", root) as server:
        server.wait_healthy(120)
        browser = launch_chromium(p)
        view(browser, server, DEFAULT_TEXT)  # warm: the model loaded, the page's code imported
        run(model, ids, names=["logits"])
        print(f"What if in chromium · T = {len(ids)} (600 words) · {rounds} rounds · load {os.getloadavg()[0]:.1f}")
        for r in range(rounds):
            rows["default"].append((*view(browser, server, f"{DEFAULT_TEXT} {r}"), os.getloadavg()[0]))
            rows["600 words"].append((*view(browser, server, f"{TEXT_600} {r}"), os.getloadavg()[0]))
            rows["forward"].append((timed(lambda: run(model, ids, names=["logits"]))[0], None, None,
                                    os.getloadavg()[0]))
            print(f"  round {r}: " + " · ".join(f"{k} {v[-1][0]:.2f} s" for k, v in rows.items())
                  + f" · load {os.getloadavg()[0]:.1f}", flush=True)
        browser.close()

    def median(name: str, i: int) -> float | None:
        got = [row[i] for row in rows[name] if row[i] is not None]
        return statistics.median(got) if got else None

    for name, what in (("600 words", "goto -> settled"), ("default", "goto -> settled"),
                       ("forward", "plain forward, logits only")):
        shown, cpu = median(name, 1), median(name, 2)
        print(f"{name:10s} {what:28s} {median(name, 0):6.2f} s"
              + (f" · run start -> progress in view {shown:.2f} s" if shown is not None else "")
              + (f" · server {cpu:.2f} CPU-s" if cpu is not None else "")
              + f" · load {median(name, 3):.1f}")
    settle = median("600 words", 0)
    print(f"600 words ÷ default {settle / median('default', 0):.1f}x · ÷ forward {settle / median('forward', 0):.1f}x"
          f" · target settle <= 10 s idle: {'met' if settle <= 10 else 'missed'} at load {median('600 words', 3):.1f}")


if __name__ == "__main__":
    main()
