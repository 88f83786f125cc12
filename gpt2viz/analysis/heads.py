"""Head scores and the head finder: every head of the model scored on one text, in full mode, ranked.

The scores follow the usual definitions (`pattern_scores`, `head_scores`), read only where a
position can tell them apart: previous-token score, the mean attention from position i to i − 1, and
first-token score (the attention sink), the mean attention to position 0, both over queries i ≥ 2
(at i = 1 the previous token is the first token, so one cell would count for both jobs; None on a
text of fewer than 3 tokens); induction score, over the queries whose token occurred before, the mean
attention to the token that followed its most recent earlier occurrence j, when that token j + 1 is
neither the query nor the one just before it (j + 1 < i − 1: on a text that repeats every one or two
tokens it would be a previous-token or self score); None where no query has such a target; entropy
of each row over the keys it may read, divided by its maximum ln(i + 1), so that 1 is uniform; mean
attention distance, the mean over queries of Σⱼ a_ij (i − j), how many positions back a head reads on
average. The page notices (teaching/notices.py) and the finder name a head's job from these scores
with one threshold per job (below), and only from MIN_ROWS scored queries on. The finder runs the
model once for every head's pattern, lays the scores out one row per head (the CLI's JSON), ranks the
heads for each score, and gives a head that attends uniformly on the same text to measure them
against. What the scores say in words is teaching/head_notices.py's. Pure: no Streamlit.
"""

from dataclasses import dataclass

import torch

from ..model import tokenizer
from ..model.gpt2 import GPT2
from ..model.modes import run
from ..model.trace import Trace
from ..spec.schema import Mode, block_name

# A head is named for a job only from this share of its attention on, the same on every page and in
# the finder; a head attending evenly scores at most 1/3 on each (rows i ≥ 2 have 3 keys or more).
SINK, PREVIOUS, INDUCTION = 0.5, 0.5, 0.5
THRESHOLDS = {"first_token": SINK, "previous_token": PREVIOUS, "induction": INDUCTION}
JOBS = {"first_token": "an attention sink", "previous_token": "a previous-token head", "induction": "an induction head"}
MIN_ROWS = 3  # scored queries a job is named from: one or two rows of a few keys are chance


@dataclass(frozen=True)
class HeadScores:
    previous_token: float | None  # mean attention from i to i − 1, over queries with i ≥ 2; None: none
    first_token: float | None  # mean attention to position 0, over queries with i ≥ 2; None: none
    induction: float | None  # mean attention to the token after the earlier occurrence; None: no target
    entropy: float  # mean over rows (i ≥ 1) of H(row) / ln(i + 1): 1 is uniform, 0 one key
    repeats: int  # queries with an induction target (induction_targets)
    mean_distance: float = 0.0  # mean over rows (i ≥ 1) of Σⱼ a_ij (i − j): how far back a head reads
    rows: int = 0  # queries the previous- and first-token scores are read from (i ≥ 2)

    def shows(self, key: str) -> bool:
        """Whether this head's pattern shows job `key` (a key of THRESHOLDS): enough scored queries,
        and the score at or above its threshold."""
        value, n = getattr(self, key), self.repeats if key == "induction" else self.rows
        return value is not None and n >= MIN_ROWS and value >= THRESHOLDS[key]


SCORE_NAMES = ("previous_token", "induction", "first_token", "entropy", "mean_distance")


def induction_targets(ids, T: int, offset: int = 0) -> list[tuple[int, int]]:
    """(query row r, key j + 1) for every query i = offset + r whose token occurred before: j is the
    token's most recent earlier occurrence, j + 1 the token that followed it, kept only when it is
    neither the query (j + 1 = i, a token repeated at once) nor the token just before it (j + 1 = i − 1,
    a text that repeats every two tokens): those cells are a self or previous-token score."""
    last_seen = {ids[j]: j for j in range(offset)}
    cells = []
    for r in range(T):
        i = offset + r
        if ids[i] in last_seen and last_seen[ids[i]] + 1 < i - 1:
            cells.append((r, last_seen[ids[i]] + 1))
        last_seen[ids[i]] = i
    return cells


def has_target(ids) -> bool:
    """Whether a text gives any query an induction target (a repeat, not at distance 1 or 2)."""
    return bool(induction_targets(ids, len(ids)))


def pattern_scores(pattern: torch.Tensor, ids, offset: int = 0) -> dict[str, torch.Tensor | None]:
    """The head scores of every head at once: pattern [..., T, L] (rows: queries at absolute positions
    offset..offset+T-1; columns: keys 0..L-1, L = offset + T) -> {score name: [...]} (float64; None
    where no query is scored: induction without a target, the previous- and first-token scores
    without a query i ≥ 2). Keys after a query are not read, whatever they hold."""
    T, L = pattern.shape[-2:]
    assert offset + T == L and len(ids) >= L, (pattern.shape, offset, len(ids))
    i = torch.arange(offset, L)  # [T] absolute query positions
    j = torch.arange(L, dtype=torch.float64)  # [L]
    p = pattern.double().masked_fill_(j[None, :] > i[:, None], 0)  # [..., T, L]: the keys each query may read
    rows = i >= 1  # row 0 has one key: every score of it is fixed
    r, q = torch.nonzero(rows).squeeze(1), i[rows]  # [n], [n]
    r2, q2 = torch.nonzero(i >= 2).squeeze(1), i[i >= 2]  # row 1's previous token is the first token
    zero = p.new_zeros(p.shape[:-2])

    def mean(x):  # [..., n] -> [...]
        return x.mean(-1) if x.shape[-1] else zero
    h = -torch.special.xlogy(p, p).sum(-1)  # [..., T] nats (0 · ln 0 = 0)
    back = i.double() * p.sum(-1) - p @ j  # [..., T]: Σⱼ a_ij (i − j)
    apart = r2.numel() > 0
    out = {"previous_token": p[..., r2, q2 - 1].mean(-1) if apart else None,
           "first_token": p[..., r2, 0].mean(-1) if apart else None,
           "entropy": mean(h[..., r] / (q + 1).double().log()), "mean_distance": mean(back[..., r])}
    cells = induction_targets(ids, T, offset)
    out["induction"] = p[..., [c[0] for c in cells], [c[1] for c in cells]].mean(-1) if cells else None
    return out


def head_scores(pattern: torch.Tensor, ids: list[int] | tuple[int, ...], offset: int = 0) -> HeadScores:
    """Scores of one head's pattern [T, L] (rows: queries at absolute positions offset..offset+T-1;
    columns: keys 0..L-1, L = offset + T) on the token ids of the keys."""
    s = {k: None if v is None else float(v) for k, v in pattern_scores(pattern, ids, offset).items()}
    T = pattern.shape[0]
    return HeadScores(s["previous_token"], s["first_token"], s["induction"], s["entropy"],
                      len(induction_targets(ids, T, offset)), s["mean_distance"],
                      sum(1 for r in range(T) if offset + r >= 2))



@dataclass(frozen=True)
class Score:
    key: str  # the JSON key
    title: str
    what: str  # its definition, one sentence
    high: bool  # True: the highest score leads; False: the lowest
    leader: str  # what the head that leads is ("the most focused")


SCORES = {s.key: s for s in (
    Score("previous_token", "previous-token score", "the mean attention from position i to i − 1, from position 2 "
          "on (at position 1 the previous token is the first)", True, "reads the previous token most"),
    Score("induction", "induction score", "over the tokens that occurred earlier, the mean attention to the token "
          "right after their most recent earlier occurrence, when that token is neither the query nor the one "
          "just before it", True, "copies a repeat most"),
    Score("first_token", "first-token score", "the mean attention to position 0 (the attention sink), from "
          "position 2 on", True, "puts most attention on the first token"),
    Score("entropy", "entropy", "each row's entropy divided by its uniform row's, ln(i + 1), averaged: 1 spreads "
          "evenly, 0 reads one key", False, "is the most focused"),
    Score("mean_distance", "mean attention distance", "the mean over positions i ≥ 1 of Σⱼ a_ij (i − j) (row 0 can "
          "only read itself): how many positions back a head reads", True, "reads furthest back"),
)}
assert tuple(sorted(SCORES)) == tuple(sorted(SCORE_NAMES))


def two_or_more(ids) -> None:
    if len(ids) < 2:
        raise ValueError("the head finder needs at least 2 tokens: every score reads a position i ≥ 1")


def score_patterns(patterns, ids) -> list[dict]:
    """patterns: one [nh, T, T] per block (full mode) -> one row per head, sorted by block then head:
    {"block", "head", "previous_token", "induction", "first_token", "entropy", "mean_distance"}."""
    two_or_more(ids)
    rows = []
    for b, pattern in enumerate(patterns):
        s = pattern_scores(pattern, ids)  # {name: [nh]}
        for h in range(pattern.shape[0]):
            rows.append({"block": b, "head": h} | {k: None if s[k] is None else float(s[k][h]) for k in SCORE_NAMES})
    return rows


def score_trace(trace: Trace) -> list[dict]:
    """The rows of a full-mode trace that holds every block's attn.pattern [B, nh, T, T] (batch 0), as
    score_patterns gives them. Scored one head at a time, each head's pattern [T, T] derived alone: every
    block's patterns at once held n_head·T²·(8·n_layer + 16) bytes, 1.3 GiB on gpt2 at 1,024 tokens,
    where one head at a time holds 76-83 MiB (measured; tests/test_bounds.py), and takes no longer."""
    if trace.mode is not Mode.FULL:
        raise ValueError(f"the head finder reads full-mode patterns, not {trace.mode.value}")
    ids = trace.token_ids
    two_or_more(ids)
    rows, b = [], 0
    while block_name("attn.pattern", b) in trace:
        n_head = trace.get("attn.pattern", b, queries=slice(0, 1)).shape[1]  # [B, nh, 1, T]: the first row
        for h in range(n_head):
            s = pattern_scores(trace.get("attn.pattern", b, head=h)[0], ids)  # {name: a 0-d tensor}
            rows.append({"block": b, "head": h} | {k: None if s[k] is None else float(s[k]) for k in SCORE_NAMES})
        b += 1
    return rows


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
