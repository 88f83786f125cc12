"""Live checks: questions answered only by looking at the student's own run, graded against that run.
How many tokens is the text; which token comes next, and with what
probability; which head of block n attends most to the previous token; after knocking out a head,
does the top next token change; which head writes the largest direct share of the top token's logit? Pure: the
numbers of the run in, questions and grades out.

Grading tolerates what the run cannot tell apart from its answer, and nothing more: GPT-2's leading
space (" Paris" = "Paris"); a probability within 10 % of its own size (no absolute floor: on random
weights the answer is a few ten-thousandths, and a floor of 0.01 passed "0"); any
token tied with the top one (model/ranking.py) among the Output page's bars; any head whose
previous-token score is within HEAD_TIE of the best (the pages print whole percents, and on random
weights every head of a block lies within a few); any head whose direct share the Attribution map
prints as the largest's (WRITER_DIGITS decimals). The head check needs a text of MIN_ROWS + 2 tokens,
so that the score reads positions where the previous token is not the first. An answer that cannot
be read (not a number, not yes or no, a head that does not exist) is not graded: the student is
asked again, and nothing is revealed.
"""

import re
from dataclasses import dataclass

import torch

from ..analysis.heads import MIN_ROWS, head_scores
from ..model import ranking
from ..model.tokenizer import readable


@dataclass(frozen=True)
class LiveCheck:
    id: str  # stable for the same run: it keys the session's grades
    question: str
    kind: str  # "count", "token", "probability", "head", "yes/no", "block.head", "knock-out" (grade_knockout)
    answer: object  # int, str (the token's text), float, int, bool
    worked: str  # shown once graded
    hint: str  # how to type the answer
    top: int | None = None  # a head answer must be below it
    blocks: int | None = None  # a block.head answer's block must be below it
    accept: tuple = ()  # other answers the run cannot tell apart from `answer` (heads within HEAD_TIE)


HEAD_TIE = 0.02  # heads whose previous-token scores differ by less look the same on the pages
P_TOLERANCE = 0.1  # a probability is right within 10 % of its own size
BARS = 10  # the Output page's bars: the ten first tokens


@dataclass(frozen=True)
class Grade:
    ok: bool | None  # None: the answer could not be read; ask again
    message: str


def checks(ids: tuple[int, ...], logits_last: torch.Tensor, patterns: torch.Tensor, block: int,
           key: str, random: bool = False) -> list[LiveCheck]:
    """The live checks of one run. `logits_last` [V]: the last position's logits; `patterns`
    [nh, T, T]: block `block`'s attention patterns (full sequence); `key`: what identifies the run;
    `random`: the weights are random (no head has a stripe to find)."""
    probs = torch.softmax(logits_last.double(), -1)  # [V]
    top = ranking.top(logits_last)
    token = readable(top).replace("␣", " ")
    p = float(probs[top])
    tied = ranking.tied_at_top(logits_last)
    shown = [readable(int(i)).replace("␣", " ") for i in ranking.ranked(logits_last, min(tied, BARS))]
    said = (f"The top token is **{token!r}** (id {top})." if tied == 1 else
            f"**{tied:,} tokens** tie for the top: their logits lie within {ranking.TIE_NATS:g} of each other, so "
            f"their probabilities differ by less than 0.01%. Any of the {len(shown)} the Output page shows counts: "
            + ", ".join(f"{t!r}" for t in shown) + ".")
    out = [
        LiveCheck(f"{key}:count", "How many tokens does your text have? (Count them on the Tokens page.)", "count",
                  len(ids), f"The model's tokenizer cuts your text into **{len(ids)}** tokens.", "a whole number"),
        LiveCheck(f"{key}:top", "Which token does the model rank first after your text? (The Output page shows it.)"
                  + (f" Here {tied:,} tokens tie for first: any of those the Output page shows counts." if tied > 1
                     else ""),
                  "token", token, said, "the token's text, e.g. Paris", accept=tuple(shown[1:])),
        LiveCheck(f"{key}:p", "With what probability? (Output page, the first bar.)", "probability", p,
                  f"p({token!r}) = **{p:.4g}**" + (f", about {powers_of_ten(p)}" if p < 0.01 else "") + ".",
                  "a number such as 0.12, 12% or 2.1e-4"),
    ]
    if len(ids) >= MIN_ROWS + 2:
        out.append(head_check(ids, patterns, block, key, random))
    return out


def powers_of_ten(x: float) -> str:
    """2.18e-4 -> "2.2 × 10⁻⁴": the order of magnitude a student can check against the bar."""
    mantissa, exponent = f"{x:.1e}".split("e")
    return f"{mantissa} × 10" + str(int(exponent)).translate(str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹"))


def head_check(ids, patterns: torch.Tensor, block: int, key: str, random: bool) -> LiveCheck:
    """Which head of `block` reads the previous token most: any head within HEAD_TIE of the best is
    right. On random weights no head has a stripe, and the question and answer say so."""
    scores = [head_scores(patterns[h], ids).previous_token for h in range(patterns.shape[0])]
    best = max(range(len(scores)), key=scores.__getitem__)
    tied = tuple(h for h, s in enumerate(scores) if scores[best] - s < HEAD_TIE)
    listed = ", ".join(f"head {h}: {s:.1%}" for h, s in enumerate(scores))
    if random:
        question = (f"Which head of block {block} has the highest previous-token score on your text? (Head finder, "
                    "previous-token tab. These weights are random: no head has a stripe, the heads differ by chance.)")
        worked = (f"Head **{best}** by chance, and any head within {HEAD_TIE:.0%} of it counts ("
                  + ", ".join(str(h) for h in tied) + f"): on average from position 2 on, {listed}.")
    else:
        question = (f"Which head of block {block} attends most to the previous token on your text? (Attention page: "
                    "the stripe right below the diagonal.)")
        worked = (f"Head **{best}**" + (f" (or {', '.join(str(h) for h in tied if h != best)}: within {HEAD_TIE:.0%})"
                                        if len(tied) > 1 else "")
                  + f": on average from position 2 on, {scores[best]:.0%} of a position's attention goes to the token "
                  f"just before it ({listed}).")
    return LiveCheck(f"{key}:prev{block}", question, "head", best, worked, f"a head number from 0 to {len(scores) - 1}",
                     top=len(scores), accept=tied)


WRITER_DIGITS = 2  # the Attribution map prints each head's share to 2 decimals (cell_text "+.2f")


def writer_check(heads: torch.Tensor, token: str, key: str, random: bool = False) -> LiveCheck:
    """Which head writes the largest direct share of the top token's logit? `heads` [n_layer, nh]: each
    head's direct logit attribution (analysis/attribution.py) to that logit at the last position. Any head
    the map prints with the largest head's value (to WRITER_DIGITS decimals) counts: the page cannot tell
    them apart."""
    n_layer, nh = heads.shape
    i = int(heads.flatten().argmax())
    b, h = divmod(i, nh)
    shown = round(float(heads[b, h]), WRITER_DIGITS)
    tied = tuple(divmod(j, nh) for j in range(n_layer * nh)
                 if j != i and round(float(heads.flatten()[j]), WRITER_DIGITS) == shown)
    also = (" (or " + ", ".join(f"{tb}.{th}" for tb, th in tied)
            + f": the map prints them all as {shown:+.{WRITER_DIGITS}f})" if tied else "")
    chance = " These weights are random: the heads' shares differ by chance." if random else ""
    return LiveCheck(f"{key}:writer", f"Which head writes the largest direct share of the logit of {token!r}? (Who "
                     f"wrote the answer page.) Answer block.head, such as 1.3.{chance}", "block.head", (b, h),
                     f"Head **{b}.{h}**{also}: {float(heads[b, h]):+.3g} of the logit, the largest of the "
                     f"{n_layer * nh} heads' direct shares.", "block.head, such as 1.3", top=nh, blocks=n_layer,
                     accept=tied)


def knockout_check(top: int, block: int, head: int, key: str) -> LiveCheck:
    """Does knocking out `head` of `block` (by zero) change the top next token? Its answer is the
    knocked-out run's top token (`grade_knockout` compares), computed only when a student answers."""
    return LiveCheck(f"{key}:ko{block}.{head}", f"Knock out head {head} of block {block} (What if page, by zero): "
                     "does the top next token change?", "knock-out", top, "", "yes or no")


def grade_knockout(check: LiveCheck, text: str, knocked_top: int) -> tuple[Grade, str]:
    """The grade, and the worked answer, of a knock-out check against the knocked-out run's top token."""
    before, after = (readable(t).replace("␣", " ") for t in (check.answer, knocked_top))
    changed = knocked_top != check.answer
    worked = f"{'Yes' if changed else 'No'}: the top token is {before!r} before and {after!r} after."
    return grade(LiveCheck(check.id, check.question, "yes/no", changed, worked, check.hint), text), worked


def grade(check: LiveCheck, text: str) -> Grade:
    given = text.strip()
    if check.kind in ("count", "head"):
        m = re.fullmatch(r"\d[\d,]*", given.replace(" ", ""))
        if not m:
            return Grade(None, f"Type {check.hint}.")
        n = int(given.replace(",", "").replace(" ", ""))
        if check.top is not None and n >= check.top:
            return Grade(None, f"There is no head {n}: type {check.hint}.")
        ok = n == check.answer or n in check.accept
        return Grade(ok, "Right." if ok else f"Not {n:,}.")
    if check.kind == "token":
        if not given:
            return Grade(None, f"Type {check.hint}.")
        ok = given in (str(a).strip() for a in (check.answer, *check.accept))  # " Paris" = "Paris"
        return Grade(ok, "Right." if ok else f"Not {given!r}.")
    if check.kind == "probability":
        m = re.fullmatch(r"(\d*\.?\d+(?:[eE][-+]?\d+)?)\s*(%?)", given)
        if not m:
            return Grade(None, f"Type {check.hint}.")
        p = float(m.group(1)) / (100 if m.group(2) else 1)
        if not 0 <= p <= 1:
            return Grade(None, "A probability is between 0 and 1 (or 0% and 100%).")
        ok = abs(p - check.answer) <= P_TOLERANCE * check.answer
        return Grade(ok, f"Right: within {P_TOLERANCE:.0%} of {check.answer:.3g}." if ok else f"Not {p:.4g}.")
    if check.kind == "block.head":
        m = re.fullmatch(r"(\d+)\s*[.,]\s*(\d+)", given)
        if not m:
            return Grade(None, f"Type {check.hint}.")
        b, h = int(m.group(1)), int(m.group(2))
        if b >= check.blocks or h >= check.top:
            return Grade(None, f"There is no head {b}.{h}: type {check.hint}.")
        ok = (b, h) == check.answer or (b, h) in check.accept
        return Grade(ok, "Right." if ok else f"Not {b}.{h}.")
    word = given.lower()
    if word not in ("yes", "y", "no", "n"):
        return Grade(None, f"Type {check.hint}.")
    ok = word.startswith("y") == check.answer
    return Grade(ok, "Right." if ok else "No, look again.")


# ---------------------------------------------------------------------------- tries
TRIES = 2  # as the exercises: a wrong answer gets a hint and another try; the answer itself is never told
WHERE = {"count": "count the chips on the Tokens page, one a token",
         "token": "the Output page's first bar is the top token; type it as shown there",
         "probability": "read the first bar's probability on the Output page",
         "head": "find the head on the page the question names, block by block as it says",
         "block.head": "the Who wrote the answer page ranks every head's direct share of the logit",
         "knock-out": "knock the head out on the What if page and compare the top token before and after"}


@dataclass(frozen=True)
class LiveAttempt:
    """One live check in a session: readable answers so far, whether one was right, what was said."""
    tries: int = 0
    ok: bool = False
    message: str = ""
    worked: str = ""  # the worked answer: kept only once the student answered right

    @property
    def closed(self) -> bool:
        return self.ok or self.tries >= TRIES


def attempt(check: LiveCheck, before: LiveAttempt, result: Grade, worked: str, text: str) -> LiveAttempt:
    """The check after this graded answer. A wrong one is told which way it is off (a hint), then, after
    the last try, where to look and to ask the lecturer: never the answer. An unreadable answer
    (result.ok None) and an answer to a closed check change nothing."""
    if before.closed or result.ok is None:
        return before
    tries = before.tries + 1
    if result.ok:
        return LiveAttempt(tries, True, result.message, worked)
    if tries < TRIES:
        message = f"{result.message} Hint: {nudge(check, text)}. One more try."
    else:
        message = f"{result.message} Ask your lecturer, or look again: {WHERE.get(check.kind, 'the page it names')}."
    return LiveAttempt(tries, False, message)


def nudge(check: LiveCheck, text: str) -> str:
    """Which way a wrong answer is off, without the answer: fewer or more, lower or higher, the block."""
    given = text.strip().replace(",", "").replace(" ", "")
    if check.kind == "count" and given.isdigit():
        return f"your text has {'fewer' if int(given) > check.answer else 'more'} tokens than that"
    if check.kind == "probability":
        m = re.fullmatch(r"(\d*\.?\d+(?:[eE][-+]?\d+)?)(%?)", given)
        if m:
            p = float(m.group(1)) / (100 if m.group(2) else 1)
            return f"the probability is {'lower' if p > check.answer else 'higher'} than that"
    if check.kind == "block.head":  # said only where it leaves at least two blocks, or two heads, to choose from
        m = re.fullmatch(r"(\d+)[.,](\d+)", given)
        right_block = m is not None and int(m.group(1)) == check.answer[0]
        if m and right_block and (check.top or 0) >= 3:
            return "the block is right, the head is another"
        if m and not right_block and (check.blocks or 0) >= 3:
            return "the head is in another block"
    return WHERE.get(check.kind, "look again at the page the question names")


SENTENCES = (checks, head_check, writer_check, knockout_check, grade_knockout, grade, powers_of_ten,
             attempt, nudge)
