"""The class vote's sentences (teaching/votes_text.py) over a corpus of rounds: no answer, one, a tie,
everyone alike, every choice once, numbers far apart and equal, each before and after the reveal.
Each quantifier is checked against counts worked out here: "the most chosen" only where one choice
leads, "tie" only where several do; a share is the count over the voters; before the reveal no sentence
names or hints at the right answer; the direction between two rounds is the one the shares take."""

import itertools
import re

import pytest

from gpt2viz.plots.votes import choice_spread, number_spread
from gpt2viz.teaching.votes_text import answer_line, answers_line, my_vote_line, number, rounds_line, spread_line

CHOICE = {"text": "Which?", "choices": ["alpha", "beta", "gamma", "delta"], "answer": 2}
NUMBER = {"text": "How many?", "number": 768.0, "tolerance": 0.0}
CHOICE_ROUNDS = [[], [2], [0, 1], [1, 1, 1], [0, 1, 2, 3], [2, 2, 0], [0, 0, 1, 1, 2], [3] * 200 + [2]]
NUMBER_ROUNDS = [[], [768.0], [768.0, 767.0], [-1e12, 1e12], [0.5] * 3, [768.0] * 4 + [1.0], [7087872.0, 0.125]]


def _shares(line: str) -> list[tuple[int, int, int]]:
    return [(int(k), int(n), int(p)) for k, n, p in re.findall(r"(\d+) of (\d+) \((\d+)%\)", line)]


@pytest.mark.parametrize("answers", CHOICE_ROUNDS)
@pytest.mark.parametrize("revealed", [False, True])
def test_the_spread_of_choices_says_what_the_counts_say(answers, revealed):
    line = spread_line(CHOICE, answers, revealed)
    n = len(answers)
    if not n:
        assert line == "No answers yet."
        return
    counts = [answers.count(i) for i in range(4)]
    leaders = [i for i, c in enumerate(counts) if c == max(counts)]
    assert ("the most chosen is" in line) == (len(leaders) == 1)
    assert ("tie" in line) == (len(leaders) > 1)
    if len(leaders) == 1:
        assert repr(CHOICE["choices"][leaders[0]]) in line
    for k, total, pct in _shares(line):
        assert total == n and pct == round(100 * k / n)
    assert line.startswith(f"{n} answer")
    right = CHOICE["choices"][CHOICE["answer"]]
    if revealed:
        assert f"The right answer, {right!r}, was chosen by {counts[2]} of {n}" in line
    else:  # nothing says which is right, even where the right one leads
        assert "right" not in line


@pytest.mark.parametrize("answers", NUMBER_ROUNDS)
@pytest.mark.parametrize("revealed", [False, True])
def test_the_spread_of_numbers_gives_their_range_median_and_share_right(answers, revealed):
    line = spread_line(NUMBER, answers, revealed)
    if not answers:
        assert line == "No answers yet."
        return
    ordered = sorted(answers)
    median = (ordered[(len(ordered) - 1) // 2] + ordered[len(ordered) // 2]) / 2
    if ordered[0] == ordered[-1]:  # never a range that prints as a point
        assert (f"all {number(ordered[0])}" if len(ordered) > 1 else f"1 answer: {number(ordered[0])}") in line
        assert "from" not in line and "median" not in line
    else:
        assert f"the median is {number(median)}" in line
        assert f"from {number(ordered[0])} to {number(ordered[-1])}" in line
    assert ("The answer" in line) == revealed
    if revealed:
        right = sum(a == 768.0 for a in answers)
        assert f"{right} of {len(answers)}" in line and "exactly it" in line


@pytest.mark.parametrize("voters, state", list(itertools.product([0, 1, 2, 200], ["open", "closed", "revealed"])))
def test_the_count_line_agrees_in_number_and_state(voters, state):
    line = answers_line(voters, state)
    assert line.startswith(f"{voters} answer{'' if voters == 1 else 's'}")
    assert ("open" in line) == (state == "open") and ("shown" in line) == (state == "revealed")


@pytest.mark.parametrize("first, second", [((1, 2), (2, 2)), ((2, 2), (1, 2)), ((1, 2), (2, 4)), ((0, 3), (0, 5)),
                                           ((0, 0), (1, 1)), ((5, 10), (7, 10))])
def test_two_rounds_name_the_direction_the_shares_took(first, second):
    line = rounds_line(first, second)
    if not first[1] or not second[1]:
        assert "no answers" in line
        return
    a, b = first[0] / first[1], second[0] / second[1]
    assert ("rose" in line) == (b > a) and ("fell" in line) == (b < a) and ("stayed" in line) == (a == b)


@pytest.mark.parametrize("question, mine", [(CHOICE, None), (CHOICE, 2.0), (CHOICE, 0.0), (NUMBER, 768.0),
                                            (NUMBER, 767.0), (NUMBER, None)])
@pytest.mark.parametrize("state", ["open", "closed", "revealed"])
def test_a_students_own_line_tells_right_or_not_only_after_the_reveal(question, mine, state):
    line = my_vote_line(question, mine, state)
    if mine is None:
        assert "answer" in line and "Your answer" not in line
        return
    assert line.startswith("Your answer")
    right = (mine == 2.0) if "choices" in question else mine == 768.0
    if state == "revealed":
        assert ("which is right" in line) == right and ("not the answer" in line) == (not right)
    else:
        assert "right" not in line and "not the answer" not in line


def test_the_spread_charts_mark_the_answer_in_words_only_after_the_reveal():
    before = choice_spread(CHOICE["choices"], [[1, 2, 3, 4]], None)
    after = choice_spread(CHOICE["choices"], [[1, 2, 3, 4], [0, 1, 9, 0]], 2)
    assert not any("✓" in x for x in before.data[0].x)
    assert [x for x in after.data[0].x if "✓" in x] == ["✓ gamma"] and len(after.data) == 2
    long = choice_spread(["a very long choice that goes on and on for a while", "b"], [[1, 1]], None)
    assert "<br>" in long.data[0].x[0] and "…" not in long.data[0].x[0]  # wrapped, never cut
    numbers = number_spread([[1.0, 2.0, 2.0]], 2.0)
    assert sum(numbers.data[0].y) == 3 and any("right answer" in a.text for a in numbers.layout.annotations)


@pytest.mark.parametrize("question, said", [(CHOICE, "The answer: gamma."), (NUMBER, "The answer: 768."),
                                            (NUMBER | {"tolerance": 0.5}, "The answer: 768, give or take 0.5."),
                                            (NUMBER | {"number": 1234567.0}, "The answer: 1,234,567.")])
def test_the_revealed_answer_line_says_the_lessons_answer(question, said):
    assert answer_line(question) == said


@pytest.mark.parametrize("x, said", [(7087872.0, "7,087,872"), (0.5, "0.5"), (-1e12, "-1,000,000,000,000"),
                                     (123456.789, "123,456.79"), (1e-7, "1e-07"), (0.1 + 0.2, "0.3")])
def test_a_number_reads_as_a_class_reads_it_never_with_an_exponent_for_a_count(x, said):
    assert number(x) == said
