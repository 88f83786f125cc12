"""Live checks graded against the student's own run, right and wrong; an answer that
cannot be read is asked again, never graded or revealed."""

import pytest
import torch
from streamlit.testing.v1 import AppTest

from gpt2viz.model.tokenizer import encode
from gpt2viz.spec.pages import BY_URL
from gpt2viz.teaching.live_checks import checks, grade, grade_knockout, knockout_check


def fixed_run():
    ids = tuple(encode(" Paris is the capital of France"))
    logits = torch.full((50257,), -5.0)
    logits[encode(" Paris")[0]] = 3.0  # [V]: " Paris" first
    T = len(ids)
    prev = torch.zeros(T, T)  # head 1 attends to the previous token, head 0 uniformly
    prev[0, 0] = 1
    for i in range(1, T):
        prev[i, i - 1] = 1
    uniform = torch.tril(torch.ones(T, T)) / torch.arange(1, T + 1).unsqueeze(1)
    return ids, logits, torch.stack([uniform, prev])  # [nh = 2, T, T]


def test_the_checks_answer_from_the_run():
    ids, logits, patterns = fixed_run()
    by = {c.kind: c for c in checks(ids, logits, patterns, 0, "k")}
    assert by["count"].answer == len(ids) == 6
    assert by["token"].answer == " Paris"
    p = float(torch.softmax(logits.double(), -1).max())
    assert by["probability"].answer == pytest.approx(p)
    assert by["head"].answer == 1


@pytest.mark.parametrize("kind,given,ok", [
    ("count", "6", True), ("count", "7", False), ("count", "six", None), ("count", "355M", None),
    ("token", "Paris", True), (" Paris", " Paris ", True), ("token", "paris", False), ("token", "  ", None),
    ("head", "1", True), ("head", "0", False), ("head", "9", None), ("head", "h1", None),
])
def test_grades(kind, given, ok):
    ids, logits, patterns = fixed_run()
    by = {c.kind: c for c in checks(ids, logits, patterns, 0, "k")}
    assert grade(by["token" if kind == " Paris" else kind], given).ok is ok


def test_probability_within_ten_percent_of_itself():
    ids, logits, patterns = fixed_run()
    check = next(c for c in checks(ids, logits, patterns, 0, "k") if c.kind == "probability")
    p = check.answer
    assert grade(check, f"{p:.3f}").ok and grade(check, f"{100 * p:.1f}%").ok
    assert grade(check, f"{p:.3f}").message == f"Right: within 10% of {p:.3g}."
    assert grade(check, f"{p * 0.5:.3f}").ok is False
    assert grade(check, "1.5").ok is None and grade(check, "about half").ok is None


def test_a_small_probability_is_not_right_by_an_absolute_floor():
    """Random gpt2 on the default text ranks its top token at p = 0.000218: "0" and "0.01" (46 times
    the answer) are wrong; its own value, as a decimal or in powers of ten, is right."""
    ids, _, patterns = fixed_run()
    logits = torch.zeros(50257)
    logits[encode(" Paris")[0]] = 2.4  # [V]: p ≈ 11/50,268, about 0.000218
    check = next(c for c in checks(ids, logits, patterns, 0, "k") if c.kind == "probability")
    assert check.answer == pytest.approx(0.000218, rel=0.01)
    for wrong in ("0", "0.005", "0.01", "0.0001"):
        assert grade(check, wrong).ok is False, wrong
    for right in ("0.000218", "2.18e-4", "0.0218%", "2.1E-4"):
        assert grade(check, right).ok, right
    assert "about 2.2 × 10⁻⁴" in check.worked


def test_on_random_weights_the_head_check_accepts_every_head_it_cannot_tell_apart():
    """Heads that read the previous token equally (within 2 points) are all right; on random weights
    the question says no head has a stripe."""
    ids, logits, _ = fixed_run()
    T = len(ids)
    even = torch.tril(torch.ones(T, T)) / torch.arange(1, T + 1).unsqueeze(1)
    nudged = even.clone()
    nudged[2:, :] *= 0.99
    nudged[torch.arange(2, T), torch.arange(1, T - 1)] += 0.01  # a point more on the previous token
    check = next(c for c in checks(ids, logits, torch.stack([even, nudged]), 0, "k", random=True) if c.kind == "head")
    assert check.answer == 1 and set(check.accept) == {0, 1}
    assert grade(check, "0").ok and grade(check, "1").ok
    assert "no head has a stripe" in check.question and "by chance" in check.worked


def test_the_head_check_needs_positions_where_the_previous_token_is_not_the_first():
    ids, logits, patterns = fixed_run()
    short = checks(ids[:3], logits, patterns[:, :3, :3], 0, "k")
    assert "head" not in {c.kind for c in short}


def test_knockout_is_graded_against_the_knocked_out_run():
    check = knockout_check(top=11, block=1, head=2, key="k")
    assert grade_knockout(check, "yes", knocked_top=12)[0].ok
    assert grade_knockout(check, "no", knocked_top=12)[0].ok is False
    assert grade_knockout(check, "no", knocked_top=11)[0].ok
    assert grade_knockout(check, "maybe", knocked_top=11)[0].ok is None


def live_page(**params) -> AppTest:
    at = AppTest.from_file("../app.py", default_timeout=120)
    at.query_params.update({"model": "tiny", **params})
    at.run()
    at.switch_page(BY_URL["exercises"].file)
    return at.run()


def answer(at: AppTest, suffix: str, text: str) -> AppTest:
    box = next(t for t in at.text_input if t.key and t.key.startswith("live-answer-") and t.key.endswith(suffix))
    box.input(text)
    form = box.key.replace("live-answer-", "live-")
    next(b for b in at.button if b.proto.form_id == form).click()
    return at.run()


def test_the_exercises_page_grades_live_checks_and_keeps_the_score():
    text = "One two three four five"
    at = live_page(text=text, block=1, head=2)
    assert not at.exception
    n = len(encode(text))
    at = answer(at, ":count", "lots")
    assert any("whole number" in w.value for w in at.warning) and not at.success and not at.error
    at = answer(at, ":count", str(n))
    assert any(s.value == "Right." for s in at.success)
    assert any(f"into **{n}** tokens" in m.value for m in at.markdown)  # the working, once right
    box = next(t for t in at.run().text_input if t.key and t.key.endswith(":count"))
    assert box.disabled  # its mark is final: on the next run, no box to answer again
    at = answer(at, "ko1.2", "yes")
    assert not at.exception
    if at.error:  # wrong: a hint, not the answer; then the other answer is right
        assert any("What if page" in e.value and "One more try" in e.value for e in at.error)
        assert not any("before and" in m.value for m in at.markdown)
        at = answer(at, "ko1.2", "no")
    assert any("before and" in m.value for m in at.markdown)
    assert any("Live checks:" in m.value and "answered" in m.value and "2 answered" in m.value for m in at.markdown)


def page_text(at: AppTest) -> str:
    kinds = ("markdown", "error", "success", "warning", "info")
    return " ".join(str(x.value) for kind in kinds for x in getattr(at, kind))


def test_a_wrong_live_answer_gets_a_hint_then_ask_your_lecturer_never_the_answer():
    """A live check told the right answer after the first wrong one; a new tab then scored it."""
    text = "One two three four five"
    n = len(encode(text))
    for _ in range(2):  # a second tab: a fresh attempt under the same rule
        at = answer(live_page(text=text, block=1, head=2), ":count", str(n + 3))
        (said,) = [e.value for e in at.error]
        assert said == f"Not {n + 3}. Hint: your text has fewer tokens than that. One more try."
        assert f"**{n}**" not in page_text(at)
        at = answer(at, ":count", str(n + 2))
        (said,) = [e.value for e in at.error]
        assert said.startswith(f"Not {n + 2}. Ask your lecturer, or look again: count the chips"), said
        assert f"**{n}**" not in page_text(at) and "Live checks: 0 of" in page_text(at)
        box = next(t for t in at.run().text_input if t.key and t.key.endswith(":count"))
        assert box.disabled and f"**{n}**" not in page_text(at)


def test_each_live_check_s_hint_says_which_way_without_the_answer():
    from gpt2viz.teaching.live_checks import LiveAttempt, attempt, writer_check

    ids, logits, patterns = fixed_run()
    count, top, p, head = checks(ids, logits, patterns, block=1, key="k")
    writer = writer_check(torch.tensor([[0.1, 0.0, 0.2, -0.1], [1.4, 3.0, 1.2, 3.3]]), " after", "k")
    knock = knockout_check(top=11, block=1, head=2, key="k")
    for check, given, says in [(count, "1", "more tokens"), (p, "0.9999", "lower than that"),
                               (p, "1e-9", "higher than that"), (top, "London", "first bar"),
                               (head, "0", "the page the question names"), (writer, "1.1", "the block is right"),
                               (writer, "0.3", "ranks every head"), (knock, "no", "What if page")]:
        result = grade_knockout(knock, given, 12)[0] if check is knock else grade(check, given)
        assert result.ok is False, (check.kind, given)
        once = attempt(check, LiveAttempt(), result, check.worked, given)
        assert says in once.message and "One more try" in once.message and not once.worked and not once.closed
        twice = attempt(check, once, result, check.worked, given)
        assert "Ask your lecturer" in twice.message and twice.closed and not twice.ok and not twice.worked
        assert attempt(check, twice, grade(check, str(check.answer)), check.worked, "x") == twice  # final
        for said in (once.message, twice.message):
            assert str(check.answer) not in said.replace(f"Not {given}", "")
    right = attempt(count, LiveAttempt(), grade(count, str(count.answer)), count.worked, str(count.answer))
    assert right.ok and right.closed and right.worked == count.worked


@pytest.mark.parametrize("given,ok", [("1.3", True), ("1, 3", True), ("1.1", False), ("0.3", False),
                                      ("head 3", None), ("2.0", None), ("1.4", None)])
def test_the_writer_check_asks_block_dot_head(given, ok):
    from gpt2viz.teaching.live_checks import writer_check

    grid = torch.tensor([[0.1, 0.0, 0.2, -0.1], [1.4, 3.0, 1.2, 3.3]])  # [n_layer = 2, nh = 4]
    check = writer_check(grid, " after", "k")
    assert check.answer == (1, 3) and "Head **1.3**" in check.worked and "' after'" in check.question
    assert grade(check, given).ok is ok


def test_the_exercises_page_asks_who_wrote_the_answer():
    from gpt2viz.analysis.attribution import attribute_text
    from gpt2viz.model.weights import random_model
    from gpt2viz.spec.config import get_config

    text = "One two three four five"
    at = live_page(text=text)
    a = attribute_text(random_model(get_config("tiny"), 0), encode(text))
    (b, h, _), = a.top_heads(1)
    at = answer(at, ":writer", f"{b}.{h}")
    assert not at.exception and any(s.value == "Right." for s in at.success)
