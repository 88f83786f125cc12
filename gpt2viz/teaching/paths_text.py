"""What the "Which path carries it" page says about a path patching run, each sentence computed from it.

The measure is What if's: the change in log p(answer) at the position, against the clean run. A
path's share is its change over the total change (the sender knocked out everywhere). A share is
said only where analysis.paths.measurable holds (a total of MEASURABLE_NATS at least, on an answer
with MEASURABLE_PROB at least in one of the two runs); elsewhere it is "not measurable". Paths need
not add up to the total (each is measured with the sender removed from that one receiver alone, and
what comes after it reacts non-linearly), so the sum is said with its own number, not implied.

`SENTENCES` lists the module's sentence functions, for the corpus test (tests/test_paths_corpus.py).
"""

import math
from collections.abc import Sequence

from ..analysis.paths import MEASURABLE_NATS, MEASURABLE_PROB, measurable

RANDOM = ("**Random weights: nothing here is a mechanism.** The bars are what removing the sender along each "
          "path does to an untrained model's prediction: differences of noise, not a route it learned. With "
          "trained weights (the demo model, under *Weights*) a previous-token head's effect on a repeat travels "
          "along one path far more than along the others.")


def percent(x: float) -> str:
    """A share as a whole percentage ("40%"); rounded as an int, so a small negative share is "0%", not "-0%"."""
    return f"{round(100 * x)}%"


def route(sender: str, answer: str, clean: float, total: float, paths: Sequence[tuple[str, float]]) -> str:
    """The route sentence. sender, answer: as the page names them (answer already a code span);
    clean, total: log p(answer) in the clean run and with the sender knocked out everywhere; paths: (how a
    sentence names a path, "the path into MLP 0"; log p(answer) with the sender removed along it alone), one
    at least."""
    if not paths:
        raise ValueError("a sender has at least one path (the logits)")
    change = total - clean
    opening = (f"Knocked out everywhere, {sender} does not move log p({answer}) (it stays at {clean:.3g})."
               if change == 0 else f"Knocked out everywhere, {sender} moves log p({answer}) by {change:+.3g} "
               + (f"(it stays at {clean:.3g})." if f"{clean:.3g}" == f"{total:.3g}" else
                  f"(from {clean:.3g} to {total:.3g})."))
    moved = [(name, lp - clean) for name, lp in paths]
    summed = sum(d for _, d in moved)
    n = len(moved)
    if not measurable(clean, total):
        if abs(change) < MEASURABLE_NATS:
            why = f"That is less than {MEASURABLE_NATS:g} nats in size, too little to share out"
        else:
            why = (f"The model gives {answer} less than {MEASURABLE_PROB:g} in both runs (p = "
                   f"{math.exp(clean):.2g} and {math.exp(total):.2g}): it does not predict it, and what moves an "
                   "answer it does not give is not a route to it")
        return f"{opening} {why}: each path's share of it is *not measurable* here. " + _sum_only(moved, summed, n)
    shares = [(name, d, d / change) for name, d in moved]
    name, d, share = max(shares, key=lambda s: s[2])
    if n == 1:  # "the largest share" and "the nearest" compare paths: one path is said as itself
        best = (f"Its one path is **{name}**." if share > 0 else
                f"Its one path, {name}, does not move it the way the total does.")
    elif share > 0:
        best = (f"Of the {n} paths, **{name}** carries the largest share of that change: "
                f"{d:+.3g}, {percent(share)} of it.")
    else:
        best = (f"None of the {n} paths moves it the way the total does: the nearest, {name}, moves "
                f"it by {d:+.3g} ({percent(share)} of the total).")
    return f"{opening} {best} " + _sum(summed, change, n)


def _sum(summed: float, change: float, n: int) -> str:
    if n == 1:
        return (f"This one path's change is {summed:+.3g}, {percent(summed / change)} of the total: a path need not "
                "carry the whole total, since it is measured with the sender removed along it alone.")
    return (f"The {n} paths' changes sum to {summed:+.3g}, {percent(summed / change)} of the total: paths need not add "
            "up to the total, since each is measured with the sender removed along it alone and the parts after "
            "it react non-linearly.")


def _sum_only(moved, summed: float, n: int) -> str:
    largest = max(moved, key=lambda m: abs(m[1]))
    if n == 1:
        return f"Its one path moves it by {summed:+.3g}."
    return f"The {n} paths' changes sum to {summed:+.3g}; the largest in size is {largest[1]:+.3g} ({largest[0]})."


def chart_caption(sender: str, answer: str, position: int, ablation: str) -> str:
    """What each bar and the line of the chart are."""
    how = "subtracted" if ablation == "zero" else "replaced by its mean over the text's positions"
    return (f"Each bar: log p({answer}) at position {position} with {sender}'s output {how} in the input of that "
            "one receiver alone, minus the clean run's; the bars are grouped by the receiver's block (q, k, v: a "
            "head's query, key or value input). The dashed line: the total, the sender knocked out everywhere.")


def random_note() -> str:
    return RANDOM


def head_links_intro(k: int) -> str:
    """Before the links under a head map to Which path carries it, one a head."""
    return (f"**Which path carries it**, for the {k} head{'s' * (k != 1)} largest in size on this map "
            "(the sidebar's block and head choose any other there):")


def total_label(change: float) -> str:
    """The label of the chart's line: the total change in log p."""
    return f"total (everywhere): {change:+.3g}"


SENTENCES = (route, chart_caption, random_note, head_links_intro, total_label)
NOT_SENTENCES = (percent,)  # a number's format
