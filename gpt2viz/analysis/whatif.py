""""What if" experiments built on interventions: knock a part out, or patch one text's activations
into another's run, and measure what the prediction at the last position does.

Knock out: a head (its `attn.z`), a block's whole attention (`attn.out`, the update Δattn it adds to
the stream), its MLP (`mlp.out`, Δmlp) or one neuron (`mlp.post`), replaced by zero or by its mean
over the text's positions. A sweep knocks out every head (or every MLP) one at a time, several at
once as rows of one batch.

Patch (activation patching): run the corrupt text B with one activation taken from the clean text
A's run, and see how much of the difference between the two runs' answers comes back. The metric is
the logit difference of an answer pair (a, b) at the last position, m = logit_a − logit_b; the
restored fraction of a patched run is (m_patched − m_B) / (m_A − m_B): 0 when the patch changes
nothing, 1 when it gives A's answer margin back in full.
"""

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F

from ..model import ranking
from ..model.derive import unembedding_of
from ..model.gpt2 import GPT2, next_token_loss, unembed_rows
from ..model.interventions import InterveningRecorder, Intervention, block_of, check_reached
from ..model.modes import run
from ..model.record import Recorder
from ..model.tokenizer import readable, readable_tokens
from ..model.trace import Trace
from ..spec.schema import Mode, block_name

Progress = Callable[[int, int], None]  # (runs done, runs in all)
PARTS = ("head", "attn", "mlp", "neuron")


@dataclass(frozen=True)
class Target:
    """The part to knock out: one head, a block's attention, its MLP, or one MLP neuron."""
    block: int
    part: str = "head"  # one of PARTS
    index: int = 0  # the head, or the neuron; unused for attn and mlp

    @property
    def name(self) -> str:
        short = {"head": "attn.z", "attn": "attn.out", "mlp": "mlp.out", "neuron": "mlp.post"}[self.part]
        return block_name(short, self.block)

    @property
    def label(self) -> str:
        b, i = self.block, self.index
        return {"head": f"head {b}.{i}", "attn": f"block {b}'s attention", "mlp": f"block {b}'s MLP",
                "neuron": f"neuron {i} of block {b}'s MLP"}[self.part]

    def intervention(self, method: str, row: int | None = None) -> Intervention:
        return Intervention(self.name, method, head=self.index if self.part == "head" else None,
                            unit=self.index if self.part == "neuron" else None, row=row)

    def check(self, cfg) -> None:
        if self.part not in PARTS:
            raise ValueError(f"unknown part {self.part!r}; choose one of {', '.join(PARTS)}")
        if not 0 <= self.block < cfg.n_layer:
            raise ValueError(f"block must be between 0 and {cfg.n_layer - 1}, got {self.block}")
        top = {"head": cfg.n_head, "neuron": cfg.d_mlp}.get(self.part)
        if top is not None and not 0 <= self.index < top:
            raise ValueError(f"{self.part} must be between 0 and {top - 1}, got {self.index}")


def knockout(model: GPT2, ids, target: Target, method: str, mode=Mode.FULL, names=None, progress=None) -> Trace:
    """The trace of `ids` with `target` knocked out by `method` (zero or mean); `progress` as run's."""
    target.check(model.config)
    if method not in ("zero", "mean"):
        raise ValueError(f"knock out with zero or mean, not {method!r}")
    return run(model, ids, mode, names=names, interventions=[target.intervention(method)], progress=progress)


# ---------------------------------------------------------------------------- a knock-out resumed
@dataclass(frozen=True)
class Knocked:
    """What a knock-out changed, read against the clean run while it ran; its tensors are not kept."""
    probs: torch.Tensor  # [V]: the next token at the last position
    loss: torch.Tensor | None  # [T-1]: the loss at each position (None: only the last position unembedded)
    final: torch.Tensor  # [T, d]: the stream after the final LayerNorm, what the loss is unembedded from
    intervened: tuple[str, ...]  # what the intervention changed
    changed: list[tuple[str, float]]  # as changed_most against the clean run

    @property
    def nbytes(self) -> int:
        return 4 * (self.probs.numel() + self.final.numel() + (0 if self.loss is None else self.loss.numel()))


# LayerNorm's means (`blocks.*.ln1.mean`, ...) are not ranked by their relative change: a mean lies near 0, where a
# ratio to its size is any number (a 1-token knock-out put `blocks.0.ln2.mean` first, at 1.87)
NOT_RANKED = re.compile(r"(^|\.)ln(?:1|2|_f)\.mean$")


def ranked_change(name: str) -> bool:
    """Whether `name`'s relative change is listed among those that moved most."""
    return not NOT_RANKED.search(name)


class _Comparing(InterveningRecorder):
    """Keeps nothing of the run but how far each tensor the clean run stored moved from it (the
    relative change of changed_most), and the final LayerNorm's output. What comes before the first
    intervention is the clean run's own computation, equal bit for bit, and is not compared."""

    def __init__(self, interventions, clean: Trace):
        super().__init__(interventions, names=("ln_f.out",))
        self.clean, self.moved = clean, []
        self._last: tuple | None = None  # (x, before, change): a block's resid_pre is the last resid_post

    def __call__(self, name: str, x: torch.Tensor) -> torch.Tensor:
        x = super().__call__(name, x)
        before = self.clean.tensors.get(name)
        if before is None or not self.intervened or name in self.intervened or x.shape != before.shape \
                or not ranked_change(name):
            return x
        if self._last is not None and self._last[0] is x and self._last[1] is before:
            change = self._last[2]
        else:
            change = _distance(x, before) / max(self.clean.memo(("norm", name), lambda: float(before.norm())), 1e-12)
            self._last = x, before, change
        if change != 0:  # equal values, as changed_most's torch.equal (NaN compares unequal there and here)
            self.moved.append((name, change))
        return x


def _distance(a: torch.Tensor, b: torch.Tensor, step: int = 64) -> float:
    """‖a − b‖ over a slice of positions at a time (the axis of length T, from the end), so that the
    difference stays in the cache instead of making a tensor of its own: a knock-out in block 0
    compares 60 tensors of 1,024 positions on gpt2."""
    axis = a.dim() - 2  # positions are the axis before the last in every layout ([B, T, d], [B, nh, T, dh])
    total = 0.0
    for i in range(0, a.shape[axis], step):
        total += float(torch.sub(a.narrow(axis, i, min(step, a.shape[axis] - i)),
                                 b.narrow(axis, i, min(step, a.shape[axis] - i))).square().sum(dtype=torch.float64))
    return total ** 0.5


_GRAMS: dict[int, tuple[tuple, torch.Tensor]] = {}  # id(W_U) -> (its version, W_U^T W_U [d, d])


@torch.no_grad()
def _gram(w_u: torch.Tensor) -> torch.Tensor:
    """W_U^T W_U [d, d], kept per matrix until its values change: ‖Δx W_U^T‖² = Δx G Δx^T gives the
    logits' change at every position without unembedding them (V x d x d once, not T x V x d a run)."""
    version = (w_u.data_ptr(), w_u._version)
    got = _GRAMS.get(id(w_u))
    if got is None or got[0] != version:
        got = _GRAMS[id(w_u)] = version, (w_u.T @ w_u).double()  # [d, d]
    return got[1]


@torch.no_grad()  # numbers to show: no graph to the weights, whatever the caller's grad mode
def logits_moved(model: GPT2, clean: Trace, final: torch.Tensor) -> float:
    """‖Δlogits‖ / ‖logits‖ over every position, from the final LayerNorm's outputs [T, d] alone."""
    before = model.ln_f(clean.get("resid_post", model.config.n_layer - 1), Recorder.off(), "ln_f.")[0]  # [T, d]
    gram = _gram(model.unembedding)  # [d, d]

    def norm(x: torch.Tensor) -> float:  # ‖x W_U^T‖ over every position, x [T, d]
        x = x.double()
        return float(((x @ gram) * x).sum().clamp_min(0).sqrt())
    return norm(final - before) / max(clean.memo("logits norm", lambda: norm(before)), 1e-12)  # once a text


@torch.no_grad()
def knockout_from(model: GPT2, clean: Trace, target: Target, method: str, every_position: bool = True,
                  progress=None, k: int = 10) -> Knocked:
    """`target` knocked out by `method` in the text of `clean` (a FULL run storing every block's
    resid_pre and the logits), computed from block `target.block` on: the blocks before it compute
    what they did in the clean run, so the run resumes from the clean run's input of that block.
    Unembeds every position (the loss at each) or, without `every_position`, the last one only.
    `progress` as run's, told each block computed."""
    target.check(model.config)
    if method not in ("zero", "mean"):
        raise ValueError(f"knock out with zero or mean, not {method!r}")
    n, b = model.config.n_layer, target.block
    ivs = [target.intervention(method)]
    rec = _Comparing(ivs, clean)
    if progress is not None:
        def told(name: str) -> None:
            i = block_of(name)[0]
            progress(i - b + 1, n - b, f"forward pass: block {i}")
        rec.on_block = told
        progress(0, n - b, f"forward pass: block {b}")  # before the first block: shown from the start
    logits, _ = model.resume(clean.get("resid_pre", b), b, rec, last_only=not every_position,
                             unembed=not every_position)  # [1, 1, V], or ln_f's [1, T, d]
    check_reached(ivs, rec.intervened)
    final = rec.tensors["ln_f.out"][0]  # [T, d]
    if every_position:  # as a FULL trace reads them: the same products as the full knock-out's, bit for bit
        logits = unembed_rows(final[None], model.unembedding.detach(), slice(-1, None))  # [1, 1, V]: its block of 32
    moved = rec.moved
    if not (every_position and "logits" in clean.tensors):  # else compared as the run went, as any stored name
        change = logits_moved(model, clean, final)  # a FULL run derives its logits, and stores none to compare
        moved = [*moved, ("logits", change)] if change != 0 else moved
    loss = loss_from(model, final, clean.token_ids) if every_position else None  # [T-1], as loss_per_position
    return Knocked(torch.log_softmax(logits[0, -1], -1).exp(), loss, final, tuple(dict.fromkeys(rec.intervened)),
                   sorted(moved, key=lambda m: -m[1])[:k])


def loss_from(model: GPT2, final: torch.Tensor, ids) -> torch.Tensor:
    """Cross-entropy of each next token [T-1] from the final LayerNorm's outputs [T, d]: 256 positions'
    logits at a time (gpt2.next_token_loss; the logits of 1,024 positions are 206 MB on gpt2), the
    products loss_per_position reads a trace's loss with."""
    with torch.no_grad():
        return next_token_loss(final[None], model.unembedding.detach(), torch.tensor([list(ids)]))[0]  # [T-1]


# ---------------------------------------------------------------------------- reading two runs
def log_probs(trace: Trace) -> torch.Tensor:
    return torch.log_softmax(trace.at("logits", -1)[0], dim=-1)  # [V] at the last position


def loss_per_position(trace: Trace) -> torch.Tensor:
    """Cross-entropy of each next token [T-1] (position t predicts token t+1): of a trace that derives
    its logits (full and training mode), from its final LayerNorm's output as loss_from computes it
    (a training trace's loss.per_token, without a backward pass: the same products); of stored logits
    (a loaded trace), 256 positions at a time."""
    w_u = unembedding_of(trace)
    if w_u is not None:
        with torch.no_grad():
            return next_token_loss(trace["ln_f.out"][:1], w_u, torch.tensor([trace.token_ids]))[0]  # [T-1]
    targets = torch.tensor(trace.token_ids[1:], dtype=torch.long)  # [T-1]
    n, step = len(targets), 256  # positions unembedded at a time: a FULL trace derives its logits
    losses = [F.cross_entropy(trace.at("logits", slice(i, min(i + step, n)))[0], targets[i:i + step],  # [≤ 256, V]
                              reduction="none") for i in range(0, n, step)]
    return torch.cat(losses) if losses else torch.zeros(0)  # [T-1]


def changed_most(before: Trace, after: Trace, k: int = 10, model: GPT2 | None = None) -> list[tuple[str, float]]:
    """The k tensors stored in both runs, other than those intervened on, whose values moved most,
    as (name, ‖after − before‖ / ‖before‖), largest first. Tensors computed before the intervention
    are equal bit for bit, so only later ones appear. Derived names (the attention pattern, LayerNorm
    outputs, ...) are left out: each is a function of stored ones that moved, and deriving them all for
    two runs cost seconds on every view. LayerNorm's means are left out too (NOT_RANKED). But the logits,
    which FULL derives, are measured given the `model`, from the final LayerNorm's outputs without
    unembedding them (logits_moved)."""
    moved = []
    for name in after.names:
        if (name in after.tensors and name in before.tensors and name not in after.intervened
                and after[name].shape == before[name].shape and ranked_change(name)):
            a, b = after[name].float(), before[name].float()
            if not torch.equal(a, b):
                moved.append((name, float((a - b).norm() / b.norm().clamp_min(1e-12))))
    if model is not None and all("logits" in t.derived and "ln_f.out" in t for t in (before, after)) \
            and before.rows == after.rows:
        change = logits_moved(model, before, after["ln_f.out"][0])
        if change != 0:
            moved.append(("logits", change))
    return sorted(moved, key=lambda m: -m[1])[:k]


# ---------------------------------------------------------------------------- batched runs
@torch.no_grad()
def last_logits(model: GPT2, ids, interventions, clean: Trace | None = None) -> torch.Tensor:
    """Logits at the last position [R, V] of one run of `ids` [T] with row-specific interventions
    (R rows; one row without any). With `clean`, a FULL run of the same ids storing every block's
    resid_pre (and the last resid_post), the run resumes from its input of the first block the
    interventions touch, as the blocks before it would compute the same."""
    rec = InterveningRecorder(interventions, names=())
    if clean is None:
        logits, _ = model(torch.as_tensor([list(ids)]), rec=rec, last_only=True)  # [R, 1, V]
    else:
        start = min((block_of(iv.name)[0] or 0 for iv in interventions), default=model.config.n_layer)
        x = clean.get("resid_pre", start) if start < model.config.n_layer else clean.get("resid_post", start - 1)
        logits, _ = model.resume(x, start, rec, last_only=True)  # [R, 1, V]
    check_reached(interventions, rec.intervened)
    return logits[:, -1]  # [R, V]


def batched(model: GPT2, ids, rows: list[list[Intervention]], measure: Callable[[torch.Tensor], torch.Tensor],
            batch: int, progress: Progress | None = None, clean: Trace | None = None,
            partial: Callable[[torch.Tensor], None] | None = None) -> torch.Tensor:
    """measure(logits [R, V]) -> [R] for every row of interventions, `batch` rows a run. Rows are
    taken in the order of the first block they touch, and a run computes the blocks before its
    rows' first block once, not once a row (not at all with `clean`: see last_logits). `partial`:
    given a copy of the results after each run but the last, NaN where a row is still to run."""
    out = torch.full((len(rows),), float("nan"))
    order = sorted(range(len(rows)), key=lambda r: min(block_of(iv.name)[0] or 0 for iv in rows[r]))
    for start in range(0, len(order), batch):
        chunk = order[start:start + batch]
        ivs = [replace(iv, row=row) for row, r in enumerate(chunk) for iv in rows[r]]
        out[chunk] = measure(last_logits(model, ids, ivs, clean))
        if progress:
            progress(start + len(chunk), len(rows))
        if partial and start + batch < len(order):
            partial(out.clone())
    return out


def sweep(model: GPT2, ids, part: str, method: str, token: int, batch: int = 16,
          progress: Progress | None = None, clean: Trace | None = None,
          partial: Callable[[torch.Tensor], None] | None = None) -> torch.Tensor:
    """Knock out every head ([n_layer, n_head]) or every block's MLP or attention ([n_layer, 1]),
    one at a time: the change in the log-probability of `token` at the last position. `clean`: a
    FULL run of `ids` storing every block's resid_pre and resid_post, to resume from (last_logits).
    `partial`: given the grid so far after each run but the last (NaN where a knock-out is still to
    run; rows fill in block order), for a page that draws the rows as they finish."""
    cfg = model.config
    targets = [Target(b, part, h) for b in range(cfg.n_layer) for h in range(cfg.n_head if part == "head" else 1)]
    targets[0].check(cfg)
    if method not in ("zero", "mean"):
        raise ValueError(f"knock out with zero or mean, not {method!r}")
    if clean is not None and list(clean.token_ids) != list(ids):
        raise ValueError("the clean run to resume from is of another text")
    base = torch.log_softmax(last_logits(model, ids, (), clean)[0], -1)[token]

    def effect(logits):  # [R, V] -> [R]
        return torch.log_softmax(logits, -1)[:, token] - base
    rows = [[t.intervention(method)] for t in targets]
    shown = partial and (lambda values: partial(values.view(cfg.n_layer, -1)))  # [n_layer, nh or 1]
    return batched(model, ids, rows, effect, batch, progress, clean, shown).view(cfg.n_layer, -1)  # [n_layer, nh or 1]


# ---------------------------------------------------------------------------- patching
@dataclass(frozen=True)
class Patching:
    """Patching A (clean) into B (corrupt): restored fractions per (block, position) and per (block, head)."""
    answers: tuple[int, int]  # (a, b): the metric is logit_a − logit_b at the last position
    clean_diff: float  # m_A
    corrupt_diff: float  # m_B
    resid: torch.Tensor  # [n_layer, T] patching resid_pre at (block, position)
    heads: torch.Tensor  # [n_layer, nh] patching attn.z of one head, every position

    @property
    def nbytes(self) -> int:
        return (self.resid.numel() + self.heads.numel()) * 4


PATCH_NAMES = ("blocks.*.resid_pre", "blocks.*.attn.z", "logits")


def patch_sources(model: GPT2, clean_ids) -> Trace:
    """The clean run's tensors that patching takes: resid_pre and attn.z of every block."""
    return run(model, list(clean_ids), Mode.FULL, names=PATCH_NAMES)


def logit_diff(logits: torch.Tensor, answers: tuple[int, int]) -> torch.Tensor:
    return logits[..., answers[0]] - logits[..., answers[1]]


def margins_measurable(clean: float, corrupt: float) -> bool:
    """Whether A's and B's margins m_A, m_B differ by more than float32's rounding of a logit (ranking.TIE_NATS,
    under which two logits tie): a restored fraction divides by m_A − m_B, and a rounding's difference gives a
    ratio of rounding."""
    return abs(clean - corrupt) >= ranking.TIE_NATS


def restored(m: torch.Tensor, clean: float, corrupt: float) -> torch.Tensor:
    """(m − m_B) / (m_A − m_B); NaN where the margins differ by rounding alone (margins_measurable)."""
    if not margins_measurable(clean, corrupt):
        return torch.full_like(m, float("nan"))
    return (m - corrupt) / (clean - corrupt)


def default_answers(clean_logits: torch.Tensor, corrupt_logits: torch.Tensor) -> tuple[int, int]:
    """(A's top next token, B's top next token); when both runs pick the same token, B's best other one."""
    a = ranking.top(clean_logits)
    top2 = ranking.ranked(corrupt_logits, 2).tolist()
    return a, top2[1] if top2[0] == a else top2[0]


def patch(model: GPT2, clean_ids, corrupt_ids, answers: tuple[int, int] | None = None, batch: int = 16,
          progress: Progress | None = None) -> Patching:
    """Patch every (block, position) of resid_pre, then every head's attn.z, from A into B.
    answers: default_answers unless given."""
    clean_ids, corrupt_ids = list(clean_ids), list(corrupt_ids)
    if len(clean_ids) != len(corrupt_ids):
        raise ValueError(f"patching needs texts of equal length in tokens: {len(clean_ids)} and {len(corrupt_ids)}")
    cfg, T = model.config, len(clean_ids)
    source = patch_sources(model, clean_ids)
    clean_logits = source.at("logits", -1)[0]  # [V]
    corrupt_logits = last_logits(model, corrupt_ids, ())[0]  # [V]
    answers = answers or default_answers(clean_logits, corrupt_logits)
    m_a, m_b = float(logit_diff(clean_logits, answers)), float(logit_diff(corrupt_logits, answers))
    if not margins_measurable(m_a, m_b):  # every fraction would be NaN: no run is made for them
        nan = float("nan")
        return Patching(answers, m_a, m_b, torch.full((cfg.n_layer, T), nan),  # [n_layer, T]
                        torch.full((cfg.n_layer, cfg.n_head), nan))  # [n_layer, nh]
    resid = [[Intervention(block_name("resid_pre", b), "patch", position=p, source=source.get("resid_pre", b))]
             for b in range(cfg.n_layer) for p in range(T)]
    heads = [[Intervention(block_name("attn.z", b), "patch", head=h, source=source.get("attn.z", b))]
             for b in range(cfg.n_layer) for h in range(cfg.n_head)]
    n = len(resid) + len(heads)

    def measure(logits):  # [R, V] -> [R]
        return restored(logit_diff(logits, answers), m_a, m_b)
    r = batched(model, corrupt_ids, resid, measure, batch, progress and (lambda i, _: progress(i, n)))
    h = batched(model, corrupt_ids, heads, measure, batch, progress and (lambda i, _: progress(len(resid) + i, n)))
    return Patching(answers, m_a, m_b, r.view(cfg.n_layer, T), h.view(cfg.n_layer, cfg.n_head))


# ---------------------------------------------------------------------------- reports (CLI JSON)
def _finite(x: float) -> float | None:
    return None if math.isnan(x) else round(float(x), 6)  # NaN (nothing to restore) as null


def _top(probs: torch.Tensor, k: int) -> list[dict]:
    return [{"id": int(i), "token": readable(int(i)), "prob": _finite(probs[i])}
            for i in ranking.ranked(probs.log(), k)]


def ablation_report(model: GPT2, ids, target: Target, method: str, k: int = 5) -> dict:
    """What knocking out `target` does to the prediction at the last position and to the loss."""
    before = run(model, list(ids), Mode.FULL)
    after = knockout(model, list(ids), target, method)
    p_before, p_after = log_probs(before).exp(), log_probs(after).exp()  # [V]
    top = ranking.top(p_before.log())
    loss_before, loss_after = loss_per_position(before), loss_per_position(after)  # [T-1]
    return {"model": before.model, "tokens": list(before.tokens), "method": method,
            "target": {"block": target.block, "part": target.part, "index": target.index, "name": target.name},
            "top_before": _top(p_before, k), "top_after": _top(p_after, k),
            "top_token": {"id": top, "token": readable(top), "prob_before": _finite(p_before[top]),
                          "prob_after": _finite(p_after[top]),
                          "logit_change": _finite(after.at("logits", -1)[0, top] - before.at("logits", -1)[0, top])},
            "loss_before": _finite(loss_before.mean()) if len(ids) > 1 else None,
            "loss_after": _finite(loss_after.mean()) if len(ids) > 1 else None,
            "changed_most": [{"name": n, "relative_change": _finite(c)}
                             for n, c in changed_most(before, after, k, model)]}


def patching_report(model: GPT2, clean_ids, corrupt_ids, batch: int = 16) -> dict:
    """Patching A (clean) into B (corrupt), every (block, position) of resid_pre and every head's attn.z."""
    p = patch(model, clean_ids, corrupt_ids, batch=batch)
    return {"model": model.config.name, "clean_tokens": readable_tokens(clean_ids),
            "corrupt_tokens": readable_tokens(corrupt_ids),
            "answers": [{"id": a, "token": readable(a)} for a in p.answers],
            "metric": "logit[answers[0]] - logit[answers[1]] at the last position",
            "clean_logit_diff": _finite(p.clean_diff), "corrupt_logit_diff": _finite(p.corrupt_diff),
            "restored": {"resid_pre": [[_finite(v) for v in row] for row in p.resid.tolist()],
                         "attn_z": [[_finite(v) for v in row] for row in p.heads.tolist()]}}
