"""The component tree: one frozen tree of GPT-2's parts, the one source for pages, CLI and tests.

Every component carries its title, place in the tree, equation, our own description, the trace names
it reads and writes with their shapes in each mode (from `schema`), its parameter accounting rows and
pinned source references (from `references`). Torch-free, like both of those.
"""

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType

from ..spec.config import GPT2Config, get_config
from ..spec.glossary import link
from ..spec.references import Reference, references
from ..spec.schema import (
    DTYPES,
    NOT_RECORDED,
    TOP_LEVEL,
    Mode,
    axis_value,
    block_name,
    dims,
    for_config,
    has_parameter,
    parameter_axes,
    recorded_in,
    short_axes,
    symbolic,
)


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
        return block_name(self.short, b)


@dataclass(frozen=True)
class TensorShape:
    role: str  # "in" or "out"
    name: TraceName
    symbolic: str  # "[B, nh, T, dh]"; schema.labelled(axes, cfg, mode) gives "[B batch, 12 nh, T positions, 64 dh]"
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

    @property
    def is_leaf(self) -> bool:
        return not self.children

    @property
    def leaves(self) -> list["Component"]:
        """The leaf components under this one (itself, if it is one), in tree order."""
        return [self] if self.is_leaf else [leaf for ch in self.children for leaf in ch.leaves]


@dataclass(frozen=True)
class ComponentTree:
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
        return self.root.leaves


# ---------------------------------------------------------------------------- component texts
@dataclass(frozen=True)
class _Spec:
    id: str
    parent: str | None
    title: str
    equation: str
    description: str
    explanation: str
    inputs: tuple[str, ...]  # short names; `blocks.` prefix added for block components
    outputs: tuple[str, ...]
    rows: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (row name, parameter names) it owns
    refs: tuple[str, ...] = ()
    weights_note: str | None = None
    learned: bool = True


PREFILL_LOGITS = ("In the full pass and training the logits cover every position, [B, T, V], as a plain "
                  "forward of openai/gpt-2 or transformers returns them; training feeds them to the next-token "
                  "cross-entropy loss. In prefill this app keeps the last position's only, [B, 1, V]: that is "
                  "all generation needs to pick the next token, and transformers' generate asks its model for "
                  "just that position.")

SPECS = (
    _Spec("model", None, "GPT-2",
          r"\text{logits} = \mathrm{LN}_f(x_{n_\text{layer}})\,W_E^{\top}, \quad x_0 = W_E[t_i] + W_P[P + i]",
          f"The whole network: embeddings, a stack of {link('pre-LN')} blocks on a {link('residual stream')}, a "
          f"final LayerNorm and an {link('unembedding')} tied to the token table.",
          f"Each position carries a d-wide residual stream. The embeddings write its first value; every block "
          f"reads a normalised copy and adds two updates to it (attention, then the MLP); the final LayerNorm "
          f"gives Z_f, and the transposed token table turns Z_f into V {link('logit', 'logits')}, one per "
          f"vocabulary entry, for the next token.",
          ("ids",), ("logits", "loss"),
          refs=("openai.model", "openai.hparams", "hf.model_class", "hf.lm_head_class", "hf.config_sizes")),
    _Spec("embed", "model", "Embeddings", r"x_0 = W_E[t_i] + W_P[P + i]",
          f"Turns {link('token')} ids into the first residual stream by adding a token row and a "
          f"position row.",
          "Two table lookups and one addition, nothing else: which token it is, and where it sits. In decode "
          "the new token sits at position P, after the P cached ones. Training applies dropout to the sum; "
          "openai/gpt-2's inference code has none.",
          ("ids", "positions"), ("embed.out", "embed.dropout_mask"),
          refs=("openai.embed_sum", "openai.no_embed_dropout", "hf.embed_dropout_call")),
    _Spec("embed.tok", "embed", "Token embedding",
          r"W_E[t_i] \in \mathbb{R}^{d}, \quad W_E \in \mathbb{R}^{V \times d}",
          "A learned table with one d-wide row per vocabulary entry; a token id selects its row.",
          "The same table is used again at the very end, transposed, to score every vocabulary entry: "
          "GPT-2 ties its input and output matrices, so the token table is counted once.",
          ("ids",), ("embed.tok",), rows=(("token table W_E", ("wte.weight",)),),
          refs=("openai.wte", "hf.wte_def", "hf.wte_lookup")),
    _Spec("embed.pos", "embed", "Position embedding",
          r"W_P[P + i] \in \mathbb{R}^{d}, \quad W_P \in \mathbb{R}^{n_\text{ctx} \times d}",
          "A learned table with one d-wide row per position in the context; position i selects its row.",
          "Attention is not blind to order as a whole: the causal mask lets a query read only earlier keys. "
          "But what decides how much a query takes from a key is the comparison q·k, and that looks at content "
          "only: two keys made from the same token score the same whether they sit one or ten positions back. "
          "Adding a learned vector per position to x₀ puts the position into the content, so q·k can prefer "
          "the previous token or a nearby one. Positions count from the start of the text: query i of the step "
          "sits at position P + i, so a decode step after P cached tokens looks up row P. embed.pos holds the "
          "T rows once, [T, d], shared by every sequence in the batch.",
          ("positions",), ("embed.pos",), rows=(("position table W_P", ("wpe.weight",)),),
          refs=("openai.wpe", "openai.positions_for", "openai.past_length", "hf.wpe_def", "hf.position_ids",
                "hf.wpe_lookup")),
    _Spec("block", "model", "Transformer block",
          r"x'_n = x_n + \mathrm{Attn}(\mathrm{LN}_1(x_n)), \quad x_{n+1} = x'_n + \mathrm{MLP}(\mathrm{LN}_2(x'_n))",
          "One of n_layer blocks, all built alike but each with its own weights: attention then an MLP, each "
          "reading a normalised copy of the stream and adding its output back.",
          f"GPT-2 normalises before each sublayer ({link('pre-LN')}), so the stream itself is never normalised "
          f"inside a block: it only accumulates updates. That makes every block's contribution an additive "
          f"term, which is why the {link('residual stream')} is worth looking at directly.",
          ("resid_pre",), ("resid_mid", "resid_post"),
          refs=("openai.block", "openai.resid_attn", "openai.resid_mlp", "openai.layers", "hf.block_class",
                "hf.block_forward", "hf.resid_attn", "hf.resid_mlp")),
    _Spec("block.ln1", "block", "LayerNorm 1",
          r"Z_1 = g_1 \odot \frac{x_n - \mu}{\sqrt{\sigma^2 + \varepsilon}} + b_1",
          "Normalises each position's stream to mean 0 and variance 1, then scales and shifts it with a "
          "learned gain and bias before attention.",
          "Mean and variance are taken over the d features of one position (never across positions or the "
          "batch), with ε = 1e-5. The page shows μ, σ², the normalised vector and the output Z₁.",
          ("resid_pre",), ("ln1.mean", "ln1.var", "ln1.normalized", "ln1.out"),
          rows=(("gain g₁ and bias b₁", ("h.{i}.ln_1.weight", "h.{i}.ln_1.bias")),),
          refs=("openai.norm", "openai.ln_1", "hf.ln_1_def", "hf.ln_1_call", "hf.config_eps")),
    _Spec("block.attn", "block", "Causal self-attention",
          r"\Delta_\text{attn} = \mathrm{merge}_h\big(\mathrm{softmax}(Q_h K_h^{\top} / \sqrt{d_h} + M)\,V_h\big)"
          r"\,W_O + b_O",
          f"Lets each position gather information from itself and earlier positions, in nh "
          f"{link('head', 'heads')} at once.",
          f"Three parts: one projection makes {link('query, key, value', 'queries, keys and values')}; each head "
          f"compares its queries with the keys it may see and averages its values V_h by the resulting "
          f"{link('attention pattern', 'pattern')}; the heads are merged and projected back to d. With a "
          f"{link('KV cache')}, keys and values of earlier positions are reused, so a decode step computes one "
          f"query against L = P + 1 keys.",
          ("ln1.out",), ("attn.out",),
          refs=("openai.attn", "openai.no_attn_dropout", "openai.no_resid_dropout", "hf.attention_class",
                "hf.attention_forward", "hf.attn_dropout_def", "hf.resid_dropout_def")),
    _Spec("block.attn.qkv", "block.attn", "Query, key and value projection",
          r"[\,Q_h \;\; K_h \;\; V_h\,]_{h < n_h} = \mathrm{split}(Z_1 W_{QKV} + b_{QKV}), "
          r"\quad W_{QKV} \in \mathbb{R}^{d \times 3d}",
          "One matrix maps each normalised position to a query, a key and a value, each d wide and split "
          "into nh heads of dh.",
          "The checkpoint stores the three projections side by side in one [d, 3d] matrix (c_attn). The "
          "output [B, T, 3d] is cut into thirds; each third [B, T, d] is viewed as [B, T, nh, dh] (each "
          "position's d features split into nh heads of dh) and then transposed to [B, nh, T, dh], heads "
          "before positions. In prefill and decode the new keys and values are appended to the cache, which "
          "then holds L positions.",
          ("ln1.out",), ("attn.qkv", "attn.q", "attn.k", "attn.v", "attn.k_cache", "attn.v_cache"),
          rows=(("c_attn: W_QKV [d, 3d] and b_QKV", ("h.{i}.attn.c_attn.weight", "h.{i}.attn.c_attn.bias")),),
          refs=("openai.c_attn", "openai.split_qkv", "openai.conv1d", "openai.present", "hf.c_attn_def",
                "hf.c_attn_call", "hf.split_heads", "hf.cache_update", "hf.conv1d")),
    _Spec("block.attn.heads", "block.attn", "Attention heads",
          r"H_h = \mathrm{softmax}\!\Big(\frac{Q_h K_h^{\top}}{\sqrt{d_h}} + M\Big) V_h, "
          r"\quad M_{ij} = -\infty \text{ if } j > P + i",
          f"Each head scores its queries against the keys, masks the future ({link('causal mask')}), turns the "
          f"scores into a probability pattern with a {link('softmax')} and averages its values V_h with it.",
          "The scores are shown before the mask, the pattern after the softmax. The mask is lower-right "
          "aligned: query i of the step (i = 0 … T − 1) sits at absolute position P + i and reads keys 0 to "
          "P + i, the first P + i + 1 of the L. This holds in every mode (P = 0 without a cache), so one code "
          "path serves the full pass, prefill and decode.",
          ("attn.q", "attn.k", "attn.v", "attn.k_cache", "attn.v_cache"),
          ("attn.scores", "attn.pattern", "attn.pattern_dropout_mask", "attn.z"),
          weights_note="Owns no weights: the heads only combine the q, k and v that the projection before "
                       "them computed.", learned=False,
          refs=("openai.multihead_attn", "openai.scores", "openai.scale", "openai.attention_mask",
                "openai.mask_attn_weights", "openai.softmax_call", "openai.softmax", "openai.weighted_sum",
                "openai.no_attn_dropout", "hf.eager_attention", "hf.scaling", "hf.mask", "hf.softmax",
                "hf.attn_dropout_call", "hf.weighted_sum")),
    _Spec("block.attn.merge", "block.attn", "Merge heads and project",
          r"\Delta_\text{attn} = \mathrm{merge}(H)\,W_O + b_O, \quad W_O \in \mathbb{R}^{d \times d}",
          "Lays the nh per-head outputs side by side into one d-wide vector per position and projects it "
          "back into the residual stream.",
          "Merging is a transpose and then a reshape: H [B, nh, T, dh] is transposed to [B, T, nh, dh], so each "
          "position's nh head outputs sit together, and then reshaped to [B, T, d]. Reshaping [B, nh, T, dh] "
          "straight to [B, T, d] would keep the numbers but mix positions: a classic bug. All the parameters "
          "are in the d × d projection (c_proj) and its bias. Its output, after dropout in training, is the "
          "update Δattn that the block adds to the stream.",
          ("attn.z",), ("attn.merged", "attn.out_dropout_mask", "attn.out"),
          rows=(("c_proj: W_O [d, d] and b_O", ("h.{i}.attn.c_proj.weight", "h.{i}.attn.c_proj.bias")),),
          refs=("openai.merge_heads", "openai.merge_states", "openai.merge_call", "openai.attn_c_proj",
                "openai.no_resid_dropout", "hf.merge_heads", "hf.attn_c_proj_def", "hf.attn_c_proj_call",
                "hf.resid_dropout_call")),
    _Spec("block.ln2", "block", "LayerNorm 2",
          r"Z_2 = g_2 \odot \frac{x'_n - \mu}{\sqrt{\sigma^2 + \varepsilon}} + b_2",
          "Normalises the stream after attention's update, with its own gain and bias, before the MLP.",
          "The same operation as LayerNorm 1 with separate parameters, applied to x′ₙ (the stream with "
          "attention's update added).",
          ("resid_mid",), ("ln2.mean", "ln2.var", "ln2.normalized", "ln2.out"),
          rows=(("gain g₂ and bias b₂", ("h.{i}.ln_2.weight", "h.{i}.ln_2.bias")),),
          refs=("openai.norm", "openai.ln_2", "hf.ln_2_def", "hf.ln_2_call")),
    _Spec("block.mlp", "block", "MLP",
          r"A = Z_2 W_\text{fc} + b_\text{fc},\; G = \mathrm{GELU}(A),\; "
          r"\Delta_\text{mlp} = G\,W_\text{proj} + b_\text{proj}",
          f"A two-layer network applied to each position on its own: widen to 4d (A), apply the "
          f"{link('GELU')} (G), narrow back to d.",
          "Unlike attention, the MLP never mixes positions. It holds about two thirds of each block's "
          "parameters: an expansion [d, 4d] and a projection [4d, d], each with a bias.",
          ("ln2.out",), ("mlp.out",),
          refs=("openai.mlp", "hf.mlp_class", "openai.no_resid_dropout", "hf.mlp_dropout_def")),
    _Spec("block.mlp.fc", "block.mlp", "Expansion",
          r"A = Z_2 W_\text{fc} + b_\text{fc}, \quad W_\text{fc} \in \mathbb{R}^{d \times 4d}",
          "Maps each normalised position from d to 4d features.",
          "The checkpoint calls it c_fc. Its output A (mlp.pre), the pre-activation, is what the GELU "
          "receives.",
          ("ln2.out",), ("mlp.pre",),
          rows=(("c_fc: W_fc [d, 4d] and b_fc", ("h.{i}.mlp.c_fc.weight", "h.{i}.mlp.c_fc.bias")),),
          refs=("openai.mlp_c_fc", "openai.conv1d", "hf.c_fc_def", "hf.c_fc_call")),
    _Spec("block.mlp.gelu", "block.mlp", "GELU",
          r"G = \mathrm{GELU}(A), \quad "
          r"\mathrm{GELU}(a) = \tfrac{1}{2}\,a\,\Big(1 + \tanh\!\big(\sqrt{2/\pi}\,(a + 0.044715\,a^3)\big)\Big)",
          "A smooth non-linearity applied to every one of the 4d features of A on its own, giving G.",
          "Close to a for large positive a; for negative a it dips below 0, to its minimum of about −0.17 near "
          "a = −0.75, and tends to 0 only for large negative a. GPT-2 uses the tanh approximation of GELU "
          "(gelu_new), not the exact erf form; the two differ slightly, and parity with the checkpoints needs "
          "the tanh one.",
          ("mlp.pre",), ("mlp.post",), learned=False,
          weights_note="Owns no weights: GELU is a fixed function, applied element by element.",
          refs=("openai.gelu", "hf.gelu_new", "hf.act_lookup", "hf.gelu_call", "hf.config_activation")),
    _Spec("block.mlp.proj", "block.mlp", "Projection",
          r"\Delta_\text{mlp} = G\,W_\text{proj} + b_\text{proj}, \quad W_\text{proj} \in \mathbb{R}^{4d \times d}",
          "Maps the 4d activated features G back to d: the MLP's update Δmlp to the stream (after dropout in "
          "training).",
          "The checkpoint calls it c_proj (inside mlp). The GPT-2 paper says only that it scales the weights "
          "of residual layers at initialisation by 1/√N, N the number of residual layers. transformers reads "
          "that as the two layers of each block that add into the stream, this one and attention's c_proj, "
          "with N = 2·n_layer (σ = 0.02/√(2·n_layer)), and so does this app's random model. "
          "The released openai/gpt-2 code initialises with σ = 0.02 (0.01 for wpe) and has no such scaling.",
          ("mlp.post",), ("mlp.out_dropout_mask", "mlp.out"),
          rows=(("c_proj: W_proj [4d, d] and b_proj", ("h.{i}.mlp.c_proj.weight", "h.{i}.mlp.c_proj.bias")),),
          refs=("openai.mlp_c_proj", "hf.mlp_c_proj_def", "hf.mlp_c_proj_call", "hf.mlp_dropout_call")),
    _Spec("ln_f", "model", "Final LayerNorm",
          r"Z_f = g_f \odot \frac{x_{n_\text{layer}} - \mu}{\sqrt{\sigma^2 + \varepsilon}} + b_f",
          "Normalises the stream after the last block, once, before the unembedding.",
          "GPT-2 added this final LayerNorm when it moved the normalisations in front of the sublayers: "
          "otherwise the last block's updates would reach the logits unnormalised.",
          ("resid_post",), ("ln_f.mean", "ln_f.var", "ln_f.normalized", "ln_f.out"),
          rows=(("gain g_f and bias b_f", ("ln_f.weight", "ln_f.bias")),),
          refs=("openai.ln_f", "openai.norm", "hf.ln_f_def", "hf.ln_f_call")),
    _Spec("unembed", "model", "Output: the unembedding (tied)",
          r"\text{logits} = Z_f\,W_U, \quad W_U = W_E^{\top} \in \mathbb{R}^{d \times V}",
          f"Scores every vocabulary entry by the dot product of Z_f, the final LayerNorm's output (not the "
          f"stream itself), with its token-table row: V {link('logit', 'logits')} per position.",
          f"The output matrix is the token table itself, transposed ({link('tied embeddings', 'tied')}), so it "
          f"adds no parameters; a checkpoint may still carry lm_head.weight [V, d], the storage of W_U's "
          f"transpose, as a copy. " + PREFILL_LOGITS,
          ("ln_f.out",), ("logits", "loss.per_token", "loss"),
          weights_note="Adds 0 parameters: it reuses wte.weight (tied), counted once under the token embedding.",
          refs=("openai.logits", "openai.no_loss", "hf.tied_weights", "hf.lm_head_def", "hf.logits",
                "hf.config_tie", "hf.loss_call", "hf.causal_lm_loss")),
)
TIED_ROW = ("W_U tied to wte.weight (no tensor of its own)", ())
UNTIED_ROW = ("lm_head.weight [V, d], W_U's transpose (untied)", ("lm_head.weight",))
UNTIED_EXPLANATION = ("This config unties the output matrix: lm_head.weight [V, d], the storage of W_U's "
                      "transpose, is learned separately from the token table and adds V × d parameters of its own "
                      "(GPT-2 and nanoGPT tie them). " + PREFILL_LOGITS)


# ---------------------------------------------------------------------------- building
def fmt(n: int) -> str:
    return f"{n:,}"


def tensor_row(name: str, tensors: tuple[str, ...], cfg: GPT2Config) -> Row:
    """A row from parameter names: "768 × 3,072 + 3,072" is the weight's shape product plus the bias
    (a config without biases drops them from the row)."""
    values = dims(cfg)
    kept = tuple(t for t in tensors if has_parameter(t, cfg))
    if kept != tensors:  # "gain g₁ and bias b₁" without its bias is "gain g₁"
        name, tensors = name.split(" and ")[0], kept
    if not cfg.standard_mlp:  # "c_fc: W_fc [d, 4d]" in a config whose MLP is not 4d wide
        name = name.replace("4d", "d_mlp")
    axes = [for_config(parameter_axes(t.replace("{i}", "0")), cfg) for t in tensors]
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
    for mode in Mode:
        lines = []
        for role, names in (("in", inputs), ("out", outputs)):
            for n in names:
                if n.recorded and not recorded_in(n.short, cfg, mode):
                    continue
                axes = for_config(short_axes(n.short, mode), cfg)
                lines.append(TensorShape(role, n, symbolic(axes), DTYPES.get(n.short, "float32"), axes))
        out[mode] = tuple(lines)
    return MappingProxyType(out)


BIAS_TERM = re.compile(r" \+ b_(\{[^}]*\}|\\text\{[^}]*\}|\w)")  # + b_1, + b_O, + b_{QKV}, + b_\text{fc}
# a model trained with the exact GELU (nanoGPT's nn.GELU, config.json "gelu") runs and is shown with it
EXACT_GELU = (
    r"G = \mathrm{GELU}(A), \quad "
    r"\mathrm{GELU}(a) = a\,\Phi(a) = \tfrac{1}{2}\,a\,\big(1 + \mathrm{erf}(a/\sqrt{2})\big)",
    "Close to a for large positive a; for negative a it dips below 0, to its minimum of about −0.17 near "
    "a = −0.75, and tends to 0 only for large negative a. This model was trained with the exact erf form "
    "(activation_function \"gelu\", nanoGPT's nn.GELU), so it runs with that one; GPT-2's checkpoints use "
    "the tanh approximation (gelu_new), which differs from it by less than 0.001.")


def _component(spec: _Spec, cfg: GPT2Config, children: tuple[Component, ...]) -> Component:
    instances = cfg.n_layer if spec.id.startswith("block") else 1
    if children:
        rows = tuple(r for c in children for r in (c.rows if c.instances == instances else (group_row(c),)))
    elif spec.id == "unembed":
        rows = (tensor_row(*(TIED_ROW if cfg.tied else UNTIED_ROW), cfg),)
    else:
        rows = tuple(tensor_row(name, tensors, cfg) for name, tensors in spec.rows)
    refs = references()
    inputs, outputs = _names(spec, spec.inputs, cfg), _names(spec, spec.outputs, cfg)
    title, explanation, weights_note = spec.title, spec.explanation, spec.weights_note
    equation = spec.equation
    if spec.id == "unembed" and not cfg.tied:
        title, explanation, weights_note = "Unembedding (untied)", UNTIED_EXPLANATION, None
    if spec.id == "block.mlp.gelu" and cfg.exact_gelu:
        equation, explanation = EXACT_GELU
    if not cfg.bias:  # nanoGPT's bias=False: the equations drop the terms the model does not have
        equation = BIAS_TERM.sub("", equation)
    return Component(
        id=spec.id, title=title, parent=spec.parent, children=children, learned=spec.learned,
        equation=equation, description=spec.description, explanation=explanation,
        inputs=inputs, outputs=outputs, shapes=_shapes(inputs, outputs, cfg), rows=rows,
        per_instance=sum(r.parameters for r in rows), instances=instances,
        weights_note=weights_note, references=tuple(refs[r] for r in spec.refs))


def _build(spec: _Spec, cfg: GPT2Config, out: dict) -> Component:
    out[spec.id] = None  # reserve the pre-order position
    children = tuple(_build(s, cfg, out) for s in SPECS if s.parent == spec.id)
    out[spec.id] = _component(spec, cfg, children)
    return out[spec.id]


@lru_cache(maxsize=16)
def _component_tree(cfg: GPT2Config) -> "ComponentTree":
    by_id: dict[str, Component] = {}
    root = _build(SPECS[0], cfg, by_id)
    return ComponentTree(cfg, root, MappingProxyType(by_id))


def component_tree(model: str | GPT2Config = "gpt2") -> ComponentTree:
    """The component tree of a preset (by name) or of any config."""
    return _component_tree(get_config(model) if isinstance(model, str) else model)


def component(cid: str, model: str | GPT2Config = "gpt2") -> Component:
    """One component of a preset's (or a config's) tree by id: component("block.attn.merge")."""
    return component_tree(model)[cid]
