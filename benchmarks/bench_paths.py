"""What path patching costs: every receiver of one block-0 sender, against one plain forward pass.

  paths    gpt2viz.analysis.paths.path_patch for a sender (default blocks.0.attn.head.0, zero), every
           receiver (gpt2: 3 x 12 x 11 head inputs, 12 MLPs and the logits, 410 runs in all, each from
           the clean streams at its own block), given the clean run (as the page gives its trace).
  clean    the clean run path patching starts from: modes.run recording paths.NEEDS.
  plain    one plain forward pass of the same text, recording nothing: the unit of the ratios.
Each round runs the three back to back (after a first, untimed); printed: the medians over the rounds of
each one's wall and CPU seconds and of its ratio to that round's plain forward (wall and CPU).
Targets (the issue's): gpt2 at 32 tokens within 10 s on this machine's 2 cores, the demo's within 1 s.
The machine is shared: /proc/loadavg and the CPU time the process got are printed beside each figure.

Usage:  .venv/bin/python benchmarks/bench_paths.py [--rounds 3] [--tokens 32] [--threads 2]
        [--sender blocks.0.attn.head.0] [--ablation zero]
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, uninstalled

import torch

import gpt2viz
from gpt2viz.analysis.paths import clean_run, parse_sender, path_patch, receivers_of
from gpt2viz.model import tokenizer
from gpt2viz.teaching.prompts import DEMO_REPEAT

TEXT = ("When Mary and John went to the store, John gave a drink to Mary because she was thirsty and the store "
        "was far from the house where they lived, so they walked home slowly")


def loadavg() -> str:
    try:
        return Path("/proc/loadavg").read_text().split(" ", 3)[:3].__str__()
    except OSError:
        return "?"


def timed(fn) -> tuple[float, float]:
    t, c = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - t, time.process_time() - c


def bench(label: str, m, ids: list[int], sender: str, ablation: str, rounds: int) -> None:
    """Each round times a plain forward, the clean run and path patching back to back, so that each
    round's ratios see the same load; the medians of the rounds' figures and of their ratios are printed."""
    model = m.model
    n = len(receivers_of(model.config, parse_sender(sender, model.config)))
    answer = int(model(torch.tensor([ids]))[0][0, -1].argmax())
    x = torch.tensor([ids])
    trace = clean_run(model, ids)

    def plain():
        with torch.no_grad():
            model(x)
    steps = {"plain": plain, "clean": lambda: clean_run(model, ids),
             "paths": lambda: path_patch(model, ids, sender, answer, ablation=ablation, clean=trace)}
    for fn in steps.values():
        fn()  # a first run: allocations, kernels
    rows = [{k: timed(fn) for k, fn in steps.items()} for _ in range(rounds)]
    print(f"{label}: {len(ids)} tokens, {sender} ({ablation}), {n} receivers + the total · load {loadavg()}")
    for k in steps:
        wall = statistics.median(r[k][0] for r in rows)
        cpu = statistics.median(r[k][1] for r in rows)
        ratio = statistics.median(r[k][0] / r["plain"][0] for r in rows)
        ratio_cpu = statistics.median(r[k][1] / r["plain"][1] for r in rows)
        print(f"  {k:6s} {wall:8.3f} s wall  {cpu:8.3f} s CPU   x plain: {ratio:6.1f} wall, {ratio_cpu:6.1f} CPU")
    total = statistics.median(r["paths"][0] + r["clean"][0] for r in rows)
    print(f"  clean + paths: {total:.3f} s wall (median of {rounds} rounds)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--sender", default="blocks.0.attn.head.0")
    ap.add_argument("--ablation", default="zero", choices=["zero", "mean"])
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    gpt2 = gpt2viz.load("gpt2")
    ids = tokenizer.encode(TEXT)[:a.tokens]
    if len(ids) < a.tokens:
        raise SystemExit(f"the text has {len(ids)} tokens, fewer than --tokens {a.tokens}")
    bench("random gpt2 (seed 0)", gpt2, ids, a.sender, a.ablation, a.rounds)
    demo = gpt2viz.load("demo")
    tokenizer.use(demo.vocabulary)
    bench("demo model", demo, tokenizer.encode(DEMO_REPEAT.text), a.sender, a.ablation, a.rounds)


if __name__ == "__main__":
    main()
