"""Published claims about GPT-2 small's heads, measured on the weights in view, as they were measured
when published:

- `induction`: induction scores on a seeded sequence of random tokens repeated once (the
  TransformerLens and ARENA tutorials' setup), not on a lesson's own text;
- `logit_diff`: the indirect-object task's logit difference logit(IO) − logit(S), a mean over a
  seeded set of prompts made from templates and names in the style of Wang et al. 2022 (their 3.56 is
  such a mean), with the share of prompts that prefer the right name;
- `attribution`: on the same prompts, the listed heads' summed direct logit attribution to that
  difference, as a share of it;
- `knockout`: on the same prompts, the listed heads zeroed together: the logit difference left, as a
  share of the clean one.

The thresholds that decide "agrees" or "differs" are the lesson file's, not this module's.

When a share means something (`share_of`, the rule every share and ratio here keeps): `attribution` and
`knockout` divide by the clean mean logit difference. On weights that do not prefer the indirect
object that difference is about 0 (random gpt2: -0.02), and a ratio with a denominator near 0 is any
number: 1.12 "agrees" there by chance. So a share is measured only when its denominator is at least the
lesson's own bar for a clear preference, its `logit_diff` claim's threshold (`share_floor`; SHARE_FLOOR
where the lesson has none); below it the value is NaN and the claim reads "not measurable on these
weights", with the number and the reason (teaching/claim_text.py).

What a measurement saw besides its value is kept as numbers (`Measured.seen`); the sentences that say
them are teaching/claim_text.py's.
"""

import math
import random
from collections.abc import Iterable
from dataclasses import dataclass, field

import torch

from ..model.gpt2 import GPT2
from ..model.interventions import InterveningRecorder, Intervention, check_reached
from ..model.modes import run
from ..model.tokenizer import encode
from ..spec.schema import block_name
from .attribution import NEEDS, attribute
from .heads import find_heads

MEASURES = ("induction", "logit_diff", "attribution", "knockout")
AT_LEAST = {"induction": True, "logit_diff": True, "attribution": True, "knockout": False}  # else: at most

# BABA templates: A and B are introduced, B is named again, the answer is A (the indirect object)
TEMPLATES = (
    "When{A} and{B} went to the {place},{B} gave a {thing} to",
    "Then,{A} and{B} went to the {place}.{B} gave a {thing} to",
    "After{A} and{B} went to the {place},{B} gave a {thing} to",
    "While{A} and{B} were working at the {place},{B} gave a {thing} to",
    "Friends{A} and{B} found a {thing} at the {place}.{B} gave it to",
)
NAMES = (" Mary", " John", " Tom", " James", " Dan", " Sid", " Kate", " Anne", " Paul", " Lisa", " Mark", " Sarah")
PLACES = ("store", "garden", "restaurant", "school", "hospital", "office", "house", "station")
THINGS = ("ring", "kiss", "bone", "basketball", "computer", "necklace", "drink", "snack")


SHARE_FLOOR = 1.0  # a lesson without a logit_diff claim: a share needs a clean mean logit difference of 1 or more


@dataclass(frozen=True)
class Measured:
    kind: str  # one of MEASURES
    value: float  # the claim's number, measured here; NaN when it is not measurable (share_of)
    agrees: bool  # against the lesson's threshold; never when not measurable
    seen: dict = field(default_factory=dict)  # what else the measurement saw, by name (claim_text says it)

    @property
    def measurable(self) -> bool:
        return not math.isnan(self.value)


# ---------------------------------------------------------------------------- when a share means something
def share_floor(claims: Iterable[dict]) -> float:
    """The least clean mean logit difference a lesson's shares divide by: its logit_diff claim's threshold
    (the difference it counts as the weights preferring the right name), else SHARE_FLOOR."""
    floors = [c["threshold"] for c in claims if c.get("measure") == "logit_diff"]
    return max(floors) if floors else SHARE_FLOOR


def measurable(denominator: float, floor: float) -> bool:
    """The rule: a share or ratio is measured only when its denominator reaches `floor` (NaN never does).
    A denominator near 0 (or below it: the weights prefer the other answer) makes the ratio any number."""
    return denominator >= floor


def share_of(part: float, whole: float, floor: float) -> float:
    """part / whole where `measurable(whole, floor)`; NaN ("not measurable on these weights") where not."""
    return part / whole if measurable(whole, floor) else float("nan")


def _judged(kind: str, value: float, threshold: float, seen: dict) -> Measured:
    """`value` against the lesson's threshold (at least or at most, AT_LEAST); never agreeing when NaN."""
    ok = (value >= threshold) if AT_LEAST[kind] else (value <= threshold)
    return Measured(kind, value, bool(ok) and not math.isnan(value), seen)


def ioi_prompts(n: int, seed: int = 0) -> list[tuple[str, int, int]]:
    """n (prompt, IO token, S token) triples, drawn with `seed`."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        a, b = rng.sample(NAMES, 2)
        text = rng.choice(TEMPLATES).format(A=a, B=b, place=rng.choice(PLACES), thing=rng.choice(THINGS))
        out.append((text, encode(a)[0], encode(b)[0]))
    return out


def repeated_tokens(vocabulary: list[int] | None, half: int, seed: int = 0) -> list[int]:
    """`half` seeded random tokens, then the same again; from `vocabulary`, or from GPT-2's ids."""
    g = torch.Generator().manual_seed(seed)
    if vocabulary:
        first = torch.tensor(vocabulary)[torch.randint(len(vocabulary), (half,), generator=g)]  # [half]
    else:
        first = torch.randint(1000, 50000, (half,), generator=g)  # [half]: skips bytes and rare merges
    return first.tolist() * 2


def _head(b: int, h: int) -> str:
    return f"{b}.{h}"


def induction(model: GPT2, heads, threshold: float, vocabulary=None, seed: int = 0) -> Measured:
    half = min(50, (model.config.n_positions - 1) // 2)
    ids = repeated_tokens(vocabulary, half, seed)
    rows = find_heads(model, ids)
    score = {(r["block"], r["head"]): r["induction"] for r in rows}
    listed = [score[tuple(h)] for h in heads]
    others = sorted(((v, k) for k, v in score.items() if list(k) not in [list(h) for h in heads]), reverse=True)
    best = {"best_other": others[0][1], "best_other_score": others[0][0]} if others else {}
    return _judged("induction", min(listed), threshold,
                   {"half": half, "lowest": min(listed), "highest": max(listed), "listed": len(listed)} | best)


@torch.no_grad()
def _differences(model: GPT2, prompts, interventions=()) -> torch.Tensor:
    """logit(IO) − logit(S) at the last position of each prompt [n]; prompts of one length run as one batch."""
    out = torch.empty(len(prompts))
    by_length: dict[int, list[int]] = {}
    for i, (text, _, _) in enumerate(prompts):
        by_length.setdefault(len(encode(text)), []).append(i)
    for rows in by_length.values():
        ids = torch.tensor([encode(prompts[i][0]) for i in rows])  # [R, T]
        rec = InterveningRecorder(list(interventions), names=())
        logits = model(ids, rec=rec, last_only=True)[0][:, -1]  # [R, V]
        check_reached(interventions, rec.intervened)
        for r, i in enumerate(rows):
            out[i] = logits[r, prompts[i][1]] - logits[r, prompts[i][2]]
    return out  # [n]


def in_view(text: str) -> tuple[int, int] | None:
    """(IO, S) of an indirect-object prompt: of the known names it holds, the one said once and the one
    said twice; None when the text is not such a prompt."""
    ids = encode(text)
    counts = {t: ids.count(t) for t in (encode(n)[0] for n in NAMES) if t in ids}
    once, twice = [t for t, c in counts.items() if c == 1], [t for t, c in counts.items() if c == 2]
    return (once[0], twice[0]) if len(once) == 1 and len(twice) == 1 else None


def prompt_logit_diff(model: GPT2, text: str) -> tuple[int, int, float] | None:
    """(IO, S, logit(IO) − logit(S)) at the end of the prompt in view, or None when it is not one."""
    pair = in_view(text)
    if pair is None:
        return None
    return pair[0], pair[1], float(_differences(model, [(text, *pair)])[0])


def logit_diff(model: GPT2, threshold: float, n: int = 16, seed: int = 0) -> Measured:
    d = _differences(model, ioi_prompts(n, seed))  # [n]
    return _judged("logit_diff", float(d.mean()), threshold,
                   {"prompts": n, "preferring": int((d > 0).sum())})


def attribution_share(model: GPT2, heads, threshold: float, n: int = 16, seed: int = 0,
                      floor: float = SHARE_FLOOR) -> Measured:
    shares, targets = [], []
    for text, io, s in ioi_prompts(n, seed):
        a = attribute(model, run(model, encode(text), names=NEEDS), io, s)
        grid = a.heads()  # [n_layer, nh]
        shares.append(float(sum(grid[b, h] for b, h in heads)))
        targets.append(a.target)
    written, clean = sum(shares) / n, sum(targets) / n
    return _judged("attribution", share_of(written, clean, floor), threshold,
                   {"prompts": n, "written": written, "clean": clean, "floor": floor})


def knockout(model: GPT2, heads, threshold: float, n: int = 16, seed: int = 0, floor: float = SHARE_FLOOR) -> Measured:
    prompts = ioi_prompts(n, seed)
    zeroed = [Intervention(block_name("attn.z", b), "zero", head=h) for b, h in heads]
    clean, knocked = float(_differences(model, prompts).mean()), float(_differences(model, prompts, zeroed).mean())
    return _judged("knockout", share_of(knocked, clean, floor), threshold,
                   {"prompts": n, "clean": clean, "knocked": knocked, "floor": floor})


def measure(model: GPT2, kind: str, heads, threshold: float, vocabulary=None, n: int = 16, seed: int = 0,
            floor: float = SHARE_FLOOR) -> Measured:
    """One claim's measurement on `model` (see the module's docstring for each kind); `floor`: the least
    clean mean logit difference a share divides by (share_floor of the lesson's claims)."""
    missing = [(b, h) for b, h in heads if not (0 <= b < model.config.n_layer and 0 <= h < model.config.n_head)]
    if missing:
        raise ValueError(f"these weights have no head {_head(*missing[0])}: the claim is about another model")
    if kind == "induction":
        return induction(model, heads, threshold, vocabulary, seed)
    if kind == "logit_diff":
        return logit_diff(model, threshold, n, seed)
    if kind == "attribution":
        return attribution_share(model, heads, threshold, n, seed, floor)
    if kind == "knockout":
        return knockout(model, heads, threshold, n, seed, floor)
    raise ValueError(f"unknown measure {kind!r}; one of {', '.join(MEASURES)}")
