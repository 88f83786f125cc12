"""What the "What if" page costs: one knock-out, and the sweep over every head.

GPT-2 small (124M) with random weights (seed 0), fp32, CPU, torch.no_grad().

  knockout   gpt2viz.analysis.whatif.knockout at the app's default text (10 tokens), one head zeroed, everything
             recorded (what the page runs), after a first run; the median of --rounds runs.
  plain      gpt2viz.model.modes.run on the same text, everything recorded: what a knock-out is compared to.
  sweep      gpt2viz.analysis.whatif.sweep: every head knocked out one at a time (12 x 12 = 144 runs) at T = 20,
             `--batch` knock-outs a run (rows of one batch that starts at the block they touch).
  sweep B=1  the same, one knock-out a run (with --unbatched): what batching saves.

Targets (issue 14): knockout <= 0.5 s, the 144-head sweep <= 15 s. The machine is shared: the load
average and the CPU time the process got (against wall time) are printed beside every figure.

Usage:  .venv/bin/python benchmarks/bench_whatif.py [--rounds 5] [--batch 12] [--unbatched] [--threads N]
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, uninstalled

import torch

from gpt2viz.analysis.whatif import Target, knockout, sweep
from gpt2viz.model.modes import run
from gpt2viz.model.tokenizer import encode
from gpt2viz.model.weights import random_model
from gpt2viz.spec.config import get_config
from gpt2viz.ui.state import DEFAULT_TEXT

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
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    model = random_model(get_config("gpt2"), 0)
    ids = encode(DEFAULT_TEXT)
    long_ids = encode(SWEEP_TEXT)[:20]
    assert len(long_ids) == 20, len(long_ids)
    print(f"gpt2 random seed 0 · torch {torch.__version__} · {torch.get_num_threads()} threads · "
          f"{os.cpu_count()} CPUs · T = {len(ids)} (knock-out), {len(long_ids)} (sweep)")

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


if __name__ == "__main__":
    main()
