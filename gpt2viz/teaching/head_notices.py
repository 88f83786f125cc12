"""The sentences about heads: what a head's scores show on this text (the Attention page's notice
names a job with `job_sentence`), why a text gives no induction score, what the head finder's maps
and scatter show, and the demo model's pointer to its trained heads. The scores are defined in
`gpt2viz.analysis.heads`; these functions only say them, each quantifier computed:

- a score is a mean over positions, and the sentence says so ("on average over positions 2–11"),
  with the range by position where the positions differ (an attention sink that leaves position 0
  once the repeat gives it something to copy);
- a previous-token job is named only where the text can tell it from an induction head: at a
  position whose token stood two places earlier, the token just before is also where an induction
  head looks (`two_back`), so those positions are set aside before the job is named.

Pure: numbers, ids and patterns in, text out.
"""

from statistics import median

import torch

from ..analysis.heads import (
    JOBS,
    MIN_ROWS,
    SCORES,
    THRESHOLDS,
    has_repeat,
    head_name,
    induction_targets,
    ranked,
    uniform,
)

WIDE = 0.2  # per-position shares this far apart are printed as a range beside their mean


def two_back(ids, T: int, offset: int = 0) -> list[int]:
    """The query rows r (absolute position i = offset + r ≥ 2) whose token's most recent earlier
    occurrence is i − 2: there the token after that occurrence is the token just before the query, so
    a previous-token head and an induction head read the same cell."""
    last = {}
    rows = []
    for i in range(offset + T):
        if i - offset >= 0 and i >= 2 and last.get(ids[i]) == i - 2:
            rows.append(i - offset)
        last[ids[i]] = i
    return rows


def shares(pattern: torch.Tensor, ids, key: str, offset: int = 0) -> list[tuple[int, float]]:
    """(absolute position, share) of every query job `key`'s score averages, from pattern [T, L]:
    the cell i − 1 (previous token) or 0 (first token) of each query i ≥ 2, the induction target of
    each query that has one."""
    T = pattern.shape[0]
    if key == "induction":
        return [(offset + r, float(pattern[r, k])) for r, k in induction_targets(ids, T, offset)]
    return [(offset + r, float(pattern[r, offset + r - 1 if key == "previous_token" else 0]))
            for r in range(T) if offset + r >= 2]


def _span(positions: list[int]) -> str:
    return f"position {positions[0]}" if len(positions) == 1 else f"positions {positions[0]}–{positions[-1]}"


def job_sentence(key: str, cells: list[tuple[int, float]]) -> str:
    """What a head that shows job `key` does, in numbers: `cells` are its (position, share) pairs
    (`shares`); the mean is its score, and where the positions differ by WIDE or more, their range."""
    values = [v for _, v in cells]
    mean = sum(values) / len(values)
    lo, hi = min(values), max(values)
    spread = f" (from {lo:.0%} to {hi:.0%} by position)" if hi - lo >= WIDE else ""
    where = f"on average over {_span([p for p, _ in cells])}"
    return {"previous_token": f"{where}, {mean:.0%} of a position's attention goes to the token just before it"
                              f"{spread} (the stripe right below the diagonal)",
            "first_token": f"{where}, {mean:.0%} of a position's attention goes to the first token{spread}, a "
                           "place to put weight when nothing else matters",
            "induction": f"from a repeated token it puts {mean:.0%} of its attention on average{spread} on the "
                         f"token that followed the earlier occurrence ({len(cells)} repeated "
                         f"token{'s' * (len(cells) != 1)}), the token that comes next if the repeat goes on (a "
                         "stripe parallel to the diagonal)"}[key]


def previous_token_apart(pattern: torch.Tensor, ids, offset: int = 0) -> tuple[int, int, float | None]:
    """(positions whose token stood two places earlier, the other scored positions, the mean share on
    the previous token over those others: None where there are none)."""
    both = set(two_back(ids, pattern.shape[0], offset))
    cells = shares(pattern, ids, "previous_token", offset)
    clear = [v for p, v in cells if p - offset not in both]
    return len(cells) - len(clear), len(clear), (sum(clear) / len(clear) if clear else None)


def tells_previous_token(pattern: torch.Tensor, ids, offset: int = 0) -> bool:
    """Whether the text can tell this head's previous-token share from an induction head's: no
    position's token stood two places earlier, or the other positions alone (MIN_ROWS of them at
    least) reach the threshold."""
    both, n, clear = previous_token_apart(pattern, ids, offset)
    return not both or (n >= MIN_ROWS and clear >= THRESHOLDS["previous_token"])


def cannot_tell(pattern: torch.Tensor, ids, offset: int = 0) -> str:
    """Why a pattern with a high previous-token score is not named a previous-token head on this
    text (`tells_previous_token` is False)."""
    both, n, clear = previous_token_apart(pattern, ids, offset)
    mean = sum(v for _, v in shares(pattern, ids, "previous_token", offset)) / (both + n)
    line = (f"On average {mean:.0%} of its attention from position 2 on goes to the token just before. At {both} of "
            f"those {both + n} positions the token stood two places earlier, so the token just before is also where "
            "an induction head looks")
    if n < MIN_ROWS:
        return line + (": this text cannot tell a previous-token head from an induction head. Try a repeat three or "
                       "more tokens long.")
    return line + (f"; at the other {n} it is {clear:.0%}, below the {THRESHOLDS['previous_token']:.0%} a "
                   "previous-token head is named from.")


def no_induction(ids) -> str:
    """Why a text gives no head an induction score, and what would."""
    if not has_repeat(ids):
        return ("The text repeats no token, so no head has an induction score: a token that comes back three or "
                "more positions after its previous occurrence (a sentence typed twice, say) gives every head one.")
    return ("The text repeats tokens only one or two positions after their previous occurrence, so no head has an "
            "induction score: the token after the earlier occurrence would be the query itself or the token just "
            "before it, which the previous-token score already measures. A token that comes back three or more "
            "positions later gives one.")


def scored(key: str, ids) -> int:
    """How many queries of a full run on `ids` score `key`'s job (what MIN_ROWS counts)."""
    return len(induction_targets(ids, len(ids))) if key == "induction" else max(0, len(ids) - 2)


def apart(lo: float, hi: float, start: int = 2) -> int:
    """The fewest decimals (from `start`, up to 6) at which lo and hi print as two numbers: a range of
    0.009 to 0.011 is not "between 0.01 and 0.01"."""
    n = start
    while n < 6 and f"{lo:.{n}f}" == f"{hi:.{n}f}" and lo != hi:
        n += 1
    return n


def finder_notice(rows: list[dict], key: str, kind: str, ids, patterns=None) -> list[str]:
    """What to notice in the head finder's map of score `key`: which head leads and by how much,
    against the runner-up, the median head and a uniform head on this text; on random weights, that
    nothing stands out; a job named only where the lead head's pattern shows it (`patterns`: one [nh,
    T, T] per block, full mode; without them no job is named). `kind`: "random", "demo" or "trained"."""
    s, order = SCORES[key], ranked(rows, key)
    if not order:
        return [no_induction(ids) if key == "induction" else
                f"A text of {len(ids)} tokens has no position 2 or later, so no head has a {s.title}: at position 1 "
                "the token before is the first token, and one cell cannot say which of the two a head reads."]
    lead, values = order[0], sorted(r[key] for r in order)
    middle, base = median(values), uniform(ids)[key]
    lines = [f"**{head_name(lead).capitalize()}** {s.leader}: {lead[key]:.3f}"
             + (f", then {head_name(order[1])} with {order[1][key]:.3f}" if len(order) > 1 else "")
             + f"; the median head has {middle:.3f}, a head attending evenly {base:.3f}."]
    if kind == "random":
        n = apart(values[0], values[-1])
        lines.append(f"These weights are random: nothing stands out. Every head's {s.title} lies between "
                     f"{values[0]:.{n}f} and {values[-1]:.{n}f}, and a head attending evenly scores {base:.{n}f}; "
                     "which head leads is chance.")
        return lines
    if key in THRESHOLDS and lead[key] >= THRESHOLDS[key] and patterns is not None:
        n = scored(key, ids)
        pattern = patterns[lead["block"]][lead["head"]]  # [T, T]
        if n < MIN_ROWS:
            lines.append(f"Only {n} position{'s' * (n != 1)} of this text score{'s' * (n == 1)} it, too few to name "
                         f"a job (from {MIN_ROWS} on): try a longer text.")
        elif key == "previous_token" and not tells_previous_token(pattern, ids):
            lines.append(cannot_tell(pattern, ids))
        else:
            lines.append(f"It is {JOBS[key]}: {job_sentence(key, shares(pattern, ids, key))}.")
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
                 f"**{head_name(ly)}** {sy.leader} ({ly[y]:.2f}, {sx.title} {ly[x]:.2f})."]
    if kind == "random":
        xs, ys = [r[x] for r in rows], [r[y] for r in rows]
        nx, ny = apart(min(xs), max(xs)), apart(min(ys), max(ys))
        lines.append(f"Random weights: every head sits in one cloud, {sx.title} {min(xs):.{nx}f} to {max(xs):.{nx}f} "
                     f"and {sy.title} {min(ys):.{ny}f} to {max(ys):.{ny}f}; no head has a job yet.")
    return lines


def scores_caption(row: dict) -> str:
    """One head's scores, as the finder's "open a head" line lists them."""
    return " · ".join(f"{SCORES[k].title} {row[k]:.2f}" for k in SCORES if row[k] is not None)


def head_label(row: dict, key: str) -> str:
    """A finder link's label: the head and its score `key`."""
    return f"{head_name(row)} ({row[key]:.2f})"


def demo_heads_sentence(induction: tuple[int, int, float], previous: tuple[int, int, float]) -> str:
    """The demo model's pointer to its trained heads, as measured on held-out sequences when the file
    was made: (block, head, score) of its induction head and of its previous-token head. The page's
    own notice gives the head's share on the text in view, which differs."""
    block, head, score = induction
    pblock, phead, pscore = previous
    what = "is an induction head" if score >= THRESHOLDS["induction"] else "comes closest to an induction head"
    return (f"**Block {block} head {head} {what}**: from a repeated word it puts {score:.0%} of its attention on the "
            f"word that followed the earlier occurrence; block {pblock} head {phead} puts {pscore:.0%} on the "
            "previous word. Both measured on held-out sequences when the model was made; on your text, see the note "
            "above.")


SENTENCES = (job_sentence, cannot_tell, no_induction, finder_notice, scatter_notice, scores_caption, head_label,
             demo_heads_sentence)
