"""Experiments with one knob: change one thing in GPT-2's computation on the student's text and
weights, and measure what it does. Each experiment is a question, the answers a student can
predict, and a function of (model, ids, mode, block, head) that runs the model with and without the
change and returns the numbers, the answer the run supports and a one-line reading of them.

The knobs act through the recording points (interventions.py), never on the model's weights:
- no 1/sqrt(dh): block b's `attn.scores` times sqrt(dh) (a `scale` intervention); the pattern is then
  the softmax of q.k^T with the causal mask, and q and k are the same as without the change;
- temperature: the last position's logits divided by 0 (the argmax), 1 or 2 (generation.distribution);
- no causal mask: every block's `attn.pattern` replaced by the softmax of that block's scores over
  every key (a `function` intervention reading `attn.scores`, which is recorded before the mask);
- no position embeddings: `embed.pos` (wpe's rows) zeroed.

TRAINING runs here switch dropout off, so the two runs of an experiment differ by the knob alone.
The idea of asking for a prediction first is Karpathy's ("Let's build GPT": the variance of q.k with
and without 1/sqrt(head_size)).
"""

import math
from collections.abc import Callable
from dataclasses import dataclass, fields

import torch

from ..model import ranking
from ..model.generation import distribution
from ..model.gpt2 import GPT2
from ..model.interventions import Intervention
from ..model.modes import run
from ..model.tokenizer import encode, readable
from ..model.trace import Trace
from ..spec.schema import Mode, block_name

ROWS = (Mode.FULL, Mode.TRAINING)  # the modes that compute every position of the text
TEMPERATURES = (0.0, 1.0, 2.0)
TOP_K = 10
REPLACEMENTS = (" game", " world", " people")  # single tokens (the demo model's words too)
MOVED = 1e-5  # an output moved when it changed by more than float rounding


@dataclass(frozen=True)
class Outcome:
    """What a run of an experiment measured: the answer it supports (one of the choices), a
    reading of the numbers in one line, and the tensors its charts draw (fields of subclasses)."""
    answer: str
    reading: str

    @property
    def nbytes(self) -> int:
        return sum(4 * f.numel() for f in (getattr(self, x.name) for x in fields(self)) if isinstance(f, torch.Tensor))


@dataclass(frozen=True)
class Experiment:
    key: str  # in the URL
    title: str
    question: str  # {block}, {head}, {dh}, {sqrt_dh}, {old}, {new} are filled in
    choices: tuple[str, ...]
    modes: tuple[Mode, ...]  # the modes it runs in
    measure: Callable[..., Outcome]  # (model, ids, mode, block, head) -> Outcome
    why: str  # what the result shows, and why GPT-2 is built so


def _run(model: GPT2, ids, mode: Mode | str, names, interventions=()) -> Trace:
    """One run in `mode` (a Mode, or its name as a notebook types it); TRAINING without dropout and
    without gradients (parsed first: "training" is not `Mode.TRAINING` by identity, and ran with dropout)."""
    mode = Mode.parse(mode)
    extra = {"dropout": False, "grads": False} if mode is Mode.TRAINING else {}
    return run(model, list(ids), mode, names=names, interventions=interventions, **extra)


def entropy(pattern: torch.Tensor) -> torch.Tensor:
    """-sum p log p over the keys of each row [..., L] -> [...] in nats (masked keys, p = 0, add 0)."""
    return 0.0 - torch.special.xlogy(pattern, pattern).sum(-1)  # 0.0 -: no "-0" for a one-hot row


def _choose(choices: tuple[str, ...], fits: list[bool]) -> str:
    return next(c for c, ok in zip(choices, fits) if ok)


# ---------------------------------------------------------------------------- 1. no 1/sqrt(dh)
@dataclass(frozen=True)
class ScaleOutcome(Outcome):
    score_ratio: float  # std of the scores without the scale / with it: sqrt(dh)
    entropy_with: torch.Tensor  # [nh] mean entropy of each head's rows, with 1/sqrt(dh)
    entropy_without: torch.Tensor  # [nh] the same without it
    pattern_with: torch.Tensor  # [T, L] the chosen head's pattern
    pattern_without: torch.Tensor  # [T, L]


SCALE_CHOICES = ("sharper", "flatter", "the same")


def no_scale(model: GPT2, ids, mode: Mode, block: int, head: int) -> ScaleOutcome:
    """Block `block`'s scores times sqrt(dh) (q.k^T without the 1/sqrt(dh)): scores and patterns."""
    dh = model.config.d_head
    names = [block_name("attn.scores", block), block_name("attn.pattern", block)]
    with_, without = (_run(model, ids, mode, names, ivs) for ivs in
                      ((), [Intervention(names[0], "scale", factor=math.sqrt(dh))]))
    ratio = float(without[names[0]].std() / with_[names[0]].std())
    h_with, h_without = (entropy(t[names[1]][0]).mean(-1) for t in (with_, without))  # [nh]
    a, b = float(h_with.mean()), float(h_without.mean())
    answer = _choose(SCALE_CHOICES, [b < a - 1e-6, b > a + 1e-6, True])
    reading = (f"Without 1/√dh the scores are {ratio:.4g}× as large (√{dh} = {math.sqrt(dh):.4g}), and block "
               f"{block}'s attention rows have a mean entropy of {b:.4g} nats instead of {a:.4g}: the patterns are "
               f"{answer}" + (" (lower entropy: the weight sits on fewer keys)." if answer == "sharper" else "."))
    return ScaleOutcome(answer, reading, ratio, h_with, h_without, with_[names[1]][0, head].clone(),
                        without[names[1]][0, head].clone())


# ---------------------------------------------------------------------------- 2. temperature
@dataclass(frozen=True)
class TemperatureOutcome(Outcome):
    top_ids: tuple[int, ...]  # the TOP_K most likely next tokens at temperature 1
    probs: torch.Tensor  # [len(TEMPERATURES), TOP_K] their probabilities at each temperature
    entropies: torch.Tensor  # [len(TEMPERATURES)] of the whole distribution, nats


TEMPERATURE_CHOICES = tuple(f"{t:g}" for t in TEMPERATURES)


def temperatures(model: GPT2, ids, mode: Mode, block: int = 0, head: int = 0) -> TemperatureOutcome:
    """The next-token distribution at the last position at each temperature (0: the argmax), in float64:
    in float32 the rounding of 50,257 terms shows in the printed entropy's last digit."""
    logits = _run(model, ids, mode, ["logits"]).at("logits", -1)[0].double()  # [V]
    dists = torch.stack([distribution(logits, t, None) for t in TEMPERATURES])  # [3, V]
    top = ranking.ranked(logits, TOP_K)  # [TOP_K]
    h = entropy(dists)  # [3]
    flattest = TEMPERATURE_CHOICES[int(h.argmax())]
    ps = ", ".join(f"{float(dists[i, top[0]]):.3g} at {c}" for i, c in enumerate(TEMPERATURE_CHOICES))
    reading = (f"Entropy {', '.join(f'{float(x):.4g}' for x in h)} nats at temperature "
               f"{', '.join(TEMPERATURE_CHOICES)}: the most spread out at {flattest}. The top token "
               f"{readable(int(top[0]))!r} has probability {ps}.")
    return TemperatureOutcome(flattest, reading, tuple(top.tolist()), dists[:, top].clone(), h)


# ---------------------------------------------------------------------------- 3. no causal mask
def unmasked_pattern(pattern: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
    """The pattern as the softmax of the scores over every key, future ones too (no mask)."""
    return torch.softmax(scores, dim=-1)  # [B, nh, T, L]


def no_mask_interventions(n_layer: int) -> list[Intervention]:
    return [Intervention(block_name("attn.pattern", b), "function", fn=unmasked_pattern,
                         reads=(block_name("attn.scores", b),)) for b in range(n_layer)]


def replacement(last: int) -> int:
    """A one-token word other than `last`, for the text's last token."""
    return next(t for t in (encode(w)[0] for w in REPLACEMENTS) if t != last)


@dataclass(frozen=True)
class MaskOutcome(Outcome):
    new_token: int  # what replaced the last token
    moved_with: torch.Tensor  # [T] max |change| of each position's output, with the mask
    moved_without: torch.Tensor  # [T] without it


MASK_CHOICES = ("only the last", "some earlier ones too", "every position")


def no_mask(model: GPT2, ids, mode: Mode, block: int = 0, head: int = 0) -> MaskOutcome:
    """Change the last token; how far each position's output (the stream leaving the last block)
    moves, with the causal mask and without it."""
    if Mode.parse(mode) not in ROWS:
        raise ValueError("the causal-mask experiment compares every position: use full or training mode")
    ids = list(ids)
    if len(ids) < 2:
        raise ValueError("changing the last token moves earlier outputs only if there are some: use 2 tokens or more")
    new = replacement(ids[-1])
    out = block_name("resid_post", model.config.n_layer - 1)
    moved = []
    for ivs in ((), no_mask_interventions(model.config.n_layer)):
        a, b = (_run(model, x, mode, [out], ivs)[out][0] for x in (ids, ids[:-1] + [new]))  # [T, d]
        moved.append((a - b).abs().amax(-1))  # [T]
    earlier = moved[1][:-1]
    answer = _choose(MASK_CHOICES, [bool((earlier <= MOVED).all()), bool((earlier <= MOVED).any()), True])
    still = float(moved[0][:-1].max())
    still = "0 (bit for bit)" if still == 0 else f"at most {still:.2g} (float rounding)"
    reading = (f"{readable(ids[-1])!r} → {readable(new)!r}: with the mask the earlier positions' outputs moved by "
               f"{still}; without it by up to "
               f"{float(earlier.max()):.3g}, and {int((earlier > MOVED).sum())} of {len(earlier)} moved: "
               f"{answer} changed.")
    return MaskOutcome(answer, reading, new, moved[0], moved[1])


# ---------------------------------------------------------------------------- 4. no position embeddings
def reverse_earlier(ids) -> list[int]:
    """The tokens before the last in reverse order, the last one kept last."""
    ids = list(ids)
    return ids[-2::-1] + ids[-1:]


@dataclass(frozen=True)
class PositionOutcome(Outcome):
    with_pos: torch.Tensor  # [2, T] the chosen head's last-row weights: text order, reversed (read back)
    without_pos: torch.Tensor  # [2, T] the same without position embeddings
    moved_with: float  # max |change| of a token's weight, over every head, with position embeddings
    moved_without: float  # without them


POSITION_CHOICES = ("the same weight", "a different weight")


def no_position(model: GPT2, ids, mode: Mode, block: int = 0, head: int = 0) -> PositionOutcome:
    """Block 0's last-row attention of the text and of the text with the earlier tokens reversed,
    each token's weight read at its own position, with and without position embeddings."""
    if Mode.parse(mode) not in ROWS:
        raise ValueError("the position experiment reads block 0's whole pattern: use full or training mode")
    ids = list(ids)
    if len(ids) < 3:
        raise ValueError("reversing the earlier tokens needs a text of at least 3 tokens")
    T, name = len(ids), block_name("attn.pattern", 0)
    back = torch.arange(T - 2, -1, -1).tolist() + [T - 1]  # token at position j of the text is at back[j]
    weights, moved = [], []
    for ivs in ((), [Intervention("embed.pos", "zero")]):
        a, b = (_run(model, x, mode, [name], ivs)[name][0, :, -1] for x in (ids, reverse_earlier(ids)))  # [nh, T]
        b = b[:, back]  # [nh, T] each token's weight in the reversed text, at its place in the text
        weights.append(torch.stack([a[head], b[head]]))
        moved.append(float((a - b).abs().max()))
    answer = _choose(POSITION_CHOICES, [moved[1] <= MOVED, True])
    reading = (f"Reversing the earlier tokens moved a token's weight by up to {moved[0]:.3g} with position "
               f"embeddings and by {moved[1]:.2g} without them (every head of block 0): without them each token "
               f"gets {answer}, wherever it stands.")
    return PositionOutcome(answer, reading, weights[0], weights[1], moved[0], moved[1])


SCALE_WHY = (
    "q·k is a sum of dh products, so its spread grows like √dh: the scale keeps the scores' spread the same for "
    "every head size. Without it the scores grow √dh-fold and the softmax moves toward saturation: the larger "
    "the scores, the closer one key comes to taking all the weight and the smaller the gradients through the "
    "other keys, which makes a model hard to train (trained models, whose scores are larger, get there; the "
    "reading above says how far this run goes). The smaller dh, the smaller the change: "
    "the tiny preset (dh = 16) multiplies its scores by 4, GPT-2 (dh = 64) by 8.")
TEMPERATURE_WHY = (
    "Dividing the logits by t divides the gaps between them by t, and the ratio of two tokens' probabilities is "
    "the exponential of the gap between their logits: "
    "below 1 the distribution sharpens, above 1 it flattens, and at 0 the whole of it sits on the most likely token "
    "(greedy decoding). The order of the tokens never changes: the top token stays on top.")
MASK_WHY = (
    "With the mask, position i reads keys 0 to i only, so nothing it computes depends on a later token: changing "
    "the last token moves only the last position (the others by 0, up to float rounding). That is what lets "
    "training read the whole text at once: one forward pass makes T predictions, and the T − 1 whose answer is in "
    "the text are scored, none of them seeing its answer. "
    "Without the mask every position reads the last token: the future leaks into the past, and a position could "
    "copy the very token it is trained to predict.")
POSITION_WHY = (
    "For a query that reads every key, as the last one does, the comparison q·k and the sum of values look at "
    "content only: without the position embeddings, x₀ at a position is its token's embedding alone, so reorder "
    "the earlier tokens and each keeps its weight. (The causal mask does depend on position, but only on how "
    "many keys a query may read.) wpe adds one vector per position, so the same token elsewhere gets another "
    "key and another weight: that is how GPT-2 tells word order apart.")

EXPERIMENTS = {e.key: e for e in (
    Experiment("no scale", "Remove the 1/√dh scale",
               "In block {block}, use the scores q·kᵀ instead of q·kᵀ/√dh (dh = {dh}, so they grow "
               "{sqrt_dh:.3g}-fold). What happens to the attention patterns?", SCALE_CHOICES, tuple(Mode), no_scale,
               SCALE_WHY),
    Experiment("temperature", "Temperature 0, 1, 2",
               "Divide the next-token logits by a temperature before the softmax (temperature 0 means: take the "
               "most likely token). At which temperature is the distribution most spread out?",
               TEMPERATURE_CHOICES, tuple(Mode), temperatures, TEMPERATURE_WHY),
    Experiment("no mask", "Remove the causal mask",
               "Let every position attend to every other, later ones too, then change the last token "
               "({old} → {new}). Whose outputs change?", MASK_CHOICES, ROWS, no_mask, MASK_WHY),
    Experiment("no positions", "Remove the position embeddings",
               "Leave out the position embeddings (x₀ is the token's embedding alone), then reverse the order of "
               "the tokens before the last. In block 0, does the last position give each earlier token the same "
               "attention weight as before, or a different one?", POSITION_CHOICES, ROWS, no_position,
               POSITION_WHY),
)}


def question(e: Experiment, dh: int, block: int, ids) -> str:
    return e.question.format(block=block, dh=dh, sqrt_dh=math.sqrt(dh), old=repr(readable(ids[-1])) if ids else "",
                             new=repr(readable(replacement(ids[-1]))) if ids else "")
