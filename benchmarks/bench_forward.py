"""Forward-pass cost of recording everything, against transformers on the same weights.

GPT-2 small (124M) with random weights (gpt2viz.model.weights.random_model, seed 0), batch 1, fp32, CPU.
For T = 64, 256 and 1024 tokens, in one process, with torch.no_grad():

  ours FULL          gpt2viz.model.modes.run(model, ids, "full"): every name available, returned as
                     a Trace (the scores and pattern of every head derivable per block on demand)
                     (full mode derives its logits when they are read: this run computes none)
  ours FULL + logits the same run, then every position's logits read (trace["logits"]): the work
                     transformers does, the unembedding in blocks of 32 positions as a trace derives it
  ours FULL names=() the same run recording nothing (for interest)
  transformers sdpa  GPT2LMHeadModel(input_ids, use_cache=False): the baseline; sdpa is
                     transformers' default attention implementation
  transformers eager the same with attn_implementation="eager" (a second baseline row)
  TransformerLens    TransformerBridge.boot_transformers("gpt2", hf_model=<an eager GPT2LMHeadModel
                     with our weights>) (TransformerLens 4.x, no weight processing: boot's default),
                     bridge.run_with_cache(ids): every hook's activation cached. Only when
                     transformer-lens is importable; otherwise the row is skipped with a note.

The transformers models get our weights: our state_dict keys are the `transformer.*` keys without
the prefix; lm_head is tied to wte. Their logits are checked against ours before timing.

Timing: torch.set_num_threads fixed (default 2) and printed; time.perf_counter around one call,
its result released outside the timed region. Warm-up rounds, then rounds in which every case
runs once, in an order that rotates each round. Reported: median and minimum per case, and ratios
taken within each round (case / baseline, seconds apart) and then the median over rounds, so that
a load that comes and goes cancels out; on an idle machine that equals the ratio of the medians.
All ratios are against a baseline measured in this same run; no absolute-time thresholds.
Memory: the peak resident-set increase of one run of a case, each case in a fresh subprocess
(see `peak_rss_increase`; Linux only), and the bytes a FULL trace holds (Trace.nbytes: every
storage once).
Noise: the CPU that other processes used meanwhile is reported (see `OtherLoad`).

DECODE: one token against a KV cache of P = 1000 positions, everything recorded (the prefill is
done once, untimed), against a FULL pass over the 1001 tokens recording nothing.

Usage:  .venv/bin/python benchmarks/bench_forward.py [--quick] [--threads N]
The last two lines printed are `trace_mib_full T=1024: X` (Trace.nbytes in MiB) and
`ratio_full_vs_transformers T=1024: X.XX`.
"""

import argparse
import gc
import importlib.metadata
import importlib.util
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, uninstalled

import torch  # noqa: E402
import transformers  # noqa: E402

from gpt2viz.model.modes import prefill, run  # noqa: E402
from gpt2viz.model.record import Recorder  # noqa: E402
from gpt2viz.model.weights import random_model  # noqa: E402
from gpt2viz.spec.config import get_config  # noqa: E402

SEQ_LENS = (64, 256, 1024)
DECODE_P = 1000
TARGETS = {256: 1.05, 1024: 1.10}  # ours FULL / transformers sdpa
REPS = {64: 21, 256: 15, 1024: 7, "decode": 9}  # whole benchmark < 6 minutes on 2 idle cores
QUICK_REPS = {64: 5, 256: 3, 1024: 3, "decode": 3}
CASES = {  # key -> label, in table order
    "sdpa": "transformers sdpa (baseline)",
    "eager": "transformers eager",
    "full": "ours FULL, everything",
    "logits": "ours FULL + every logit read",
    "off": "ours FULL, names=()",
    "tl": "TransformerLens run_with_cache",
}
HAS_TL = importlib.util.find_spec("transformer_lens") is not None
TL_NOTE = ("TransformerLens row skipped: transformer-lens is not installed here (install it in a separate "
           "venv, see benchmarks/README.md)")
HF_BUFFERS = (".attn.bias", ".attn.masked_bias")
MiB = 2**20


# ---------------------------------------------------------------------------- models
def our_model():
    return random_model(get_config("gpt2"), seed=0)


def hf_model(ours, attn: str) -> tuple[transformers.GPT2LMHeadModel, list[str]]:
    """(transformers' GPT-2 with our weights, attention implementation `attn`, eval mode; the keys
    load_state_dict reported missing, which may only be the attn.bias/masked_bias buffers)."""
    cfg = ours.config
    hf_cfg = transformers.GPT2Config(
        vocab_size=cfg.vocab_size, n_positions=cfg.n_positions, n_embd=cfg.n_embd, n_layer=cfg.n_layer,
        n_head=cfg.n_head, layer_norm_epsilon=cfg.layer_norm_epsilon, activation_function=cfg.activation,
        attn_implementation=attn)
    hf = transformers.GPT2LMHeadModel(hf_cfg)
    result = hf.transformer.load_state_dict(ours.state_dict(), strict=False)
    missing = [k for k in result.missing_keys if not k.endswith(HF_BUFFERS)]  # buffers may be missing
    if missing or result.unexpected_keys:
        raise RuntimeError(f"weights do not match: missing {missing}, unexpected {result.unexpected_keys}")
    hf.tie_weights()
    if hf.lm_head.weight is not hf.transformer.wte.weight:
        raise RuntimeError("lm_head is not tied to wte")
    if hf.config._attn_implementation != attn:
        raise RuntimeError(f"asked for {attn} attention, got {hf.config._attn_implementation}")
    return hf.eval(), result.missing_keys


def tl_bridge(ours):
    """TransformerLens 4's bridge around an eager GPT2LMHeadModel holding our weights, without
    weight processing (boot's default; no enable_compatibility_mode). The tokenizer is GPT-2's,
    built from the files gpt2viz reads (boot needs one; the benchmark passes token ids)."""
    from transformer_lens.model_bridge import TransformerBridge

    from gpt2viz.model.tokenizer import data_dir

    tokenizer = transformers.GPT2TokenizerFast(vocab_file=str(data_dir() / "encoder.json"),
                                               merges_file=str(data_dir() / "vocab.bpe"), add_bos_token=True)
    tokenizer.init_kwargs["name_or_path"] = "gpt2"  # read by boot, which would otherwise ask the Hub
    bridge = TransformerBridge.boot_transformers("gpt2", hf_model=hf_model(ours, "eager")[0],
                                                 tokenizer=tokenizer, device="cpu")
    return bridge.eval()


def cases() -> dict[str, str]:
    return {k: v for k, v in CASES.items() if k != "tl" or HAS_TL}


def token_ids(T: int) -> torch.Tensor:
    return torch.randint(0, 50257, (1, T), generator=torch.Generator().manual_seed(T))  # [1, T]


def case_fn(key: str, models: dict, ids: torch.Tensor):
    """A zero-argument callable running case `key` on `ids`; it returns what the case returns."""
    if key in ("full", "off"):
        names = None if key == "full" else ()
        return lambda: run(models["ours"], ids, "full", names=names)  # a Trace
    if key == "logits":
        return lambda: run(models["ours"], ids, "full")["logits"]  # [1, T, V], derived from ln_f.out
    if key == "tl":
        return lambda: models["tl"].run_with_cache(ids)  # (logits, ActivationCache)
    return lambda: models[key](input_ids=ids, use_cache=False)  # logits only


def max_logit_diff(models: dict, ids: torch.Tensor) -> float:
    with torch.no_grad():
        ours, _ = models["ours"](ids)
        diffs = [(models[k](input_ids=ids, use_cache=False).logits - ours).abs().max().item()
                 for k in ("sdpa", "eager")]
        if "tl" in models:
            diffs.append((models["tl"](ids) - ours).abs().max().item())
        return max(diffs)


# ---------------------------------------------------------------------------- timing
def time_interleaved(fns: dict, reps: int, warmup: int) -> dict[str, list[float]]:
    """Seconds per call for each callable: `warmup` untimed rounds, then `reps` rounds in which
    every callable runs once, the order rotating by one each round."""
    keys = list(fns)
    times = {k: [] for k in keys}
    with torch.no_grad():
        for r in range(warmup + reps):
            for k in keys[r % len(keys):] + keys[:r % len(keys)]:
                gc.collect()
                start = time.perf_counter()
                result = fns[k]()
                elapsed = time.perf_counter() - start  # the result is released outside the timing
                del result
                if r >= warmup:
                    times[k].append(elapsed)
    return times


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1e3


def paired_ratio(case: list[float], baseline: list[float]) -> float:
    """The median over rounds of case / baseline within one round. Both ran seconds apart, so a
    load that comes and goes cancels out; on a quiet machine it equals the ratio of the medians."""
    return statistics.median(c / b for c, b in zip(case, baseline, strict=True))


# ---------------------------------------------------------------------------- memory
def _status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        return int(re.search(rf"^{field}:\s+(\d+) kB", f.read(), re.M).group(1))


def peak_rss_increase(fn) -> float:
    """MiB by which the resident set's peak during `fn()` exceeds the resident set just before it.

    Linux only: the high-water mark VmHWM is reset by writing 5 to /proc/self/clear_refs, so it
    shows this run's peak alone, not an earlier one (getrusage's ru_maxrss cannot be reset)."""
    gc.collect()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    before = _status_kib("VmRSS")
    fn()
    return (_status_kib("VmHWM") - before) / 1024


def memory_child(key: str, T: int) -> None:
    """In a fresh process: build the models, warm up on 8 tokens, then print the peak RSS
    increase of one run of case `key` at T tokens as JSON (for ours FULL also Trace.nbytes)."""
    ours = our_model()
    models = {"ours": ours}
    if key == "tl":
        models["tl"] = tl_bridge(ours)
    elif key not in ("full", "off", "logits"):
        models[key] = hf_model(ours, key)[0]
    out = {}
    with torch.no_grad():
        case_fn(key, models, token_ids(8))()
        kept = []
        out["mib"] = peak_rss_increase(lambda: kept.append(case_fn(key, models, token_ids(T))()))
    if key == "full":
        out["trace_mib"] = kept[0].nbytes / MiB
    print(json.dumps(out))


def measure_memory(key: str, T: int, threads: int) -> dict:
    cmd = [sys.executable, __file__, "--memory-child", key, str(T), "--threads", str(threads)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------------- decode
def decode_times(ours, reps: int, warmup: int) -> dict[str, list[float]]:
    ids = token_ids(DECODE_P + 1)  # [1, 1001]
    with torch.no_grad():
        _, past = prefill(ours, ids[:, :DECODE_P])  # once, untimed; the step does not change it
    fns = {
        "decode": lambda: ours(ids[:, DECODE_P:], Recorder(), past=past, use_cache=True),
        "full": lambda: ours(ids),
    }
    return time_interleaved(fns, reps, warmup)


# ---------------------------------------------------------------------------- machine noise
class OtherLoad:
    """CPU time that other processes used while the benchmark ran (they inflate every time):
    the machine's busy time from /proc/stat minus this process's and its children's."""

    def __init__(self):
        self.start = self._sample()

    @staticmethod
    def _sample() -> tuple[float, float, float] | None:
        try:
            with open("/proc/stat") as f:
                user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, f.readline().split()[1:9])
        except (OSError, ValueError):
            return None
        busy = (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")
        return time.monotonic(), busy, sum(os.times()[:4])

    def report(self) -> str:
        end = self._sample()
        if self.start is None or end is None:
            return "load from other processes: unknown (no /proc/stat)"
        wall = end[0] - self.start[0]
        others = max(0.0, (end[1] - self.start[1]) - (end[2] - self.start[2])) / wall
        cores = os.cpu_count() or 1
        note = "  -- the machine was shared: times are inflated and noisy" if others > 0.1 * cores else ""
        return f"other processes used on average {others:.2f} of the {cores} cores during the benchmark{note}"


# ---------------------------------------------------------------------------- report
def print_header(models: dict, missing: list[str], threads: int, reps: dict, warmup: int, quick: bool) -> None:
    cfg = models["ours"].config
    print(f"gpt2viz forward benchmark{' (--quick)' if quick else ''}: GPT-2 small ({cfg.n_layer} layers, "
          f"d={cfg.n_embd}, {cfg.n_head} heads, V={cfg.vocab_size}), random weights (seed 0), B=1, fp32, CPU")
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, "
          f"torch.set_num_threads({threads}), torch.no_grad()")
    print("transformers: GPT2LMHeadModel(input_ids, use_cache=False), attention implementation "
          f"'{models['sdpa'].config._attn_implementation}' (its default; the baseline) and "
          f"'{models['eager'].config._attn_implementation}' (second row)")
    if "tl" in models:
        print(f"TransformerLens {importlib.metadata.version('transformer-lens')}: TransformerBridge.boot_transformers("
              "hf_model=eager GPT2LMHeadModel with our weights), no weight processing, run_with_cache(ids)")
    else:
        print(TL_NOTE)
    loaded = (f"missing only {len(missing)} attn.bias/masked_bias buffers" if missing
              else "no missing keys (attn.bias/masked_bias are not persistent buffers here)")
    print(f"weights: our state_dict loaded into hf.transformer (strict=False): {loaded}, no unexpected keys; "
          "lm_head tied to wte")
    print(f"timing: median of {', '.join(f'{reps[T]} (T={T})' for T in SEQ_LENS)} interleaved rounds after "
          f"{warmup} warm-up round(s); each round runs every case once, order rotating; "
          "ratios: median over rounds of the ratio within a round")
    print("memory: peak RSS increase of one run, each case in a fresh subprocess: models built, one warm-up "
          "on 8 tokens, high-water mark reset (/proc/self/clear_refs), then VmHWM - VmRSS around the run")


def print_table(rows: list[dict]) -> None:
    print()
    print(f"{'T':>5}  {'case':<30} {'median ms':>10} {'min ms':>9} {'/ sdpa':>7} {'/ eager':>8} "
          f"{'peak RSS +MiB':>14} {'trace MiB':>10}")
    for row in rows:
        trace = f"{row['trace_mib']:>10.1f}" if "trace_mib" in row else f"{'':>10}"
        print(f"{row['T']:>5}  {CASES[row['key']]:<30} {row['median']:>10.1f} {row['min']:>9.1f} "
              f"{row['vs_sdpa']:>7.2f} {row['vs_eager']:>8.2f} {row['mem']:>14.0f} {trace}")


def print_decode(times: dict[str, list[float]]) -> None:
    decode, full = median_ms(times["decode"]), median_ms(times["full"])
    ratio = paired_ratio(times["decode"], times["full"])
    print()
    print(f"DECODE at P={DECODE_P} (median of {len(times['full'])} interleaved rounds; prefill once, untimed)")
    print(f"  ours DECODE step: 1 token against a cache of {DECODE_P}, all recorded  {decode:>9.1f} ms")
    print(f"  ours FULL pass over {DECODE_P + 1} tokens, nothing recorded              {full:>9.1f} ms")
    print(f"  ratio decode / full: {ratio:.4f}  (a decode step costs 1/{1 / ratio:.0f} of the full pass)")


def print_targets(rows: list[dict]) -> None:
    print()
    by = {(r["T"], r["key"]): r for r in rows}
    for T, target in TARGETS.items():
        full, sdpa = by[(T, "full")], by[(T, "sdpa")]
        verdict = "met" if full["vs_sdpa"] <= target else "MISSED"
        print(f"target ours FULL / transformers sdpa <= {target:.2f} at T={T}: {verdict} "
              f"({full['vs_sdpa']:.2f}; ratio of the medians {full['median'] / sdpa['median']:.2f}, "
              f"of the minimums {full['min'] / sdpa['min']:.2f})")


# ---------------------------------------------------------------------------- main
def measure_forward(models: dict, reps: dict, warmup: int) -> list[dict]:
    """One row per (T, case): median and min ms, and the ratios to both baselines."""
    rows = []
    for T in SEQ_LENS:
        ids = token_ids(T)
        times = time_interleaved({k: case_fn(k, models, ids) for k in cases()}, reps[T], warmup)
        rows += [{"T": T, "key": k, "median": median_ms(times[k]), "min": min(times[k]) * 1e3,
                  "vs_sdpa": paired_ratio(times[k], times["sdpa"]),
                  "vs_eager": paired_ratio(times[k], times["eager"])} for k in cases()]
    return rows


def measure_memory_all(rows: list[dict], threads: int) -> None:
    """Adds each row's peak RSS increase ("mem") and, for ours FULL, the trace's bytes ("trace_mib")."""
    for row in rows:
        mem = measure_memory(row["key"], row["T"], threads)
        row["mem"] = mem["mib"]
        if "trace_mib" in mem:
            row["trace_mib"] = mem["trace_mib"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (a smoke run)")
    parser.add_argument("--threads", type=int, default=2, help="torch.set_num_threads (default 2)")
    parser.add_argument("--memory-child", nargs=2, metavar=("CASE", "T"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.memory_child:
        return memory_child(args.memory_child[0], int(args.memory_child[1]))

    started, load = time.perf_counter(), OtherLoad()
    reps, warmup = (QUICK_REPS, 1) if args.quick else (REPS, 2)
    ours = our_model()
    (sdpa, missing), (eager, _) = hf_model(ours, "sdpa"), hf_model(ours, "eager")
    models = {"ours": ours, "sdpa": sdpa, "eager": eager} | ({"tl": tl_bridge(ours)} if HAS_TL else {})
    print_header(models, missing, args.threads, reps, warmup, args.quick)
    diff = max_logit_diff(models, token_ids(64))
    print(f"check: max |logits(ours) - logits(transformers)| at T=64: {diff:.1e}")
    if diff > 1e-3:
        raise RuntimeError("the models disagree: the comparison would be meaningless")

    rows = measure_forward(models, reps, warmup)
    decode = decode_times(ours, reps["decode"], warmup)
    timed = time.perf_counter() - started
    measure_memory_all(rows, args.threads)  # after all timing: subprocesses are noise too

    print_table(rows)
    print("trace MiB: what ours FULL's trace holds (Trace.nbytes: every storage once, derived names not stored)")
    if not HAS_TL:
        print(TL_NOTE)
    print_decode(decode)
    print_targets(rows)
    print(load.report())
    print(f"runtime: {time.perf_counter() - started:.0f} s ({timed:.0f} s timing, then memory subprocesses)")
    full_1024 = next(r for r in rows if r["T"] == 1024 and r["key"] == "full")
    print(f"trace_mib_full T=1024: {full_1024['trace_mib']:.1f}")
    print(f"ratio_full_vs_transformers T=1024: {full_1024['vs_sdpa']:.2f}")


if __name__ == "__main__":
    main()
