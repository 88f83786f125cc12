"""What the "What if" and "Compare and patch" pages say about a run: what a knock-out replaces, how the
top token's probability moved, the sweep's caption (its colours: purple means "helps this token", as on
Attribution's map), the loss, the changed tensors, the patching metric. Pure: numbers and names in, text
out (ui/whatif_view.py places it).

A relative change is a ratio, and a ratio of a probability near 0 is any number (analysis/claims.py
`measurable`, the rule for every share and ratio): the factor after/before is given only where the
probability before is at least P_FLOOR; below it the change is given as Δ log p, which the sweeps map.
"""

import math

from ..analysis.claims import measurable
from ..model.ranking import TIE_NATS

P_FLOOR = 0.01  # a probability under 1 % is near 0 for a relative change

SWEEP_COLOURS = ("Purple: knocking the part out lowered log p, so the part helped this token; orange: it worked "
                 "against it. Purple means the same on the Attribution page's map: a part that adds to the token.")


def running(model: str, n_tokens: int) -> str:
    return f"Running {model} on {n_tokens:,} tokens in full mode…"


def running_knocked(first: int, last: int, label: str) -> str:
    return f"Running blocks {first} to {last} with {label} knocked out…"


def unembedding(n_tokens: int) -> str:
    return f"Unembedding all {n_tokens:,} positions…"


def sweeping(n: int, part: str) -> str:
    return f"Knocking out {n} {'heads' if part == 'head' else 'MLPs'} one at a time"


def what_is_replaced(part: str, index: int, name: str, method: str, T: int) -> str:
    """The sentence under the pickers: what a knock-out of `part` (`name`: its tensor, as a code span)
    replaces, and by what, on a text of T tokens."""
    where = {"head": f"head {index}'s slice of {name} (its output before W_O, every position)",
             "attn": f"{name}, the update Δattn the attention adds to the stream",
             "mlp": f"{name}, the update Δmlp the MLP adds to the stream",
             "neuron": f"neuron {index} of {name} (after the GELU), every position"}
    how = ("zeros" if method == "zero" else
           "its value at the text's one position (a mean over one position changes nothing)" if T == 1 else
           f"its mean over this text's {T} positions (the same vector at every position; positions are "
           "averaged over the whole text, later ones included)")
    return f"Replaces {where[part]} by {how}. The sidebar's block and head choose where."


def probability_metric(before: float, after: float) -> tuple[str, str]:
    """The top token's probability after the knock-out and its change, as the metric shows them."""
    return f"{after:.4g}", f"{after - before:+.3g}"


def probability_change(token: str, before: float, after: float) -> str:
    """How the top token's probability moved: as a factor only where it was measurable (at least
    P_FLOOR before), and always as Δ log p."""
    moved = (f"p({token}) stays at {before:.3g}" if f"{before:.3g}" == f"{after:.3g}"
             else f"p({token}) goes from {before:.3g} to {after:.3g}")
    if before <= 0 or after <= 0:
        return f"{moved}."
    dlog = math.log(after) - math.log(before)
    if measurable(before, P_FLOOR):
        return f"{moved}: ×{after / before:.3g}, Δ log p = {dlog:+.3g}."
    return (f"{moved}. A probability under {P_FLOOR:.0%} is near 0, so a factor of it is not measurable here; in "
            f"log p, which the sweep maps, the change is {dlog:+.3g}.")


def loss_offer(n_tokens: int, blocks: float, model: str) -> str:
    return (f"The loss at each of the {n_tokens:,} positions needs all of them unembedded, about as much work as "
            f"{blocks:.0f} of {model}'s blocks. The charts above need the last position only.")


def loss_metric(after_mean: float, change: float) -> tuple[str, str]:
    return f"{after_mean:.4f}", f"{change:+.4f}"


def changed_caption(intervened: list[str], changed: int) -> str:
    """Above the table of what moved: the tensors the knock-out wrote (code spans), and whether anything
    computed after them changed (`changed`: how many of the ranked tensors did)."""
    wrote = ", ".join(intervened)
    if not changed:  # a mean over one position is the value itself: nothing moves
        return (f"The knock-out wrote {wrote} with the values it already had, so nothing computed after it changed: "
                "every later value is identical, bit for bit.")
    return (f"The knock-out changed {wrote}. Everything computed before it is identical, bit for bit. Below are "
            "the later values that changed most, relative to their size. Attention patterns are not listed: they "
            "follow from q and k, which are. Nor are LayerNorm's means: they lie near 0, where a change relative "
            "to their size can be any number.")


def lengths_differ(n_a: int, n_b: int) -> str:
    """Compare and patch, where A and B differ in length."""
    return (f"A has {_tokens(n_a)} and B has {_tokens(n_b)}: patching takes each position of A into the same "
            "position of B, so it needs texts of equal length in tokens. Change one word for another of one token.")


def margins_too_close(clean: float, corrupt: float) -> str:
    """Compare and patch, where A's and B's margins differ by float32's rounding alone (analysis/whatif.py
    margins_measurable, under ranking.TIE_NATS): a restored fraction divides by that difference, so it would be a
    ratio of rounding. The margins are printed above it (margins); their difference is not printed again, where
    rounding it could reach the limit it is under."""
    if clean == corrupt:
        return "A and B give this answer pair the same margin: there is nothing to restore."
    return (f"A's and B's margins differ by less than {TIE_NATS:g}, float32's rounding of a logit: a restored "
            "fraction divides by that difference, so it is not measurable here. Choose an answer pair that A and B "
            "tell apart.")


def _tokens(n: int) -> str:
    return f"{n:,} token{'s' * (n != 1)}"


def changed_rows(changed: list[tuple[str, float]]) -> list[dict]:
    return [{"tensor": name, "relative change ‖after − before‖ / ‖before‖": f"{c:.3g}"} for name, c in changed]


def sweep_caption(token: str, method: str) -> str:
    """Above the sweep's map: what a cell is, and what its colours mean."""
    return (f"Each cell: log p({token}) at the last position with that one part knocked out ({method}), minus the "
            f"same without any knock-out. {SWEEP_COLOURS}")


def sweep_buttons(n_layer: int, n_head: int) -> tuple[str, str]:
    return f"Sweep every head ({n_layer} × {n_head} runs)", f"Sweep every MLP ({n_layer} runs)"


def patch_too_long(n_layer: int, n_tokens: int, most: int) -> str:
    return (f"Patching every (block, position) takes {n_layer} × {n_tokens} runs; this page patches texts of up to "
            f"{most} tokens. Shorten A and B.")


def patch_button(n_layer: int, n_positions: int, n_head: int) -> str:
    return f"Patch A into B ({n_layer} × {n_positions} positions, then {n_layer} × {n_head} heads)"


def margins(clean: float, corrupt: float) -> str:
    return f"m_A = {clean:.4g} · m_B = {corrupt:.4g}"


SENTENCES = (running, running_knocked, unembedding, sweeping, what_is_replaced, probability_metric, probability_change,
             loss_offer, loss_metric, changed_caption, changed_rows, sweep_caption, sweep_buttons, patch_too_long,
             patch_button, margins, lengths_differ, margins_too_close)
