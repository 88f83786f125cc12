"""Path patching: through which later part does a head's (or an MLP's) effect travel?

The definition (docs/pages.md, "Which path carries it", uses it word for word): the sender's output
(a head's z·W_O rows, without b_O; or an MLP's output) is removed from the input of one receiver
only — zero: subtracted; mean: replaced by its mean over the text's positions, as What if's
knock-outs do. A receiver is a later head's query, key or value input
(`blocks.{b}.attn.head.{h}.q|k|v`), an MLP at or after the sender's block (`blocks.{b}.mlp`), or the
final stream before ln_f (`logits`: the direct path). The receiver's output and everything after it
are recomputed; no other part sees the removal directly. The total effect is the sender knocked out
everywhere.

How, for one receiver: the removal is the sender's output minus what replaces it, δ [T, d]
(zero: the output itself; mean: the output minus its mean over the positions). A head receiver in
block r recomputes LayerNorm 1 of resid_pre − δ for its own projection only (LayerNorm 1 is shared:
the head's other two projections, and every other head, read the clean stream), then its pattern
and output; its change of output, through its rows of W_O, is added to the clean resid_mid of block
r, and the run goes on from there (the MLP of block r, then the blocks after it). An MLP receiver
recomputes LayerNorm 2 and the MLP from resid_mid − δ, and the run goes on from the clean resid_mid
plus that output. `logits` unembeds ln_f(resid_post of the last block − δ).

Every receiver of a sender runs in one call, each starting from the clean run's streams at its own
block (no receiver runs the blocks before it again), the receivers of a block as rows of a batch.
Attention is causal, so nothing after the answer's position can change it: the streams are cut there
(the mean of an ablation is still over every position of the text).

TransformerLens users have asked for it since 2022; ARENA teaches it on GPT-2 small. Here: one sender, every
receiver; the code is this project's own, on its blocks (model/gpt2.py).
"""

import math
import re
from dataclasses import dataclass

import torch

from ..model.gpt2 import GPT2, fused_attention, no_dropout
from ..model.modes import run
from ..model.record import Recorder
from ..model.tokenizer import decode
from ..model.trace import Trace
from ..spec.schema import Mode, block_name
from .attribution import check_position, head_name
from .whatif import Target

ABLATIONS = ("zero", "mean")
INPUTS = ("q", "k", "v")
# what a clean run must record for path patching
NEEDS = ("blocks.*.resid_pre", "blocks.*.resid_mid", "blocks.*.resid_post", "blocks.*.attn.q", "blocks.*.attn.k",
         "blocks.*.attn.v", "blocks.*.attn.z", "blocks.*.mlp.out", "logits")
# a path's share of the total is "not measurable" where the total change of log p(answer) is smaller than
# MEASURABLE_NATS (p moves by under 5 % of itself: too little to share out), or where the answer has less
# than MEASURABLE_PROB in both runs (an answer the model does not give: on random weights every token has
# about 1/V, and the shares of what moves it are the noise's)
MEASURABLE_NATS = 0.05
MEASURABLE_PROB = 0.01
ROW_POSITIONS = 8192  # rows x positions a batch of receivers runs at once (the MLP's 4d buffer: 100 MB on gpt2)

_HEAD = re.compile(r"blocks\.(\d+)\.attn\.head\.(\d+)")
_MLP = re.compile(r"blocks\.(\d+)\.mlp")
_HEAD_INPUT = re.compile(r"blocks\.(\d+)\.attn\.head\.(\d+)\.([qkv])")


# ---------------------------------------------------------------------------- names
@dataclass(frozen=True)
class Part:
    """A sender (a head, or a block's MLP) or a receiver (a head's q, k or v input, an MLP, the logits)."""
    block: int  # -1 for `logits`
    head: int | None = None
    input: str | None = None  # q, k or v: a head receiver's input

    @property
    def name(self) -> str:
        if self.block < 0:
            return "logits"
        if self.input is not None:
            return head_name(self.block, self.head) + "." + self.input
        if self.head is not None:
            return head_name(self.block, self.head)
        return block_name("mlp", self.block)

    @property
    def label(self) -> str:
        """How a sentence names it: head 0.0, MLP 0, head 1.2's keys, the logits directly."""
        if self.block < 0:
            return "the logits directly"
        if self.input is not None:
            return f"head {self.block}.{self.head}'s {dict(q='queries', k='keys', v='values')[self.input]}"
        return f"head {self.block}.{self.head}" if self.head is not None else f"MLP {self.block}"

    @property
    def path_label(self) -> str:
        """How a sentence names the path into it: the path into MLP 0, the direct path (into the logits)."""
        if self.block < 0:
            return "the direct path (into the logits)"
        return f"the path into {self.label}"


LOGITS = Part(-1)  # the final stream before ln_f


def _check_block(block: int, cfg, name: str) -> None:
    if not 0 <= block < cfg.n_layer:
        raise ValueError(f"{name}: no block {block}; these weights have blocks 0 to {cfg.n_layer - 1}")


def _check_head(head: int, cfg, name: str) -> None:
    if not 0 <= head < cfg.n_head:
        raise ValueError(f"{name}: no head {head}; these weights have heads 0 to {cfg.n_head - 1}")


def _parse(name: str, cfg, patterns) -> Part | None:
    """The part `name` is, by the first of `patterns` ((regex, has_head, has_input)) it matches, checked
    against cfg; None when it matches none."""
    for pattern, has_head, has_input in patterns:
        if m := pattern.fullmatch(name):
            part = Part(int(m.group(1)), int(m.group(2)) if has_head else None, m.group(3) if has_input else None)
            _check_block(part.block, cfg, name)
            if has_head:
                _check_head(part.head, cfg, name)
            return part
    return None


def parse_sender(name: str, cfg) -> Part:
    """`blocks.0.attn.head.0` or `blocks.0.mlp`, as the attribution's rows name them."""
    part = _parse(name, cfg, ((_HEAD, True, False), (_MLP, False, False)))
    if part is None:
        raise ValueError(f"unknown sender {name!r}: name a head (blocks.0.attn.head.0) or an MLP (blocks.0.mlp)")
    return part


def parse_receiver(name: str, cfg) -> Part:
    """`blocks.{b}.attn.head.{h}.q|k|v`, `blocks.{b}.mlp` or `logits`."""
    part = LOGITS if name == "logits" else _parse(name, cfg, ((_HEAD_INPUT, True, True), (_MLP, False, False)))
    if part is None:
        raise ValueError(f"unknown receiver {name!r}: name a head's input (blocks.1.attn.head.0.k), an MLP "
                         "(blocks.1.mlp) or logits")
    return part


def after(sender: Part, receiver: Part) -> bool:
    """Whether `receiver` reads the stream after `sender` writes to it: a head in a later block; an MLP
    in a later block, or in the sender head's own block (through resid_mid); the logits always."""
    if receiver.block < 0:
        return True
    if receiver.input is not None:
        return receiver.block > sender.block
    return receiver.block > sender.block or (receiver.block == sender.block and sender.head is not None)


def receivers_of(cfg, sender: Part) -> list[Part]:
    """Every receiver of `sender`, block by block (each head's q, k, v, then the MLP), the logits last."""
    out = []
    for b in range(sender.block, cfg.n_layer):
        out += [Part(b, h, x) for h in range(cfg.n_head) for x in INPUTS if b > sender.block]
        out += [Part(b)] if after(sender, Part(b)) else []
    return out + [LOGITS]


def measurable(clean: float, total: float) -> bool:
    """Whether shares of the total change from log p `clean` to log p `total` mean something."""
    return abs(total - clean) >= MEASURABLE_NATS and max(clean, total) >= math.log(MEASURABLE_PROB)


# ---------------------------------------------------------------------------- the result
@dataclass(frozen=True)
class Reading:
    """The answer at the position in one run: its logit (minus the second answer's) and log-probability."""
    logit: float
    logprob: float

    prob = property(lambda self: math.exp(self.logprob))  # the answer's probability


@dataclass(frozen=True)
class Paths:
    """A sender removed along each receiver's path alone, beside the clean run and the total effect."""
    sender: Part
    ablation: str
    answer: int
    versus: int | None
    position: int
    clean: Reading
    total: Reading
    rows: tuple[tuple[Part, Reading], ...]  # receivers_of's order
    model: str = ""

    @property
    def nbytes(self) -> int:  # the page keeps it in the trace cache, which counts bytes
        return 64 * (len(self.rows) + 2)

    def reading(self, receiver: str) -> Reading:
        for part, r in self.rows:
            if part.name == receiver:
                return r
        raise KeyError(receiver)

    @property
    def total_change(self) -> float:
        """The total effect: the change in log p(answer) with the sender knocked out everywhere."""
        return self.total.logprob - self.clean.logprob

    @property
    def measurable(self) -> bool:
        return measurable(self.clean.logprob, self.total.logprob)

    def share(self, receiver: str) -> float | None:
        """The path's change in log p(answer) as a share of the total change; None where not measurable."""
        if not self.measurable:
            return None
        return (self.reading(receiver).logprob - self.clean.logprob) / self.total_change

    def report(self) -> dict:
        """The CLI's JSON and the API's dict."""
        def both(r: Reading) -> dict:
            return {"logit": r.logit, "prob": r.prob}
        return {"sender": self.sender.name, "ablation": self.ablation, "answer": decode([self.answer]),
                "versus": None if self.versus is None else decode([self.versus]), "position": self.position,
                "clean": both(self.clean), "total": both(self.total),
                "rows": [{"receiver": p.name, **both(r)} for p, r in self.rows]}


# ---------------------------------------------------------------------------- the computation
def sender_output(model: GPT2, clean: Trace, sender: Part) -> torch.Tensor:
    """What the sender added to the stream at every position [T, d]: a head's z·W_O rows (no b_O),
    or the MLP's output."""
    if sender.head is None:
        return clean.get("mlp.out", sender.block)[0]  # [T, d]
    cfg = model.config
    dh, h = cfg.d_head, sender.head
    z = clean.get("attn.z", sender.block)[0, h]  # [T, dh]
    w_o = model.h[sender.block].attn.c_proj.weight[h * dh:(h + 1) * dh]  # [dh, d]: head h's rows of W_O
    return z @ w_o  # [T, d]


def removal(out: torch.Tensor, ablation: str) -> torch.Tensor:
    """δ [T, d]: what the removal takes off the stream; zero: the output; mean: the output minus its
    mean over the text's positions (what What if's mean knock-out leaves in its place)."""
    if ablation not in ABLATIONS:
        raise ValueError(f"ablation must be zero or mean, not {ablation!r}")
    return out if ablation == "zero" else out - out.mean(0, keepdim=True)  # [T, d]


def _mlp_after(block, mid: torch.Tensor) -> torch.Tensor:
    """resid_post of a block from its resid_mid [R, T, d]: mid + MLP(LN2(mid))."""
    off = Recorder.off()
    return mid + block.mlp(block.ln_2(mid, off, ""), off, "", drop=no_dropout)  # [R, T, d]


def _head_rows(model: GPT2, clean: Trace, r: int, delta: torch.Tensor, T: int) -> torch.Tensor:
    """resid_post of block r [nh*3, T, d] with δ removed from one head's q (or k, or v) input alone,
    rows in (head, q/k/v) order."""
    cfg, block = model.config, model.h[r]
    nh, dh, d = cfg.n_head, cfg.d_head, cfg.n_embd
    off = Recorder.off()
    x = clean.get("resid_pre", r)[:, :T] - delta  # [1, T, d]
    qkv = block.attn.c_attn(block.ln_1(x, off, ""))  # [1, T, 3d]: every head's projections of the removed stream
    new = [block.attn.split_heads(t)[0] for t in qkv.split(d, dim=2)]  # 3 x [nh, T, dh]
    old = [clean.get(f"attn.{x}", r)[0, :, :T] for x in INPUTS]  # 3 x [nh, T, dh]
    # variant 0: clean; variant 1 + i: input i (q, k, v) of every head from the removed stream
    qkv_variants = [torch.stack([old[i]] + [new[i] if j == i else old[i] for j in range(3)]) for i in range(3)]
    z = fused_attention(*qkv_variants)  # [4, nh, T, dh]: heads are independent, so each head sees only its own change
    dz = z[1:] - z[:1]  # [3, nh, T, dh]
    w_o = block.attn.c_proj.weight.view(nh, dh, d)  # [nh, dh, d]
    dout = torch.einsum("shtk,hkd->hstd", dz, w_o)  # [nh, 3, T, d]
    mid = clean.get("resid_mid", r)[:, :T] + dout.reshape(nh * 3, T, d)  # [nh*3, T, d]
    return _mlp_after(block, mid)  # [nh*3, T, d]


def _mlp_row(model: GPT2, clean: Trace, r: int, delta: torch.Tensor, T: int) -> torch.Tensor:
    """resid_post of block r [1, T, d] with δ removed from the MLP's input alone."""
    block, off = model.h[r], Recorder.off()
    mid = clean.get("resid_mid", r)[:, :T]  # [1, T, d]
    out = block.mlp(block.ln_2(mid - delta, off, ""), off, "", drop=no_dropout)  # [1, T, d]
    return mid + out  # [1, T, d]


def _total_row(model: GPT2, clean: Trace, sender: Part, delta: torch.Tensor, T: int) -> torch.Tensor:
    """resid_post of the sender's block [1, T, d] with the sender knocked out everywhere."""
    b = sender.block
    if sender.head is None:
        return clean.get("resid_post", b)[:, :T] - delta  # [1, T, d]
    return _mlp_after(model.h[b], clean.get("resid_mid", b)[:, :T] - delta)  # [1, T, d]


def _finish(model: GPT2, start: int, rows: torch.Tensor) -> torch.Tensor:
    """Logits at the last position [R, V] of rows [R, T, d] entering block `start` (n_layer: ln_f)."""
    step = max(1, ROW_POSITIONS // rows.shape[1])
    return torch.cat([_last_logits(model, start, rows[i:i + step]) for i in range(0, rows.shape[0], step)])  # [R, V]


def _last_logits(model: GPT2, start: int, x: torch.Tensor) -> torch.Tensor:
    """model.resume(x, start, last_only=True)'s logits [R, V], with the last block computed for the last
    position alone: its keys and values of the earlier positions as a decode step's cache (only the last
    position reaches the answer; the blocks before need every position)."""
    off, n, T = Recorder.off(), len(model.h), x.shape[1]
    if start >= n or T == 1:
        return model.resume(x, start, off, last_only=True)[0][:, -1]  # [R, V]
    for i in range(start, n - 1):
        x, _ = model.h[i](x, off, block_name("", i), past=None, use_cache=False, drop=no_dropout)  # [R, T, d]
    last = model.h[n - 1]
    _, k, v = last.attn.c_attn(last.ln_1(x[:, :-1], off, "")).split(model.config.n_embd, dim=2)  # 2 x [R, T-1, d]
    past = (last.attn.split_heads(k), last.attn.split_heads(v))  # 2 x [R, nh, T-1, dh]
    x, _ = last(x[:, -1:], off, block_name("", n - 1), past=past, use_cache=False, drop=no_dropout)  # [R, 1, d]
    return model.resume(x, n, off, last_only=True)[0][:, -1]  # [R, V]: ln_f and the unembedding


def clean_run(model: GPT2, ids) -> Trace:
    """The clean FULL run path patching starts every receiver from."""
    return run(model, list(ids), Mode.FULL, names=NEEDS)


@torch.no_grad()
def path_patch(model: GPT2, ids, sender: str, answer: int, versus: int | None = None, position: int | None = None,
               ablation: str = "zero", receivers=None, clean: Trace | None = None) -> Paths:
    """`sender` removed from each receiver's input alone (`receivers`: names; default every receiver of
    it), and knocked out everywhere (the total), read at `position` (default: the last): the answer's
    logit (minus versus's) and log-probability. `clean`: a FULL run of `ids` recording NEEDS."""
    cfg = model.config
    ids = list(ids)
    part = parse_sender(sender, cfg)
    Target(part.block, "head" if part.head is not None else "mlp", part.head or 0).check(cfg)
    if ablation not in ABLATIONS:
        raise ValueError(f"ablation must be zero or mean, not {ablation!r}")
    for token in (answer, versus):
        if token is not None and not 0 <= token < cfg.vocab_size:
            raise ValueError(f"token id {token} is not in the vocabulary of {cfg.vocab_size:,}")
    position = check_position(position, len(ids))
    if receivers is None:
        wanted = receivers_of(cfg, part)
    else:
        wanted = [parse_receiver(n, cfg) for n in receivers]
        for w in wanted:
            if not after(part, w):
                raise ValueError(f"receiver {w.name} reads the stream before {part.name} writes to it: "
                                 "name a later part")
    if clean is None:
        clean = clean_run(model, ids)
    elif list(clean.token_ids) != ids:
        raise ValueError("the clean run is of another text")
    T = position + 1  # attention is causal: nothing after the position reaches it
    delta = removal(sender_output(model, clean, part), ablation)[None, :T]  # [1, T, d]

    # each start's rows run to the answer as soon as they are made, and only their readings are kept:
    # one block's receivers held at a time, not every block's rows and logits (ui/paths_view.py _estimate)
    readings = _read(clean.at("logits", position)[0][None], answer, versus)  # the clean run
    readings += _read(_finish(model, part.block + 1, _total_row(model, clean, part, delta, T)), answer, versus)
    order: list[Part] = []
    for r in sorted({w.block for w in wanted if w.block >= 0}):
        here = {w for w in wanted if w.block == r}
        if any(w.input is not None for w in here):
            rows = _head_rows(model, clean, r, delta, T)  # [nh*3, T, d]
            keep = [i for i, w in enumerate(Part(r, h, x) for h in range(cfg.n_head) for x in INPUTS) if w in here]
            readings += _read(_finish(model, r + 1, rows[keep]), answer, versus)
            order += [Part(r, h, x) for h in range(cfg.n_head) for x in INPUTS if Part(r, h, x) in here]
            del rows
        if Part(r) in here:
            readings += _read(_finish(model, r + 1, _mlp_row(model, clean, r, delta, T)), answer, versus)
            order.append(Part(r))
    if LOGITS in wanted:
        rows = clean.get("resid_post", cfg.n_layer - 1)[:, :T] - delta  # [1, T, d]
        readings += _read(_finish(model, cfg.n_layer, rows), answer, versus)
        order.append(LOGITS)
    by_name = dict(zip((p.name for p in order), readings[2:]))
    rows_out = tuple((w, by_name[w.name]) for w in wanted)
    return Paths(part, ablation, answer, versus, position, readings[0], readings[1], rows_out, clean.model)


def _read(logits: torch.Tensor, answer: int, versus: int | None) -> list[Reading]:
    """A Reading of each row of logits [R, V]."""
    logprob = torch.log_softmax(logits.double(), -1)[:, answer]  # [R]
    logit = logits[:, answer].double() - (0 if versus is None else logits[:, versus].double())  # [R]
    return [Reading(float(a), float(b)) for a, b in zip(logit, logprob)]
