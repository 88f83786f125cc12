"""The four execution modes, one attention code path (the lower-right causal mask):

FULL      T tokens, no cache: the reference forward.
TRAINING  T tokens, seeded dropout, next-token targets, mean and per-token loss, and a backward
          pass recording d loss / d every parameter and d loss / d every block's residual stream.
PREFILL   a prompt of T tokens into an empty cache (P = 0): leaves the KV cache [B, nh, T, dh] per
          layer; logits for the last position only.
DECODE    the text's last token against the cache of the P tokens before it (L = P + 1 keys).
"""

from collections.abc import Callable
from typing import NamedTuple

import torch
import torch.nn.functional as F

from ..spec.schema import GRAD_STREAMS, LOSS_NAMES, Mode, block_name, recorded_names
from . import ranking
from .derive import derivations, to_record
from .gpt2 import GPT2, Dropout, next_token_loss, no_dropout
from .interventions import block_of, check_reached, recorder
from .record import Recorder
from .tokenizer import readable_tokens, vocabulary_of
from .trace import Trace


def as_batch(ids) -> torch.Tensor:
    ids = torch.as_tensor(ids, dtype=torch.long)
    ids = ids.unsqueeze(0) if ids.dim() == 1 else ids  # [B, T]
    if ids.dim() != 2 or ids.shape[1] == 0:
        raise ValueError(f"token ids must be [T] or [B, T] with T >= 1, got shape {list(ids.shape)}")
    return ids


Progress = Callable[[int, int, str], None]  # (steps done, of total, the step in words)


class _Passes:
    """A run's steps for a progress callback: each block a pass goes through is one step (its
    output, forward; the gradient reaching its input, backward)."""

    def __init__(self, progress: Progress | None, n_layer: int, passes: int):
        self.progress, self.total, self.done = progress, n_layer * passes, 0

    def begin(self, what: str) -> None:
        """Told before the first block computes (0 steps done): a page shows the run from its start,
        not only once a block of a long text is through."""
        if self.progress is not None:
            self.progress(0, self.total, what)

    def step(self, what: str) -> None:
        self.done += 1
        self.progress(self.done, self.total, what)

    def forward(self, rec: Recorder, phase: str) -> Recorder:
        """`rec`, telling the progress of each block's output (`phase`: "forward pass")."""
        if self.progress is not None:
            rec.on_block = lambda name: self.step(f"{phase}: block {block_of(name)[0]}")
        return rec

    def backward(self, streams: dict[str, torch.Tensor], n_layer: int) -> None:
        """Tell the progress as the gradient reaches each block's output (block n_layer - 1 first):
        every weight of the block, and every stream before it, needs it."""
        if self.progress is None:
            return
        told = set()

        def reached(i: int) -> None:  # once: a backward pass a block at a time hands that gradient on twice
            if i not in told:
                told.add(i)
                self.step(f"backward pass: block {i}")
        for i in range(n_layer):
            x = streams.get(block_name("resid_post", i))
            if x is not None:
                x.register_hook(lambda grad, i=i: reached(i))


def run(model: GPT2, ids, mode=Mode.FULL, *, names=None, seed: int = 0, grads: bool = True,
        dropout: bool = True, interventions=(), progress: Progress | None = None,
        on_grad: Callable[[str, torch.Tensor], None] | None = None) -> Trace:
    """Run `ids` ([T] or [B, T]) in `mode`, recording the tensors `names` selects (None: all), with
    `interventions` (interventions.py) made on the way; in DECODE the cache is built with them too.
    TRAINING applies the config's dropout (seeded by `seed`) unless `dropout` is False: then its loss
    is the evaluation loss on the same text and no dropout masks are recorded. A TRAINING run's
    gradients are those of the intervened model. `progress` is told each block a pass goes through:
    forward, backward in training, the cache's prefill in DECODE. `on_grad` (TRAINING; no other mode
    computes a gradient): each parameter's gradient asked for is handed to on_grad(name, gradient) as
    the backward pass computes it, a block at a time from the last (see _backward), instead of being
    stored: the Training page keeps a norm of each, and holds one block's gradients at a time, not the
    blocks' 324 MiB (gpt2). Where the gradients asked for are not all the blocks' (the embedding's,
    ln_f's) or the run intervenes, one autograd call computes them all, held at once."""
    mode, ids = Mode.parse(mode), as_batch(ids)
    if ids.shape[1] > model.config.n_positions:
        raise ValueError(f"{ids.shape[1]:,} tokens exceed GPT-2's context of {model.config.n_positions:,}")
    if mode is Mode.TRAINING:
        drop = Dropout(model.config.dropout, seed) if dropout and model.config.dropout > 0 else no_dropout
        intervened = {iv.name for iv in interventions}
        stored = to_record(model.config, mode, names, keep=intervened)
        grads = grads and any(name.startswith("grad.") for name in stored)  # else no backward pass to run
        if grads or "logits" in intervened:  # the run computes its loss: stored as it made it, not derived
            stored = to_record(model.config, mode, names, keep=intervened | set(LOSS_NAMES))
        passes = _Passes(progress, model.config.n_layer, 1 + grads)
        passes.begin("forward pass: block 0")
        return _training(model, ids, stored, drop, grads, passes, interventions, on_grad)
    if mode is Mode.DECODE and any(iv.method == "mean" for iv in interventions):
        raise ValueError("a mean over positions needs them all at once: use full mode (decode computes one)")
    # a derived name intervened on is stored as the run made it, not derived from its sources
    stored = to_record(model.config, mode, names, keep={iv.name for iv in interventions})
    rec = recorder(stored, interventions, offset=ids.shape[1] - 1 if mode is Mode.DECODE else 0)
    cached = mode is Mode.DECODE and ids.shape[1] > 1  # a prefill of the tokens before the last
    passes = _Passes(progress, model.config.n_layer, 1 + cached)
    passes.forward(rec, "forward pass" if mode is not Mode.DECODE else "the new token")
    passes.begin("forward pass: block 0" if mode is not Mode.DECODE else
                 f"caching the {ids.shape[1] - 1:,} tokens before: block 0" if cached else "the new token: block 0")
    with torch.no_grad():
        if mode is Mode.FULL:
            # the logits where asked (stored) or intervened on; else derived from ln_f.out when read (derive.py)
            model(ids, rec, unembed="logits" in stored or any(iv.name == "logits" for iv in interventions))
            P, T = 0, ids.shape[1]
        elif mode is Mode.PREFILL:
            model(ids, rec, use_cache=True, last_only=True)
            P, T = 0, ids.shape[1]
        else:
            P, T = ids.shape[1] - 1, 1
            cache_rec = passes.forward(recorder((), interventions), f"caching the {P:,} tokens before")
            _, past = prefill(model, ids[:, :P], cache_rec)
            model(ids[:, P:], rec, past=past, use_cache=True)
            rec.intervened = [*cache_rec.intervened, *rec.intervened]
    check_reached(interventions, rec.intervened)
    return _trace(model, mode, ids, P, T, rec)


def prefill(model: GPT2, ids: torch.Tensor, rec: Recorder | None = None):
    """(logits of the last position, KV cache) for ids [B, P], recording nothing (unless `rec`
    does); P may be 0: no logits, and an empty cache, so a decode step after it is one query against
    a cache like any other (it writes its attention out and stores its row: gpt2.py)."""
    if ids.shape[1] == 0:
        cfg = model.config
        empty = torch.zeros(ids.shape[0], cfg.n_head, 0, cfg.d_head)  # [B, nh, 0, dh]
        return None, [(empty, empty)] * cfg.n_layer
    logits, past = model(ids, rec, use_cache=True, last_only=True)
    return logits, past


class Generation(NamedTuple):
    traces: list[Trace]  # one DECODE trace per step
    ids: list[int]  # the token each step chose

    @property
    def nbytes(self) -> int:
        return sum(t.nbytes for t in self.traces)


def greedy(logits: torch.Tensor) -> int:
    return ranking.top(logits)


def room(n_positions: int, n_tokens: int) -> int:
    """How many tokens generation can still make after a text of `n_tokens`: step k (from 0) decodes
    at L = n_tokens + k keys, so the last step, at L = n_positions, is step n_positions - n_tokens."""
    return n_positions - n_tokens + 1


def last_keys(n_tokens: int, steps: int) -> int:
    """L of the last of `steps` decode steps after a text of `n_tokens`: the longest step's keys."""
    return n_tokens + steps - 1


def generate(model: GPT2, ids, steps: int, *, names=None,
             choose: Callable[[torch.Tensor], int] = greedy, progress: Progress | None = None) -> Generation:
    """Decode `steps` tokens, one DECODE trace per step. Step 0 decodes the text's last token against
    the cache of the tokens before it; `choose` turns each step's logits [V] into the next token.
    `progress` is told each step done."""
    ids = as_batch(ids)
    if ids.shape[0] != 1:
        raise ValueError("generation runs one sequence at a time (B = 1)")
    if steps < 1:
        raise ValueError(f"steps must be at least 1, got {steps}")
    if steps > room(model.config.n_positions, ids.shape[1]):
        raise ValueError(f"{ids.shape[1]} tokens + {steps} steps exceed the context of {model.config.n_positions}")
    traces, chosen = [], []
    if progress is not None:
        progress(0, steps, f"caching the text's {ids.shape[1] - 1:,} tokens before the first step")
    with torch.no_grad():
        _, past = prefill(model, ids[:, :-1])
        for _ in range(steps):
            rec = Recorder(to_record(model.config, Mode.DECODE, names if names is None else [*names, "logits"]))
            P = ids.shape[1] - 1
            logits, past = model(ids[:, -1:], rec, past=past, use_cache=True)  # logits [1, 1, V]
            traces.append(_trace(model, Mode.DECODE, ids, P, 1, rec))
            chosen.append(choose(logits[0, -1]))
            ids = torch.cat([ids, torch.tensor([[chosen[-1]]])], dim=1)  # [1, P + 2]
            if progress is not None:
                progress(len(chosen), steps, f"token {len(chosen)} of {steps} chosen")
    return Generation(traces, chosen)


def _training(model: GPT2, ids: torch.Tensor, stored: frozenset[str], drop, grads: bool, passes: _Passes,
              interventions=(), on_grad: Callable[[str, torch.Tensor], None] | None = None) -> Trace:
    if ids.shape[1] < 2:
        raise ValueError("training needs at least 2 tokens: each position predicts the next one")
    n = model.config.n_layer
    streams = [block_name(s, i) for i in range(n) for s in GRAD_STREAMS]
    rec = recorder(stored, interventions, keep_graph=streams if grads else ())
    with torch.set_grad_enabled(grads):
        # the logits only where the run intervenes on them, else the final LayerNorm's output: the
        # trace derives its logits, and its loss unless the run computes one below
        changed = any(iv.name == "logits" for iv in interventions)
        out, _ = model(ids, passes.forward(rec, "forward pass"), drop=drop, unembed=changed)
        passes.backward(rec.live, n)
        if grads or changed:  # the loss a backward pass differentiates, or of the logits intervened on
            per_token = F.cross_entropy(out[:, :-1].flatten(0, 1), ids[:, 1:].flatten(), reduction="none").view(
                ids.shape[0], -1) if changed else next_token_loss(out, model.unembedding, ids)  # [B, T-1]
            loss = rec("loss", rec("loss.per_token", per_token).mean())  # []
        params = dict(model.named_parameters())
        wrt = {name: t for name, t in (params | rec.live).items() if grads and rec.wants("grad." + name)}
        if wrt:
            # a block at a time for a caller that keeps less than the gradients (all stored: one call);
            # not with interventions: one may read a tensor of an earlier block, a path around the stream
            by_block = on_grad is not None and not interventions
            for name, g in _backward(loss, wrt, rec.live, n, by_block):
                if on_grad is not None and name in params:
                    on_grad(name, g)
                else:
                    rec("grad." + name, g)
    check_reached(interventions, rec.intervened)
    return _trace(model, Mode.TRAINING, ids, 0, ids.shape[1], rec)


def _backward(loss: torch.Tensor, wrt: dict[str, torch.Tensor], streams: dict[str, torch.Tensor], n_layer: int,
              by_block: bool):
    """(name, ∂loss/∂wrt[name]) for every name of `wrt` (parameters h.3.attn.c_attn.weight, streams
    blocks.3.resid_mid). When each is a block's and `by_block`, a block at a time from the last: each
    autograd call goes from the gradient at a block's output (the loss, for the last) to its input
    stream and its own tensors of `wrt`, and frees that block's part of the graph, so a caller that
    keeps a norm of each holds one block's gradients at a time. Blocks meet only at the stream
    (resid_post of one is resid_pre of the next), so the gradient at a block's input is whole once
    the blocks after it are done. Otherwise (the embedding's or ln_f's, or a path around the stream)
    in one call."""
    block = {name: block_of("blocks." + name[2:] if name.startswith("h.") else name)[0] for name in wrt}
    inputs = [streams.get(block_name("resid_pre", i)) for i in range(n_layer)]
    if not by_block or None in block.values() or any(x is None for x in inputs):
        yield from zip(wrt, torch.autograd.grad(loss, list(wrt.values())))
        return
    out, g = loss, None  # the block's output and the gradient there
    for i in reversed(range(n_layer)):
        x = inputs[i]  # the block's input stream: the block before's resid_post, the same tensor
        mine = [k for k in wrt if block[k] == i and wrt[k] is not x and wrt[k] is not out]
        got = torch.autograd.grad(out, [x, *(wrt[k] for k in mine)], grad_outputs=g)
        out, g = x, got[0]
        yield from zip(mine, got[1:])
        yield from ((k, g) for k in wrt if wrt[k] is x)
        del got  # this block's gradients, handed on: not held while the next block's are computed


def _trace(model: GPT2, mode: Mode, ids: torch.Tensor, P: int, T: int, rec: Recorder) -> Trace:
    """The trace of a run: what `rec` stored, and every name derivable from it. Derived tensors
    are cached up to one block's scores and pattern (2 · B · nh · T · L float32 values)."""
    rows = tuple(map(tuple, ids.tolist()))  # every sequence of the batch; the pages show row 0
    derived = derivations(model, mode, rec.tensors, rows)
    order = tuple(n for n in recorded_names(model.config, mode) if n in rec.tensors or n in derived)
    tokens = tuple(readable_tokens(rows[0], vocabulary_of(model)))  # the pages' forms, in the model's vocabulary
    return Trace(mode=mode, model=model.config.name, token_ids=rows[0], tokens=tokens,
                 P=P, T=T, tensors=rec.tensors, rows=rows, derived=derived, order=order,
                 derived_cache_bytes=2 * ids.shape[0] * model.config.n_head * T * (P + T) * 4,
                 intervened=tuple(dict.fromkeys(rec.intervened)))
