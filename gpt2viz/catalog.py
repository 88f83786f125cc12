"""The component catalogue: one frozen tree of GPT-2's parts, the one source for pages, CLI and tests.

Every component carries its title, place in the tree, equation, our own description, the trace names
it reads and writes with their shapes in each mode, its parameter accounting rows and pinned source
references. Shapes use one symbol set: B batch, T positions computed, P positions cached, L = P + T
keys read, d width, nh heads, dh = d / nh, V vocabulary, n_ctx context (openai/gpt-2's name).

The recorded names and their order mirror `model.py` and `modes.py` (tests run the model and hold
them equal). References are facts copied from the project's `shared/reference_lines.json` into
`references.json` beside this file (repository, path, commit, lines, permalink, status); the one-line
descriptions are ours. No third-party code or prose is reproduced.
"""

import json
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib.resources import files
from types import MappingProxyType
from typing import Mapping

from . import costs
from .config import GPT2Config, get_config
from .modes import Mode

MODES = tuple(m.value for m in Mode)  # full, training, prefill, decode


# ---------------------------------------------------------------------------- symbols and axes
AXIS_NAMES = {"B": "batch", "T": "positions", "L": "keys", "P": "cached", "T-1": "targets"}
_AXIS = re.compile(r"^(\d*)([A-Za-z_]*)(?:-(\d+))?$")


def dims(cfg: GPT2Config, B: int = 1, T: int = 1, P: int = 0, L: int | None = None) -> dict[str, int]:
    """The value of every symbol for a config and a run (L defaults to P + T)."""
    return {"B": B, "T": T, "P": P, "L": P + T if L is None else L, "d": cfg.n_embd, "nh": cfg.n_head,
            "dh": cfg.d_head, "V": cfg.vocab_size, "n_ctx": cfg.n_positions}


def axis_value(axis: str, values: Mapping[str, int]) -> int:
    """Evaluate one axis: a symbol (`dh`), a multiple (`3d`), an offset (`T-1`) or a number (`1`)."""
    m = _AXIS.match(axis)
    if not m or not (m.group(1) or m.group(2)):
        raise ValueError(f"malformed axis {axis!r}")
    coef, sym, minus = m.groups()
    base = values[sym] if sym else 1
    return (int(coef) if coef else 1) * base - (int(minus) if minus else 0)


def concrete(axes: tuple[str, ...], values: Mapping[str, int]) -> list[int]:
    return [axis_value(a, values) for a in axes]


def symbolic(axes: tuple[str, ...]) -> str:
    return "[" + ", ".join(axes) + "]"


def labelled(axes: tuple[str, ...], cfg: GPT2Config, mode: str) -> str:
    """`[B batch, T positions, 768 d]`: run axes by symbol and name, model axes by value and symbol."""
    values = dims(cfg)
    parts = []
    for a in axes:
        if a == "T" and mode == Mode.DECODE.value:
            parts.append("1 T (the new position)")
        elif a == "L" and mode == Mode.DECODE.value:
            parts.append("L = P + 1 keys")
        elif a in AXIS_NAMES:
            parts.append(f"{a} {AXIS_NAMES[a]}")
        elif a.isdigit():
            parts.append(a)
        else:
            parts.append(f"{axis_value(a, values):,} {a}")
    return "[" + ", ".join(parts) + "]"


# ---------------------------------------------------------------------------- parameters
# Every parameter by checkpoint name (block ones without their `h.{i}.` prefix), in model order.
TOP_PARAMS = {"wte.weight": ("V", "d"), "wpe.weight": ("n_ctx", "d")}
BLOCK_PARAMS = {
    "ln_1.weight": ("d",), "ln_1.bias": ("d",),
    "attn.c_attn.weight": ("d", "3d"), "attn.c_attn.bias": ("3d",),
    "attn.c_proj.weight": ("d", "d"), "attn.c_proj.bias": ("d",),
    "ln_2.weight": ("d",), "ln_2.bias": ("d",),
    "mlp.c_fc.weight": ("d", "4d"), "mlp.c_fc.bias": ("4d",),
    "mlp.c_proj.weight": ("4d", "d"), "mlp.c_proj.bias": ("d",),
}
FINAL_PARAMS = {"ln_f.weight": ("d",), "ln_f.bias": ("d",)}
_BLOCK_KEY = re.compile(r"^h\.(\d+)\.(.+)$")


def parameter_names(cfg: GPT2Config) -> list[str]:
    """Every parameter's checkpoint name, in the order of `GPT2.named_parameters()`."""
    blocks = [f"h.{i}.{k}" for i in range(cfg.n_layer) for k in BLOCK_PARAMS]
    return [*TOP_PARAMS, *blocks, *FINAL_PARAMS]


def parameter_axes(name: str) -> tuple[str, ...]:
    """Symbolic shape of a parameter given its checkpoint name (`h.3.mlp.c_fc.weight` -> (d, 4d))."""
    m = _BLOCK_KEY.match(name)
    table, key = (BLOCK_PARAMS, m.group(2)) if m else ({**TOP_PARAMS, **FINAL_PARAMS}, name)
    if key not in table:
        raise ValueError(f"{name!r} is not a GPT-2 parameter name")
    return table[key]


# ---------------------------------------------------------------------------- recorded names
# Short names in execution order (model.py); MASKS only in TRAINING with dropout > 0, CACHE only in
# PREFILL and DECODE.
TOP_NAMES = ("embed.tok", "embed.pos", "embed.out", "embed.dropout_mask")
BLOCK_NAMES = (
    "resid_pre", "ln1.mean", "ln1.var", "ln1.normalized", "ln1.out",
    "attn.qkv", "attn.q", "attn.k", "attn.v", "attn.k_cache", "attn.v_cache", "attn.scores", "attn.pattern",
    "attn.pattern_dropout_mask", "attn.z", "attn.merged", "attn.out_dropout_mask", "attn.out", "resid_mid",
    "ln2.mean", "ln2.var", "ln2.normalized", "ln2.out",
    "mlp.pre", "mlp.post", "mlp.out_dropout_mask", "mlp.out", "resid_post",
)
FINAL_NAMES = ("ln_f.mean", "ln_f.var", "ln_f.normalized", "ln_f.out", "logits")
LOSS_NAMES = ("loss.per_token", "loss")
GRAD_STREAMS = ("resid_pre", "resid_mid", "resid_post")
MASKS = frozenset({"embed.dropout_mask", "attn.pattern_dropout_mask", "attn.out_dropout_mask",
                   "mlp.out_dropout_mask"})
CACHE = frozenset({"attn.k_cache", "attn.v_cache"})

BTd, BT1, BnhTdh = ("B", "T", "d"), ("B", "T", "1"), ("B", "nh", "T", "dh")
SHAPES = {  # short name -> symbolic axes (the same in every mode unless MODE_SHAPES says otherwise)
    "ids": ("B", "T"), "positions": ("T",),
    "embed.tok": BTd, "embed.pos": ("T", "d"), "embed.out": BTd, "embed.dropout_mask": BTd,
    "resid_pre": BTd, "resid_mid": BTd, "resid_post": BTd,
    "attn.qkv": ("B", "T", "3d"), "attn.q": BnhTdh, "attn.k": BnhTdh, "attn.v": BnhTdh,
    "attn.k_cache": ("B", "nh", "L", "dh"), "attn.v_cache": ("B", "nh", "L", "dh"),
    "attn.scores": ("B", "nh", "T", "L"), "attn.pattern": ("B", "nh", "T", "L"),
    "attn.pattern_dropout_mask": ("B", "nh", "T", "L"), "attn.z": BnhTdh, "attn.merged": BTd,
    "attn.out_dropout_mask": BTd, "attn.out": BTd,
    "mlp.pre": ("B", "T", "4d"), "mlp.post": ("B", "T", "4d"), "mlp.out_dropout_mask": BTd, "mlp.out": BTd,
    "logits": ("B", "T", "V"), "loss.per_token": ("B", "T-1"), "loss": (),
}
for _ln in ("ln1", "ln2", "ln_f"):
    SHAPES |= {f"{_ln}.mean": BT1, f"{_ln}.var": BT1, f"{_ln}.normalized": BTd, f"{_ln}.out": BTd}
MODE_SHAPES = {("logits", Mode.PREFILL.value): ("B", "1", "V")}  # prefill keeps the last position only
DTYPES = {"ids": "int64", "positions": "int64"} | {m: "bool" for m in MASKS}


def recorded_in(short: str, cfg: GPT2Config, mode: str) -> bool:
    """Whether the model records `short` in `mode` (masks need dropout > 0, caches need a cache)."""
    if short in MASKS:
        return mode == Mode.TRAINING.value and cfg.dropout > 0
    if short in CACHE:
        return mode in (Mode.PREFILL.value, Mode.DECODE.value)
    if short in LOSS_NAMES:
        return mode == Mode.TRAINING.value
    return short in SHAPES and short not in ("ids", "positions")


def short_axes(short: str, mode: str) -> tuple[str, ...]:
    return MODE_SHAPES.get((short, mode), SHAPES[short])


def recorded(cfg: GPT2Config, mode) -> list[tuple[str, tuple[str, ...], str]]:
    """(full name, symbolic axes, dtype) of every tensor the model records in `mode`, in order."""
    mode = Mode.parse(mode).value
    out = [(n, short_axes(n, mode), DTYPES.get(n, "float32")) for n in TOP_NAMES if recorded_in(n, cfg, mode)]
    for i in range(cfg.n_layer):
        out += [(f"blocks.{i}.{n}", short_axes(n, mode), DTYPES.get(n, "float32"))
                for n in BLOCK_NAMES if recorded_in(n, cfg, mode)]
    out += [(n, short_axes(n, mode), "float32") for n in FINAL_NAMES]
    if mode == Mode.TRAINING.value:
        out += [(n, SHAPES[n], "float32") for n in LOSS_NAMES]
        out += [(f"grad.{p}", parameter_axes(p), "float32") for p in parameter_names(cfg)]
        out += [(f"grad.blocks.{i}.{s}", BTd, "float32") for i in range(cfg.n_layer) for s in GRAD_STREAMS]
    return out


def recorded_names(cfg: GPT2Config, mode) -> list[str]:
    return [name for name, _, _ in recorded(cfg, mode)]


# ---------------------------------------------------------------------------- references
@dataclass(frozen=True)
class Reference:
    """A pinned line range in openai/gpt-2 or transformers (or a note that the code is absent)."""
    id: str
    repo: str
    path: str
    commit: str
    start: int | None
    end: int | None
    permalink: str | None
    status: str  # as verified for shared/reference_lines.json
    what: str  # our own one-line description
    candidates: tuple[tuple[int, int], ...] = ()  # the exact ranges, when the pinned one only covers them

    @property
    def absent(self) -> bool:
        return self.start is None

    @property
    def ambiguous(self) -> bool:
        return "AMBIGUOUS" in self.status

    @property
    def file_url(self) -> str:
        return f"https://github.com/{self.repo}/blob/{self.commit}/{self.path}"

    @property
    def lines(self) -> str:
        """`L102`, `L485-L629`, or `absent` (the file has no such code)."""
        if self.absent:
            return "absent"
        return f"L{self.start}" if self.start == self.end else f"L{self.start}-L{self.end}"

    @property
    def label(self) -> str:
        """One honest line for a link: where, which lines, and how sure we are."""
        where = f"{self.repo} {self.path.rsplit('/', 1)[-1]}"
        if self.absent:
            return f"{self.what.rstrip('.')} (no such code in {self.path})"
        if self.ambiguous:
            exact = " or ".join(f"L{s}-L{e}" if s != e else f"L{s}" for s, e in sorted(self.candidates))
            return f"{where} {self.lines} (covering range; the exact lines are {exact}, depending on the file version)"
        return f"{where} {self.lines}"


@lru_cache(maxsize=1)
def references() -> Mapping[str, Reference]:
    """Every pinned reference by our id, from the package's references.json."""
    doc = json.loads((files("gpt2viz") / "references.json").read_text(encoding="utf-8"))
    out = {}
    for e in doc["references"]:
        cands = tuple(tuple(c) for c in e.get("candidates", ()))
        out[e["id"]] = Reference(e["id"], e["repo"], e["path"], e["commit"], e["start"], e["end"],
                                 e["permalink"], e["status"], e["what"], cands)
    return MappingProxyType(out)


# ---------------------------------------------------------------------------- the tree
@dataclass(frozen=True)
class TraceName:
    """A name a component reads or writes: `attn.z` per block, `embed.tok` once, `ids` not recorded."""
    short: str
    per_block: bool = False
    recorded: bool = True
    block: int | None = None  # fixed block (ln_f reads the last block's resid_post)

    def full(self, block: int | None = None) -> str:
        if not self.per_block:
            return self.short
        b = self.block if self.block is not None else block
        if b is None:
            raise ValueError(f"{self.short!r} is recorded in every block: give a block index")
        return f"blocks.{b}.{self.short}"


@dataclass(frozen=True)
class TensorShape:
    role: str  # "in" or "out"
    name: TraceName
    symbolic: str  # "[B, nh, T, dh]"
    labelled: str  # "[B batch, 12 nh, T positions, 64 dh]"
    dtype: str  # float32, bool (dropout masks), int64 (ids)
    axes: tuple[str, ...]


@dataclass(frozen=True)
class Row:
    """One line of parameter accounting; `calculation` evaluates to `parameters`."""
    name: str
    calculation: str  # "768 × 3,072 + 3,072"
    parameters: int
    tensors: tuple[str, ...]  # checkpoint names; block ones as h.{i}.…
    symbolic: str  # "d × 4d + 4d"

    def as_dict(self) -> dict:
        return {"name": self.name, "calculation": self.calculation, "parameters": self.parameters,
                "tensors": list(self.tensors), "symbolic": self.symbolic}


@dataclass(frozen=True)
class Component:
    id: str  # stable: block.attn.merge
    title: str
    parent: str | None
    children: tuple["Component", ...]
    learned: bool  # computed with learned weights (the tied unembedding is, though it owns none)
    symbol: str
    equation: str  # LaTeX
    description: str  # one sentence
    explanation: str  # a short paragraph
    inputs: tuple[TraceName, ...]
    outputs: tuple[TraceName, ...]
    shapes: Mapping[str, tuple[TensorShape, ...]]  # mode -> in/out tensors recorded in that mode
    rows: tuple[Row, ...]  # per instance
    per_instance: int
    instances: int  # n_layer for block components
    weights_note: str | None  # for components that own no weights: says so, and why
    references: tuple[Reference, ...]

    @property
    def total(self) -> int:
        return self.per_instance * self.instances

    @property
    def per_block(self) -> bool:
        return self.id == "block" or self.id.startswith("block.")


@dataclass(frozen=True)
class Catalogue:
    config: GPT2Config
    root: Component
    by_id: Mapping[str, Component]

    def __getitem__(self, cid: str) -> Component:
        try:
            return self.by_id[cid]
        except KeyError:
            raise KeyError(f"no component {cid!r}; the ids are {', '.join(self.by_id)}") from None

    def __iter__(self):
        """Components in tree order (pre-order: a parent before its children)."""
        return iter(self.by_id.values())

    def ancestors(self, cid: str) -> list[Component]:
        """The breadcrumb: root first, the component itself last."""
        chain = [self[cid]]
        while chain[0].parent is not None:
            chain.insert(0, self[chain[0].parent])
        return chain

    @property
    def leaves(self) -> list[Component]:
        return [c for c in self if not c.children]


# ---------------------------------------------------------------------------- component texts
@dataclass(frozen=True)
class _Spec:
    id: str
    parent: str | None
    title: str
    symbol: str
    equation: str
    description: str
    explanation: str
    inputs: tuple[str, ...]  # short names; `blocks.` prefix added for block components
    outputs: tuple[str, ...]
    rows: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (row name, parameter names) it owns
    refs: tuple[str, ...] = ()
    weights_note: str | None = None
    learned: bool = True


NOT_RECORDED = frozenset({"ids", "positions"})
TOP_LEVEL = frozenset(TOP_NAMES + FINAL_NAMES + LOSS_NAMES) | NOT_RECORDED

SPECS = (
    _Spec("model", None, "GPT-2", "GPT-2",
          r"\text{logits} = \mathrm{LN}_f(x_{n_\text{layer}})\,W_E^{\top}, \quad x_0 = W_E[t_i] + W_P[L - T + i]",
          "The whole network: embeddings, a stack of pre-LN blocks on a residual stream, a final "
          "LayerNorm and an unembedding tied to the token table.",
          "Each position carries a d-wide residual stream. The embeddings write its first value; every block "
          "reads a normalised copy and adds two updates to it (attention, then the MLP); the final LayerNorm "
          "and the transposed token table turn it into V logits for the next token.",
          ("ids",), ("logits", "loss"),
          refs=("openai.model", "openai.hparams", "hf.model_class", "hf.lm_head_class", "hf.config_sizes")),
    _Spec("embed", "model", "Embeddings", "x₀", r"x_0 = W_E[t_i] + W_P[L - T + i]",
          "Turns token ids into the first residual stream by adding a token row and a position row.",
          "Two table lookups and one addition, nothing else: which token it is, and where it sits. In decode "
          "the new token sits at position P, after the P cached ones. Training applies dropout to the sum; "
          "openai/gpt-2's inference code has none.",
          ("ids", "positions"), ("embed.out", "embed.dropout_mask"),
          refs=("openai.embed_sum", "openai.no_embed_dropout", "hf.embed_dropout_call")),
    _Spec("embed.tok", "embed", "Token embedding", "W_E",
          r"W_E[t_i] \in \mathbb{R}^{d}, \quad W_E \in \mathbb{R}^{V \times d}",
          "A learned table with one d-wide row per vocabulary entry; a token id selects its row.",
          "The same table is used again at the very end, transposed, to score every vocabulary entry: "
          "GPT-2 ties its input and output matrices, so the token table is counted once.",
          ("ids",), ("embed.tok",), rows=(("token table W_E", ("wte.weight",)),),
          refs=("openai.wte", "hf.wte_def", "hf.wte_lookup")),
    _Spec("embed.pos", "embed", "Position embedding", "W_P",
          r"W_P[L - T + i] \in \mathbb{R}^{d}, \quad W_P \in \mathbb{R}^{n_\text{ctx} \times d}",
          "A learned table with one d-wide row per position in the context; position i selects its row.",
          "Attention by itself ignores order, so each position gets its own learned vector. Positions count "
          "from the start of the text: a decode step after P cached tokens looks up row P. The "
          "recorded rows have shape [T, d], shared by every sequence in the batch.",
          ("positions",), ("embed.pos",), rows=(("position table W_P", ("wpe.weight",)),),
          refs=("openai.wpe", "openai.positions_for", "openai.past_length", "hf.wpe_def", "hf.position_ids",
                "hf.wpe_lookup")),
    _Spec("block", "model", "Transformer block", "xₙ₊₁",
          r"x'_n = x_n + \mathrm{Attn}(\mathrm{LN}_1(x_n)), \quad x_{n+1} = x'_n + \mathrm{MLP}(\mathrm{LN}_2(x'_n))",
          "One of n_layer identical layers: attention then an MLP, each reading a normalised copy of the "
          "stream and adding its output back.",
          "GPT-2 normalises before each sublayer (pre-LN), so the stream itself is never normalised inside "
          "a block: it only accumulates updates. That makes every block's contribution an additive term, "
          "which is why the residual stream is worth looking at directly.",
          ("resid_pre",), ("resid_mid", "resid_post"),
          refs=("openai.block", "openai.resid_attn", "openai.resid_mlp", "openai.layers", "hf.block_class",
                "hf.block_forward", "hf.resid_attn", "hf.resid_mlp")),
    _Spec("block.ln1", "block", "LayerNorm 1", "LN₁",
          r"Z_1 = g_1 \odot \frac{x_n - \mu}{\sqrt{\sigma^2 + \varepsilon}} + b_1",
          "Normalises each position's stream to mean 0 and variance 1, then scales and shifts it with a "
          "learned gain and bias before attention.",
          "Mean and variance are taken over the d features of one position (never across positions or the "
          "batch), with ε = 1e-5. We record μ, σ², the normalised vector and the output Z₁.",
          ("resid_pre",), ("ln1.mean", "ln1.var", "ln1.normalized", "ln1.out"),
          rows=(("gain g₁ and bias b₁", ("h.{i}.ln_1.weight", "h.{i}.ln_1.bias")),),
          refs=("openai.norm", "openai.ln_1", "hf.ln_1_def", "hf.ln_1_call", "hf.config_eps")),
    _Spec("block.attn", "block", "Causal self-attention", "Δattn",
          r"\Delta_\text{attn} = \mathrm{merge}_h\big(\mathrm{softmax}(Q_h K_h^{\top} / \sqrt{d_h} + M)\,V_h\big)"
          r"\,W_O + b_O",
          "Lets each position gather information from itself and earlier positions, in nh heads at once.",
          "Three parts: one projection makes queries, keys and values; each head compares its queries with "
          "the keys it may see and averages the values by the resulting pattern; the heads are merged and "
          "projected back to d. With a KV cache, keys and values of earlier positions are reused, so a "
          "decode step computes one query against L = P + 1 keys.",
          ("ln1.out",), ("attn.out",),
          refs=("openai.attn", "openai.no_attn_dropout", "openai.no_resid_dropout", "hf.attention_class",
                "hf.attention_forward", "hf.attn_dropout_def", "hf.resid_dropout_def")),
    _Spec("block.attn.qkv", "block.attn", "Query, key and value projection", "W_QKV",
          r"[\,Q \;\; K \;\; V\,] = Z_1 W_{QKV} + b_{QKV}, \quad W_{QKV} \in \mathbb{R}^{d \times 3d}",
          "One matrix maps each normalised position to a query, a key and a value, each d wide and split "
          "into nh heads of dh.",
          "The checkpoint stores the three projections side by side in one [d, 3d] matrix (c_attn). The "
          "output is cut into thirds and each third reshaped to [B, nh, T, dh]. In prefill and decode the "
          "new keys and values are appended to the cache, which then holds L positions.",
          ("ln1.out",), ("attn.qkv", "attn.q", "attn.k", "attn.v", "attn.k_cache", "attn.v_cache"),
          rows=(("c_attn: W_QKV [d, 3d] and b_QKV", ("h.{i}.attn.c_attn.weight", "h.{i}.attn.c_attn.bias")),),
          refs=("openai.c_attn", "openai.split_qkv", "openai.conv1d", "openai.present", "hf.c_attn_def",
                "hf.c_attn_call", "hf.split_heads", "hf.cache_update", "hf.conv1d")),
    _Spec("block.attn.heads", "block.attn", "Attention heads", "H",
          r"H_h = \mathrm{softmax}\!\Big(\frac{Q_h K_h^{\top}}{\sqrt{d_h}} + M\Big) V_h, "
          r"\quad M_{ij} = -\infty \text{ if } j > L - T + i",
          "Each head scores its queries against the keys, masks the future, turns the scores into a "
          "probability pattern and averages the values with it.",
          "Scores are recorded before the mask, the pattern after the softmax. The mask is lower-right "
          "aligned: query i of T sits at absolute position L − T + i (P + i in decode) and reads keys 0 "
          "to that position, so one code path serves the full pass, prefill and decode.",
          ("attn.q", "attn.k", "attn.v", "attn.k_cache", "attn.v_cache"),
          ("attn.scores", "attn.pattern", "attn.pattern_dropout_mask", "attn.z"),
          weights_note="Owns no weights: the heads only combine the q, k and v that the projection before "
                       "them computed.", learned=False,
          refs=("openai.multihead_attn", "openai.scores", "openai.scale", "openai.attention_mask",
                "openai.mask_attn_weights", "openai.softmax_call", "openai.softmax", "openai.weighted_sum",
                "openai.no_attn_dropout", "hf.eager_attention", "hf.scaling", "hf.mask", "hf.softmax",
                "hf.attn_dropout_call", "hf.weighted_sum")),
    _Spec("block.attn.merge", "block.attn", "Merge heads and project", "W_O",
          r"\Delta_\text{attn} = \mathrm{merge}(H)\,W_O + b_O, \quad W_O \in \mathbb{R}^{d \times d}",
          "Lays the nh per-head outputs side by side into one d-wide vector per position and projects it "
          "back into the residual stream.",
          "Merging is a reshape, [B, nh, T, dh] to [B, T, d]; all the parameters are in the d × d "
          "projection (c_proj) and its bias. Its output is the update Δattn that the block adds to the stream.",
          ("attn.z",), ("attn.merged", "attn.out_dropout_mask", "attn.out"),
          rows=(("c_proj: W_O [d, d] and b_O", ("h.{i}.attn.c_proj.weight", "h.{i}.attn.c_proj.bias")),),
          refs=("openai.merge_heads", "openai.merge_states", "openai.merge_call", "openai.attn_c_proj",
                "openai.no_resid_dropout", "hf.merge_heads", "hf.attn_c_proj_def", "hf.attn_c_proj_call",
                "hf.resid_dropout_call")),
    _Spec("block.ln2", "block", "LayerNorm 2", "LN₂",
          r"Z_2 = g_2 \odot \frac{x'_n - \mu}{\sqrt{\sigma^2 + \varepsilon}} + b_2",
          "Normalises the stream after attention's update, with its own gain and bias, before the MLP.",
          "The same operation as LayerNorm 1 with separate parameters, applied to x′ₙ (the stream with "
          "attention's update added).",
          ("resid_mid",), ("ln2.mean", "ln2.var", "ln2.normalized", "ln2.out"),
          rows=(("gain g₂ and bias b₂", ("h.{i}.ln_2.weight", "h.{i}.ln_2.bias")),),
          refs=("openai.norm", "openai.ln_2", "hf.ln_2_def", "hf.ln_2_call")),
    _Spec("block.mlp", "block", "MLP", "Δmlp",
          r"\Delta_\text{mlp} = \mathrm{GELU}(Z_2 W_\text{fc} + b_\text{fc})\,W_\text{proj} + b_\text{proj}",
          "A two-layer network applied to each position on its own: widen to 4d, apply GELU, narrow back to d.",
          "Unlike attention, the MLP never mixes positions. It holds about two thirds of each block's "
          "parameters: an expansion [d, 4d] and a projection [4d, d], each with a bias.",
          ("ln2.out",), ("mlp.out",),
          refs=("openai.mlp", "hf.mlp_class", "openai.no_resid_dropout", "hf.mlp_dropout_def")),
    _Spec("block.mlp.fc", "block.mlp", "Expansion", "W_fc",
          r"A = Z_2 W_\text{fc} + b_\text{fc}, \quad W_\text{fc} \in \mathbb{R}^{d \times 4d}",
          "Maps each normalised position from d to 4d features.",
          "The checkpoint calls it c_fc. Its output (mlp.pre) is what the GELU receives.",
          ("ln2.out",), ("mlp.pre",),
          rows=(("c_fc: W_fc [d, 4d] and b_fc", ("h.{i}.mlp.c_fc.weight", "h.{i}.mlp.c_fc.bias")),),
          refs=("openai.mlp_c_fc", "openai.conv1d", "hf.c_fc_def", "hf.c_fc_call")),
    _Spec("block.mlp.gelu", "block.mlp", "GELU", "GELU",
          r"\mathrm{GELU}(a) = \tfrac{1}{2}\,a\,\Big(1 + \tanh\!\big(\sqrt{2/\pi}\,(a + 0.044715\,a^3)\big)\Big)",
          "A smooth non-linearity applied to every one of the 4d features on its own.",
          "GPT-2 uses the tanh approximation of GELU (gelu_new), not the exact erf form; the two differ "
          "slightly, and parity with the checkpoints needs the tanh one.",
          ("mlp.pre",), ("mlp.post",), learned=False,
          weights_note="Owns no weights: GELU is a fixed function, applied element by element.",
          refs=("openai.gelu", "hf.gelu_new", "hf.act_lookup", "hf.gelu_call", "hf.config_activation")),
    _Spec("block.mlp.proj", "block.mlp", "Projection", "W_proj",
          r"\Delta_\text{mlp} = G\,W_\text{proj} + b_\text{proj}, \quad W_\text{proj} \in \mathbb{R}^{4d \times d}",
          "Maps the 4d activated features back to d: the MLP's update to the stream.",
          "The checkpoint calls it c_proj (inside mlp). GPT-2 initialises it, like attention's c_proj, with "
          "a standard deviation scaled down by 1/√(2·n_layer), since both add into the residual stream.",
          ("mlp.post",), ("mlp.out_dropout_mask", "mlp.out"),
          rows=(("c_proj: W_proj [4d, d] and b_proj", ("h.{i}.mlp.c_proj.weight", "h.{i}.mlp.c_proj.bias")),),
          refs=("openai.mlp_c_proj", "hf.mlp_c_proj_def", "hf.mlp_c_proj_call", "hf.mlp_dropout_call")),
    _Spec("ln_f", "model", "Final LayerNorm", "LN_f",
          r"Z_f = g_f \odot \frac{x_{n_\text{layer}} - \mu}{\sqrt{\sigma^2 + \varepsilon}} + b_f",
          "Normalises the stream after the last block, once, before the unembedding.",
          "GPT-2 added this final LayerNorm when it moved the normalisations in front of the sublayers: "
          "otherwise the last block's updates would reach the logits unnormalised.",
          ("resid_post",), ("ln_f.mean", "ln_f.var", "ln_f.normalized", "ln_f.out"),
          rows=(("gain g_f and bias b_f", ("ln_f.weight", "ln_f.bias")),),
          refs=("openai.ln_f", "openai.norm", "hf.ln_f_def", "hf.ln_f_call")),
    _Spec("unembed", "model", "Unembedding (tied)", "W_U = W_Eᵀ",
          r"\text{logits} = Z_f\,W_E^{\top} \in \mathbb{R}^{V}",
          "Scores every vocabulary entry by the dot product of the final stream with its token-table row.",
          "The output matrix is the token table itself, transposed, so it adds no parameters; a checkpoint "
          "may still carry lm_head.weight as a copy. In prefill only the last position's logits are "
          "computed; in training they feed the next-token cross-entropy loss.",
          ("ln_f.out",), ("logits", "loss.per_token", "loss"),
          weights_note="Adds 0 parameters: it reuses wte.weight (tied), counted once under the token embedding.",
          refs=("openai.logits", "openai.no_loss", "hf.tied_weights", "hf.lm_head_def", "hf.logits",
                "hf.config_tie", "hf.loss_call", "hf.causal_lm_loss")),
)
TIED_ROW = ("W_U tied to wte.weight (no tensor of its own)", ())


# ---------------------------------------------------------------------------- building
def fmt(n: int) -> str:
    return f"{n:,}"


def tensor_row(name: str, tensors: tuple[str, ...], cfg: GPT2Config) -> Row:
    """A row from parameter names: "768 × 3,072 + 3,072" is the weight's shape product plus the bias."""
    values = dims(cfg)
    axes = [parameter_axes(t.replace("{i}", "0")) for t in tensors]
    calc = " + ".join(" × ".join(fmt(axis_value(a, values)) for a in ax) for ax in axes) or "0"
    sym = " + ".join(" × ".join(ax) for ax in axes) or "0"
    count = sum(math.prod(axis_value(a, values) for a in ax) for ax in axes)
    return Row(name, calc, count, tensors, sym)


def group_row(child: Component) -> Row:
    """A parent's one-line summary of a child repeated n_layer times: "12 × 7,087,872"."""
    tensors = tuple(t for r in child.rows for t in r.tensors)
    return Row(f"{child.instances} × {child.title.lower()}", f"{child.instances} × {fmt(child.per_instance)}",
               child.total, tensors, f"n_layer × ({' + '.join(r.symbolic for r in child.rows)})")


def _names(spec: _Spec, shorts: tuple[str, ...], cfg: GPT2Config) -> tuple[TraceName, ...]:
    per_block = spec.id.startswith("block")
    out = []
    for s in shorts:
        if s in NOT_RECORDED:
            out.append(TraceName(s, recorded=False))
        elif s in TOP_LEVEL:
            out.append(TraceName(s))
        elif per_block:
            out.append(TraceName(s, per_block=True))
        else:  # ln_f reads the last block's output
            out.append(TraceName(s, per_block=True, block=cfg.n_layer - 1))
    return tuple(out)


def _shapes(inputs, outputs, cfg: GPT2Config) -> Mapping[str, tuple[TensorShape, ...]]:
    out = {}
    for mode in MODES:
        lines = []
        for role, names in (("in", inputs), ("out", outputs)):
            for n in names:
                if n.recorded and not recorded_in(n.short, cfg, mode):
                    continue
                axes = short_axes(n.short, mode)
                lines.append(TensorShape(role, n, symbolic(axes), labelled(axes, cfg, mode),
                                         DTYPES.get(n.short, "float32"), axes))
        out[mode] = tuple(lines)
    return MappingProxyType(out)


def _component(spec: _Spec, cfg: GPT2Config, children: tuple[Component, ...]) -> Component:
    instances = cfg.n_layer if spec.id.startswith("block") else 1
    if children:
        rows = tuple(r for c in children for r in (c.rows if c.instances == instances else (group_row(c),)))
    elif spec.id == "unembed":
        rows = (tensor_row(*TIED_ROW, cfg),)
    else:
        rows = tuple(tensor_row(name, tensors, cfg) for name, tensors in spec.rows)
    refs = references()
    inputs, outputs = _names(spec, spec.inputs, cfg), _names(spec, spec.outputs, cfg)
    return Component(
        id=spec.id, title=spec.title, parent=spec.parent, children=children, learned=spec.learned,
        symbol=spec.symbol, equation=spec.equation, description=spec.description, explanation=spec.explanation,
        inputs=inputs, outputs=outputs, shapes=_shapes(inputs, outputs, cfg), rows=rows,
        per_instance=sum(r.parameters for r in rows), instances=instances,
        weights_note=spec.weights_note, references=tuple(refs[r] for r in spec.refs))


def _build(spec: _Spec, cfg: GPT2Config, out: dict) -> Component:
    out[spec.id] = None  # reserve the pre-order position
    children = tuple(_build(s, cfg, out) for s in SPECS if s.parent == spec.id)
    out[spec.id] = _component(spec, cfg, children)
    return out[spec.id]


@lru_cache(maxsize=16)
def _catalogue(cfg: GPT2Config) -> Catalogue:
    by_id: dict[str, Component] = {}
    root = _build(SPECS[0], cfg, by_id)
    return Catalogue(cfg, root, MappingProxyType(by_id))


def catalogue(model: str | GPT2Config = "gpt2") -> Catalogue:
    """The component tree of a preset (by name) or of any config."""
    return _catalogue(get_config(model) if isinstance(model, str) else model)


# ---------------------------------------------------------------------------- shapes per mode
def run_dims(cfg: GPT2Config, mode, B: int = 1, T: int | None = None, P: int | None = None) -> dict[str, int]:
    """B, T, P, L of a run, with the defaults and checks of `gpt2viz shapes`.

    FULL/TRAINING: T tokens (default 8), no cache, L = T. PREFILL: a prompt of T tokens (default 8) into
    an empty cache (P = 0), which then holds L = T positions. DECODE: one new token (T = 1) after P cached ones (default 7), L = P + 1."""
    mode = Mode.parse(mode)
    if B < 1:
        raise ValueError(f"batch B must be at least 1, got {B}")
    if T is not None and T < 1:
        raise ValueError(f"T (tokens) must be at least 1, got {T}")
    if P is not None and P < 0:
        raise ValueError(f"P (past) must be 0 or more, got {P}")
    if mode in (Mode.FULL, Mode.TRAINING):
        if P:
            raise ValueError(f"{mode.value} mode has no KV cache: P (--past) applies to prefill and decode only")
        T, P = (8 if T is None else T), 0
        if mode is Mode.TRAINING and T < 2:
            raise ValueError("training needs T >= 2 tokens: each position predicts the next one")
        L = T
    elif mode is Mode.PREFILL:
        if P:
            raise ValueError(f"prefill starts from an empty cache (P = 0) and computes the whole prompt: "
                             f"give its length as T (--tokens), not P={P}")
        T, P = (8 if T is None else T), 0
        L = T
    else:
        if T not in (None, 1):
            raise ValueError(f"decode computes exactly one new position: T must be 1, got {T}")
        T, P = 1, (7 if P is None else P)
        L = P + 1
    if L > cfg.n_positions:
        raise ValueError(f"P + T = {L:,} positions exceed {cfg.name}'s context of {cfg.n_positions:,}")
    return {"B": B, "T": T, "P": P, "L": L}


def shapes_report(model_name: str, mode: str, B: int = 1, T: int | None = None, P: int | None = None) -> dict:
    """Every recorded tensor of `mode`, symbolic and concrete, in execution order, with the costs."""
    cfg = get_config(model_name)
    mode = Mode.parse(mode).value
    run = run_dims(cfg, mode, B, T, P)
    values = dims(cfg, run["B"], run["T"], run["P"], run["L"])
    tensors = [{"name": name, "symbolic": symbolic(axes), "shape": concrete(axes, values), "dtype": dtype}
               for name, axes, dtype in recorded(cfg, mode)]
    return {"model": cfg.name, "mode": mode, **run, "symbols": values, "tensors": tensors,
            "costs": costs.mode_costs(cfg, mode, run, [(t["shape"], t["dtype"]) for t in tensors],
                                      catalogue(cfg).root.total)}


def format_shapes(report: dict) -> str:
    """A readable table of `shapes_report`: name, symbolic and concrete shape, then the costs."""
    s = report["symbols"]
    head = (f"{report['model']} · {report['mode']} · B={report['B']} T={report['T']} P={report['P']} "
            f"L={report['L']} · d={s['d']} nh={s['nh']} dh={s['dh']} V={s['V']:,} · "
            f"{len(report['tensors'])} tensors")
    width = max(len(t["name"]) for t in report["tensors"])
    lines = [head]
    for t in report["tensors"]:
        flag = "  bool" if t["dtype"] == "bool" else ""
        lines.append(f"  {t['name']:{width}s}  {t['symbolic']:18s} {t['shape']}{flag}")
    return "\n".join(lines + ["", costs.format_costs(report["costs"])])
