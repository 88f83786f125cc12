"""Head scores and the head finder: every head of the model scored on one text, in full mode, ranked.

The scores follow the usual definitions (`pattern_scores`, `head_scores`): previous-token score, the
mean attention from position i to i − 1; first-token score (the attention sink), the mean attention to
position 0; induction score, over the queries whose token occurred before, the mean attention to the
token that followed its most recent earlier occurrence (None where no token of the text repeats);
entropy of each row over the keys it may read, divided by its maximum ln(i + 1), so that 1 is uniform;
mean attention distance, the mean over queries of Σⱼ a_ij (i − j), how many positions back a head reads
on average. The page notices (teaching/notices.py) name a head's job from these scores and the
thresholds below. The finder runs the model once for every head's pattern,
lays the scores out one row per head (the CLI's JSON), ranks the heads for each score, and says
what leads, measured against a head that attends uniformly on the same text. Pure: no Streamlit.
"""

from dataclasses import dataclass
from statistics import median

import torch

from ..model import tokenizer
from ..model.gpt2 import GPT2
from ..model.modes import run
from ..model.trace import Trace
from ..spec.schema import Mode, block_name

SINK, PREVIOUS, INDUCTION = 0.5, 0.5, 0.4  # a head is named for a job only from these shares on


@dataclass(frozen=True)
class HeadScores:
    previous_token: float  # mean attention from i to i − 1, over queries with i ≥ 1
    first_token: float  # mean attention to position 0, over queries with i ≥ 1
    induction: float | None  # mean attention to the token after the earlier occurrence; None: no repeat
    entropy: float  # mean over rows (i ≥ 1) of H(row) / ln(i + 1): 1 is uniform, 0 one key
    repeats: int  # queries whose token occurred earlier
    mean_distance: float = 0.0  # mean over rows (i ≥ 1) of Σⱼ a_ij (i − j): how far back a head reads


SCORE_NAMES = ("previous_token", "induction", "first_token", "entropy", "mean_distance")


def induction_targets(ids, T: int, offset: int = 0) -> list[tuple[int, int]]:
    """(query row r, key j + 1) for every query i = offset + r whose token occurred before: j is the
    token's most recent earlier occurrence, j + 1 the token that followed it."""
    last_seen = {ids[j]: j for j in range(offset)}
    cells = []
    for r in range(T):
        i = offset + r
        if ids[i] in last_seen:
            cells.append((r, last_seen[ids[i]] + 1))
        last_seen[ids[i]] = i
    return cells


def pattern_scores(pattern: torch.Tensor, ids, offset: int = 0) -> dict[str, torch.Tensor | None]:
    """The head scores of every head at once: pattern [..., T, L] (rows: queries at absolute positions
    offset..offset+T-1; columns: keys 0..L-1, L = offset + T) -> {score name: [...]} (float64;
    induction None where no token repeats). Keys after a query are not read, whatever they hold."""
    T, L = pattern.shape[-2:]
    assert offset + T == L and len(ids) >= L, (pattern.shape, offset, len(ids))
    i = torch.arange(offset, L)  # [T] absolute query positions
    j = torch.arange(L, dtype=torch.float64)  # [L]
    p = pattern.double().masked_fill_(j[None, :] > i[:, None], 0)  # [..., T, L]: the keys each query may read
    rows = i >= 1  # row 0 has one key: every score of it is fixed
    r, q = torch.nonzero(rows).squeeze(1), i[rows]  # [n], [n]
    zero = p.new_zeros(p.shape[:-2])

    def mean(x):  # [..., n] -> [...]
        return x.mean(-1) if x.shape[-1] else zero
    h = -torch.special.xlogy(p, p).sum(-1)  # [..., T] nats (0 · ln 0 = 0)
    back = i.double() * p.sum(-1) - p @ j  # [..., T]: Σⱼ a_ij (i − j)
    out = {"previous_token": mean(p[..., r, q - 1]), "first_token": mean(p[..., r, 0]),
           "entropy": mean(h[..., r] / (q + 1).double().log()), "mean_distance": mean(back[..., r])}
    cells = induction_targets(ids, T, offset)
    out["induction"] = p[..., [c[0] for c in cells], [c[1] for c in cells]].mean(-1) if cells else None
    return out


def head_scores(pattern: torch.Tensor, ids: list[int] | tuple[int, ...], offset: int = 0) -> HeadScores:
    """Scores of one head's pattern [T, L] (rows: queries at absolute positions offset..offset+T-1;
    columns: keys 0..L-1, L = offset + T) on the token ids of the keys."""
    s = pattern_scores(pattern, ids, offset)
    ind = s["induction"]
    return HeadScores(float(s["previous_token"]), float(s["first_token"]), None if ind is None else float(ind),
                      float(s["entropy"]), len(induction_targets(ids, pattern.shape[0], offset)),
                      float(s["mean_distance"]))



@dataclass(frozen=True)
class Score:
    key: str  # the JSON key
    title: str
    what: str  # its definition, one sentence
    high: bool  # True: the highest score leads; False: the lowest
    leader: str  # what the head that leads is ("the most focused")


SCORES = {s.key: s for s in (
    Score("previous_token", "previous-token score", "the mean attention from position i to i − 1", True,
          "reads the previous token most"),
    Score("induction", "induction score", "over the tokens that occurred earlier, the mean attention to the token "
          "right after their most recent earlier occurrence", True, "copies a repeat most"),
    Score("first_token", "first-token score", "the mean attention to position 0 (the attention sink)", True,
          "sinks most attention into the first token"),
    Score("entropy", "entropy", "each row's entropy divided by its uniform row's, ln(i + 1), averaged: 1 spreads "
          "evenly, 0 reads one key", False, "is the most focused"),
    Score("mean_distance", "mean attention distance", "the mean over positions i of Σⱼ a_ij (i − j): how many "
          "positions back a head reads", True, "reads furthest back"),
)}
assert tuple(sorted(SCORES)) == tuple(sorted(SCORE_NAMES))


def score_patterns(patterns, ids) -> list[dict]:
    """patterns: one [nh, T, T] per block (full mode) -> one row per head, sorted by block then head:
    {"block", "head", "previous_token", "induction", "first_token", "entropy", "mean_distance"}."""
    if len(ids) < 2:
        raise ValueError("the head finder needs at least 2 tokens: every score reads a position i ≥ 1")
    rows = []
    for b, pattern in enumerate(patterns):
        s = pattern_scores(pattern, ids)  # {name: [nh]}
        for h in range(pattern.shape[0]):
            rows.append({"block": b, "head": h} | {k: None if s[k] is None else float(s[k][h]) for k in SCORE_NAMES})
    return rows


def score_trace(trace: Trace) -> list[dict]:
    """The rows of a full-mode trace that holds every block's attn.pattern [B, nh, T, T] (batch 0)."""
    if trace.mode is not Mode.FULL:
        raise ValueError(f"the head finder reads full-mode patterns, not {trace.mode.value}")
    patterns, b = [], 0
    while block_name("attn.pattern", b) in trace:
        patterns.append(trace[block_name("attn.pattern", b)][0])
        b += 1
    return score_patterns(patterns, trace.token_ids)


PATTERNS = ("blocks.*.attn.pattern",)  # what a run for the head finder records


def find_heads(model: GPT2, ids) -> list[dict]:
    """Every head of `model` scored on token ids `ids`, in one full run."""
    return score_trace(run(model, list(ids), Mode.FULL, names=PATTERNS))


def uniform(ids) -> dict[str, float | None]:
    """The scores of a head that spreads each row evenly over the keys it may read, on these ids:
    what a head scores by doing nothing in particular."""
    T = len(ids)
    pattern = torch.tril(torch.ones(T, T)) / torch.arange(1, T + 1).unsqueeze(1)  # [T, T], row i: 1/(i+1)
    return {k: None if v is None else float(v) for k, v in pattern_scores(pattern, ids).items()}


def ranked(rows: list[dict], key: str) -> list[dict]:
    """The heads in the order of score `key`, the leader first (ties: by block, then head); none
    without the score (induction on a text with no repeat)."""
    sign = -1 if SCORES[key].high else 1
    return sorted((r for r in rows if r[key] is not None), key=lambda r: (sign * r[key], r["block"], r["head"]))


def score_range(key: str, T: int) -> tuple[float, float]:
    """Where score `key` can lie on a text of T tokens: shares and entropy in [0, 1]; the mean distance
    from 0 (every row on its own token) to T / 2 (every row i on position 0, i back)."""
    return (0.0, T / 2) if key == "mean_distance" else (0.0, 1.0)


def has_repeat(ids) -> bool:
    return len(set(ids)) < len(ids)


def repeated_text(text: str, n_positions: int) -> str:
    """The text twice, cut to the context: when two copies would not fit, two copies of its first
    tokens, as many as fit, so that the repeat is whole."""
    ids = tokenizer.encode(text)
    k = min(len(ids), n_positions // 2)
    while k > 0:
        part = text if k == len(ids) else tokenizer.decode(ids[:k])
        sep = "" if part[:1].isspace() or part[-1:].isspace() else " "
        twice = part + sep + part
        if len(tokenizer.encode(twice)) <= n_positions:
            return twice
        k -= 1  # the join made one token more than the two copies: one token fewer each
    raise ValueError(f"a context of {n_positions} tokens cannot hold a repeat")


def head_name(row: dict) -> str:
    return f"block {row['block']} head {row['head']}"


def notice(rows: list[dict], key: str, kind: str, ids) -> list[str]:
    """What to notice in the map of score `key`: which head leads and by how much, against the
    runner-up, the median head and a uniform head on this text; on random weights, that nothing
    stands out. `kind`: "random", "demo" or "trained" (notices.weights_kind)."""
    s, order = SCORES[key], ranked(rows, key)
    if not order:
        return ["The text repeats no token, so no head has an induction score: append a repeat (the link at the "
                "top) and every head gets one."]
    lead, values = order[0], sorted(r[key] for r in order)
    middle, base = median(values), uniform(ids)[key]
    lines = [f"**{head_name(lead).capitalize()}** {s.leader}: {lead[key]:.3f}"
             + (f", then {head_name(order[1])} with {order[1][key]:.3f}" if len(order) > 1 else "")
             + f"; the median head has {middle:.3f}, a head attending evenly {base:.3f}."]
    if kind == "random":
        lines.append(f"These weights are random: nothing stands out. Every head's {s.title} lies between "
                     f"{values[0]:.2f} and {values[-1]:.2f}, near the even head's {base:.2f}; which head leads is "
                     "chance.")
        return lines
    if key == "previous_token" and lead[key] >= PREVIOUS:
        lines.append(f"It is a previous-token head: {lead[key]:.0%} of each position's attention goes to the token "
                     "just before it.")
    if key == "induction" and lead[key] >= INDUCTION:
        lines.append(f"It is an induction head: from a repeated token it puts {lead[key]:.0%} of its attention on "
                     "the token that followed the earlier occurrence, the token that comes next if the repeat goes on.")
    if key == "first_token" and lead[key] >= SINK:
        lines.append(f"It is an attention sink: {lead[key]:.0%} of its attention parks on the first token.")
    return lines


def scatter_notice(rows: list[dict], x: str, y: str, kind: str) -> list[str]:
    """What to notice in the scatter of scores `x` and `y`: the head that leads each axis, whether
    one head leads both; on random weights, how tight the cloud is."""
    lx, ly = ranked(rows, x)[0], ranked(rows, y)[0]
    sx, sy = SCORES[x], SCORES[y]
    if lx is ly:
        lines = [f"**{head_name(lx).capitalize()}** leads on both: it {sx.leader} ({lx[x]:.2f}) and {sy.leader} "
                 f"({lx[y]:.2f})."]
    else:
        lines = [f"**{head_name(lx).capitalize()}** {sx.leader} ({lx[x]:.2f}, {sy.title} {lx[y]:.2f}); "
                 f"**{head_name(ly)}** {sy.leader} ({ly[y]:.2f}, {sx.title} {ly[x]:.2f})"
                 + ("." if kind == "random" else ": each of these two heads has a job of its own.")]
    if kind == "random":
        xs, ys = [r[x] for r in rows], [r[y] for r in rows]
        lines.append(f"Random weights: every head sits in one cloud, {sx.title} {min(xs):.2f} to {max(xs):.2f} and "
                     f"{sy.title} {min(ys):.2f} to {max(ys):.2f}; no head has a job yet.")
    return lines
