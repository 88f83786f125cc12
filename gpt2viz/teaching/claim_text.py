"""What a lesson's claim box says: the claim, its source, and what was measured on the weights in view,
in words a student reads (no code keys, every threshold with its unit), and plainly whether it agrees.
Pure: a claim (the lesson file's dict) and its measurement (analysis/claims.py `Measured`) in, text out.

A share whose denominator is below the lesson's bar (analysis/claims.py `share_of`) is never said to
agree: the box says it is not measurable on these weights, why, and the number.
"""

from ..analysis.claims import AT_LEAST, Measured


def _pct(x: float) -> str:
    """A share as a percentage: whole percents from 10 % on, two significant digits below."""
    return f"{x:.0%}" if abs(x) >= 0.095 else f"{100 * x:.2g}%"


def score(x: float) -> str:
    """An induction score: two decimals from 0.1 on, two significant digits below (0.013, not 0.01)."""
    return f"{x:.2f}" if abs(x) >= 0.095 else f"{x:.2g}"


UNITS = {  # each measure's threshold, in its unit
    "induction": "a lowest induction score of {bound} {number}",
    "logit_diff": "a mean logit difference of {bound} {number}",
    "attribution": "{bound} {share} of the difference written by the listed heads",
    "knockout": "{bound} {share} of the difference left",
}


def _bar(kind: str, threshold: float) -> str:
    """The lesson's threshold, with the unit of the measure it bounds."""
    if kind not in UNITS:
        raise ValueError(f"no threshold's unit for the measure {kind!r}")
    return UNITS[kind].format(bound="at least" if AT_LEAST[kind] else "at most", number=f"{threshold:g}",
                              share=_pct(threshold))


def _reading(m: Measured) -> str:
    """What was measured, in words, with its numbers."""
    s = m.seen
    if m.kind == "induction":
        best = (f"; the best other head, head {s['best_other'][0]}.{s['best_other'][1]}, scores "
                f"{score(s['best_other_score'])}") if "best_other" in s else ""
        low, high = score(s["lowest"]), score(s["highest"])
        spread = (f"it scores {low}" if s["listed"] == 1 else f"they all score {low}" if low == high else
                  f"they score {low} to {high}")
        return (f"{m.value:.3g}, the lowest induction score of the listed heads (on {s['half']} random tokens "
                f"repeated once, {spread}{best})")
    if m.kind == "logit_diff":
        return (f"a mean logit difference logit(IO) − logit(S) of {m.value:+.3g} over {s['prompts']} prompts, "
                f"{s['preferring']} of which ({_pct(s['preferring'] / s['prompts'])}) prefer the right name")
    if m.kind == "attribution":
        return (f"the listed heads write {_pct(m.value)} of the mean logit difference ({s['written']:+.3g} of "
                f"{s['clean']:+.3g}, directly, over {s['prompts']} prompts)")
    if m.kind == "knockout":
        return (f"with the listed heads zeroed together, {_pct(m.value)} of the clean mean logit difference is "
                f"left ({s['clean']:+.3g} → {s['knocked']:+.3g}, over {s['prompts']} prompts)")
    raise ValueError(f"no reading for the measure {m.kind!r}")  # a new measure says what it saw here


def not_measurable(m: Measured) -> str:
    """Why a share claim has no value on these weights: its denominator, the clean mean logit
    difference, is below the lesson's bar for a clear preference (near 0, or the other name's way)."""
    s = m.seen
    what = "share" if m.kind == "attribution" else "keep"
    seen = (f"the clean mean logit difference over {s['prompts']} prompts is {s['clean']:+.3g}, below the "
            f"{s['floor']:g} this lesson counts as a clear preference")
    if s["clean"] <= -s["floor"]:
        return (f"not measurable on these weights: they prefer the repeated name, not the indirect object ({seen}), "
                f"so there is no preference for the indirect object for the heads to {what}")
    return (f"not measurable on these weights: they do not clearly prefer the indirect object ({seen}), so there "
            f"is no difference for the heads to {what}, and a share of a number this near 0 could be anything")


def claim_reading(claim: dict, m: Measured | str, prompt: tuple[str, str, float] | None = None) -> str:
    """The claim box: the claim and its source, then what was measured here and whether it agrees by
    the lesson's threshold. `m` a string: why the claim cannot be measured on these weights (a head they
    lack). `prompt`: (IO, S, logit(IO) − logit(S)) on the prompt in view, for the logit difference."""
    published = f" (published: {claim['published']:g})" if "published" in claim else ""
    head = f"**Claim** ({claim['citation']}): {claim['text']}{published}."
    if isinstance(m, str):
        return f"{head}  \n**Measured here**: not measurable on these weights: {m}."
    if not m.measurable:
        return f"{head}  \n**Measured here**: {not_measurable(m)}."
    verdict = "**agrees**" if m.agrees else "**differs**"
    own = "" if prompt is None else (f" On the prompt in view alone, logit({prompt[0]}) − logit({prompt[1]}) = "
                                     f"{prompt[2]:+.3g}.")
    return (f"{head}  \n**Measured here**: {_reading(m)}. The lesson counts {_bar(m.kind, claim['threshold'])} "
            f"as agreeing: {verdict}.{own}")


NOT_SENTENCES = (score,)  # a formatting helper
SENTENCES = (claim_reading, not_measurable)
