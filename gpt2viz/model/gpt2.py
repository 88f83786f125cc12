"""GPT-2 in torch, instrumented: every intermediate passes through a named recording point.

Parameter names are the checkpoint's (`wte`, `wpe`, `h.{i}.ln_1`, `h.{i}.attn.c_attn`, ...), and
the projections keep Conv1D's `[in, out]` weight layout, so a Hugging Face state dict loads as it
is, with no transposes. LayerNorm and GELU are written out so that mu and sigma^2 are visible.
Attention runs as torch's fused `scaled_dot_product_attention` where no gradient is wanted (the
scores and the pattern are never materialised; a trace derives them per block from q and k with
`attention_scores` and `causal_softmax` below); under autograd (TRAINING) it is written out, with the
pattern's dropout mask. It is written out too in a block whose scores or pattern an intervention
changes, and where one query reads a cache (a decode step): a trace stores that one row of both.
References: openai/gpt-2 `src/model.py` (functional model), transformers `modeling_gpt2.py` (module
names, eager attention). Shapes use B, T, P, L, d, nh, dh, V.
"""


import torch
import torch.nn.functional as F
from torch import nn

from ..spec.config import GPT2Config
from ..spec.schema import block_name
from .record import Recorder


# ---------------------------------------------------------------------------- dropout
class Dropout:
    """Seeded inverted dropout that records the keep-mask it drew (TRAINING only)."""

    def __init__(self, p: float, seed: int):
        self.p = p
        self.generator = torch.Generator().manual_seed(seed)

    def __call__(self, rec: Recorder, name: str, x: torch.Tensor) -> torch.Tensor:
        keep = rec(name, torch.rand(x.shape, generator=self.generator) >= self.p)  # bool, like x
        return (x * keep).div_(1.0 - self.p)  # in place: the same values, one tensor fewer


def no_dropout(rec: Recorder, name: str, x: torch.Tensor) -> torch.Tensor:
    return x


# ---------------------------------------------------------------------------- layers
class Conv1D(nn.Module):
    """A linear layer stored as in the checkpoint: y = x W + b with W of shape [in, out] (no b
    when the config has no biases)."""

    def __init__(self, n_in: int, n_out: int, bias: bool = True):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_in, n_out))
        self.bias = nn.Parameter(torch.zeros(n_out)) if bias else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, x.shape[-1])  # [B*T, in]
        flat = flat @ self.weight if self.bias is None else torch.addmm(self.bias, flat, self.weight)  # [B*T, out]
        return flat.view(*x.shape[:-1], self.weight.shape[1])  # [B, T, out]


class LayerNorm(nn.Module):
    """LayerNorm over the last axis, written out so mean and variance can be recorded."""

    def __init__(self, d: int, eps: float, bias: bool = True):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))  # gain g
        self.bias = nn.Parameter(torch.zeros(d)) if bias else None  # bias b

    def forward(self, x: torch.Tensor, rec: Recorder, prefix: str) -> torch.Tensor:
        mean = rec(prefix + "mean", x.mean(-1, keepdim=True))  # [B, T, 1]
        centered = x - mean  # [B, T, d]
        var = rec(prefix + "var", (centered * centered).mean(-1, keepdim=True))  # [B, T, 1]
        normalized = rec(prefix + "normalized", normalize(x, mean, var, self.eps, centered))  # [B, T, d]
        return rec(prefix + "out", scale_shift(normalized, self.weight, self.bias))  # [B, T, d]


def normalize(x: torch.Tensor, mean: torch.Tensor, var: torch.Tensor, eps: float,
              centered: torch.Tensor | None = None) -> torch.Tensor:
    """(x - mu) / sqrt(sigma^2 + eps): the same operations whether the forward pass or a trace runs it."""
    centered = x - mean if centered is None else centered  # [B, T, d]
    return centered * torch.rsqrt(var + eps)  # [B, T, d]


def scale_shift(normalized: torch.Tensor, gain: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """g * normalized + b (no b when the config has no biases)."""
    return normalized * gain if bias is None else torch.addcmul(bias, normalized, gain)  # [B, T, d]


def gelu_new(x: torch.Tensor) -> torch.Tensor:
    """GPT-2's GELU: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    return F.gelu(x, approximate="tanh")


def gelu(x: torch.Tensor) -> torch.Tensor:
    """The exact GELU, x Phi(x) = 0.5 x (1 + erf(x / sqrt 2)): nanoGPT's nn.GELU()."""
    return F.gelu(x)


# transformers' activation_function names; "gelu_pytorch_tanh" is gelu_new computed by torch
ACTIVATIONS = {"gelu_new": gelu_new, "gelu_pytorch_tanh": gelu_new, "gelu": gelu}


def activation(cfg: GPT2Config):
    """The MLP's nonlinearity of a config (GPT-2's tanh GELU unless a checkpoint says otherwise)."""
    return ACTIVATIONS[cfg.activation]


def causal_mask(T: int, L: int) -> torch.Tensor:
    """True where query i (absolute position L - T + i) may not read key j: the lower-right mask."""
    return torch.arange(L) > torch.arange(L - T, L)[:, None]  # [T, L]


def attention_scores(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """Q K^T / sqrt(dh) before the mask, the scale in place into the fresh matmul output. The operands
    are made contiguous first (a copy of the heads' views of qkv, a no-op on a mapped shared run's): the
    product then reads one memory layout whether q and k are the forward pass's views, a trace's, or a
    shared run's mapped tensors, so its rounding is the same on every path (MKL's can follow the layout)."""
    return (q.contiguous() @ k.contiguous().transpose(-1, -2)).mul_(q.shape[-1] ** -0.5)  # [B, nh, T, L]


def fused_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """softmax(Q K^T / sqrt(dh) + M) V in one fused kernel, M the lower-right causal mask. torch's
    `is_causal` aligns the mask top-left (query i reads keys 0..i), right only when T = L; any T < L
    gets the mask written out (one query against a cache never comes here: it writes its attention
    out, see Attention.forward)."""
    T, L = q.shape[2], k.shape[2]
    if T == L:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)  # [B, nh, T, dh]
    return F.scaled_dot_product_attention(q, k, v, attn_mask=~causal_mask(T, L))  # [B, nh, T, dh]


def causal_softmax(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Softmax over the keys with masked keys at -inf, in one new buffer: the masked copy is
    normalised in place (not under autograd, which cannot differentiate `out=`)."""
    masked = torch.where(mask, float("-inf"), scores)  # [B, nh, T, L]
    if torch.is_grad_enabled():
        return torch.softmax(masked, dim=-1)
    return torch.softmax(masked, dim=-1, out=masked)


class Attention(nn.Module):
    def __init__(self, cfg: GPT2Config):
        super().__init__()
        self.n_head, self.d_head = cfg.n_head, cfg.d_head
        self.c_attn = Conv1D(cfg.n_embd, 3 * cfg.n_embd, cfg.bias)
        self.c_proj = Conv1D(cfg.n_embd, cfg.n_embd, cfg.bias)

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape
        return x.view(B, T, self.n_head, self.d_head).transpose(1, 2)  # [B, nh, T, dh]

    def forward(self, x, rec: Recorder, p: str, *, past, use_cache: bool, drop):
        B, T, d = x.shape
        qkv = rec(p + "qkv", self.c_attn(x))  # [B, T, 3d]
        q, k, v = qkv.split(d, dim=2)  # each [B, T, d]
        q = rec(p + "q", self.split_heads(q))  # [B, nh, T, dh]
        k = rec(p + "k", self.split_heads(k))  # [B, nh, T, dh]
        v = rec(p + "v", self.split_heads(v))  # [B, nh, T, dh]
        if past is not None and past[0].shape[2]:  # an empty cache (P = 0) adds nothing: k and v stay views
            k = torch.cat([past[0], k], dim=2)  # [B, nh, L, dh], L = P + T
            v = torch.cat([past[1], v], dim=2)  # [B, nh, L, dh]
        if use_cache:
            rec(p + "k_cache", k)
            rec(p + "v_cache", v)
        # written out where autograd or the pattern's dropout needs it, an intervention changes them, or one
        # query reads a cache (decode: its scores and pattern are one row, which a trace stores)
        if torch.is_grad_enabled() or drop is not no_dropout or past is not None and T == 1 \
                or rec.changes(p + "scores") or rec.changes(p + "pattern"):
            scores = rec(p + "scores", attention_scores(q, k))  # [B, nh, T, L]
            pattern = rec(p + "pattern", causal_softmax(scores, causal_mask(T, k.shape[2])))  # [B, nh, T, L]
            z = rec(p + "z", drop(rec, p + "pattern_dropout_mask", pattern) @ v)  # [B, nh, T, dh]
        else:
            z = rec(p + "z", fused_attention(q, k, v))  # [B, nh, T, dh], laid out as [B, T, nh, dh]
        merged = rec(p + "merged", z.transpose(1, 2).reshape(B, T, d))  # [B, T, d], a view when it can be
        out = drop(rec, p + "out_dropout_mask", self.c_proj(merged))  # [B, T, d]
        return rec(p + "out", out), ((k, v) if use_cache else None)


class MLP(nn.Module):
    def __init__(self, cfg: GPT2Config):
        super().__init__()
        self.c_fc = Conv1D(cfg.n_embd, cfg.d_mlp, cfg.bias)
        self.c_proj = Conv1D(cfg.d_mlp, cfg.n_embd, cfg.bias)
        self.act = activation(cfg)

    def forward(self, x, rec: Recorder, p: str, *, drop):
        pre = rec(p + "pre", self.c_fc(x))  # [B, T, 4d] (d_mlp)
        post = rec(p + "post", self.act(pre))  # [B, T, 4d] (d_mlp)
        out = drop(rec, p + "out_dropout_mask", self.c_proj(post))  # [B, T, d]
        return rec(p + "out", out)


class Block(nn.Module):
    def __init__(self, cfg: GPT2Config):
        super().__init__()
        self.ln_1 = LayerNorm(cfg.n_embd, cfg.layer_norm_epsilon, cfg.bias)
        self.attn = Attention(cfg)
        self.ln_2 = LayerNorm(cfg.n_embd, cfg.layer_norm_epsilon, cfg.bias)
        self.mlp = MLP(cfg)

    def forward(self, x, rec: Recorder, p: str, *, past, use_cache: bool, drop):
        x = rec(p + "resid_pre", x)  # x_n [B, T, d]
        delta_attn, present = self.attn(self.ln_1(x, rec, p + "ln1."), rec, p + "attn.", past=past,
                                        use_cache=use_cache, drop=drop)
        x = rec(p + "resid_mid", x + delta_attn)  # x'_n [B, T, d]
        delta_mlp = self.mlp(self.ln_2(x, rec, p + "ln2."), rec, p + "mlp.", drop=drop)
        return rec(p + "resid_post", x + delta_mlp), present  # x_{n+1} [B, T, d]


# ---------------------------------------------------------------------------- the unembedding
LOGIT_ROWS = 32  # positions a derived unembedding multiplies at a time
LOSS_ROWS = 256  # positions a loss unembeds at a time


def unembed_rows(z: torch.Tensor, w_u: torch.Tensor, positions: slice = slice(None)) -> torch.Tensor:
    """The logits [B, n, V] of `positions` (a slice, step 1) of the final LayerNorm's output z [B, T, d],
    as a FULL trace derives them: LOGIT_ROWS positions at a time, on a fixed grid (rows 0-31,
    32-63, ...), each block copied to memory of its own. The matrix library rounds a product by its
    shape, its operands' alignment and its threads, so a position read alone equals the same
    position of the whole (on the same threads) only when both are computed this way. A page that
    reads one position pays for one block of 32 (about 35 ms on gpt2 on one core), not for all T
    (0.24 s at 200 tokens)."""
    start, stop, step = positions.indices(z.shape[1])
    if step != 1:
        raise ValueError("unembed_rows takes a slice of consecutive positions")
    if stop <= start:
        return z.new_empty(z.shape[0], 0, w_u.shape[0])  # [B, 0, V]
    out = z.new_empty(z.shape[0], stop - start, w_u.shape[0])  # [B, n, V], filled a block at a time
    for a in range(start - start % LOGIT_ROWS, stop, LOGIT_ROWS):
        block = F.linear(z[:, a:a + LOGIT_ROWS].clone(), w_u)  # [B, ≤ 32, V]; clone: a fresh, aligned copy
        lo, hi = max(a, start), min(a + block.shape[1], stop)
        out[:, lo - start:hi - start] = block[:, lo - a:hi - a]
    return out  # one block beside the result at most, not every block and their concatenation


def next_token_loss(z: torch.Tensor, w_u: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """The cross-entropy of each position's logits against the next token, [B, T-1], from the final
    LayerNorm's output z [B, T, d] and the text ids [B, T]: LOSS_ROWS positions' logits at a time, one
    block held at a time without a gradient (51 MB on gpt2, not 206 MB at 1,024 tokens). A text of up
    to LOSS_ROWS + 1 tokens is one product (the matrix library took 28 % less time a row multiplying
    256 rows by W_U than 32 here), so it equals the loss of the logits a trace derives (blocks of 32)
    up to the matrix library's rounding. Differentiable: a training run's backward pass goes through
    it, and a trace that derives its loss computes the same products."""
    B, T = ids.shape
    losses = []
    for a in range(0, T - 1, LOSS_ROWS):
        n = min(LOSS_ROWS, T - 1 - a)  # the last position has no next token
        logits = F.linear(z[:, a:a + n], w_u)  # [B, n, V]
        losses.append(F.cross_entropy(logits.flatten(0, 1), ids[:, a + 1:a + 1 + n].flatten(),
                                      reduction="none").view(B, n))  # [B, n]
        del logits  # before the next block's are made: two blocks held at once were a third of the peak
    return torch.cat(losses, 1) if losses else z.new_zeros(B, 0)  # [B, T-1]


# ---------------------------------------------------------------------------- the model
class GPT2(nn.Module):
    """forward(ids, past) -> (logits, present), as in openai/gpt-2: a past of P cached positions
    offsets the positions and extends the keys; the lower-right causal mask serves every mode."""

    def __init__(self, cfg: GPT2Config):
        super().__init__()
        self.config = cfg
        # uninitialised (torch.empty), like Conv1D's weights: init_weights or a checkpoint sets every
        # value; nn.Embedding's own normal init of 39M values took 0.6 s of every model load
        self.wte = nn.Embedding(cfg.vocab_size, cfg.n_embd, _weight=torch.empty(cfg.vocab_size, cfg.n_embd))
        self.wpe = nn.Embedding(cfg.n_positions, cfg.n_embd, _weight=torch.empty(cfg.n_positions, cfg.n_embd))
        self.h = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.ln_f = LayerNorm(cfg.n_embd, cfg.layer_norm_epsilon, cfg.bias)
        # GPT-2's lm_head is wte itself (tied): the logits are computed from self.wte.weight below.
        # An untied config has an output matrix of its own, [V, d] like wte.
        if not cfg.tied:
            self.lm_head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)

    def forward(self, ids: torch.Tensor, rec: Recorder | None = None, *, past=None, use_cache: bool = False,
                drop=no_dropout, last_only: bool = False, unembed: bool = True):
        rec = rec if rec is not None else Recorder.off()
        B, T = ids.shape
        P = 0 if past is None else past[0][0].shape[2]
        if self.config.n_positions < P + T:
            raise ValueError(f"{P + T} positions exceed the context of {self.config.n_positions}")
        tok = rec("embed.tok", self.wte(ids))  # [B, T, d]
        pos = rec("embed.pos", self.wpe(torch.arange(P, P + T)))  # [T, d]
        x = drop(rec, "embed.dropout_mask", rec("embed.out", tok + pos))  # [B, T, d]
        return self.resume(x, 0, rec, past=past, use_cache=use_cache, drop=drop, last_only=last_only, unembed=unembed)

    def resume(self, x: torch.Tensor, start: int, rec: Recorder | None = None, *, past=None, use_cache: bool = False,
               drop=no_dropout, last_only: bool = False, unembed: bool = True):
        """The rest of forward from the stream `x` [B, T, d] entering block `start` (its resid_pre; the
        last block's resid_post for start = n_layer): what a run that changes nothing before block
        `start` computes, without computing the blocks before it again. `unembed` False stops at the
        final LayerNorm and gives its output [B, T, d] in the logits' place: a FULL or TRAINING trace
        derives its logits when a page reads them."""
        rec = rec if rec is not None else Recorder.off()
        presents = [None] * start
        for i in range(start, len(self.h)):  # each block records under the prefix block_name("", i) = "blocks.{i}."
            x, present = self.h[i](x, rec, block_name("", i), past=None if past is None else past[i],
                                   use_cache=use_cache, drop=drop)
            presents.append(present)
        x = self.ln_f(x, rec, "ln_f.")  # [B, T, d]
        if last_only:
            x = x[:, -1:]  # [B, 1, d]
        logits = rec("logits", F.linear(x, self.unembedding)) if unembed else x  # [B, T, V], or ln_f's [B, T, d]
        return logits, (presents if use_cache else None)

    @property
    def unembedding(self) -> torch.Tensor:
        """W_U as F.linear takes it, [V, d]: wte itself when tied (GPT-2), else the output matrix."""
        return self.wte.weight if self.config.tied else self.lm_head.weight
