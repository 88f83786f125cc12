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
"""

import random
from dataclasses import dataclass

import torch

from ..model.gpt2 import GPT2
from ..model.interventions import InterveningRecorder, Intervention, check_reached
from ..model.modes import run
from ..model.tokenizer import encode
from ..spec.schema import block_name
from .attribution import NEEDS, attribute
from .heads import find_heads

MEASURES = ("induction", "logit_diff", "attribution", "knockout", "path_share")
# else: at most (a path_share claim says which: its `bound`)
AT_LEAST = {"induction": True, "logit_diff": True, "attribution": True, "knockout": False, "path_share": True}

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


@dataclass(frozen=True)
class Measured:
    value: float  # the claim's number, measured here
    agrees: bool  # against the lesson's threshold
    detail: str  # what else the measurement saw, one sentence


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
    value = min(listed)
    best = f"; the best other head, head {_head(*others[0][1])}, scores {others[0][0]:.2f}" if others else ""
    detail = (f"on {half} random tokens repeated once, the listed heads score {min(listed):.2f} to "
              f"{max(listed):.2f}{best}")
    return Measured(value, value >= threshold, detail)


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
    value = float(d.mean())
    return Measured(value, value >= threshold,
                    f"over {n} prompts, {float((d > 0).float().mean()):.0%} prefer the right name")


def attribution_share(model: GPT2, heads, threshold: float, n: int = 16, seed: int = 0) -> Measured:
    shares, targets = [], []
    for text, io, s in ioi_prompts(n, seed):
        a = attribute(model, run(model, encode(text), names=NEEDS), io, s)
        grid = a.heads()  # [n_layer, nh]
        shares.append(float(sum(grid[b, h] for b, h in heads)))
        targets.append(a.target)
    mean_target = sum(targets) / n
    value = (sum(shares) / n) / mean_target if mean_target else float("nan")
    return Measured(value, value >= threshold,
                    f"the listed heads write {sum(shares) / n:+.2f} of a mean logit difference of {mean_target:+.2f}")


def knockout(model: GPT2, heads, threshold: float, n: int = 16, seed: int = 0) -> Measured:
    prompts = ioi_prompts(n, seed)
    zeroed = [Intervention(block_name("attn.z", b), "zero", head=h) for b, h in heads]
    clean, knocked = float(_differences(model, prompts).mean()), float(_differences(model, prompts, zeroed).mean())
    value = knocked / clean if clean else float("nan")
    return Measured(value, value <= threshold,
                    f"the mean logit difference goes from {clean:+.2f} to {knocked:+.2f} with them zeroed")


def measure(model: GPT2, kind: str, heads, threshold: float, vocabulary=None, n: int = 16, seed: int = 0) -> Measured:
    """One claim's measurement on `model` (see the module's docstring for each kind)."""
    missing = [(b, h) for b, h in heads if not (0 <= b < model.config.n_layer and 0 <= h < model.config.n_head)]
    if missing:
        raise ValueError(f"these weights have no head {_head(*missing[0])}: the claim is about another model")
    if kind == "induction":
        return induction(model, heads, threshold, vocabulary, seed)
    if kind == "logit_diff":
        return logit_diff(model, threshold, n, seed)
    if kind == "attribution":
        return attribution_share(model, heads, threshold, n, seed)
    if kind == "knockout":
        return knockout(model, heads, threshold, n, seed)
    if kind == "path_share":
        raise ValueError("a path_share claim is measured by path_share(), with its sender, receiver, answer and text")
    raise ValueError(f"unknown measure {kind!r}; one of {', '.join(MEASURES)}")


# ---------------------------------------------------------------------------- path_share
def path_share(model: GPT2, sender: str, receiver: str, answer: str, text: str, threshold: float,
               at_most: bool = False, ablation: str = "zero") -> Measured:
    """`path_share`: on `text`, at its last position, `sender` (blocks.0.attn.head.0) removed along the
    path into `receiver` alone (analysis/paths.py; `*` in it matches any number: every block-1 head's
    keys are blocks.1.attn.head.*.k): that path's change in log p(answer) as a share of the total change
    (the sender knocked out everywhere, What if's measure); of several paths, the largest share. Agrees
    at least at `threshold` (at most, `at_most`). Where the share means nothing (paths.measurable: a total
    near zero, or an answer the model does not give) it is not measurable: a ValueError that says why."""
    from fnmatch import fnmatchcase

    from .attribution import one_token
    from .paths import MEASURABLE_NATS, MEASURABLE_PROB, parse_sender, path_patch, receivers_of

    wanted = [r.name for r in receivers_of(model.config, parse_sender(sender, model.config))
              if fnmatchcase(r.name, receiver)]
    if not wanted:
        raise ValueError(f"{sender} sends to no {receiver} in these weights: the claim is about another model")
    p = path_patch(model, encode(text), sender, one_token(answer), ablation=ablation, receivers=wanted)
    label = f"log p({answer!r})"
    if not p.measurable:
        raise ValueError(f"{p.sender.label} knocked out everywhere moves {label} from {p.clean.logprob:.3g} to "
                         f"{p.total.logprob:.3g} (p {p.clean.prob:.2g} to {p.total.prob:.2g}); a share of that is "
                         f"measured where it moves by {MEASURABLE_NATS:g} nats or more on an answer with p at least "
                         f"{MEASURABLE_PROB:g} in one of the two runs")
    share, name = max((p.share(r), r) for r in wanted)
    moved = p.reading(name).logprob - p.clean.logprob
    many = f" (the largest of {len(wanted)} such paths)" if len(wanted) > 1 else ""
    return Measured(share, share <= threshold if at_most else share >= threshold,
                    f"removed from {name}'s input alone, {p.sender.label} moves {label} by {moved:+.3g}{many}, of "
                    f"{p.total_change:+.3g} knocked out everywhere")
