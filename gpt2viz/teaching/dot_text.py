"""What the dot-product drill-down (Attention page) says about one score: how its dh products split,
the score's equation, and where it lands in its row's softmax. Pure: numbers in, text out
(ui/dot_view.py places it).

One query, one number: a query is named by its position in the text (`query`, the absolute position:
in decode, the cached positions come first), in the sentences and the equation alike, as the charts
name it. The products' sentence ranks them by size and says which way each group pulls, so that it
never credits the largest products with a sum they oppose. Every printed equation's result is computed
from its printed operands.
"""

import math

from .arithmetic import fmt

TOP = 3  # the products of largest size named


def _three(x: float) -> str:
    """A positive number to at least 3 significant digits, written out (no exponent, which a reader's
    arithmetic cannot redo), thousands separated."""
    d = max(0, 2 - math.floor(math.log10(x)))
    return f"{float(fmt(x, d)):,.{d}f}"


def agree_cancel(products: list[float], dot: float) -> str:
    """How the products q[c]·k[c] split: the coordinates that agree in sign (add) and the others (take
    away), then the TOP products of largest size, which way they pull, and what the rest add to reach
    the sum."""
    dh = len(products)
    pos = sum(p for p in products if p > 0)
    neg = sum(p for p in products if p < 0)
    n_pos = sum(1 for p in products if p > 0)
    k = min(TOP, dh)
    order = sorted(range(dh), key=lambda c: -abs(products[c]))[:k]
    top = sum(products[c] for c in order)
    listed = ", ".join(f"{c} ({products[c]:+.3g})" for c in order)
    first = (f"{n_pos} of the {dh} coordinates agree in sign (their products add {pos:+.4g}); the other "
             f"{dh - n_pos} pull the other way ({neg:+.4g}).")
    if k == dh:
        return f"{first} The sum is {dot:+.4g}."
    largest = "The product of largest size" if k == 1 else f"The {k} products of largest size"
    rest = dot - top
    pull = ""
    if top * dot < 0:
        them = "it" if k == 1 else "them"
        pull = f" The sum goes the other way from {them}: the rest outweigh {them}."
    return (f"{first} {largest}, at coordinate{'s' * (k > 1)} {listed}, add up to {top:+.4g}; the other {dh - k} "
            f"add {rest:+.4g}, and the sum is {dot:+.4g}.{pull}")


def score_equation(query: int, key: int, dot: float, dh: int) -> str:
    """The score's equation in LaTeX, s_{query,key} = q·k / √dh, its result computed from the printed
    quotient's operands."""
    top, root = f"{dot:.4g}", f"{math.sqrt(dh):.4g}"
    return (rf"s_{{{query},{key}}} = \frac{{q \cdot k}}{{\sqrt{{d_h}}}} = \frac{{{top}}}{{\sqrt{{{dh}}}}}"
            rf" = \frac{{{top}}}{{{root}}} = {float(top) / float(root):.4g}")


def recorded(value: float, name: str) -> str:
    """Under the equation: the score map's own value of this cell (`name`: the tensor, as a code span)."""
    return (f"The score map above shows {value:.4g} in this cell ({name}, float32); dividing by √dh keeps scores "
            "from growing with the head size, which would push the softmax towards one key.")


def in_softmax(query: int, key: int, masked: bool, readable: int, weight: float, rank: int,
               best_other: float | None, scaled: float) -> str:
    """Where the score lands in row `query`'s softmax over the `readable` keys it may read."""
    if masked:
        return (f"Key {key} comes after query {query}: the causal mask sets this score to −∞ before the softmax, so "
                "its weight is 0 whatever the dot product says.")
    head = (f"**In row {query}'s softmax** over the {readable} key{'s' * (readable > 1)} it may read, this score "
            f"weighs **{weight:.3g}** (rank {rank} of {readable}).")
    if best_other is None:
        return head + " It is the only key the query reads, so it takes all the weight."
    gap = scaled - best_other
    than = "next largest" if gap >= 0 else "largest"
    exponent = f"{-gap:+.3g}"
    return (f"{head} The {than} other score in the row is {best_other:.4g}, {abs(gap):.3g} "
            f"{'lower' if gap >= 0 else 'higher'}: it gets e^({exponent}) = {_three(math.exp(float(exponent)))} times "
            "this key's weight. The softmax turns differences of scores into ratios of weights.")


def click_note(clickable: bool, cells: int, section: str) -> str:
    """Under the attention maps: what a click on a cell does, or, on a map with more cells than it gives a
    marker each (`cells`), where to choose the cell instead; `section` names where the dot product is."""
    if clickable:
        return f"Click a cell of either map to take its score apart below, in {section}."
    return (f"This map has more than {cells:,} cells, too many to click one: choose the query and key below, "
            f"in {section}.")


SENTENCES = (click_note, agree_cancel, score_equation, recorded, in_softmax)
