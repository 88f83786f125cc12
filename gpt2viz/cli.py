"""`python -m gpt2viz {trace,names,params,shapes,ablate,patch,heads,attribute,paths,lesson,convert,weights,
class-server,app}`: the command line of DESIGN.md.

Exit 0 on success; on bad input exit 2 with one line on stderr that says what is wrong.
"""

import argparse
import contextvars
import json
import os
import sys

from safetensors import SafetensorError

from .anatomy.components import component_tree
from .spec import costs
from .spec.config import PRESETS, GPT2Config, custom_config, get_config
from .spec.schema import Mode, concrete, dims, recorded, recorded_names, run_dims, stored, symbolic

LINK_BASE = "http://localhost:8501"  # where `lesson link` points by default: the app run locally


class UsageError(Exception):
    pass


class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, not argparse's usage block
        raise UsageError(f"{self.prog}: {message}")


def _common_model(p, weights=True):
    p.add_argument("--model", default="gpt2", help=f"preset: {', '.join(PRESETS)} (default gpt2)")
    if weights:
        p.add_argument("--weights", help="a model.safetensors in Hugging Face layout, a folder (model.safetensors, "
                       "config.json, tokenizer.json: convert nanogpt writes one), or demo for the demo model "
                       "(instead of --model)")
        p.add_argument("--seed", type=int, default=0, help="seed of the random weights and of dropout")
        p.add_argument("--n-head", type=int, help="head count, where the weights file does not record it")


def _no_dropout(p):
    p.add_argument("--no-dropout", dest="dropout", action="store_false",
                   help="training with dropout off (its loss is then the evaluation loss; no masks recorded)")


SIZE_FLAGS = ("vocab_size", "n_positions", "n_embd", "n_layer", "n_head", "n_inner")


def _custom_config_flags(p):
    """Any GPT-2-shaped config: the sizes given override the --model preset's."""
    g = p.add_argument_group("a custom config (any flag given makes one; the rest come from --model)")
    for flag in SIZE_FLAGS:
        g.add_argument("--" + flag.replace("_", "-"), type=int, metavar="N")
    g.add_argument("--no-bias", action="store_true", help="no Linear or LayerNorm biases (nanoGPT's bias=False)")
    g.add_argument("--untied-head", action="store_true", help="a separate output matrix lm_head [V, d]")


def model_config(a):
    """The preset --model, or the custom config the size flags describe."""
    base = get_config(a.model)
    given = {f: getattr(a, f) for f in SIZE_FLAGS if getattr(a, f) is not None}
    if not given and not a.no_bias and not a.untied_head:
        return base
    if getattr(a, "checkpoint", None):
        raise UsageError("gpt2viz: error: --checkpoint counts a file: give it without the custom config flags")
    sizes = {f: getattr(base, f) for f in SIZE_FLAGS} | {"n_inner": None} | given
    return custom_config(**sizes, bias=not a.no_bias, tied=not a.untied_head)


def early_checks(a) -> None:
    """The arguments' errors that need no model, found before torch is imported (one line in ~0.1 s,
    not after 1-3 s of imports): the preset, a weights path, the text, a block or head out of range,
    a count below 1. The commands check again on the model they build."""
    from pathlib import Path

    from .model import tokenizer
    from .model.demo_recipe import DEMO_PATH

    cfg = model_config(a) if hasattr(a, "no_bias") else get_config(a.model) if hasattr(a, "model") else None
    weights = getattr(a, "weights", None)
    if weights and weights != "demo" and not Path(weights).exists():
        raise ValueError(f"no weights file at {weights}")
    if weights == "demo" and not DEMO_PATH.is_file():
        raise ValueError(f"no demo model at {DEMO_PATH}: make it with python -m gpt2viz train-demo")
    if weights:
        cfg = None  # the file's own config decides the sizes below
    for text in (getattr(a, k, None) for k in ("text", "clean", "corrupt")):
        if text is not None:
            tokenizer.encode(text, max_tokens=None if cfg is None or a.command == "attribute" else cfg.n_positions)
    if cfg is not None and a.command == "ablate":
        tops = {"block": cfg.n_layer, "head": cfg.n_head, "neuron": cfg.d_mlp}
        for key, top in tops.items():
            value = getattr(a, key)
            if value is not None and not 0 <= value < top:
                raise ValueError(f"{key} must be between 0 and {top - 1}, got {value}")
    for key in ("threads", "processes"):  # with --upstream, 0 processes of its own is allowed
        if getattr(a, key, 1) < 1 and not getattr(a, "upstream", None):
            raise ValueError(f"--{key} must be at least 1, got {getattr(a, key)}")
    if a.command == "download" and a.name not in {n for n, c in PRESETS.items() if c.hf_repo}:
        raise ValueError(f"no published checkpoint called {a.name!r}; choose one of "
                         f"{', '.join(n for n, c in PRESETS.items() if c.hf_repo)}")
    if a.command == "convert" and not Path(a.checkpoint).is_file():
        raise ValueError(f"no checkpoint at {a.checkpoint}")


def _recipe_options(p) -> None:
    """One option per number of the demo model's Recipe (--seed, --steps, --n-head, ...)."""
    from dataclasses import fields

    from .model.demo_recipe import Recipe

    kinds = {"int": int, "float": float, "str": str}
    for f in fields(Recipe):
        if str(getattr(f.type, "__name__", f.type)) in kinds:
            kind = kinds[str(getattr(f.type, "__name__", f.type))]
            p.add_argument("--" + f.name.replace("_", "-"), type=kind, default=f.default, help=f"default {f.default}")


def build_parser() -> Parser:
    parser = Parser(prog="gpt2viz", description="Record, count and shape every tensor GPT-2 computes.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    modes = [m.value for m in Mode]

    p = sub.add_parser("trace", help="run a text and record every intermediate tensor")
    p.add_argument("--text", required=True)
    _common_model(p)
    p.add_argument("--mode", default="full", choices=modes)
    _no_dropout(p)
    p.add_argument("--out", help="write every recorded tensor to this .safetensors file")
    p.add_argument("--hook-names", action="store_true",
                   help="with --out: TransformerLens' hook names and layouts (names with no hook keep ours)")
    p.add_argument("--names", nargs="*", help="record only these names or glob patterns")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("names", help="list the recorded names of a mode, in execution order")
    _common_model(p, weights=False)
    p.add_argument("--mode", default="full", choices=modes)
    _no_dropout(p)

    p = sub.add_parser("params", help="the exact parameter accounting of every component")
    _common_model(p, weights=False)
    p.add_argument("--checkpoint", help="count from this safetensors header alone and reconcile")
    _custom_config_flags(p)
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("shapes", help="every recorded tensor's shape in a mode")
    _common_model(p, weights=False)
    p.add_argument("--mode", default="full", choices=modes)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--tokens", type=int, default=None, help="T (default 8; 1 in decode)")
    p.add_argument("--past", type=int, default=None, help="P, cached positions (prefill/decode)")
    _no_dropout(p)
    _custom_config_flags(p)
    p.add_argument("--json", action="store_true")
    p = sub.add_parser("train-demo", help="train the small demo model (assets/demo-model/model.safetensors)")
    _recipe_options(p)
    p.add_argument("--out", help="where to write model.safetensors (default: the app's demo model)")
    p.add_argument("--threads", type=int, default=2, help="CPU threads (default 2)")

    p = sub.add_parser("weights", help="write a preset's random weights (the app's seeded draw) to a .safetensors")
    p.add_argument("--model", default="gpt2", help=f"preset: {', '.join(PRESETS)} (default gpt2)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random weights (the app's seed; default 0)")
    p.add_argument("--out", required=True, help="the file to write, in the Hugging Face layout (transformers' "
                   "GPT2LMHeadModel reads it with load_state_dict)")

    p = sub.add_parser("ablate", help="knock out a head, a block's attention, its MLP or a neuron, and compare")
    p.add_argument("--text", required=True)
    _common_model(p)
    p.add_argument("--block", type=int, required=True)
    part = p.add_mutually_exclusive_group()
    part.add_argument("--head", type=int, help="this head's output (attn.z); default: the block's whole attention")
    part.add_argument("--mlp", action="store_true", help="the block's MLP (mlp.out)")
    part.add_argument("--neuron", type=int, help="this neuron of the MLP (mlp.post)")
    p.add_argument("--method", default="zero", choices=["zero", "mean"], help="zero, or the mean over positions")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("patch", help="activation patching: clean text's activations into the corrupt text's run")
    p.add_argument("--clean", required=True, help="text A, whose activations are patched in")
    p.add_argument("--corrupt", required=True, help="text B, of the same length in tokens")
    p.add_argument("--estimate", action="store_true",
                   help="also attribution patching: the linear estimate of every cell from one forward and one "
                        "backward pass, with its correlation to the exact grid and the worst cell")
    _common_model(p)
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("attribute", help="direct logit attribution: each head's, MLP's and bias's share of a logit")
    p.add_argument("--text", required=True)
    p.add_argument("--answer", required=True, help="one token, such as ' after' (mind the space)")
    p.add_argument("--versus", help="a second token: attribute logit(answer) - logit(versus)")
    p.add_argument("--position", type=int, help="0-based token index (default: the last)")
    _common_model(p)
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("paths", help="path patching: a head's or an MLP's output removed from one later part's input")
    p.add_argument("--text", required=True)
    p.add_argument("--answer", required=True, help="one token, such as ' after' (mind the space)")
    p.add_argument("--versus", help="a second token: logit is logit(answer) - logit(versus)")
    p.add_argument("--position", type=int, help="0-based token index (default: the last)")
    p.add_argument("--sender", required=True, help="a head (blocks.0.attn.head.0) or an MLP (blocks.0.mlp)")
    p.add_argument("--receiver", action="append", help="only this receiver (repeatable): blocks.1.attn.head.0.k, "
                   "blocks.1.mlp, logits; default: every receiver of the sender")
    p.add_argument("--ablation", default="zero", choices=["zero", "mean"], help="zero, or the mean over positions")
    _common_model(p)
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("heads", help="score every head on a text (full mode): previous-token, induction, ...")
    p.add_argument("--text", required=True, help="a text that repeats itself gives every head an induction score")
    _common_model(p)
    p.add_argument("--json", action="store_true")

    sub.add_parser("app", help="start the app (flags after it go to streamlit run, e.g. --server.port 8600)")
    p = sub.add_parser("class-server", help="N app processes behind nginx, one per core, for a class (Ctrl-C stops)")
    p.add_argument("--processes", type=int, default=os.cpu_count() or 1, help="app processes (default: the cores)")
    p.add_argument("--port", type=int, default=8501,
                   help="where nginx listens (default 8501); with --backends-only, the first app process's port")
    p.add_argument("--address", default="0.0.0.0",
                   help="nginx's address (default 0.0.0.0: every interface); with --backends-only, the private "
                        "address the app processes listen on, for the front host alone")
    p.add_argument("--backends-only", action="store_true",
                   help="a backend host: the app processes on --address, ports --port, --port+1, ..., no nginx")
    p.add_argument("--upstream", nargs="+", default=[], metavar="HOST:PORT",
                   help="other hosts' app processes (their --backends-only), behind this host's nginx too")
    p = sub.add_parser("download", help="fetch a real GPT-2 checkpoint into the Hugging Face cache (network)")
    published = [name for name, cfg in PRESETS.items() if cfg.hf_repo]
    p.add_argument("name", nargs="?", default="gpt2", help=f"one of {', '.join(published)} (default gpt2)")

    p = sub.add_parser("convert", help="a nanoGPT ckpt.pt (and meta.pkl) as a weights folder, on your own machine")
    p.add_argument("kind", choices=["nanogpt"], help="the checkpoint's trainer")
    p.add_argument("checkpoint", help="nanoGPT's ckpt.pt (read with torch.load(weights_only=True))")
    p.add_argument("--meta", help="its meta.pkl (a character vocabulary); without it, GPT-2's BPE")
    p.add_argument("--out", required=True, help="the folder to write: model.safetensors, config.json, tokenizer.json")

    p = sub.add_parser("lesson", help="check a lesson file, print its signed link (needs GPT2VIZ_LESSON_KEY), or "
                                      "export it as a static website")
    p.add_argument("action", choices=["check", "link", "export"])
    p.add_argument("file", help="a lesson (.json or .toml), e.g. lessons/attention-demo.json")
    p.add_argument("--expires-in", type=float, metavar="HOURS", help="the link stops working after this long")
    p.add_argument("--base", help=f"the app's address (a link's, default {LINK_BASE}; for export, each stop page "
                                  "links to its view there)")
    p.add_argument("--out", help="export: the folder to write the site in (index.html, a page per stop)")

    p = sub.add_parser("class", help="the class vote's answers: results per lesson, stop and round, or clear them")
    p.add_argument("action", choices=["results", "clear"])
    p.add_argument("--lesson", help="a lesson's signed link, or its file (signed here with GPT2VIZ_LESSON_KEY, "
                                    "without an expiry); results without it: every lesson")
    p.add_argument("--csv", metavar="FILE", help="results: write them as CSV to FILE ('-': standard output)")
    p.add_argument("--before", metavar="YYYY-MM-DD", help="clear: only the votes before this day (UTC)")
    return parser


# ---------------------------------------------------------------------------- shapes
def shapes_report(model: str | GPT2Config, mode, B: int = 1, T: int | None = None, P: int | None = None,
                  dropout: bool = True) -> dict:
    """Every recorded tensor of `mode` for a preset (by name) or any config, symbolic and concrete,
    in execution order, with the costs."""
    cfg = get_config(model) if isinstance(model, str) else model
    mode = Mode.parse(mode)
    run = run_dims(cfg, mode, B, T, P)
    values = dims(cfg, run["B"], run["T"], run["P"], run["L"])
    tensors = [{"name": name, "symbolic": symbolic(axes), "shape": concrete(axes, values), "dtype": dtype}
               for name, axes, dtype in recorded(cfg, mode, dropout)]
    variant = "".join(f" {v}" for v in cfg.variant())
    held = [(concrete(axes, values), dtype) for _, axes, dtype in stored(cfg, mode, run["P"], dropout)]
    return {"model": cfg.name, "mode": mode.value, **run, "symbols": values, "variant": variant, "tensors": tensors,
            "costs": costs.mode_costs(cfg, mode, run, held, component_tree(cfg).root.total)}


def format_shapes(report: dict) -> str:
    """A readable table of `shapes_report`: name, symbolic and concrete shape, then the costs."""
    s = report["symbols"]
    head = (f"{report['model']} · {report['mode']} · B={report['B']} T={report['T']} P={report['P']} "
            f"L={report['L']} · d={s['d']} nh={s['nh']} dh={s['dh']} V={s['V']:,}{report['variant']} · "
            f"{len(report['tensors'])} tensors")
    width = max(len(t["name"]) for t in report["tensors"])
    lines = [head]
    for t in report["tensors"]:
        flag = "  bool" if t["dtype"] == "bool" else ""
        lines.append(f"  {t['name']:{width}s}  {t['symbolic']:18s} {t['shape']}{flag}")
    return "\n".join(lines + ["", costs.format_costs(report["costs"])])


# ---------------------------------------------------------------------------- commands
def _model(a):
    """The model of --weights, or random --model weights of --seed."""
    from .model import tokenizer
    from .model.demo_recipe import DEMO_PATH
    from .model.folder import load_weights
    from .model.weights import random_model

    if a.weights == "demo":
        if not DEMO_PATH.is_file():
            raise ValueError(f"no demo model at {DEMO_PATH}: make it with python -m gpt2viz train-demo")
        a.weights = str(DEMO_PATH)
    if a.weights:
        loaded = load_weights(a.weights, n_head=a.n_head)
        model = loaded.model
        if loaded.n_head_source.startswith("assumed"):
            print(f"gpt2viz: note: {a.weights} does not record its head count; assumed {model.config.n_head} "
                  f"(head size {model.config.d_head}); pass --n-head to set it", file=sys.stderr)
        tokenizer.use(tokenizer.vocabulary_of(model))  # every text and token label of this command
        return model
    return random_model(get_config(a.model), a.seed)


def cmd_trace(a) -> int:
    from .model import tokenizer
    from .model.modes import run

    model = _model(a)
    ids = tokenizer.encode(a.text, max_tokens=model.config.n_positions)
    trace = run(model, ids, a.mode, names=a.names, seed=a.seed, dropout=a.dropout)
    if a.hook_names and not a.out:
        raise UsageError("trace: --hook-names is for --out FILE")
    shapes = None  # the tensors as the file names them, when it names them otherwise than the trace
    if a.out and a.hook_names:
        from safetensors import safe_open

        from .anatomy.hooks import save_as_hooks

        written = save_as_hooks(trace, a.out, model.config.layer_norm_epsilon)
        with safe_open(str(a.out), framework="pt") as f:  # read back from the file: what it holds
            shapes = {n: list(f.get_slice(n).get_shape()) for n in written}
    elif a.out:
        trace.save(a.out)
    if a.json:
        print(json.dumps({"model": trace.model, "mode": trace.mode.value, "token_ids": list(trace.token_ids),
                          "tokens": list(trace.tokens), "P": trace.P, "L": trace.L,
                          "tensors": shapes or {n: list(trace[n].shape) for n in trace.names}}))
    else:
        print(f"{trace.model} · {trace.mode.value} · {len(trace.token_ids)} tokens · P={trace.P} L={trace.L} · "
              f"{len(trace.names)} tensors, {trace.nbytes / 2**20:,.1f} MiB held"
              + (f" → {a.out}" if a.out else ""))
        if shapes:  # what the file holds, under TransformerLens' names and in its layouts
            for name, shape in shapes.items():
                print(f"  {name:40s} {shape}")
        for name in () if shapes else trace.names:  # derived ones computed one at a time
            print(f"  {name:40s} {list(trace[name].shape)}")
    return 0


def cmd_ablate(a) -> int:
    from .analysis.whatif import Target, ablation_report
    from .model import tokenizer

    model = _model(a)
    ids = tokenizer.encode(a.text, max_tokens=model.config.n_positions)
    part, index = ("head", a.head) if a.head is not None else ("neuron", a.neuron) if a.neuron is not None else (
        ("mlp", 0) if a.mlp else ("attn", 0))
    r = ablation_report(model, ids, Target(a.block, part, index), a.method)
    if a.json:
        print(json.dumps(r))
        return 0
    top = r["top_token"]
    print(f"{r['model']} · {len(ids)} tokens · {part} {r['target']['name']} knocked out ({a.method})")
    print(f"  top next token {top['token']!r}: p {top['prob_before']:.4g} -> {top['prob_after']:.4g}, "
          f"logit change {top['logit_change']:+.4g}")
    if r["loss_before"] is not None:
        print(f"  mean next-token loss {r['loss_before']:.4f} -> {r['loss_after']:.4f}")
    print("  changed most: " + ", ".join(f"{c['name']} ({c['relative_change']:.3g})" for c in r["changed_most"]))
    return 0


def cmd_patch(a) -> int:
    from .analysis.whatif import patching_report
    from .model import tokenizer

    model = _model(a)
    clean = tokenizer.encode(a.clean, max_tokens=model.config.n_positions)
    corrupt = tokenizer.encode(a.corrupt, max_tokens=model.config.n_positions)
    r = patching_report(model, clean, corrupt)
    if a.estimate:
        from .analysis import estimate as est
        from .analysis.whatif import patch

        exact = patch(model, clean, corrupt)
        r["estimate"] = est.report(exact, est.estimate(model, clean, corrupt, exact.answers))
    if a.json:
        print(json.dumps(r))
        return 0
    (ta, tb) = (x["token"] for x in r["answers"])
    print(f"{r['model']} · {len(clean)} tokens · metric logit[{ta!r}] - logit[{tb!r}]: "
          f"clean {r['clean_logit_diff']:.4g}, corrupt {r['corrupt_logit_diff']:.4g}")
    print("restored fraction, resid_pre (rows: blocks, columns: positions)")
    for b, row in enumerate(r["restored"]["resid_pre"]):
        print(f"  {b:3d} " + " ".join("   nan" if v is None else f"{v:6.2f}" for v in row))
    for key in ("resid_pre", "attn_z") if a.estimate else ():
        g = r["estimate"][f"{key}_agreement"]
        print(f"linear estimate, {key}: correlation {g['correlation']}, worst cell {g['worst']} (exact {g['exact']}, "
              f"estimate {g['estimate']}), {g['misses']} of {g['cells']} cells off by more than {g['miss_above']}")
    return 0


def cmd_heads(a) -> int:
    from .analysis.heads import SCORES, find_heads, head_name, ranked
    from .model import tokenizer

    model = _model(a)
    ids = tokenizer.encode(a.text, max_tokens=model.config.n_positions)
    rows = find_heads(model, ids)
    if a.json:
        print(json.dumps(rows))
        return 0
    print(f"{model.config.name} · {len(ids)} tokens · full · {len(rows)} heads")
    print("block head  previous  induction  first  entropy  distance")
    for r in rows:  # "-": no query of this text scores it (heads.py says which)
        prev, ind, first = ("-" if r[k] is None else f"{r[k]:.3f}"
                            for k in ("previous_token", "induction", "first_token"))
        print(f"{r['block']:5d} {r['head']:4d}  {prev:>8s}  {ind:>9s}  {first:>5s}  "
              f"{r['entropy']:7.3f}  {r['mean_distance']:8.2f}")
    for key, s in SCORES.items():
        top = ranked(rows, key)[:3]
        print(f"{s.title}: " + (", ".join(f"{head_name(r)} ({r[key]:.3g})" for r in top)
                                or "no position of this text scores it"))
    return 0


def cmd_attribute(a) -> int:
    from .analysis.attribution import attribute_text, check_position, one_token
    from .model import tokenizer

    model = _model(a)  # first: a weights folder brings its own vocabulary, which the tokens below are read in
    answer, versus = one_token(a.answer, "--answer"), None if a.versus is None else one_token(a.versus, "--versus")
    ids = tokenizer.encode(a.text)
    check_position(a.position, len(ids))
    if len(ids) > model.config.n_positions:
        raise ValueError(f"{len(ids):,} tokens exceed the context of {model.config.n_positions:,}")
    r = attribute_text(model, ids, answer, versus, a.position).report()
    if a.json:
        print(json.dumps(r))
        return 0
    what = f"logit({r['answer']!r})" + ("" if versus is None else f" - logit({r['versus']!r})")
    print(f"{r['model']} · {len(ids)} tokens · position {r['position']} "
          f"({tokenizer.readable(ids[r['position']])!r}) · {what} = {r['target']:.6g}")
    width = max(len(row["component"]) for row in r["rows"])
    for row in r["rows"]:
        print(f"  {row['component']:{width}s}  {row['value']:+.6f}")
    print(f"  {'sum':{width}s}  {sum(row['value'] for row in r['rows']):+.6f}  (residual {r['residual']:+.2e})")
    return 0


def cmd_paths(a) -> int:
    from .analysis.attribution import check_position, one_token
    from .analysis.paths import path_patch
    from .model import tokenizer

    model = _model(a)  # first: a weights folder brings its own vocabulary
    answer, versus = one_token(a.answer, "--answer"), None if a.versus is None else one_token(a.versus, "--versus")
    ids = tokenizer.encode(a.text)
    check_position(a.position, len(ids))
    if len(ids) > model.config.n_positions:
        raise ValueError(f"{len(ids):,} tokens exceed the context of {model.config.n_positions:,}")
    p = path_patch(model, ids, a.sender, answer, versus, a.position, a.ablation, a.receiver)
    r = p.report()
    if a.json:
        print(json.dumps(r))
        return 0
    what = "logit" if versus is None else f"logit - logit({r['versus']!r})"
    print(f"{p.model} · {len(ids)} tokens · position {r['position']} ({tokenizer.readable(ids[r['position']])!r}) · "
          f"{r['sender']} removed ({r['ablation']}) · p({r['answer']!r}) and {what}")
    width = max(len("total (everywhere)"), *(len(row["receiver"]) for row in r["rows"]))
    for name, row in [("clean", r["clean"]), ("total (everywhere)", r["total"])] + [
            (row["receiver"], row) for row in r["rows"]]:
        print(f"  {name:{width}s}  p {row['prob']:.4f}  logit {row['logit']:+.4f}")
    return 0


def cmd_names(a) -> int:
    print("\n".join(recorded_names(get_config(a.model), a.mode, a.dropout)))  # from the schema: no model is run
    return 0


def cmd_params(a) -> int:
    from .anatomy.params import accounting_report, format_accounting

    report = accounting_report(model_config(a), checkpoint=a.checkpoint)
    print(json.dumps(report, indent=1) if a.json else format_accounting(report))
    return 0


def cmd_shapes(a) -> int:
    report = shapes_report(model_config(a), a.mode, B=a.batch, T=a.tokens, P=a.past, dropout=a.dropout)
    print(json.dumps(report, indent=1) if a.json else format_shapes(report))
    return 0


def cmd_train_demo(a) -> int:
    from dataclasses import fields
    from pathlib import Path

    import torch

    from .model.demo_model import DEMO_PATH, Recipe, train_demo
    from .spec.paths import installed

    recipe = Recipe(**{f.name: getattr(a, f.name) for f in fields(Recipe) if hasattr(a, f.name)})
    if a.threads < 1:
        raise ValueError(f"--threads must be at least 1, got {a.threads}")
    torch.set_num_threads(a.threads)
    if not a.out and installed():
        raise UsageError("train-demo: give --out FILE: an installed gpt2viz does not write into its own package")
    out = Path(a.out) if a.out else DEMO_PATH
    scores = train_demo(recipe, out, log=lambda line: print(line, flush=True))
    (li, hi, ind), (lp, hp, prev) = scores.best("induction"), scores.best("previous")
    print(f"wrote {out}: induction head block {li} head {hi} ({ind:.2f}), previous-token head block {lp} "
          f"head {hp} ({prev:.2f}), loss {scores.loss_fresh:.2f} on fresh words, {scores.loss_repeated:.2f} on repeats")
    return 0


def cmd_weights(a) -> int:
    from .model.weights import random_model, save_safetensors

    model = random_model(get_config(a.model), a.seed)
    save_safetensors(model, a.out)
    print(f"wrote {a.out}: random {a.model} weights, seed {a.seed}, "
          f"{sum(p.numel() for p in model.parameters()):,} parameters (as the app draws them)")
    return 0


def cmd_convert(a) -> int:
    from .model.convert_budget import precheck

    precheck(a.checkpoint, a.meta)  # a hostile pickle refused before torch is imported
    from .model.convert import check_loadable, convert_nanogpt

    r = convert_nanogpt(a.checkpoint, a.out, a.meta)
    check_loadable(r["out"])
    cfg = r["config"]
    print(f"wrote {r['out']}: {cfg.n_layer} blocks, {cfg.n_head} heads, d = {cfg.n_embd}, {cfg.n_positions} positions, "
          f"V = {cfg.vocab_size:,} ({r['vocabulary']}), {'biases' if r['bias'] else 'no biases'}, "
          f"{'tied' if r['tied'] else 'untied'} head, exact GELU, {r['parameters']:,} parameters, step {r['step']}")
    print(f"open it: gpt2viz.load({r['out']!r}) in Python, --weights {r['out']} on any command, or the app's "
          "weights source 'folder' (GPT2VIZ_ALLOW_LOCAL_PATH=1 python -m gpt2viz app)")
    return 0


def cmd_class_server(a) -> int:
    from .server.class_server import ClassServer

    return ClassServer(a.processes, a.port, a.address, backends_only=a.backends_only, upstream=a.upstream).serve()


def cmd_download(a) -> int:
    """Fetch a checkpoint; progress on stderr, one line a file as it completes (a tty sees it grow)."""
    from .model.download import describe, download

    shown: dict[str, int] = {}
    line_open = [False]

    def progress(file: str, done: int, size: int | None) -> None:
        step = 100 * done // size if size else done >> 20  # percent, or MiB when the size is unknown
        if shown.get(file) != step:
            shown[file] = step
            line_open[0] = not (size and done >= size)
            print("\r" + describe(file, done, size), end="" if line_open[0] else "\n", file=sys.stderr, flush=True)

    try:
        print(download(a.name, progress))
    except BaseException:
        if line_open[0]:  # end the progress line, so the error stands on a line of its own
            print(file=sys.stderr)
        raise
    return 0


def cmd_lesson(a) -> int:
    """`check`: the lesson's summary, or its one-line error; `link`: the signed link on stdout."""
    import os
    import time

    from .teaching import lessons as lf

    lesson = lf.load(a.file)
    if a.action == "export":
        return lesson_export(lesson, a)
    if a.action == "check":
        claims = sum(len(s.claims) for s in lesson.stops)
        missing = lf.missing_weights(lesson.weights)
        checked = "checked live" if not missing else "not measurable here"
        print(f"{a.file}: {lesson.title!r}, {len(lesson.stops)} stops ({', '.join(s.page for s in lesson.stops)})"
              + (f", {claims} published claim{'s' * (claims != 1)} {checked}" if claims else ""))
        if missing:
            print(f"gpt2viz: warning: this lesson's numbers need {missing}, which this machine does not have",
                  file=sys.stderr)
        from .spec.config import PRESETS
        from .spec.serving import RANDOM_MODELS, random_models

        built = random_models("0.0.0.0", PRESETS)  # what a class server builds for its visitors
        if lesson.weights["source"] == "random" and lesson.weights["model"] not in built:
            print(f"gpt2viz: warning: a class server builds random {' and '.join(built)} weights ({RANDOM_MODELS}), "
                  f"not {lesson.weights['model']}: its students would see a refusal", file=sys.stderr)
        return 0
    key = lf.server_key(os.environ)
    if key is None:
        raise UsageError(f"gpt2viz: error: no signing key: set {lf.KEY_ENV} (the server's; `openssl rand -hex 32`)")
    if a.expires_in is not None and a.expires_in <= 0:
        raise UsageError("gpt2viz: error: --expires-in must be a positive number of hours")
    expires = None if a.expires_in is None else int(time.time() + a.expires_in * 3600)
    print((a.base or LINK_BASE).rstrip("/") + lf.href(lesson.stops[0].page, lf.sign(lesson, key, expires), 0))
    return 0


def lesson_export(lesson, a) -> int:
    """The lesson as a static site in --out: each stop as the app draws it; the size and time at the end."""
    from pathlib import Path

    if not a.out:
        raise UsageError("gpt2viz: error: lesson export needs --out DIR (the folder to write the site in)")
    out = Path(a.out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"gpt2viz: error: --out {out} is a file, not a folder")
    from .lesson_site import export

    if a.base and not a.base.startswith(("http://", "https://")):
        raise UsageError(f"gpt2viz: error: --base {a.base[:80]!r} is not an http(s) address")
    # each stop as it is drawn, to a person at a terminal only: otherwise the result line alone
    progress = (lambda line: print(line, file=sys.stderr, flush=True)) if sys.stderr.isatty() else (lambda _: None)
    done = export(lesson, out, a.base or "", progress)
    print(f"{out}: {len(done.files)} files, {done.bytes / 1e6:.1f} MB, written in {done.seconds:.1f} s "
          f"(open {out / 'index.html'})")
    return 0


def _lesson_id(given: str) -> str:
    """The class vote's id of a lesson: of its signed link (the `lesson` value), or of its file signed here."""
    from urllib.parse import parse_qs, urlsplit

    from .teaching import lessons as lf

    if "lesson=" in given:
        token = parse_qs(urlsplit(given).query).get("lesson", [""])[0]
        if not token:
            raise UsageError("gpt2viz: error: --lesson: the link has no lesson= value")
        return lf.digest(token)
    key = lf.server_key(os.environ)
    if key is None:
        raise UsageError(f"gpt2viz: error: --lesson FILE needs {lf.KEY_ENV} (the server's) to find its votes; "
                         "or pass the lesson's link")
    return lf.digest(lf.sign(lf.load(given), key))


def cmd_class(a) -> int:
    """`results`: one line (or CSV row) per round; `clear`: delete a lesson's votes."""
    import csv
    import datetime

    from .server import votes

    if a.action == "clear":
        if not a.lesson:
            raise UsageError("gpt2viz: error: class clear needs --lesson (a link or a file)")
        before = None
        if a.before:
            try:
                before = datetime.datetime.strptime(a.before, "%Y-%m-%d").replace(tzinfo=datetime.UTC).timestamp()
            except ValueError:
                raise UsageError(f"gpt2viz: error: --before {a.before[:40]!r} is not a day as YYYY-MM-DD") from None
        store = votes.Store(votes.where_from_env())
        print(f"deleted {store.clear(_lesson_id(a.lesson), before):,} votes")
        return 0
    if a.before:
        raise UsageError("gpt2viz: error: --before goes with class clear")
    store = votes.Store(votes.where_from_env())
    rows = votes.result_rows(store.summaries(_lesson_id(a.lesson) if a.lesson else None))
    if a.csv:
        out = sys.stdout if a.csv == "-" else open(a.csv, "w", newline="")  # noqa: SIM115 (closed below)
        try:
            writer = csv.DictWriter(out, fieldnames=votes.RESULT_COLUMNS)
            writer.writeheader()
            writer.writerows(rows)
        finally:
            if out is not sys.stdout:
                out.close()
        if a.csv != "-":
            print(f"{a.csv}: {len(rows)} {'round' if len(rows) == 1 else 'rounds'}")
        return 0
    if not rows:
        print("no votes kept" + (" for this lesson" if a.lesson else ""))
    for r in rows:
        tally = r["counts"] or (f"median {r['median']:g}" if r["median"] != "" else "")
        right = f", {r['right']} right" if r["right"] != "" else ""
        voters = f"{r['voters']} voter" + "s" * (r["voters"] != 1)
        print(f"{r['lesson'][:12]} stop {r['stop']} round {r['round']} ({r['state']}): {voters}{right}"
              + (f"; {tally}" if tally else ""))
    return 0


COMMANDS = {"class": cmd_class, "trace": cmd_trace, "names": cmd_names, "params": cmd_params, "shapes": cmd_shapes,
            "download": cmd_download, "class-server": cmd_class_server, "train-demo": cmd_train_demo,
            "ablate": cmd_ablate, "patch": cmd_patch, "heads": cmd_heads, "attribute": cmd_attribute,
            "paths": cmd_paths,
            "lesson": cmd_lesson, "convert": cmd_convert, "weights": cmd_weights}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["app"]:  # everything after it is Streamlit's
        from .server.launch import run_app

        return run_app(argv[1:])
    try:
        args = build_parser().parse_args(argv)
        early_checks(args)  # before any command imports torch
        # in a context of its own: the vocabulary a command sets (_model) ends with it, for a caller
        # that runs several commands in one process (a test, a notebook)
        return contextvars.copy_context().run(COMMANDS[args.command], args)
    except UsageError as e:
        print(str(e), file=sys.stderr)
    except (ValueError, KeyError, OSError) as e:  # WeightsError and TextError are ValueErrors
        print(f"gpt2viz: error: {e}", file=sys.stderr)
    except SafetensorError as e:  # e.g. --out in a folder that does not exist
        print(f"gpt2viz: error: {str(e).splitlines()[0] if str(e) else type(e).__name__}", file=sys.stderr)
    except MemoryError:
        print("gpt2viz: error: out of memory: record fewer names (--names) or use a smaller model",
              file=sys.stderr)
    return 2


def entry() -> None:
    """The `gpt2viz` console command."""
    sys.exit(main())
