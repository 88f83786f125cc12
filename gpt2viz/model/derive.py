"""Names a trace derives on demand instead of storing them (schema.derived_in).

Each is a pure function of names the forward pass records, computed with the very functions
`gpt2.py` runs, so a derived tensor equals the one the forward pass computed: the attention
scores and pattern of a block from its q and k (the cache's keys in prefill; decode stores its one row), a
LayerNorm's normalised vector and output from its input stream and statistics (and its gain and
bias, references to the model's parameters), the GELU from `mlp.pre` (the config's own),
`resid_mid` from `resid_pre + attn.out`. And FULL's and TRAINING's logits from `ln_f.out`, which
the forward pass then never computes: a position alone or all of them, in blocks of 32 positions
(gpt2.unembed_rows), equal to a product of all at once up to the matrix library's rounding (they
were bit for bit here); TRAINING's loss at each position from 256 positions' logits at a time, one
block held at a time (gpt2.next_token_loss, which a run with a backward pass differentiates: it
stores the loss it made). A recording of names that include a derived one records its sources
instead, but for a name the run intervenes on (interventions.py): that one is stored after the intervention, as the
model carried on with it, and what derives from it is then derived from those values.
"""

import weakref
from collections.abc import Callable
from fnmatch import fnmatchcase

import torch

from ..spec.config import GPT2Config
from ..spec.schema import CACHED_MODES, Mode, block_name, derived_in, recorded_names
from .gpt2 import (
    GPT2,
    activation,
    attention_scores,
    causal_mask,
    causal_softmax,
    next_token_loss,
    normalize,
    scale_shift,
    unembed_rows,
)
from .trace import Derivation

STREAM = {"ln1": "resid_pre", "ln2": "resid_mid", "ln_f": "resid_post"}  # what each LayerNorm reads
LN_MODULE = {"ln1": "ln_1", "ln2": "ln_2"}  # its parameters' names in a block


def _split(name: str) -> tuple[str, str]:
    """("blocks.3.", "attn.pattern") for a block name, ("", "ln_f.out") for a top-level one."""
    if name.startswith("blocks."):
        _, b, short = name.split(".", 2)
        return block_name("", int(b)), short
    return "", name


def _sources(name: str, cfg: GPT2Config, mode: Mode) -> tuple[str, ...]:
    prefix, short = _split(name)
    group, _, part = short.partition(".")
    if short == "attn.scores":
        return (prefix + "attn.q", prefix + ("attn.k_cache" if Mode.parse(mode) in CACHED_MODES else "attn.k"))
    if short == "attn.pattern":
        return (prefix + "attn.scores",)
    if short == "resid_mid":
        return (prefix + "resid_pre", prefix + "attn.out")
    if short == "mlp.post":
        return (prefix + "mlp.pre",)
    if short in ("logits", "loss.per_token"):
        return ("ln_f.out",)
    if short == "loss":
        return ("loss.per_token",)
    if part == "normalized":
        stream = block_name("resid_post", cfg.n_layer - 1) if group == "ln_f" else prefix + STREAM[group]
        return (stream, f"{prefix}{group}.mean", f"{prefix}{group}.var")
    return (f"{prefix}{group}.normalized",)  # ln*.out


def _part(name: str, cfg: GPT2Config, mode: str):
    """For the scores and the pattern: a function (trace, head, queries) computing only
    `[:, head, queries]`, from the same rows of q and the head's keys (and the mask's rows)."""
    prefix, short = _split(name)
    if short not in ("attn.scores", "attn.pattern"):
        return None
    q_name, k_name = _sources(prefix + "attn.scores", cfg, mode)

    def part(trace, head, queries):
        q, k = trace[q_name], trace[k_name]  # [B, nh, T, dh], [B, nh, L, dh]
        if short == "attn.scores":
            return attention_scores(q[:, head, queries], k[:, head])  # [B, (nh,) n, L]
        scores = trace.part(prefix + "attn.scores", head, queries)  # [B, (nh,) n, L]
        return causal_softmax(scores, causal_mask(q.shape[2], k.shape[2])[queries])  # [B, (nh,) n, L]
    return part


def _compute(name: str, model: GPT2) -> Callable[..., torch.Tensor]:
    prefix, short = _split(name)
    group, _, part = short.partition(".")
    if short == "attn.scores":
        return attention_scores
    if short == "attn.pattern":
        return lambda scores: causal_softmax(scores, causal_mask(*scores.shape[-2:]))
    if short == "resid_mid":
        return torch.add
    if short == "loss":
        return torch.mean  # of loss.per_token, as a training run's backward pass takes it
    if short == "mlp.post":
        return activation(model.config)  # the checkpoint's: GPT-2's tanh form, or nanoGPT's exact GELU
    if part == "normalized":
        eps = model.config.layer_norm_epsilon
        return lambda x, mean, var: normalize(x, mean, var, eps)
    ln = model.ln_f if group == "ln_f" else getattr(model.h[int(prefix.split(".")[1])], LN_MODULE[group])
    gain = ln.weight.detach()  # the model's own, not copies; no bias when the config has none
    bias = None if ln.bias is None else ln.bias.detach()
    return lambda normalized: scale_shift(normalized, gain, bias)


def derivations(model: GPT2, mode: Mode, stored, rows) -> dict[str, Derivation]:
    """Every derived name of `mode` whose sources are stored (or derivable), in execution order;
    not one stored itself (a run that intervened on it keeps what it recorded). `rows`: the token
    ids of every sequence of the run (a training trace's loss reads them)."""
    out: dict[str, Derivation] = {}
    for name in recorded_names(model.config, mode):
        if derived_in(_split(name)[1], mode) and name not in stored:
            sources = _sources(name, model.config, mode)
            if all(s in stored or s in out for s in sources):
                out[name] = _logits(model) if name == "logits" else _loss(model, rows) if name == "loss.per_token" \
                    else Derivation(sources, _compute(name, model), _part(name, model.config, mode))
    return out


def _logits(model: GPT2) -> Derivation:
    """FULL's and TRAINING's logits from ln_f.out: the whole, or `[:, positions]` alone on the same
    grid of blocks."""
    w_u = Unembedding(model)
    return Derivation(("ln_f.out",), lambda z: unembed_rows(z, w_u.get()), None,
                      lambda trace, span: unembed_rows(trace["ln_f.out"], w_u.get(), span), w_u)


def _loss(model: GPT2, rows) -> Derivation:
    """TRAINING's loss at each position from ln_f.out, 256 positions' logits at a time (never all at once)."""
    w_u, ids = Unembedding(model), torch.tensor(rows, dtype=torch.long)  # [B, T]
    return Derivation(("ln_f.out",), lambda z: next_token_loss(z, w_u.get(), ids), weights=w_u)


def unembedding_of(trace) -> torch.Tensor | None:
    """The W_U [V, d] a trace's derived logits read (the model's own, while it lives), or None for a
    trace that stores its logits or has none."""
    how = trace.derived.get("logits")
    return None if how is None or how.weights is None else how.weights.get()


class Unembedding:
    """The W_U [V, d] a trace's derived logits read: the model's own, held as long as the trace
    (a script's `run(model, ids)` reads its logits after dropping the model), or, bound `weak`ly, only
    while the model lives: the server's cache keeps a trace after evicting its model, and holding its
    147 MiB embedding (gpt2) would keep memory no budget counts. ui/cache.get_trace binds every trace it
    gives to the model of the view asking, weakly."""

    def __init__(self, model: GPT2):
        self.bind(model)

    def bind(self, model: GPT2, weak: bool = False) -> None:
        w_u = model.wte.weight if model.config.tied else model.lm_head.weight
        self._ref = weakref.ref(w_u) if weak else (lambda: w_u)

    def get(self) -> torch.Tensor:
        w_u = self._ref()
        if w_u is None:
            raise RuntimeError("the model that ran this trace is gone: ask for the trace again to read its logits")
        return w_u.detach()


def to_record(cfg: GPT2Config, mode: Mode, names=None, keep=()) -> frozenset[str]:
    """The names a run must store to give `names` (full names or globs; None: everything): the
    stored ones as they are, the derived ones through their sources, but those in `keep` (the
    names a run intervenes on) as they are."""
    every = recorded_names(cfg, mode)
    asked = every if names is None else [n for n in every if any(fnmatchcase(n, p) for p in names)]
    kept, todo = set(), list(asked)
    while todo:
        name = todo.pop()
        if derived_in(_split(name)[1], mode) and name not in keep:
            todo += _sources(name, cfg, mode)
        else:
            kept.add(name)
    return frozenset(kept)
