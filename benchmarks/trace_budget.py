"""How many FULL traces of random gpt2 the app's trace cache keeps at the default budget.

The app's own path: `gpt2viz.ui.cache.get_trace` into a `TraceCache` sized as the server sizes it
(GPT2VIZ_TRACE_BUDGET_MB, default 2048, less the 1/4 headroom), one text after another, each run
reserving its estimated peak while it computes. Prints the count held after each run and the bytes.

Usage:  .venv/bin/python benchmarks/trace_budget.py [--tokens 256] [--texts 16]
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, uninstalled

import torch  # noqa: E402

from gpt2viz.model.modes import Mode  # noqa: E402
from gpt2viz.model.weights import random_model  # noqa: E402
from gpt2viz.server.trace_cache import TraceCache  # noqa: E402
from gpt2viz.spec.config import get_config  # noqa: E402
from gpt2viz.ui import cache as ui  # noqa: E402

MiB = 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--texts", type=int, default=16)
    args = parser.parse_args()
    weights = ui.LoadedModel(random_model(get_config("gpt2"), seed=0), ("random", "gpt2", 0), "random gpt2", True)
    budget = ui.budget_bytes()
    cache = TraceCache(budget - budget // ui.HEADROOM_SHARE)
    held = []
    for seed in range(args.texts):
        ids = torch.randint(0, 50257, (args.tokens,), generator=torch.Generator().manual_seed(seed))  # [T]
        ui.get_trace(weights, tuple(ids.tolist()), Mode.FULL, 0, needs=("blocks.0.attn.*",), cache=cache)
        held.append(len(cache))
    full = ui.full_trace_bytes(weights, args.tokens, Mode.FULL)
    print(f"budget for traces {cache.budget / MiB:,.0f} MiB; "
          f"a FULL trace of T={args.tokens} holds {full / MiB:,.1f} MiB "
          f"(recorded whole: {ui.records_everything(weights, args.tokens, Mode.FULL, cache)})")
    print(f"traces held after each of {args.texts} texts: {held}; {cache.nbytes / MiB:,.1f} MiB held")
    print(f"traces_held T={args.tokens}: {held[-1]}")


if __name__ == "__main__":
    main()
