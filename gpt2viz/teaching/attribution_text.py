"""What the "Who wrote the answer" page says about a run: the headline over the map, the totals, the
likeliest tokens, and the verdict that sets the attribution beside What if's knock-outs. Pure: numbers
and names in, text out (ui/attribution_view.py places it).

The quantifiers are computed, never implied:
- "most" only of a share computed to be at least one half; otherwise "the largest share", and what
  does write most where something does (the heads together, the MLPs, the embedding);
- a share (a percentage of the target) only where the target is measurable (`shares_measurable`):
  above 0 and at least NEAR_ZERO of what the parts move in all (Σ|row|); below that the target is
  what is left when the parts cancel, and a share of it measures the cancelling, not who wrote it;
- "the order" only where the whole order shown agrees; where only the first agrees, that is said, and
  where each other head ranks;
- "costs most" only of a knock-out that lowers log p; on random weights no head's effect is told as a
  mechanism.
"""

import math

from ..analysis.attribution import INDIRECT_SHARE
from ..analysis.claims import measurable
from ..analysis.paths import MEASURABLE_NATS, MEASURABLE_PROB
from ..analysis.paths import measurable as change_measurable
from .arithmetic import pct

NEAR_ZERO = 0.1  # a target under a tenth of what its parts move (Σ|row|) is mostly their cancelling
MOST = 0.5  # "most" of a target: at least half of it
TINY = 1e-6  # rows whose sizes add up to less are all 0 (two answers with one unembedding row, say)
ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth")

COLOURS = ("Purple cells add to it, orange ones take away (head b.h: block b, head h); the cells and the bars add "
           "up to the value above. Purple means the same on What if's sweep: a part that helps this token.")


def ordinal(rank: int) -> str:
    return ORDINALS[rank - 1] if 1 <= rank <= len(ORDINALS) else f"{rank}th"


def _head(r) -> str:
    return f"{r[0]}.{r[1]}"


def shares_measurable(target: float, moved: float) -> bool:
    """Whether shares of `target` mean something: it is above 0 and at least NEAR_ZERO of `moved`,
    what the parts move in all (Σ|row|) (analysis/claims.py `measurable`, the rule for every share)."""
    return moved > 0 and measurable(target, max(NEAR_ZERO * moved, 1e-12))


def groups(heads: list[tuple[int, int, float]], others: list[tuple[str, float]]) -> list[tuple[str, str, float]]:
    """The parts gathered as a learner names them: (name, its verb, the sum of their rows)."""
    out = [(f"the {len(heads)} heads together", "write", sum(v for _, _, v in heads))]
    mlps = [v for n, v in others if n.endswith(".mlp")]
    biases = [v for n, v in others if n.endswith(".attn.bias")]
    out.append((f"the {len(mlps)} MLPs" if len(mlps) > 1 else "the MLP", "write" if len(mlps) > 1 else "writes",
                sum(mlps)))
    out += [("the embedding", "writes", v) for n, v in others if n == "embed"]
    if biases:
        out.append((f"the {len(biases)} attention biases b_O", "write", sum(biases)))
    out += [("ln_f's bias", "writes", v) for n, v in others if n == "ln_f.bias"]
    return out


def headline(label: str, target: float, heads: list[tuple[int, int, float]], others: list[tuple[str, float]],
             random: bool) -> str:
    """The sentence over the map: the head with the largest direct share of `label` (= `target`), as a
    share only where shares are measurable, "most" only at half or more; what writes most of it, if
    anything does; on random weights, that which head leads is chance. `heads`: (block, head, row)."""
    b, h, v = max(heads, key=lambda r: r[2])
    rows = [r[2] for r in heads] + [x for _, x in others]
    moved = sum(abs(x) for x in rows)
    chance = " These weights are random: which head leads is chance, not a job it learned." if random else ""
    if moved < TINY:
        return (f"**No part writes to {label} directly: every row is 0** (the value above, {target:+.3g}, is the "
                "forward pass's float32 rounding).")
    if not shares_measurable(target, moved):
        adds, takes = sum(x for x in rows if x > 0), sum(x for x in rows if x < 0)
        lead = (f"**Of the heads, head {b}.{h} adds the most to {label} directly: {v:+.3g}.**" if v > 0 else
                f"**No head adds to {label} directly**: the largest head row, head {b}.{h}'s, is {v:+.3g}.")
        why = (f"{label} is {target:+.3g}, not above 0, so it has no shares to give." if target <= 0 else
               f"{label} is {target:+.3g}, what is left when parts that add {adds:+.3g} and take {takes:+.3g} "
               f"cancel, under a tenth of what they move: a share of it would measure their cancelling, not who "
               "wrote it, so shares are not measurable here.")
        return f"{lead} {why}{chance}"
    share = v / target
    parts = groups(heads, others)
    g = max(parts, key=lambda g: g[2])
    # "most" of a total that negative parts reduce can be said of two parts (53 % and 131 %): a head says it
    # only where the heads are the group that writes the largest share
    if share >= MOST and g is parts[0]:
        lead = f"**Head {b}.{h} writes most of {label} directly: {v:+.3g} of {target:.3g} ({pct(share)}).**"
    elif v > 0:
        lead = (f"**Of the heads, head {b}.{h} writes the largest direct share of {label}: {v:+.3g} of "
                f"{target:.3g} ({pct(share)}).**")
    else:
        lead = (f"**No head adds to {label} directly**: the largest head row, head {b}.{h}'s, is {v:+.3g}, of "
                f"{target:.3g}.")
    most = g[2] / target >= MOST
    listed = "; ".join(f"{name} {verb} {x:+.3g} ({pct(x / target)})" + (", most of it" if most and (name, verb, x) == g
                                                                          else "") for name, verb, x in parts[:2])
    name, verb, x = g
    if g in parts[:2]:
        rest = "" if most else f" No group of parts writes half of it; {name} {verb} the largest share."
    else:
        rest = (f" {name[0].upper()}{name[1:]} {verb} most of it" if most else
                f" No group of parts writes half of it; {name} {verb} the largest share") + \
            f": {x:+.3g} ({pct(x / target)})."
    return f"{lead} {listed[0].upper()}{listed[1:]}.{rest}{chance}"


def totals(label: str, target: float, n_rows: int, total: float, residual: float) -> list[tuple[str, str, str]]:
    """The three metrics over the map: (label, value, help)."""
    return [(label, f"{target:.6g}", "the run's own value at this position"),
            (f"Sum of the {n_rows} rows", f"{total:.6g}", ""),
            ("Residual (sum − target)", f"{residual:.1e}", "float32 rounding of the forward pass; the split itself "
                                                           "is exact")]


def likeliest(position: int, token: str, top: list[tuple[str, float]]) -> str:
    """The caption naming the likeliest next tokens (`top`: each shown as typed, and its probability)."""
    return (f"Likeliest next tokens after position {position} ({token}): "
            + ", ".join(f"{t} {p:.2g}" for t, p in top))


def sweep_button(n: int) -> str:
    return f"Knock out every head ({n} runs)"


def sweep_offer(n: int) -> str:
    return f"Each head zeroed in turn (as on What if), {n} runs; the result is shared with What if's sweep."


def comparison_table(rows: list[tuple[int, int, float, float]], ranks: dict, label: str, answer: str,
                     n: int) -> list[dict]:
    """The table of the heads set beside their knock-outs (`ranks`: (block, head) -> knock-out rank of n)."""
    return [{"head": _head(r), f"direct share of {label}": round(r[2], 4),
             f"knock-out (zeroed): Δ log p({answer})": round(r[3], 4), f"knock-out rank (of {n})": ranks[r[:2]]}
            for r in rows]


def _indirect_line(r, top, answer: str, random: bool) -> str:
    if random:
        return (f"- Knocking out head {_head(r)} moves log p({answer}) by {r[3]:+.3g} although it writes {r[2]:+.3g} "
                "directly: its output changes what later parts compute. On random weights that is noise passed "
                "along, not a mechanism.")
    return (f"- Head {_head(r)} writes less than {INDIRECT_SHARE:.0%} of head {_head(top)}'s direct share "
            f"({r[2]:+.3g} against {top[2]:+.3g}) but its knock-out moves log p({answer}) by {r[3]:+.3g}: it acts "
            "**through later parts**, as a previous-token head acts through the induction heads that read it. "
            "Direct attribution does not see that, by design.")


def _order_lines(writers, margin, answer: str, aside: bool = False) -> list[str]:
    """How the knock-out orders the heads that write (the attribution's order is `writers`'); `aside`: some of
    the attribution's top heads were set apart above (they act through later parts)."""
    if len(writers) < 2:
        return []
    ko = sorted(writers, key=lambda r: r[3])
    names = [_head(r) for r in writers]
    n = f"the {'other ' if aside else ''}{len(writers)} heads that write most"
    if [_head(r) for r in ko] == names:
        return [f"- Among {n}, the knock-out's order is the attribution's: {', '.join(names)}."]
    top, first = writers[0], ko[0]
    if first[:2] == top[:2]:
        moved = [f"the knock-out ranks {_head(r)} {ordinal(i + 1)}, the attribution "
                 f"{ordinal(names.index(_head(r)) + 1)}" for i, r in enumerate(ko) if _head(r) != names[i]]
        return [f"- Among {n}, both put {_head(top)} first; after it the orders differ: {'; '.join(moved)}."]
    return [f"- Among {n}, the knock-out ranks {_head(first)} (Δ log p {first[3]:+.3g}) above {_head(top)} "
            f"({top[3]:+.3g}); the attribution ranks {_head(top)} first ({top[2]:+.3g} against {first[2]:+.3g}).",
            margin_reason(first, top, answer, margin)]


def margin_reason(first, top, answer: str, margin: tuple[str, str, float, float] | None) -> str:
    """Why the knock-out ranks `first` above `top`: what the margin over the runner-up says, where known.
    `margin`: (the runner-up, the margin's label, first's row of it, top's row of it)."""
    later = ("A knock-out also changes what later parts read (an MLP after the head) and the final LayerNorm's "
             "scale; attribution holds both fixed.")
    if margin is None:
        return "  " + later
    other, label, f, t = margin
    against = f"Against the runner-up {other}, {label} splits {_head(first)} {f:+.3g}, {_head(top)} {t:+.3g}"
    if f > t:
        return (f"  {against}: the knock-out's order. A knock-out moves log p, which depends on the answer's "
                f"margin over the other tokens, and head {_head(top)} also raises tokens that compete with "
                f"{answer}. {later}")
    return f"  {against}: still not the knock-out's order. {later}"


def verdict(direct: list, knockout_top: tuple, indirect: list, answer: str, random: bool,
            margin: tuple[str, str, float, float] | None = None, clean_logprob: float | None = None,
            heads_moved: float = math.nan) -> list[str]:
    """Whether the head with the largest direct share is the one whose knock-out costs most, and where
    not, why; then how the knock-out orders the heads that write (those of `indirect` left out).
    Rows are (block, head, direct share, knock-out Δ log p), as analysis/attribution.py `Comparison`.
    `clean_logprob`: log p(answer) before any knock-out; where the costliest knock-out's change is not
    measurable (analysis/paths.py: under MEASURABLE_NATS, or an answer under MEASURABLE_PROB in both runs),
    the orders are noise and only that is said. `heads_moved`: the sum of every head's |direct share| (all heads,
    not only the rows given): under TINY, no head writes, which is said; NaN (not computed), nothing is said of it."""
    top, ko = direct[0], knockout_top
    chance = " On random weights that is chance, not a mechanism." if random else ""
    if ko[3] < 0 and clean_logprob is not None and not change_measurable(clean_logprob, clean_logprob + ko[3]):
        why = (f"less than {MEASURABLE_NATS:g} nats" if abs(ko[3]) < MEASURABLE_NATS else
               f"on an answer whose probability stays under {MEASURABLE_PROB:.0%} "
               f"({math.exp(clean_logprob):.2g} before)")
        return [f"*Not measurable here*: the costliest knock-out, head {_head(ko)}'s, moves log p({answer}) by "
                f"{ko[3]:+.3g}, {why}. Which head's knock-out costs most, and in what order, is noise here, not "
                "something to set beside the attribution."]
    if heads_moved < TINY:  # the answer against itself: no head leads, and no order is computed (NaN: not computed)
        cost = (f"The costliest knock-out is head {_head(ko)}'s (Δ log p({answer}) {ko[3]:+.3g})." if ko[3] < 0 else
                f"No knock-out lowers log p({answer}).")
        return [f"**Nothing to set beside the knock-outs**: every head's direct share is 0, so no head writes the "
                f"largest. {cost}"]
    if ko[3] >= 0:
        lines = [f"**No knock-out lowers log p({answer})**: the smallest change is head {_head(ko)}'s "
                 f"({ko[3]:+.3g}); head {_head(top)}, the largest direct share ({top[2]:+.3g}), moves it by "
                 f"{top[3]:+.3g}.{chance}"]
    elif top[:2] == ko[:2]:
        lines = [f"**They agree on the first head**: head {_head(top)} writes the largest direct share "
                 f"({top[2]:+.3g}) and costs most when knocked out (Δ log p {top[3]:+.3g}).{chance}"]
    else:
        lines = [f"**They differ**: the knock-out that costs most is head {_head(ko)}'s (Δ log p {ko[3]:+.3g}), "
                 f"not head {_head(top)}'s ({top[3]:+.3g}).{chance} Why:"]
    lines += [_indirect_line(r, top, answer, random) for r in indirect]
    indirect_heads = {r[:2] for r in indirect}
    writers = [r for r in direct if r[:2] not in indirect_heads]
    lines += _order_lines(writers, margin, answer, aside=len(writers) < len(direct))
    return lines


NOT_SENTENCES = (ordinal, groups)  # formatting helpers and the parts' grouping, used by the sentences
SENTENCES = (headline, totals, likeliest, sweep_button, sweep_offer, comparison_table, verdict, margin_reason)
