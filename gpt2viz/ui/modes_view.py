"""Data for the modes page: the text in every mode, shapes side by side, cache growth."""

from ..model.modes import Mode
from ..spec import costs
from ..spec.schema import concrete, recorded, symbolic
from .anatomy import run_values, runs_in
from .state import MODE_LABELS, Selection


def mode_summary(sel: Selection) -> list[dict]:
    cfg, rows = sel.config, []
    for mode in Mode:
        if not runs_in(sel, mode):
            rows.append({"mode": MODE_LABELS[mode], "T (positions computed)": "needs 2 tokens"})
            continue
        v = run_values(sel, mode)
        flops = costs.flops_summary(cfg, mode, v["B"], v["T"], v["L"])
        cached_before = 0 if mode is Mode.PREFILL else v["P"]  # prefill's P names the prompt it caches
        rows.append({"mode": MODE_LABELS[mode], "T (positions computed)": v["T"],
                     "cached before the step": cached_before, "L (keys read)": v["L"],
                     "logits": str([v["B"], 1 if mode is Mode.PREFILL else v["T"], v["V"]]),
                     "forward FLOPs": f"{flops['forward']['value']:,}",
                     "KV cache after": f"{costs.kv_cache_bytes(cfg, 1, v['L']).value:,} B"
                     if mode in (Mode.PREFILL, Mode.DECODE) else "none"})
    if all(len(row) == len(rows[0]) for row in rows):
        return rows
    return [{k: str(row.get(k, "—")) for k in rows[0]} for row in rows]  # one column, one type (Arrow)


def mode_shapes_table(sel: Selection) -> list[dict]:
    """One row per recorded name of block 0 (and the top-level ones), one column per mode."""
    cfg = sel.config
    table: dict[str, dict] = {}
    for mode in (m for m in Mode if runs_in(sel, m)):  # a mode the text cannot run in: a column of "—"
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
