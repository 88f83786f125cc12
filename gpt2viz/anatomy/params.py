"""Exact parameter accounting for every GPT-2 size, counted three independent ways.

1. Closed form from the config: V·d + n_ctx·d + n_layer·(12·d² + 13·d) + 2·d, and per component.
2. A real model's parameters (`GPT2` built on the meta device, so even gpt2-xl costs no memory).
3. A checkpoint's safetensors header alone (`weights.read_header`: no tensor data is read). Buffers
   such as `h.N.attn.bias` are listed apart and never counted; a tied `lm_head.weight` copy likewise.
   The header is reconciled tensor by tensor with the config inferred from its own shapes.

The component tree's accounting rows (`components.tensor_row`) are a fourth route; tests hold all equal.
Also reconciles the other totals people meet: transformers' 124,439,808 and 85,056,000 (without
embeddings), TransformerLens' 84,934,656 (weight matrices only), 163,037,184 (untied), and the
paper's "117M", which openai/gpt-2's README says came from an error in the original counts.
"""

import csv
import io
import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

import torch

from ..model.folder import CONFIG_FILE, MODEL_FILE, read_config
from ..model.gpt2 import GPT2
from ..model.weights import (
    FLOAT_DTYPES,
    _n_head_from,
    canonical,
    expected_shapes,
    has_biases,
    infer_config,
    read_header,
    split_keys,
)
from ..spec import costs
from ..spec.config import GPT2Config, get_config
from .components import Component, component_tree, fmt

# ---------------------------------------------------------------------------- names to components
TOP_COMPONENT = {"wte.weight": "embed.tok", "wpe.weight": "embed.pos", "ln_f.weight": "ln_f", "ln_f.bias": "ln_f",
                 "lm_head.weight": "unembed"}  # lm_head only in an untied config
BLOCK_COMPONENT = {"ln_1": "block.ln1", "attn.c_attn": "block.attn.qkv", "attn.c_proj": "block.attn.merge",
                   "ln_2": "block.ln2", "mlp.c_fc": "block.mlp.fc", "mlp.c_proj": "block.mlp.proj"}
_BLOCK = re.compile(r"^h\.\d+\.(.+)\.(weight|bias)$")


def component_of(name: str) -> str | None:
    """The component that owns a parameter (canonical checkpoint name), or None."""
    if name in TOP_COMPONENT:
        return TOP_COMPONENT[name]
    m = _BLOCK.match(name)
    return BLOCK_COMPONENT.get(m.group(1)) if m else None


# ---------------------------------------------------------------------------- 1. closed form
def closed_form(cfg: GPT2Config) -> dict[str, int]:
    """Parameters per instance of every learned leaf, by formula (m = d_mlp, b = 1 with biases)."""
    d, V, m, b = cfg.n_embd, cfg.vocab_size, cfg.d_mlp, int(cfg.bias)
    out = {"embed.tok": V * d, "embed.pos": cfg.n_positions * d, "block.ln1": d + b * d,
           "block.attn.qkv": d * 3 * d + b * 3 * d, "block.attn.merge": d * d + b * d, "block.ln2": d + b * d,
           "block.mlp.fc": d * m + b * m, "block.mlp.proj": m * d + b * d, "ln_f": d + b * d}
    return out if cfg.tied else out | {"unembed": V * d}


def closed_form_total(cfg: GPT2Config) -> int:
    """GPT-2: V·d + n_ctx·d + n_layer·(12·d² + 13·d) + 2·d; in general the MLP width m replaces 4d,
    a config without biases keeps only the LayerNorm gains (2·d per block, d at the end), and an
    untied head adds V·d."""
    d, V, m = cfg.n_embd, cfg.vocab_size, cfg.d_mlp
    block = 4 * d * d + 2 * d * m + (9 * d + m if cfg.bias else 2 * d)
    final = 2 * d if cfg.bias else d
    return V * d + cfg.n_positions * d + cfg.n_layer * block + final + (0 if cfg.tied else V * d)


def total_formula(cfg: GPT2Config) -> dict:
    """The total as a formula and as arithmetic text that evaluates to it."""
    m, D = cfg.d_mlp, fmt(cfg.n_embd)
    if cfg.standard_mlp:
        weights, weights_calc = "12·d²", f"12 × {D} × {D}"
    else:
        weights, weights_calc = "4·d² + 2·d·d_mlp", f"4 × {D} × {D} + 2 × {D} × {fmt(m)}"
    if not cfg.bias:
        small, small_calc, final, final_calc = "2·d", f"2 × {D}", "d", D
    elif cfg.standard_mlp:
        small, small_calc, final, final_calc = "13·d", f"13 × {D}", "2·d", f"2 × {D}"
    else:
        small, small_calc, final, final_calc = "9·d + d_mlp", f"9 × {D} + {fmt(m)}", "2·d", f"2 × {D}"
    head, head_calc = ("", "") if cfg.tied else (" + V·d", f" + {fmt(cfg.vocab_size)} × {D}")
    calc = (f"{fmt(cfg.vocab_size)} × {D} + {fmt(cfg.n_positions)} × {D} + "
            f"{cfg.n_layer} × ({weights_calc} + {small_calc}) + {final_calc}{head_calc}")
    return {"symbolic": f"V·d + n_ctx·d + n_layer·({weights} + {small}) + {final}{head}", "calculation": calc,
            "parameters": closed_form_total(cfg)}


# ---------------------------------------------------------------------------- 2. a model
def meta_model(cfg: GPT2Config) -> GPT2:
    """The model with shapes but no storage: counting gpt2-xl this way allocates nothing."""
    with torch.device("meta"):
        return GPT2(cfg)


def count_shapes(shapes: dict[str, tuple[int, ...]]) -> dict[str, int]:
    """Parameters per component (all instances) from canonical name -> shape."""
    out: dict[str, int] = {}
    for name, shape in shapes.items():
        cid = component_of(name)
        if cid is None:
            raise ValueError(f"{name!r} is not a GPT-2 parameter")
        out[cid] = out.get(cid, 0) + math.prod(shape)
    return out


def count_model(model: torch.nn.Module) -> dict[str, int]:
    """Parameters per component (all instances) summed over `model.named_parameters()`."""
    return count_shapes({name: tuple(p.shape) for name, p in model.named_parameters()})


# ---------------------------------------------------------------------------- 3. a header
@dataclass(frozen=True)
class TensorCheck:
    """One tensor of a checkpoint header against the expected model, or an expected one it lacks."""
    key: str  # as in the file (maybe with `transformer.`); the canonical name when missing
    name: str  # canonical checkpoint name
    dtype: str | None
    shape: tuple[int, ...] | None  # None when missing
    expected: tuple[int, ...] | None  # None when unexpected
    component: str | None
    status: str  # ok, shape, dtype, missing, unexpected

    @property
    def parameters(self) -> int:
        return 0 if self.shape is None else math.prod(self.shape)

    @property
    def problem(self) -> str | None:
        shape = None if self.shape is None else list(self.shape)
        expected = None if self.expected is None else list(self.expected)
        return {"ok": None,
                "shape": f"{self.key}: shape {shape}, expected {expected}",
                "dtype": f"{self.key}: dtype {self.dtype}, expected a floating-point type",
                "missing": f"{self.name}: missing (expected shape {expected})",
                "unexpected": f"{self.key}: not a parameter of this GPT-2 (shape {shape})"}[self.status]


@dataclass(frozen=True)
class HeaderCount:
    path: str
    file_size: int
    config: GPT2Config  # what the tensors were reconciled with
    compared_with: str  # "the config inferred from the header", or the preset when inference failed
    n_head_source: str
    prefix: str  # "transformer.", "" or "mixed"
    tensors: tuple[TensorCheck, ...]  # file order, then the missing ones
    buffers: tuple[tuple[str, str, tuple[int, ...]], ...]  # (key, dtype, shape): never counted
    lm_head: tuple[tuple[str, str, tuple[int, ...]], ...]  # a tied copy of wte: never counted
    notes: tuple[str, ...] = field(default=())

    @property
    def total(self) -> int:
        return sum(t.parameters for t in self.tensors if t.status != "unexpected")

    @property
    def mismatches(self) -> list[str]:
        return [t.problem for t in self.tensors if t.status != "ok"]

    def by_component(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for t in self.tensors:
            if t.component is not None and t.shape is not None:
                out[t.component] = out.get(t.component, 0) + t.parameters
        return out


def count_header(path, fallback: GPT2Config | None = None, n_head: int | None = None) -> HeaderCount:
    """Count a safetensors checkpoint from its header and check every tensor against the config
    inferred from the header's shapes (`fallback` when the shapes do not say what model it is). A
    folder's model.safetensors is checked against its config.json (a bias-free, untied model)."""
    path, config = Path(path), None
    if path.is_dir():
        config = read_config(path / CONFIG_FILE, path.name) if (path / CONFIG_FILE).is_file() else None
        path = path / MODEL_FILE
    header = read_header(path)
    params, buffers, heads = split_keys(header.entries)
    if config is not None and not config.tied:  # the output matrix is a parameter of its own
        params |= {canonical(k): k for k in heads if canonical(k) == "lm_head.weight"}
        heads = [k for k in heads if canonical(k) != "lm_head.weight"]
    shapes = {name: header.entries[key].shape for name, key in params.items()}
    if config is not None:
        cfg, compared_with, source, notes = config, "the folder's config.json", "config.json in the folder", []
    else:
        cfg, compared_with, source, notes = _reference_config(header, shapes, fallback, n_head)
    want = expected_shapes(cfg)
    checks = [_check(key, name, header.entries[key].dtype, header.entries[key].shape, want.get(name))
              for name, key in params.items()]
    checks += [TensorCheck(name, name, None, None, shape, component_of(name), "missing")
               for name, shape in want.items() if name not in params]
    for key in heads:
        e = header.entries[key]
        if canonical(key) != "lm_head.weight" or e.shape != want["wte.weight"]:
            checks.append(TensorCheck(key, canonical(key), e.dtype, e.shape, want["wte.weight"], None, "unexpected"))
    return HeaderCount(
        path=str(path), file_size=header.file_size, config=cfg, compared_with=compared_with,
        n_head_source=source, prefix=_prefix(params.values()), tensors=tuple(checks),
        buffers=tuple((k, header.entries[k].dtype, header.entries[k].shape) for k in buffers),
        lm_head=tuple((k, header.entries[k].dtype, header.entries[k].shape) for k in heads), notes=tuple(notes))


def _reference_config(header, shapes, fallback, n_head):
    source = "given"
    if n_head is None:
        n_head, source = _n_head_from(header, Path(header.path))
    try:
        cfg = infer_config(shapes, n_head, name=header.metadata.get("model", "checkpoint"))
        if not has_biases(shapes):  # nanoGPT's bias=False: no bias anywhere, not 2 per layer missing
            cfg = replace(cfg, bias=False)
        return cfg, "the config inferred from the header", source, []
    except ValueError as e:  # WeightsError, or a config that cannot exist
        if fallback is None:
            raise
        note = f"the header does not describe a GPT-2 by itself ({e}); compared with the {fallback.name} preset"
        return fallback, f"the {fallback.name} preset", "the preset", [note]


def _check(key: str, name: str, dtype: str, shape: tuple, expected: tuple | None) -> TensorCheck:
    status = ("unexpected" if expected is None else "shape" if tuple(shape) != tuple(expected)
              else "dtype" if dtype not in FLOAT_DTYPES else "ok")
    return TensorCheck(key, name, dtype, tuple(shape), expected, component_of(name), status)


def _prefix(keys) -> str:
    """How the parameter keys are named (lm_head sits outside `transformer.` even when they have it)."""
    prefixed = {k.startswith("transformer.") for k in keys}
    return "mixed" if len(prefixed) == 2 else "transformer." if prefixed == {True} else ""


# ---------------------------------------------------------------------------- other totals
PAPER_LABELS = {"gpt2": "117M", "gpt2-medium": "345M", "gpt2-large": "762M", "gpt2-xl": "1542M"}


def other_totals(cfg: GPT2Config) -> list[dict]:
    """The totals people meet for this config, each with its arithmetic and what it counts."""
    d, V, n, m = cfg.n_embd, cfg.vocab_size, cfg.n_layer, cfg.d_mlp
    total, wte, wpe = closed_form_total(cfg), V * d, cfg.n_positions * d
    width = "4d" if cfg.standard_mlp else "d_mlp"
    rows = [
        {"label": "tied total (transformers num_parameters())" if cfg.tied else "total (untied: lm_head counted)",
         "value": total, "calculation": total_formula(cfg)["calculation"],
         "explanation": "Every parameter once; the output matrix is the token table, so it is not counted again."
                        if cfg.tied else "Every parameter once, the separate output matrix lm_head [V, d] included."},
        {"label": "without embeddings (transformers num_parameters(exclude_embeddings=True))",
         "value": total - wte - wpe, "calculation": f"{fmt(total)} − {fmt(wte)} − {fmt(wpe)}",
         "explanation": "Drops the token table (V × d) and the position table (n_ctx × d); " +
                        ("LayerNorms and biases" if cfg.bias else "LayerNorm gains") + " stay in"
                        + ("." if cfg.tied else ", and so does the untied lm_head.")},
        {"label": "without the position table (nanoGPT's get_num_params())", "value": total - wpe,
         "calculation": f"{fmt(total)} − {fmt(cfg.n_positions)} × {fmt(d)}",
         "explanation": "nanoGPT prints its model size as get_num_params(non_embedding=True), which subtracts "
                        "only the position table wpe (n_ctx × d). The token table stays in: nanoGPT ties it to "
                        "the output layer, so those weights also serve as the final projection."},
        {"label": "weight matrices only (TransformerLens cfg.n_params)", "value": n * (4 * d * d + 2 * d * m),
         "calculation": f"{n} × (4 × {fmt(d)} × {fmt(d)} + 2 × {fmt(d)} × {fmt(m)})",
         "explanation": f"Per block W_Q, W_K, W_V, W_O (4 · d · nh · dh = 4d²) and W_in, W_out (2 · d · {width}); "
                        "no biases, no LayerNorms, no embeddings."},
        {"label": "if the output matrix were untied", "value": total + wte,
         "calculation": f"{fmt(total)} + {fmt(V)} × {fmt(d)}",
         "explanation": "A separate lm_head [V, d] would add a second V × d matrix (GPT-2 ties it: 0)."}
        if cfg.tied else
        {"label": "if the output matrix were tied (as in GPT-2 and nanoGPT)", "value": total - wte,
         "calculation": f"{fmt(total)} − {fmt(V)} × {fmt(d)}",
         "explanation": "Tying reuses the token table as the output matrix, so lm_head's V × d would go."},
    ]
    if cfg.name in PAPER_LABELS:
        rows.append({
            "label": f"the paper's label \"{PAPER_LABELS[cfg.name]}\"", "value": None, "calculation": None,
            "explanation": "The GPT-2 paper (Radford et al., 2019) lists the four sizes as 117M, 345M, 762M and "
                           "1542M. OpenAI later named the released checkpoints 124M, 355M, 774M and 1558M, and "
                           "the openai/gpt-2 README notes that the original counts in the paper and blog posts "
                           "were wrong because of an error (so small was called 117M and medium 345M). The "
                           "error itself is not documented; we know of no arithmetic on the released shapes "
                           "that gives 117M, and we do not invent one."})
    return rows


# ---------------------------------------------------------------------------- the report
def _component_dict(c: Component) -> dict:
    return {"id": c.id, "title": c.title, "parent": c.parent, "leaf": c.is_leaf, "learned": c.learned,
            "per_instance": c.per_instance, "instances": c.instances, "total": c.total,
            "rows": [r.as_dict() for r in c.rows], "weights_note": c.weights_note}


def _checkpoint_dict(h: HeaderCount, preset: GPT2Config) -> dict:
    cfg, expected = h.config, component_tree(h.config)
    by_comp = h.by_component()
    same = (cfg.n_layer, cfg.n_embd, cfg.vocab_size, cfg.n_positions) == \
           (preset.n_layer, preset.n_embd, preset.vocab_size, preset.n_positions)
    return {
        "path": h.path, "file_size": h.file_size, "prefix": h.prefix, "compared_with": h.compared_with,
        "config": {"name": cfg.name, "n_layer": cfg.n_layer, "n_head": cfg.n_head, "n_embd": cfg.n_embd,
                   "vocab_size": cfg.vocab_size, "n_positions": cfg.n_positions},
        "n_head_source": h.n_head_source, "total": h.total, "expected_total": expected.root.total,
        "matches": not h.mismatches and h.total == expected.root.total,
        "components": [{"id": c.id, "header": by_comp.get(c.id, 0), "expected": c.total}
                       for c in expected.leaves if c.total or c.id in by_comp],
        "tensors": [{"key": t.key, "name": t.name, "dtype": t.dtype, "shape": _list(t.shape),
                     "expected_shape": _list(t.expected), "parameters": t.parameters, "component": t.component,
                     "status": t.status, "problem": t.problem} for t in h.tensors],
        "buffers": [{"key": k, "dtype": dt, "shape": list(s), "elements": math.prod(s),
                     "note": "a buffer (the causal mask), not a parameter: not counted"} for k, dt, s in h.buffers],
        "lm_head": [{"key": k, "dtype": dt, "shape": list(s),
                     "note": "a copy of wte.weight (tied): not counted; equality not checked from the header"}
                    for k, dt, s in h.lm_head],
        "mismatches": h.mismatches,
        "preset": {"name": preset.name, "total": component_tree(preset).root.total, "same_sizes": same},
        "notes": list(h.notes),
    }


def _list(shape):
    return None if shape is None else list(shape)


def accounting_report(model: str | GPT2Config, checkpoint: str | None = None) -> dict:
    """The accounting of a preset (by name) or any config; with `checkpoint`, of the model its header
    describes, counted from the header alone and reconciled with that model tensor by tensor."""
    cfg = preset = get_config(model) if isinstance(model, str) else model
    ckpt = None
    if checkpoint is not None:
        h = count_header(checkpoint, fallback=preset)
        cfg, ckpt = h.config, _checkpoint_dict(h, preset)
    cat = component_tree(cfg)
    assert cat.root.total == closed_form_total(cfg), "component rows disagree with the closed form"
    return {"model": cfg.name, "config": cfg.sizes(), "total": cat.root.total, "formula": total_formula(cfg),
            "components": [_component_dict(c) for c in cat],
            "other_totals": other_totals(cfg),
            "weight_bytes": [c.as_dict() for c in costs.weight_bytes(cat.root.total)],
            "checkpoint": ckpt}


# ---------------------------------------------------------------------------- CSV
CSV_CONFIG = ("vocab_size", "n_positions", "n_embd", "n_layer", "n_head", "n_inner", "bias", "tied")
CSV_COLUMNS = ("model", *CSV_CONFIG, "component_id", "parent_id", "component", "row", "calculation",
               "parameters_each", "instances", "parameters", "tensors")


def accounting_csv(report: dict) -> str:
    """The accounting as CSV that sums: one line per row of a leaf component only (a parent's rows
    are its children's), its parent named; `parameters` = `parameters_each` × `instances`, so the
    column adds up to the total. Every line carries the model and the config it was counted for."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    config = [str(report["config"][k]).lower() if isinstance(report["config"][k], bool) else report["config"][k]
              for k in CSV_CONFIG]
    for c in report["components"]:
        if not c["leaf"]:
            continue
        for row in c["rows"] or [{"name": "(owns no weights)", "calculation": "", "parameters": 0, "tensors": []}]:
            w.writerow([report["model"], *config, c["id"], c["parent"] or "", c["title"], row["name"],
                        row["calculation"], row["parameters"], c["instances"], row["parameters"] * c["instances"],
                        " ".join(row["tensors"])])
    return buf.getvalue()


# ---------------------------------------------------------------------------- text
def _depths(components: list[dict]) -> dict[str, int]:
    depth: dict[str, int] = {}
    for c in components:  # tree order: parents first
        depth[c["id"]] = 0 if c["parent"] is None else depth[c["parent"]] + 1
    return depth


def format_accounting(report: dict) -> str:
    """The report as a text table with the arithmetic of every row."""
    f = report["formula"]
    c = report["config"]
    sizes = (f"V={c['vocab_size']:,} n_ctx={c['n_positions']:,} d={c['n_embd']:,} n_layer={c['n_layer']} "
             f"n_head={c['n_head']} d_mlp={c['n_inner']:,}" + ("" if c["bias"] else " · no biases")
             + ("" if c["tied"] else " · untied head"))
    lines = [f"{report['model']}: {report['total']:,} parameters ({sizes})",
             f"  {f['symbolic']}", f"  = {f['calculation']}", f"  = {f['parameters']:,}", "",
             f"  {'component':52s} {'per instance':>13s}  {'×':>3s} {'total':>14s}"]
    depth = _depths(report["components"])
    for c in report["components"]:
        pad = "  " * depth[c["id"]]
        label = f"{pad}{c['id']}  {c['title']}"
        lines.append(f"  {label:52s} {c['per_instance']:>13,}  {c['instances']:>3} {c['total']:>14,}")
        for r in c["rows"] if c["leaf"] else []:
            if r["tensors"]:
                lines.append(f"  {pad}    {r['name']}: {r['calculation']} = {r['parameters']:,}  "
                             f"[{', '.join(r['tensors'])}]")
        if c["weights_note"]:
            lines.append(f"  {pad}    {c['weights_note']}")
    lines += ["", "other totals you may meet"]
    for o in report["other_totals"]:
        value = f"{o['value']:,}" if o["value"] is not None else "—"
        lines.append(f"  {value:>14s}  {o['label']}" + (f": {o['calculation']}" if o["calculation"] else ""))
        lines.append(f"                  {o['explanation']}")
    lines += ["", "weights in memory"]
    for w in report["weight_bytes"]:
        lines.append(f"  {w['name']:5s} {w['calculation']} = {w['value']:,} bytes ({costs.human_bytes(w['value'])})")
    if report["checkpoint"]:
        lines += ["", *_format_checkpoint(report["checkpoint"])]
    return "\n".join(lines)


def _format_checkpoint(c: dict) -> list[str]:
    problems = f" ({len(c['mismatches'])} problems)" if c["mismatches"] else ""
    verdict = ("matches " if c["matches"] else "DOES NOT MATCH ") + c["compared_with"] + problems
    cfg = c["config"]
    lines = [f"checkpoint {c['path']} (header only, {c['file_size']:,} bytes): {c['total']:,} parameters, {verdict}",
             f"  n_layer={cfg['n_layer']} n_embd={cfg['n_embd']} V={cfg['vocab_size']:,} n_ctx={cfg['n_positions']:,} "
             f"n_head={cfg['n_head']} ({c['n_head_source']}); key prefix: {c['prefix'] or 'none'}"]
    for comp in c["components"]:
        mark = "ok" if comp["header"] == comp["expected"] else "MISMATCH"
        lines.append(f"  {comp['id']:17s} header {comp['header']:>14,}  expected {comp['expected']:>14,}  {mark}")
    lines += [f"  problem: {m}" for m in c["mismatches"]]
    lines += [f"  buffer (not counted): {b['key']} {b['dtype']} {b['shape']}" for b in c["buffers"]]
    lines += [f"  tied copy (not counted): {h['key']} {h['dtype']} {h['shape']}" for h in c["lm_head"]]
    if not c["preset"]["same_sizes"]:
        lines.append(f"  note: the header's sizes differ from the {c['preset']['name']} preset "
                     f"({c['preset']['total']:,} parameters); the table above describes the checkpoint")
    lines += [f"  note: {n}" for n in c["notes"]]
    return lines
