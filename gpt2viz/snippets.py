"""Show me the code (issue 22, section 3): for a page and its view, the source of a short script that
recomputes the page's main numbers, with gpt2viz's API or with plain `transformers` (forward hooks on
its modules) on the same weights. Pure: text in, text out; the app shows it, the tests exec() it.

Every snippet ends by assigning the page's numbers to `result` (a tensor) and printing them.
transformers' GPT-2 is given the view's weights: read from the checkpoint file in view (the demo
model, real GPT-2 in the Hugging Face cache), or, for random weights, made by gpt2viz and copied in
by `gpt2viz.weights.to_transformers`. Its tokens are gpt2viz's: tiktoken's GPT-2 BPE, the same ids
as transformers' GPT2Tokenizer, which would need the network to fetch its files.
"""

from dataclasses import dataclass

from .config import PRESETS

KINDS = ("gpt2viz", "transformers")


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
    n_layer: int = 12  # of the weights in view (the overview reads every block)
    bias: bool = True  # False or untied: transformers gets the weights through gpt2viz
    tied: bool = True
    n_tokens: int = 2  # the text's tokens (decode with a single token has no cache to build)
    cut: bool = False  # the text is longer than the context: the page runs its first n_tokens tokens

    def value(self, key: str, default=None):
        return dict(self.values).get(key, default)


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
        "output": Target("the 10 largest next-token probabilities after the last token",
                         'run["logits"][0, -1].softmax(-1).topk(10).values', None,
                         "out.logits[0, -1].softmax(-1).topk(10).values"),
    }
    if page not in targets:
        raise ValueError(f"no snippet for page {page!r}; pages with one: {', '.join(PAGES)}")
    return targets[page]


PAGES = ("overview", "tokens", "block", "layernorm", "attention", "merge", "mlp", "output")


def weights_comment(spec: str) -> str:
    if spec == "demo":
        return "the demo model trained here"
    if spec.startswith("random:") or spec in PRESETS:
        name, _, seed = spec.removeprefix("random:").partition(":seed=")
        return f"random {name} weights, seed {seed or 0}"
    return f"the checkpoint {spec}"


def _header(page: str, v: View, kind: str) -> list[str]:
    where = f"block {v.block}" + (f", head {v.head}" if page == "attention" else "")
    return [f"# The {page} page recomputed with {kind}: {where}, {v.mode} mode, {weights_comment(v.weights)}",
            f"TEXT = {v.text!r}"]


def _tokens(v: View) -> str:
    """The expression of the page's token ids: the text's, cut to the context as the page cuts it."""
    return f"encode(TEXT)[:{v.n_tokens}]" if v.cut else "encode(TEXT)"


def _ours(page: str, v: View) -> list[str]:
    seed = f", seed={v.seed}" if v.mode == "training" else ""
    text = _tokens(v) if v.cut else "TEXT"
    lines = ["import gpt2viz", *(["from gpt2viz.tokenizer import encode"] if v.cut else []), "",
             f"model = gpt2viz.load({v.weights!r})",
             f"run = model.run({text}, mode={v.mode!r}{seed})  # every tensor, named as in the app"]
    if page == "overview":
        return lines + [f"# ‖stream‖ leaving each block, per position [{v.n_layer}, T]",
                        "result = torch.stack([run[f\"blocks.{i}.resid_post\"][0].norm(dim=-1) "
                        f"for i in range({v.n_layer})])", "print(result)"]
    t = _target(page, v)
    return lines + [f"result = {t.ours}  # {t.what}", "print(result)"]


def _is_file(spec: str) -> bool:
    return spec == "demo" or spec.endswith(".safetensors") or "/" in spec


def _load_transformers(v: View) -> list[str]:
    """The lines that give `hf`, transformers' GPT-2 with the view's weights."""
    if _is_file(v.weights) and v.bias and v.tied:
        path = "DEMO_PATH" if v.weights == "demo" else repr(v.weights)
        return (["from gpt2viz.demo_model import DEMO_PATH"] if v.weights == "demo" else []) + [
            "from gpt2viz.weights import hf_config", "from safetensors.torch import load_file", "",
            "# transformers' GPT-2 of the checkpoint's sizes (eager attention), its weights read from the file",
            f"hf = GPT2LMHeadModel(hf_config(gpt2viz.load({v.weights!r}).config)).eval()",
            f"state = {{k.removeprefix('transformer.'): w for k, w in load_file({path}).items()}}",
            "missing = hf.transformer.load_state_dict(state, strict=False).missing_keys  # the file may hold",
            "assert not missing, missing  # the causal-mask buffers attn.bias, which are not weights"]
    return ["from gpt2viz.weights import to_transformers", "",
            "# gpt2viz makes the weights; to_transformers copies each tensor into transformers' GPT-2",
            f"hf = to_transformers(gpt2viz.load({v.weights!r}).model)  # GPT2LMHeadModel, eager attention"]


def _forward(v: View) -> list[str]:
    if v.mode == "decode" and v.n_tokens > 1:
        return ["    cache = hf(ids[:, :-1], use_cache=True).cache  # the KV cache of the P tokens before the last",
                "    out = hf(ids[:, -1:], cache=cache)  # decode: the last token reads P + 1 keys"]
    if v.mode == "prefill":
        return ["    out = hf(ids, use_cache=True)  # prefill: every token at once, filling the KV cache"]
    return ["    out = hf(ids)  # every token at once"]


def _theirs(page: str, v: View) -> list[str]:
    lines = ["import torch", "from transformers import GPT2LMHeadModel", "", "import gpt2viz",
             "from gpt2viz.tokenizer import encode", *_load_transformers(v),
             f"ids = torch.tensor([{_tokens(v)}])  # [1, T]: GPT-2's tokens", ""]
    if v.mode == "training":
        lines += ["# training: the page's dropout masks are gpt2viz's seeded draws, which transformers cannot",
                  "# repeat; this runs without dropout, as gpt2viz's model.run(TEXT, 'training', dropout=False)", ""]
    if page == "overview":
        lines += ["seen = {}  # forward hooks keep what each block returns: the stream leaving it",
                  "for i, block in enumerate(hf.transformer.h):",
                  "    block.register_forward_hook(lambda module, args, out, i=i: seen.update({i: out}))",
                  "with torch.no_grad():", *_forward(v),
                  f"result = torch.stack([seen[i][0].norm(dim=-1) for i in range({v.n_layer})])  "
                  f"# ‖stream‖ per block [{v.n_layer}, T]"]
        return lines + ["print(result)"]
    t = _target(page, v)
    if t.module:
        lines += ["seen = {}  # a forward hook keeps what the module returns",
                  f"hf.{t.module}.register_forward_hook(lambda module, args, out: seen.update(out=out))"]
    lines += ["with torch.no_grad():", *_forward(v), f"result = {t.theirs}  # {t.what}", "print(result)"]
    return lines


def snippet(page: str, view: View, kind: str) -> str:
    """The source of a script that recomputes `page`'s main numbers for `view` into `result`."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    body = _ours(page, view) if kind == "gpt2viz" else _theirs(page, view)
    if kind == "gpt2viz" and page == "overview":
        body = ["import torch", *body]
    return "\n".join(_header(page, view, kind) + [""] + body) + "\n"


def cells(page: str, view: View) -> str:
    """Both snippets as one .py of `# %%` cells (Jupyter, VS Code and Spyder run them cell by cell)."""
    intro = [f"# %% [markdown]\n# gpt2viz · the {page} page, recomputed two ways. Each cell leaves the page's "
             "numbers in `result`.\n"]
    return "\n".join(intro + [f"# %%\n{snippet(page, view, kind)}" for kind in KINDS])
