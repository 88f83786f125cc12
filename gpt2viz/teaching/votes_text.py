"""What the class vote says, computed from the round's counts: true for every count, zero included.

Pure: counts and the question in, Markdown out. The page (ui/vote_view.py) only places these."""

from .arithmetic import fmt


def number(x: float) -> str:
    """A number as a class reads it: a whole one with thousands separators (7,087,872, never 7.08787e+06),
    any other to 6 significant digits."""
    if float(x).is_integer() and abs(x) < 1e15:
        return f"{int(x):,}"
    return f"{x:,.2f}" if abs(x) >= 1e5 else f"{x:.6g}"


def _share(k: int, n: int) -> str:
    return f"{k} of {n} ({fmt(100 * k / n, 0)}%)"


def answers_line(voters: int, state: str) -> str:
    """How many have answered, and whether more can: "12 answers so far; the vote is open"."""
    noun = "answer" if voters == 1 else "answers"
    if state == "open":
        return f"{voters} {noun} so far; the vote is open."
    if state == "revealed":
        return f"{voters} {noun}; the vote is closed and its answer shown."
    return f"{voters} {noun}; the vote is closed."


def spread_line(question: dict, answers: list[float], revealed: bool) -> str:
    """The spread in words (a screen reader's chart, the projector's caption). Before the reveal it never
    says which answer is right; after it, how many chose it."""
    n = len(answers)
    if n == 0:
        return "No answers yet."
    if "choices" in question:
        counts = [sum(a == i for a in answers) for i in range(len(question["choices"]))]
        top = max(counts)
        leaders = [question["choices"][i] for i, c in enumerate(counts) if c == top]
        most = (f"the most chosen is {leaders[0]!r}: {_share(top, n)}" if len(leaders) == 1 else
                f"{len(leaders)} choices tie as the most chosen, each {_share(top, n)}")
        line = f"{n} {'answer' if n == 1 else 'answers'}; {most}."
        if revealed:
            line += f" The right answer, {question['choices'][question['answer']]!r}, was chosen by " \
                    f"{_share(counts[question['answer']], n)}."
        return line
    ordered = sorted(answers)
    middle = ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2
    if ordered[0] == ordered[-1]:
        line = f"{n} answers, all {number(ordered[0])}." if n > 1 else f"1 answer: {number(ordered[0])}."
    else:
        line = (f"{n} answers, from {number(ordered[0])} to {number(ordered[-1])}; the median is {number(middle)}.")
    if revealed:
        right = sum(abs(a - question["number"]) <= question["tolerance"] for a in answers)
        within = f"within {number(question['tolerance'])} of it" if question["tolerance"] else "exactly it"
        line += f" The answer is {number(question['number'])}; {_share(right, n)} gave {within}."
    return line


def rounds_line(first: tuple[int, int], second: tuple[int, int]) -> str:
    """Two rounds' shares right, (right, voters) each: what discussion changed."""
    (r1, n1), (r2, n2) = first, second
    if not n1 or not n2:
        return "A round with no answers has no share right to compare."
    a, b = r1 / n1, r2 / n2
    change = "rose" if b > a else "fell" if b < a else "stayed"
    tail = "" if change == "stayed" else f" to {_share(r2, n2)}"
    return f"Right in the first vote: {_share(r1, n1)}; in the second it {change}{tail}" \
           + (f" at {_share(r2, n2)}." if change == "stayed" else ".")


def my_vote_line(question: dict, mine: float | None, state: str) -> str:
    """A student's own answer, and (only after the reveal) whether it was right."""
    if mine is None:
        return {"open": "You have not answered yet.", "closed": "The vote closed before you answered.",
                "revealed": "You did not answer this round."}[state]
    said = repr(question["choices"][int(mine)]) if "choices" in question else f"{number(mine)}"
    if state == "open":
        return f"Your answer is in: {said}. You may change it until the vote closes."
    if state == "closed":
        return f"Your answer: {said}. The vote is closed; the answer comes when your lecturer reveals it."
    right = (mine == question["answer"]) if "choices" in question else \
        abs(mine - question["number"]) <= question["tolerance"]
    return f"Your answer: {said}, which is {'right' if right else 'not the answer'}."


def answer_line(question: dict) -> str:
    """The right answer, as the lecturer's reveal shows it to the class."""
    if "choices" in question:
        return f"The answer: {question['choices'][question['answer']]}."
    within = f", give or take {number(question['tolerance'])}" if question["tolerance"] else ""
    return f"The answer: {number(question['number'])}{within}."


SENTENCES = (answers_line, spread_line, rounds_line, my_vote_line, answer_line)
NOT_SENTENCES = (number,)  # a number as the sentences write it
