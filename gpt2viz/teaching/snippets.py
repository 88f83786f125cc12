"""Show me the code: for a page and its view, the source of a short script that
recomputes the page's main numbers, with gpt2viz's API or with `transformers` alone (forward hooks on
its modules) on the same weights. Pure: text in, text out; the app shows it, the tests exec() it.

Every snippet ends by assigning the page's numbers to `result` (a tensor) and printing them.
The transformers snippet imports torch, safetensors and transformers, nothing of gpt2viz: the page's
token ids written out (transformers' GPT2Tokenizer gives the same ids, but needs its vocabulary files
from the Hub), transformers' own GPT2Config with the page's model's sizes, and the weights read from the
checkpoint file in view. Random weights are gpt2viz's seeded draw, which transformers' initialisation
does not repeat: the snippet says how to write them to a file (`python -m gpt2viz weights`) and reads
that. Its KV cache goes in by position, the one spelling transformers 4 (past_key_values=) and 5
(cache=) both take.
"""

from dataclasses import dataclass
from pathlib import PurePath

from ..model.demo_recipe import DEMO_PATH
from ..spec.config import PRESETS, GPT2Config
from ..spec.pages import BY_URL

KINDS = ("gpt2viz", "transformers")
WIDTH = 88  # characters a line may take: the panel shows about 90 at 1280 px without scrolling


@dataclass(frozen=True)
class View:
    """What a page shows: the text, the weights (a spec as gpt2viz.load takes it), the mode, the
    block and head, and the page's own controls in `values` ((("ln", "ln_2"),))."""
    text: str
    weights: str = "gpt2"
    mode: str = "full"
    block: int = 0
    head: int = 0
    seed: int = 0  # training's dropout seed (the app uses the random weights' seed)
    values: tuple[tuple[str, object], ...] = ()
    config: GPT2Config = PRESETS["gpt2"]  # of the weights in view: transformers' GPT2Config gets its sizes
    ids: tuple[int, ...] = ()  # the page's tokens: the text's, cut to the context
    cut: bool = False  # the text is longer than the context: the page runs its first len(ids) tokens
    folder: bool = False  # weights from a folder: its own vocabulary, its model.safetensors

    def value(self, key: str, default=None):
        return dict(self.values).get(key, default)

    @property
    def n_tokens(self) -> int:
        return len(self.ids)

    @property
    def n_layer(self) -> int:  # the overview reads every block, the head finder every head
        return self.config.n_layer

    @property
    def n_head(self) -> int:
        return self.config.n_head

    @property
    def d_head(self) -> int:
        return self.config.d_head


@dataclass(frozen=True)
class Target:
    """One page's main numbers: where gpt2viz records them, and where transformers computes them."""
    what: str  # a comment: what `result` holds
    ours: str  # an expression of `run` (gpt2viz's Run)
    module: str | None  # the transformers module hooked (None: the model's output `out` is enough)
    theirs: str  # an expression of `seen["out"]` (the hooked module's output) or of `out`


def _layernorm(v: View) -> Target:
    ln = v.value("ln", "ln_1")
    if ln == "ln_f":
        return Target("ln_f's output [T, d]", 'run["ln_f.out"][0]', "transformer.ln_f", 'seen["out"][0]')
    ours = {"ln_1": "ln1", "ln_2": "ln2"}[ln]
    return Target(f"{ln}'s output in block {v.block} [T, d]", f'run["blocks.{v.block}.{ours}.out"][0]',
                  f"transformer.h[{v.block}].{ln}", 'seen["out"][0]')


def _target(page: str, v: View) -> Target:
    b, h = v.block, v.head
    if page == "layernorm":
        return _layernorm(v)
    targets = {
        "attention": Target(f"the attention pattern of block {b} head {h} [T, L]: row = query, column = key",
                            f'run["blocks.{b}.attn.pattern"][0, {h}]', f"transformer.h[{b}].attn",
                            f'seen["out"][1][0, {h}]'),  # (output, attention weights [B, nh, T, L])
        "merge": Target(f"Δattn of block {b} [T, d]: the heads merged, then c_proj",
                        f'run["blocks.{b}.attn.out"][0]', f"transformer.h[{b}].attn", 'seen["out"][0][0]'),
        "mlp": Target(f"the MLP's GELU output in block {b} [T, 4d]", f'run["blocks.{b}.mlp.post"][0]',
                      f"transformer.h[{b}].mlp.act", 'seen["out"][0]'),
        "block": Target(f"the stream leaving block {b} [T, d]", f'run["blocks.{b}.resid_post"][0]',
                        f"transformer.h[{b}]", 'seen["out"][0]'),
        "tokens": Target("x0 = wte[token] + wpe[position] [T, d]", 'run["embed.out"][0]', "transformer.drop",
                         'seen["out"][0]'),  # dropout is off in eval mode: its output is the sum
        "output": Target("the 10 largest next-token probabilities after the last token (float64, as the page)",
                         'run["logits"][0, -1].double().softmax(-1).topk(10).values', None,
                         "out.logits[0, -1].double().softmax(-1).topk(10).values"),
    }
    if page not in targets:
        raise ValueError(f"no snippet for page {page!r}; pages with one: {', '.join(PAGES)}")
    return targets[page]


COMPONENT_PAGES = ("overview", "tokens", "block", "layernorm", "attention", "merge", "mlp", "output")
PAGES = COMPONENT_PAGES + ("whatif", "attribution", "patch", "lens", "heads", "generation")
# pages that run the whole text in full mode, whatever the sidebar's mode
FULL_ONLY = ("whatif", "attribution", "patch", "heads")
TOP_K = 10  # the What if page's tokens: the untouched run's ten most likely next tokens


def weights_comment(spec: str) -> str:
    if spec == "demo":
        return "the demo model trained here"
    if spec.startswith("random:") or spec in PRESETS:
        name, _, seed = spec.removeprefix("random:").partition(":seed=")
        return f"random {name} weights, seed {seed or 0}"
    return f"the checkpoint {spec}"


def _mode(page: str, v: View) -> str:
    return "decode" if page == "generation" else "full" if page in FULL_ONLY else v.mode


def _header(page: str, v: View, kind: str) -> list[str]:
    where = {"attention": f"block {v.block}, head {v.head}", "lens": f"position {_position(v)}",
             "whatif": _knockout(v)[0], "heads": "every head",
             "attribution": _attributed(v)[0] if page == "attribution" else "",
             "patch": f"A into B, block {v.block}'s input",
             "overview": "every block", "tokens": "", "output": "the last position",
             "generation": _generated(v)}.get(page, f"block {v.block}")
    return [f"# The {BY_URL[page].title} page, recomputed with {kind}",
            "# " + " · ".join(x for x in (where, f"{_mode(page, v)} mode", weights_comment(v.weights)) if x),
            f"TEXT = {v.text!r}", *([f"TEXT_B = {v.value('text_b')!r}"] if page == "patch" else [])]


def _tokens(v: View) -> str:
    """The expression of the page's token ids: the text's, cut to the context as the page cuts it."""
    return f"encode(TEXT)[:{v.n_tokens}]" if v.cut else "encode(TEXT)"


def _position(v: View) -> int:
    """The Logit lens page's position (an index into the run's T positions; decode has one)."""
    T = 1 if v.mode == "decode" else v.n_tokens
    return min(int(v.value("lens_pos", T - 1)), T - 1)


def _attributed(v: View) -> tuple[str, str, str | None, int]:
    """The attribution page's (label, answer, second answer or None, position): the tokens as typed."""
    from ..model.tokenizer import decode  # the tokenizer's files load on first use, not with the snippets

    answer, versus = decode([v.value("answer")]), v.value("versus")
    versus = None if versus is None else decode([versus])
    position = int(v.value("position", v.n_tokens - 1))
    target = f"logit({answer!r})" + ("" if versus is None else f" − logit({versus!r})")
    return f"{target} at position {position}", answer, versus, position


def _generation(v: View) -> tuple[int, float, int, float, int]:
    """The Generation page's (steps, temperature (0: greedy), top-k (0: all), top-p (1: all), sampling seed)."""
    return (int(v.value("steps", 8)), float(v.value("temp", 0.0)), int(v.value("topk", 0) or 0),
            float(v.value("topp", 1.0) or 1.0), int(v.value("gen_seed", 0)))


def _generated(v: View) -> str:
    steps, t, k, p, seed = _generation(v)
    if t == 0:
        return f"{steps} steps, greedy"
    cuts = [f"temperature {t:g}", *([f"top-k {k}"] if k else []), *([f"top-p {p:g}"] if p < 1 else [])]
    return f"{steps} steps, {', '.join(cuts)}, seed {seed}"


def _knockout(v: View) -> tuple[str, str, int, str]:
    """The What if page's (label, part, index, method): part head, attn, mlp or neuron."""
    part, method = v.value("part", "head"), v.value("method", "zero")
    index = int(v.value("neuron", 0)) if part == "neuron" else v.head
    label = {"head": f"head {v.block}.{index}", "attn": f"block {v.block}'s attention",
             "mlp": f"block {v.block}'s MLP", "neuron": f"neuron {index} of block {v.block}'s MLP"}[part]
    return f"{label} knocked out ({method})", part, index, method


# ---------------------------------------------------------------------------- gpt2viz
def _ours(page: str, v: View) -> list[str]:
    seed = f", seed={v.seed}" if v.mode == "training" and page not in FULL_ONLY else ""
    text = _tokens(v) if v.cut else "TEXT"
    body, imports = _ours_body(page, v)
    needs_encode = v.cut or page in ("whatif", "patch", "generation")
    run = [] if page in ("patch", "attribution", "generation") else \
        [f"run = model.run({text}, mode={_mode(page, v)!r}{seed})  # every tensor, named as in the app"]
    own = ["encode = model.vocabulary.encode  # the folder's own vocabulary"] if needs_encode and v.folder else []
    imports = sorted([*imports, *(["from gpt2viz.model.tokenizer import encode"] if needs_encode and not v.folder
                                  else [])])
    return [*(["import torch", ""] if "torch." in "".join(body) else []), "import gpt2viz", *imports, "",
            f"model = gpt2viz.load({v.weights!r})", *own, *run, *body, "print(result)"]


def _ours_body(page: str, v: View) -> tuple[list[str], list[str]]:
    if page == "overview":
        return [f"# ‖stream‖ leaving each block, per position [{v.n_layer}, T]",
                "result = torch.stack([run[f\"blocks.{i}.resid_post\"][0].norm(dim=-1) "
                f"for i in range({v.n_layer})])"], []
    if page == "lens":
        return [f"rows = logit_lens(model.model, run.trace, position={_position(v)})  # one row per depth",
                "# at each depth, the probability of the model's final top token",
                "result = torch.tensor([row.final_prob for row in rows])"], [
            "from gpt2viz.analysis.lens import logit_lens"]
    if page == "heads":
        return ["rows = score_trace(run.trace)  # one row per head: its block, its index and five scores",
                "# previous-token score: mean attention from position i to i − 1, per head, from i = 2 on",
                f'result = torch.tensor([row["previous_token"] for row in rows]).view({v.n_layer}, {v.n_head})'], \
            ["from gpt2viz.analysis.heads import score_trace"]
    if page == "whatif":
        label, part, index, method = _knockout(v)
        return [f'top = run["logits"][0, -1].softmax(-1).topk({TOP_K}).indices  # the likeliest next tokens',
                f"knocked = knockout(model.model, {_tokens(v)}, Target({v.block}, {part!r}, {index}), {method!r})",
                f'result = knocked["logits"][0, -1].softmax(-1)[top]  # their probabilities, {label}'], \
            ["from gpt2viz.analysis.whatif import Target, knockout"]
    if page == "attribution":
        label, answer, versus, position = _attributed(v)
        text = _tokens(v) if v.cut else "TEXT"
        return [f"r = model.attribute({text}, {answer!r}, versus={versus!r}, position={position})",
                "# r: the CLI's --json as a dict: target, rows, residual, answer, versus, ...",
                'rows = {row["component"]: row["value"] for row in r["rows"]}  # they sum to r["target"]',
                f"# each head's direct share of {label} [{v.n_layer}, {v.n_head}]",
                f'result = torch.tensor([[rows[f"blocks.{{b}}.attn.head.{{h}}"] for h in range({v.n_head})]',
                f"                       for b in range({v.n_layer})], dtype=torch.float64)"], []
    if page == "patch":
        a, b = v.value("answers")
        return [f"answers = ({a}, {b})  # the metric: logit(answers[0]) − logit(answers[1]), last position",
                "# B run with one activation from A: each (block, position) of resid_pre, then each head",
                "p = patch(model.model, encode(TEXT), encode(TEXT_B), answers)",
                f"result = p.resid[{v.block}]  # restored fraction, block {v.block}'s input at each position"], \
            ["from gpt2viz.analysis.whatif import patch"]
    if page == "output" and _sampling(v):
        return ['logits = run["logits"][0, -1].double()  # [V]: float64, as the page', *_sampled(v)], []
    if page == "generation":
        return _ours_generation(v)
    t = _target(page, v)
    return [f"result = {t.ours}  # {t.what}"], []


def _ours_generation(v: View) -> tuple[list[str], list[str]]:
    steps, t, k, p, seed = _generation(v)
    if t == 0:
        return [f"gen = generate(model.model, {_tokens(v)}, {steps})  # greedy: the likeliest token each step",
                "chosen = gen.ids  # the token chosen at each step",
                "# p(chosen): the model's own probability of each (greedy shows the softmax)",
                'result = torch.stack([t["logits"][0, -1].softmax(-1)[c]',
                "                      for t, c in zip(gen.traces, chosen)])",
                "print(chosen)"], ["from gpt2viz.model.modes import generate"]
    args = f"{t!r}, {k or None}, {p if p < 1 else None}"
    return [f"sampler = Sampler({t!r}, {k or None}, {seed}, {p if p < 1 else None})  # temperature, top-k, seed, "
            "top-p",
            f"gen = generate(model.model, {_tokens(v)}, {steps}, choose=sampler)  # one decode step per token",
            "chosen = gen.ids  # the token drawn at each step",
            "# p(chosen): the probability each was drawn with, after temperature, top-k and top-p",
            f'result = torch.stack([distribution(t["logits"][0, -1], {args})[c]',
            "                      for t, c in zip(gen.traces, chosen)])",
            "print(chosen)"], ["from gpt2viz.model.generation import Sampler, distribution",
                               "from gpt2viz.model.modes import generate"]


def _sampling(v: View) -> tuple[float, int, float] | None:
    """The Output page's (temperature, top-k, top-p) when they change its distribution (None: temperature
    1, every token)."""
    t, k, p = float(v.value("temp", 1.0)), int(v.value("topk", 0) or 0), float(v.value("topp", 1.0) or 1.0)
    return None if (t, k, p) == (1.0, 0, 1.0) else (t, k, p)


def _sampled(v: View) -> list[str]:
    """From `logits` [V] (float64): the page's ten tokens' probabilities after its temperature, top-k and
    top-p, in torch alone (gpt2viz.model.generation.distribution does the same)."""
    t, k, p = _sampling(v)
    lines = [f"shown = logits.softmax(-1).topk({TOP_K}).indices  # the page's ten: the likeliest at temperature 1"]
    if t == 0:
        lines += ["probs = torch.nn.functional.one_hot(logits.argmax(), logits.shape[-1]).double()  # greedy"]
    else:
        lines += _drawn(t, k, p)
    return lines + ["result = probs[shown]  # the page's after-sampling chart, its ten tokens"]


def _drawn(t: float, k: int, p: float, indent: str = "") -> list[str]:
    """From `logits` [V], `probs` [V]: softmax(logits / t) kept to the top k, then to the top p, in torch
    alone (gpt2viz.model.generation.distribution does the same)."""
    lines = [f"z = (logits - logits.max()) / {t!r}  # temperature {t:g}"]
    if k:
        lines += [f"z = z.masked_fill(z < z.topk({k}).values[-1], float('-inf'))  # top-k {k}"]
    lines += ["probs = z.softmax(-1)"]
    if p < 1:
        lines += ["ordered, order = probs.sort(descending=True)",
                  f"kept = (ordered.cumsum(-1) - ordered) < {p!r}  # top-p {p:g}: the fewest that reach it",
                  "probs = torch.zeros_like(probs).scatter(0, order[kept], ordered[kept])",
                  "probs = probs / probs.sum()"]
    return [indent + line for line in lines]


# ---------------------------------------------------------------------------- transformers
def _file(v: View) -> str | None:
    """The safetensors file transformers reads: the checkpoint in view; None for random weights."""
    if v.weights == "demo":
        return str(DEMO_PATH)
    if v.weights.startswith("random:") or v.weights in PRESETS:
        return None
    return str(PurePath(v.weights) / "model.safetensors") if v.folder else v.weights


def _wrapped(start: str, items: list[str], end: str) -> list[str]:
    """`start` + the items joined by ", " + `end`, broken into lines the panel shows whole."""
    lines, line, pad = [], start, " " * len(start)
    for i, item in enumerate(items):
        piece = item + (", " if i < len(items) - 1 else end)
        if len(line) + len(piece.rstrip()) > WIDTH and line.strip():
            lines.append(line.rstrip())
            line = pad
        line += piece
    return lines + [line]


def _config_args(cfg: GPT2Config) -> list[str]:
    """transformers' GPT2Config keywords for a model of these sizes, with eager attention (the fused
    kernels return no attention weights)."""
    return [f"n_layer={cfg.n_layer}", f"n_head={cfg.n_head}", f"n_embd={cfg.n_embd}",
            f"n_positions={cfg.n_positions}", f"vocab_size={cfg.vocab_size}",
            *([f"n_inner={cfg.n_inner}"] if cfg.n_inner else []), f"activation_function={cfg.activation!r}",
            f"layer_norm_epsilon={cfg.layer_norm_epsilon!r}", *([] if cfg.tied else ["tie_word_embeddings=False"]),
            "attn_implementation='eager'"]


def _load_transformers(v: View) -> list[str]:
    """Lines that give `hf`, transformers' GPT-2 of the view's sizes holding the view's weights."""
    path, cfg = _file(v), v.config
    if path is None:
        name, _, seed = v.weights.removeprefix("random:").partition(":seed=")
        path = f"{name}-seed{seed or 0}.safetensors"
        where = ["# the page's random weights are gpt2viz's seeded draw, which transformers' own",
                 "# initialisation does not repeat: write them to a file once, in a shell:",
                 f"#   python -m gpt2viz weights --model {name} --seed {seed or 0} --out {path}"]
    else:
        where = [f"# the checkpoint: {weights_comment(v.weights)}" if v.weights == "demo" else
                 "# the checkpoint: the folder's model.safetensors" if v.folder else "# the checkpoint file"]
    lines = [*where, f"PATH = {path!r}", "", "# GPT-2 of the page's model's sizes; eager attention returns its weights",
             *_wrapped("config = GPT2Config(", _config_args(cfg), ")"),
             "hf = GPT2LMHeadModel(config).eval()  # eval: no dropout",
             "# GPT-2's names; a file saved from GPT2LMHeadModel has them under 'transformer.'",
             "state = {k.removeprefix('transformer.'): w for k, w in load_file(PATH).items()}"]
    if not cfg.tied:
        lines += ["hf.lm_head.load_state_dict({'weight': state.pop('lm_head.weight')})  # untied: its own matrix"]
    lines += ["missing = hf.transformer.load_state_dict(state, strict=False).missing_keys"]
    if cfg.bias:
        return lines + ["assert not missing, missing  # every weight came from the file (attn.bias in it: a mask)"]
    return lines + ["assert all(k.endswith('.bias') for k in missing), missing  # the file has no biases",
                    "with torch.no_grad():  # transformers' GPT-2 has biases: zero ones are the same function",
                    "    for k in missing:", "        hf.transformer.get_parameter(k).zero_()"]


CACHE = ["    cache = DynamicCache()  # the KV cache: each call adds its tokens' keys and values",
         "    # the cache goes in by position: transformers 4 names it past_key_values, 5 cache"]


def _forward(page: str, v: View, out: str = "out") -> list[str]:
    mode = _mode(page, v)
    if mode == "decode" and v.n_tokens > 1:
        return [*CACHE, "    hf(ids[:, :-1], cache, use_cache=True)  # the P tokens before the last",
                f"    {out} = hf(ids[:, -1:], cache, use_cache=True)  # decode: the last token reads P + 1 keys"]
    if mode == "prefill":
        return [f"    {out} = hf(ids, use_cache=True)  # prefill: every token at once, filling the KV cache"]
    return [f"    {out} = hf(ids)  # every token at once"]


KEEP = ["seen = {}", "", "", "def keep(name):  # a forward hook that keeps what its module returns in seen[name]",
        "    return lambda module, args, out: seen.update({name: out})", "", ""]
# a block's hook: transformers 5's GPT2Block returns the stream, 4's a tuple that starts with it
KEEP_STREAM = ["seen = {}", "", "", "def keep(name):  # a forward hook that keeps the stream a block returns",
               "    def hook(module, args, out):  # the output (transformers 5), or a tuple's first (4)",
               "        seen[name] = out[0] if isinstance(out, tuple) else out", "    return hook", "", ""]


def _ids(name: str, ids, *what: str) -> list[str]:
    """`name = torch.tensor([[...]])`: token ids written out, with comment lines above."""
    return [*(f"# {line}" for line in what), *_wrapped(f"{name} = torch.tensor([[", [str(int(i)) for i in ids], "]])")]


def _theirs(page: str, v: View) -> list[str]:
    load, body = _load_transformers(v), _theirs_body(page, v)
    names = ["DynamicCache"] * ("DynamicCache(" in "".join(body)) + ["GPT2Config", "GPT2LMHeadModel"]
    what = [f"the page's {v.n_tokens} tokens [1, T], in the folder's own vocabulary"] if v.folder else [
        f"the page's {v.n_tokens} tokens [1, T], GPT-2's BPE: transformers' GPT2Tokenizer gives the",
        "same ids, but needs its vocabulary files from the Hub"]
    lines = ["import torch", "from safetensors.torch import load_file", f"from transformers import {', '.join(names)}",
             "", *load, "", *_ids("ids", v.ids, *what), ""]
    if _mode(page, v) == "training":
        lines += ["# training: the page's dropout masks are gpt2viz's seeded draws, which transformers cannot",
                  "# repeat; this runs without dropout, as gpt2viz's model.run(TEXT, 'training', dropout=False)", ""]
    return lines + body + ["print(result)"]


def _theirs_body(page: str, v: View) -> list[str]:
    n = v.n_layer
    if page in ("overview", "lens"):
        hooks = [*KEEP_STREAM, "for i, block in enumerate(hf.transformer.h):",
                 "    block.register_forward_hook(keep(i + 1))  # seen[i + 1]: the stream leaving block i"]
        if page == "overview":
            return hooks + ["with torch.no_grad():", *_forward(page, v),
                            f"# ‖stream‖ leaving each block, per position [{n}, T]",
                            f"result = torch.stack([seen[i + 1][0].norm(dim=-1) for i in range({n})])"]
        i = _position(v)
        return [*KEEP_STREAM, "hf.transformer.drop.register_forward_hook(keep(0))  # seen[0]: x0, the embeddings'",
                *hooks[len(KEEP_STREAM):],
                "with torch.no_grad():", *_forward(page, v),
                f"    x = torch.stack([seen[d][0, {i}] for d in range({n + 1})])  # position {i}, every depth",
                "    probs = hf.lm_head(hf.transformer.ln_f(x)).softmax(-1)  # ln_f, then the token table",
                "# at each depth, the probability of the model's final top token",
                "result = probs[:, probs[-1].argmax()]"]
    if page == "heads":
        return ["with torch.no_grad():", "    out = hf(ids, output_attentions=True)  # every block's [1, nh, T, T]",
                "# previous-token score: mean attention from position i to i − 1, per head, from i = 2 on",
                "# (at i = 1 the previous token is the first token)",
                "below = [a[0].diagonal(offset=-1, dim1=-2, dim2=-1) for a in out.attentions]  # a[i, i − 1]",
                "result = torch.stack([d[..., 1:].mean(-1) for d in below])  # [n_layer, nh]"]
    if page == "whatif":
        return _whatif(v)
    if page == "attribution":
        return _attribution(v)
    if page == "patch":
        return _patch(v)
    if page == "output" and _sampling(v):
        return ["with torch.no_grad():", *_forward(page, v),
                "logits = out.logits[0, -1].double()  # [V]: float64, as the page", *_sampled(v)]
    if page == "generation":
        return _generate(v)
    t = _target(page, v)
    keep = KEEP_STREAM if page == "block" else KEEP
    hook = [*keep, f'hf.{t.module}.register_forward_hook(keep("out"))'] if t.module else []
    return hook + ["with torch.no_grad():", *_forward(page, v), f"result = {t.theirs}  # {t.what}"]


def _generate(v: View) -> list[str]:
    steps, t, k, p, seed = _generation(v)
    if t == 0:
        draw = ["        chosen.append(int(logits.argmax()))  # greedy: the likeliest",
                "        p.append(logits.softmax(-1)[chosen[-1]])  # the model's own probability of it"]
    else:
        draw = [*_drawn(t, k, p, " " * 8), "        chosen.append(int(torch.multinomial(probs, 1, generator=draws)))",
                "        p.append(probs[chosen[-1]])  # the probability it was drawn with"]
    return [*([f"draws = torch.Generator().manual_seed({seed})  # the page's sampling seed: its draws"] * (t > 0)),
            "chosen, p = [], []", "with torch.no_grad():", *CACHE,
            *(["    hf(ids[:, :-1], cache, use_cache=True)  # the text's tokens before its last"] * (v.n_tokens > 1)),
            "    token = ids[:, -1:]  # [1, 1]: step 1 decodes the text's last token",
            f"    for step in range({steps}):  # one decode step per new token",
            "        logits = hf(token, cache, use_cache=True).logits[0, -1]  # [V]",
            *draw, "        token = torch.tensor([chosen[-1:]])  # [1, 1]: the next step's input",
            "result = torch.stack(p)  # p(chosen) at each step", "print(chosen)  # the tokens chosen"]


def _patch(v: View) -> list[str]:
    a, b = v.value("answers")
    return [*_ids("ids_b", v.value("ids_b"), "B's tokens, as many as A's"), f"block = hf.transformer.h[{v.block}]",
            "", "", f"def margin(logits):  # the metric: logit({a}) − logit({b}) at the last position",
            f"    return logits[0, -1, {a}] - logits[0, -1, {b}]", "", "",
            "def from_a(position):  # a forward pre-hook: B's stream, one position taken from A's",
            "    def hook(module, args):", "        x = args[0].clone()",
            "        x[:, position] = x_a[:, position]", "        return (x, *args[1:])",
            "    return hook", "", "", "with torch.no_grad():",
            "    out_a = hf(ids, output_hidden_states=True)",
            f"    x_a = out_a.hidden_states[{v.block}]  # A's stream entering block {v.block} [1, T, d]",
            "    m_a, m_b, patched = margin(out_a.logits), margin(hf(ids_b).logits), []",
            "    for position in range(ids.shape[1]):",
            "        handle = block.register_forward_pre_hook(from_a(position))",
            "        patched.append(margin(hf(ids_b).logits))", "        handle.remove()",
            "# the restored fraction (m_patched − m_B) / (m_A − m_B) at each position",
            "result = (torch.stack(patched) - m_b) / (m_a - m_b)"]


def _attribution(v: View) -> list[str]:
    label, answer, versus, position = _attributed(v)
    u = f"w_u[{v.value('answer')}]" + ("" if versus is None else f" - w_u[{v.value('versus')}]")
    tokens = f"token {v.value('answer')} is {answer!r}" + ("" if versus is None else
                                                          f", token {v.value('versus')} {versus!r}")
    return ["seen = {}", f"for b in range({v.n_layer}):  # c_proj's input: the heads' z side by side [1, T, d]",
            "    hf.transformer.h[b].attn.c_proj.register_forward_pre_hook(",
            "        lambda module, args, b=b: seen.update({b: args[0]}))",
            "ln_f, w_u = hf.transformer.ln_f, hf.lm_head.weight.double()  # w_u: [V, d], the unembedding",
            "ln_f.register_forward_pre_hook(lambda module, args: seen.update(x=args[0]))  # the final stream",
            "with torch.no_grad():", *_forward("attribution", v),
            f"    x = seen['x'][0, {position}].double()  # the final stream at position {position}",
            "    sigma = (x.var(unbiased=False) + ln_f.eps).sqrt()  # ln_f's scale there, held fixed",
            f"    gu = ln_f.weight.double() * ({u})  # g ⊙ u: {tokens}",
            f"    result = torch.zeros({v.n_layer}, {v.n_head}, dtype=torch.float64)",
            f"    for b in range({v.n_layer}):",
            f"        z = seen[b][0, {position}].double().view({v.n_head}, {v.d_head})  # each head's z",
            f"        w_o = hf.transformer.h[b].attn.c_proj.weight.double().view({v.n_head}, {v.d_head}, -1)",
            "        parts = torch.einsum('hk,hkd->hd', z, w_o)  # each head's output, without the bias",
            "        # each centred on its own mean, over sigma, dotted with g ⊙ u",
            "        result[b] = ((parts - parts.mean(-1, keepdim=True)) / sigma) @ gu",
            f"# result: each head's direct share of {label}"]


def _whatif(v: View) -> list[str]:
    label, part, index, method = _knockout(v)
    b, dh = v.block, v.d_head
    where = {"head": (f"[..., {index * dh}:{(index + 1) * dh}]", f"transformer.h[{b}].attn.c_proj", "args[0]",
                      "(x,)", f"c_proj's input: the heads side by side, head {index} in columns "
                      f"{index * dh}–{(index + 1) * dh - 1}"),
             "attn": ("[:]", f"transformer.h[{b}].attn", "out[0]", "(x, *out[1:])", "Δattn, the attention's output"),
             "mlp": ("[:]", f"transformer.h[{b}].mlp", "out", "x", "Δmlp, the MLP's output"),
             "neuron": (f"[..., {index}]", f"transformer.h[{b}].mlp.act", "out", "x", f"neuron {index} after GELU")}
    cols, module, x, back, what = where[part]
    value = "0" if method == "zero" else f"x{cols}.mean(1, keepdim=True)  # its mean over the positions"
    pre = part == "head"
    return ["with torch.no_grad():", "    before = hf(ids).logits[0, -1].softmax(-1)",
            f"top = before.topk({TOP_K}).indices  # the untouched run's likeliest next tokens", "", "",
            f"def knock_out(module, args{'' if pre else ', out'}):  # {what}",
            f"    x = {x}.clone()  # [1, T, ·]", f"    x{cols} = {value}", f"    return {back}", "", "",
            f"hf.{module}.register_forward_{'pre_' if pre else ''}hook(knock_out)",
            "with torch.no_grad():", "    after = hf(ids).logits[0, -1].softmax(-1)",
            f"result = after[top]  # their probabilities, {label}"]


def snippet(page: str, view: View, kind: str) -> str:
    """The source of a script that recomputes `page`'s main numbers for `view` into `result`."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    body = _ours(page, view) if kind == "gpt2viz" else _theirs(page, view)
    return "\n".join(_header(page, view, kind) + [""] + [x for line in body for x in _fit(line)]) + "\n"


def _fit(line: str) -> list[str]:
    """A line too wide for the panel with its comment: the comment above it, at its indentation."""
    code, sep, comment = line.partition("  # ")
    if len(line) <= WIDTH or not sep:
        return [line]
    indent = code[: len(code) - len(code.lstrip())]
    return [f"{indent}# {comment}", code]


def cells(page: str, view: View) -> str:
    """Both snippets as one .py of `# %%` cells (Jupyter, VS Code and Spyder run them cell by cell)."""
    intro = [f"# %% [markdown]\n# gpt2viz · the {page} page, recomputed two ways. Each cell leaves the page's "
             "numbers in `result`.\n"]
    return "\n".join(intro + [f"# %%\n{snippet(page, view, kind)}" for kind in KINDS])


NOT_SENTENCES = (weights_comment, snippet, cells)  # Python code a student can run, not sentences about a run
