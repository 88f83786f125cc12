"""Data for the modes page: the text in every mode, shapes side by side, cache growth."""

from ..anatomy.components import component_tree
from ..model.modes import Mode
from ..spec import costs
from ..spec.config import GPT2Config
from ..spec.schema import concrete, recorded, symbolic
from .anatomy import run_values
from .state import MODE_LABELS, Selection


def mode_summary(sel: Selection) -> list[dict]:
    cfg, rows = sel.config, []
    for mode in Mode:
        v = run_values(sel, mode)
        flops = costs.flops_summary(cfg, mode, v["B"], v["T"], v["L"])
        cached_before = 0 if mode is Mode.PREFILL else v["P"]  # prefill's P names the prompt it caches
        rows.append({"mode": MODE_LABELS[mode], "T (positions computed)": v["T"],
                     "cached before the step": cached_before, "L (keys read)": v["L"],
                     "logits": str([v["B"], 1 if mode is Mode.PREFILL else v["T"], v["V"]]),
                     "forward FLOPs": f"{flops['forward']['value']:,}",
                     "KV cache after": f"{costs.kv_cache_bytes(cfg, 1, v['L']).value:,} B"
                     if mode in (Mode.PREFILL, Mode.DECODE) else "none"})
    return rows


def mode_shapes_table(sel: Selection) -> list[dict]:
    """One row per recorded name of block 0 (and the top-level ones), one column per mode."""
    cfg = sel.config
    table: dict[str, dict] = {}
    for mode in Mode:
        v = run_values(sel, mode)
        for name, axes, _ in recorded(cfg, mode):
            if name.startswith(("blocks.", "grad.")) and not name.startswith(("blocks.0.", "grad.blocks.0.")):
                continue
            if name.startswith(("grad.h.", "grad.wte", "grad.wpe", "grad.ln_f")):
                continue
            row = table.setdefault(name, {"tensor": name, "symbolic": symbolic(axes)})
            row[MODE_LABELS[mode]] = str(concrete(axes, v))
    return [{k: row.get(k, "—") for k in ["tensor", "symbolic"] + [MODE_LABELS[m] for m in Mode]}
            for row in table.values()]


def why_decode_is_cheap(cfg: GPT2Config, n: int) -> str:
    """In words, with the figures of costs.decode_step_vs_full: one query against L cached keys."""
    c = costs.decode_step_vs_full(cfg, n, component_tree(cfg).root.total)
    ratio = c["full"].value / c["decode"].value
    return (f"Decoding the last of these **{n:,}** tokens runs **one query**, the new token's, against **L = {n:,}** "
            f"keys and values: {n - 1:,} read from the cache and its own. That step takes "
            f"**{c['decode'].value:,} FLOPs**; a full pass over the same text takes **{c['full'].value:,}**, "
            f"{ratio:,.1f} times as many. Every matrix multiply works on 1 row instead of {n:,}, and attention "
            f"compares 1 query with {n:,} keys ({c['decode_attention'].value:,} FLOPs) instead of {n:,} queries with "
            f"{n:,} keys each ({c['full_attention'].value:,}: the full pass computes every score and masks the "
            f"later keys' afterwards, so query i uses only the first i + 1). What the step reads instead is the cache: "
            f"**{c['cache'].value:,} bytes** ({costs.human_bytes(c['cache'].value)}, fp32) of keys and values for the "
            f"{n - 1:,} earlier positions, beside the {c['weights'].value:,} bytes "
            f"({costs.human_bytes(c['weights'].value)}) of fp32 weights that both read.")


def why_decode_waits_on_memory(cfg: GPT2Config, n: int) -> str:
    """A decode step's arithmetic per byte it must read, against a full pass's: why it is limited by
    memory, not arithmetic; and what the cache costs per token."""
    c = costs.decode_step_vs_full(cfg, n, component_tree(cfg).root.total)
    read = c["weights"].value + c["cache"].value  # bytes both must read at least once
    per_token = costs.kv_cache_bytes(cfg, 1, 1).value  # one position's keys and values, every layer
    ratio = c["full"].value / c["decode"].value
    return (f"A decode step does 1/{ratio:,.0f} of a full pass's arithmetic, but it still "
            f"reads every weight and the whole cache: about **{c['decode'].value / read:.2f} FLOPs per byte read**, "
            f"against **{c['full'].value / c['weights'].value:,.0f}** for a full pass over the same {n:,} tokens, "
            "which reads the weights once and no cache (about n/2 per byte in fp32). A processor needs tens (CPU) to "
            "hundreds (GPU) of operations per byte fetched to keep busy; below that it waits on memory. A decode "
            "step is always far below; a full pass rises above only on long texts. This project's "
            "benchmark (README, `benchmarks/bench_forward.py`) measured a gpt2 decode step against "
            "1,000 cached positions at 1/38 of a full pass's time, although its arithmetic is 1/1,001. Each token "
            f"adds 2 · n_layer · d · 4 bytes = 2 · {cfg.n_layer} · {cfg.n_embd} · 4 = **{per_token:,} bytes** "
            f"({costs.human_bytes(per_token)}, fp32) to the cache.")
