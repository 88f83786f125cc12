"""The notices of each page, worked out from the run. Head scores against their
written-out definitions on fixed patterns; what to notice on random weights and on the demo model;
the page order: question, live picture, what to notice, then the explanation and the equation."""

import re

import pytest
import torch

from gpt2viz.analysis.heads import head_scores
from gpt2viz.teaching import arithmetic, notices


def causal_uniform(T: int) -> torch.Tensor:
    return torch.tril(torch.ones(T, T)) / torch.arange(1, T + 1).unsqueeze(1)  # [T, T], row i: 1/(i+1)


def test_scores_of_a_uniform_pattern():
    s = head_scores(causal_uniform(5), [1, 2, 3, 4, 5])
    assert s.previous_token == pytest.approx((1 / 3 + 1 / 4 + 1 / 5) / 3)  # from position 2 on
    assert s.first_token == pytest.approx(s.previous_token)
    assert s.entropy == pytest.approx(1.0) and s.induction is None and s.repeats == 0


def test_scores_of_a_previous_token_head_and_an_induction_head():
    ids = [7, 8, 9, 7, 8]  # position 3 repeats 0 (next: 1), position 4 repeats 1 (next: 2)
    prev = torch.zeros(5, 5)
    prev[0, 0] = 1
    for i in range(1, 5):
        prev[i, i - 1] = 1
    s = head_scores(prev, ids)
    assert (s.previous_token, s.first_token, s.entropy) == (1.0, 0.0, 0.0)  # row 1's key 0 counts for neither
    assert s.induction == 0.0 and s.repeats == 2
    ind = causal_uniform(5).clone()
    ind[3] = torch.tensor([0, 1.0, 0, 0, 0])  # the token after the earlier 7
    ind[4] = torch.tensor([0, 0, 0.5, 0, 0.5])  # half on the token after the earlier 8
    assert head_scores(ind, ids).induction == pytest.approx(0.75)


def test_scores_in_decode_count_the_cached_tokens():
    """One query at absolute position 4 (P = 4): its row reads keys 0..4."""
    row = torch.tensor([[0.1, 0.1, 0.6, 0.1, 0.1]])  # [T = 1, L = 5]
    s = head_scores(row, [5, 6, 7, 5, 6], offset=4)
    assert s.previous_token == pytest.approx(0.1) and s.induction == pytest.approx(0.6)  # 6 followed 5 at 1→ key 2


class W:
    def __init__(self, random, demo):
        self.random, self.demo = random, demo


def test_notice_says_which_case_the_reader_is_in():
    random = notices.attention_notice(causal_uniform(6), list(range(6)), 0, notices.weights_kind(W(True, False)), 0, 0)
    assert any("nearly evenly" in line for line in random) and any("random" in line for line in random)
    demo = notices.attention_notice(causal_uniform(6), list(range(6)), 0, notices.weights_kind(W(False, True)), 1, 1)
    assert any("repeats no token" in line for line in demo)
    trained = notices.attention_notice(causal_uniform(6), list(range(6)), 0, "trained", 5, 1)
    assert any("Olsson" in line and "Xiao" in line for line in trained)


def test_gelu_and_layernorm_notices_follow_the_numbers():
    pre = torch.tensor([[-1.0, -2.0, 3.0, 0.5]])  # [T, 4d]
    lines = notices.mlp_notice(pre, torch.nn.functional.gelu(pre, approximate="tanh"), "trained")
    assert lines[0].startswith("50% of the 4 pre-activations (1 position × 4 neurons)") and "#2" in lines[1]
    assert "GELU(0.5) = 0.35, GELU(1) = 0.84" in lines[0] and "50% of the positive ones here are below 1" in lines[0]
    x = torch.tensor([1.0, 2.0, 3.0, 6.0])
    n = (x - x.mean()) / x.std(unbiased=False)
    assert "Gain 1 and bias 0" in notices.layernorm_notice(x, n, n.clone(), 1e-5)[1]
    assert "stretch and shift" in notices.layernorm_notice(x, n, 2 * n, 1e-5)[1]


def test_the_demo_model_on_a_repeat_names_its_induction_head():
    """On the demo model, block 1 head 1 on a text that repeats is named an induction head; block 0
    head 0 a previous-token head (as the demo model's own measurement says)."""
    from gpt2viz.model.demo_model import DEMO_PATH
    from gpt2viz.model.modes import Mode, run
    from gpt2viz.model.tokenizer import encode
    from gpt2viz.model.weights import load_safetensors

    if not DEMO_PATH.is_file():
        pytest.skip("no demo model file")
    model = load_safetensors(str(DEMO_PATH)).model
    ids = encode(" people play one good game after work people play one good game after")
    trace = run(model, ids, Mode.FULL)
    induction = notices.attention_notice(trace.get("attn.pattern", 1, head=1)[0], ids, 0, "demo", 1, 1)
    previous = notices.attention_notice(trace.get("attn.pattern", 0, head=0)[0], ids, 0, "demo", 0, 0)
    assert any("An induction head" in line for line in induction), induction
    assert any("A previous-token head" in line for line in previous), previous


def test_a_component_page_opens_with_its_question_then_the_picture_then_what_to_notice():
    from streamlit.testing.v1 import AppTest

    from gpt2viz.spec.pages import BY_URL

    at = AppTest.from_file("../app.py", default_timeout=120)
    at.query_params["model"] = "tiny"
    at.run()
    at.switch_page(BY_URL["attention"].file)
    at.run()
    assert not at.exception
    kinds = [getattr(e, "type", "") for e in at.main.children.values()]
    title, chart, info = (kinds.index(k) for k in ("title", "plotly_chart", "info"))
    assert title < chart < info, kinds  # the notice under the first chart
    assert "latex" not in kinds[:chart], kinds  # the equation comes after the picture
    md = [m.value for m in at.markdown]
    question = next(i for i, m in enumerate(md) if notices.QUESTIONS["block.attn"] in m)
    assert md.index(next(m for m in md if "In plain words" in m)) > question


@pytest.mark.parametrize("temp,topk,kept", [("0", "0", "the other 50,256 get 0"),
                                            ("1", "5", "the other 50,252 get exactly 0"),
                                            ("2", "0", "all 50,257 tokens keep one")])
def test_output_page_changes_the_distribution_with_temperature_and_top_k(temp, topk, kept):
    """Softmax(logits / temperature), kept to the top k, on this text's logits, from the URL."""
    from streamlit.testing.v1 import AppTest

    from gpt2viz.spec.pages import BY_URL

    at = AppTest.from_file("../app.py", default_timeout=120)
    at.query_params.update(model="tiny", temp=temp, topk=topk)
    at.run()
    at.switch_page(BY_URL["output"].file)
    at.run()
    assert not at.exception
    notes = " ".join(i.value for i in at.info)
    assert kept in notes, notes
    assert "softmax(logits)" in notes
    if temp == "0":
        assert "to 1." in notes


def test_the_block_notice_states_one_over_root_n_only_where_the_run_obeys_it():
    """Block 0 of random gpt2 on 10 tokens falls 3.02-fold (√10 = 3.16): the rule, with its numbers;
    block 11 1.24-fold: no rule, and why not."""
    mlp = torch.tensor([2.0, 1.9, 2.1, 2.0])
    obeys = notices.updates_notice(torch.tensor([1.9, 1.4, 1.1, 0.95]), mlp, "random")
    assert "1.90 at the first position and 0.95 at the last" in obeys[0] and "ranges from 1.90 to 2.10" in obeys[0]
    assert "1/√n as long: √4 = 2.00" in obeys[1] and "2.00 times" in obeys[1]
    breaks = notices.updates_notice(torch.tensor([1.6, 1.0, 0.8, 0.55]), mlp, "random")
    assert "1/√n as long:" not in breaks[1] and "2.91 times the last's, not √4 = 2.00" in breaks[1]
    assert len(notices.updates_notice(mlp, mlp, "trained")) == 1
    # block 0 reads the embeddings alone: no earlier averages; a repeated token is why, or chance
    repeats = notices.updates_notice(torch.tensor([1.6, 1.0, 0.8, 0.55]), mlp, "random", 0, ["␣the"] * 3 + ["␣a"])
    assert "('␣the' 3 times)" in repeats[1] and "already holds averages" not in repeats[1]
    chance = notices.updates_notice(torch.tensor([1.6, 1.0, 0.8, 0.55]), mlp, "random", 0, ["a", "b", "c", "d"])
    assert "by chance" in chance[1] and "already holds averages" not in chance[1]


def demo_patterns(text: str):
    from gpt2viz.model.demo_model import DEMO_PATH
    from gpt2viz.model.modes import Mode, run
    from gpt2viz.model.tokenizer import encode
    from gpt2viz.model.weights import load_safetensors

    if not DEMO_PATH.is_file():
        pytest.skip("no demo model file")
    ids = encode(text)
    trace = run(load_safetensors(str(DEMO_PATH)).model, ids, Mode.FULL, names=["blocks.*.attn.pattern"])
    return ids, [(b, h, trace[f"blocks.{b}.attn.pattern"][0, h]) for b in range(2) for h in range(4)]


@pytest.mark.parametrize("text", [" people play", " people play one"])
def test_a_short_text_names_no_head(text):
    """At position 1 the previous token is the first token: on 2 or 3 tokens one or two cells would
    call a head both a previous-token head and an attention sink (every demo head on ' people play')."""
    ids, patterns = demo_patterns(text)
    for b, h, pattern in patterns:
        lines = notices.attention_notice(pattern, ids, 0, "demo", b, h)
        assert not any(line.startswith(("**A ", "**An ")) for line in lines), (b, h, lines)


def test_random_weights_never_name_a_job():
    """A pattern that is all on the previous token, on random weights: the notice says what the
    pattern is, never what it is for."""
    T = 8
    prev = torch.zeros(T, T)
    prev[0, 0] = 1
    prev[torch.arange(1, T), torch.arange(0, T - 1)] = 1
    lines = notices.attention_notice(prev, list(range(T)), 0, "random", 0, 0)
    assert not any("previous-token head" in line or "sink" in line for line in lines), lines
    assert any("100% goes to the token just before" in line for line in lines), lines


def test_a_period_two_repeat_gives_no_induction_score():
    """On ' people play people play …' the token after the earlier occurrence is the one just before
    the query: the demo's previous-token head scored 0.99 as an induction head."""
    ids, patterns = demo_patterns(" people play people play people play people play")
    for b, h, pattern in patterns:
        lines = notices.attention_notice(pattern, ids, 0, "demo", b, h)
        assert not any("induction head:" in line for line in lines), (b, h, lines)
        assert any("only one or two positions after" in line for line in lines)


# ---------------------------------------------------------------------------- worked examples
def test_the_attention_worked_example_is_the_softmax_of_the_last_row():
    torch.manual_seed(0)
    scores, v = torch.randn(5), torch.randn(5, 4)
    pattern = torch.softmax(scores, -1)
    z = pattern @ v  # [dh]
    text = notices.attention_worked(scores, pattern, v, z, ["a", "b", "c", "d", "e"])
    j = int(scores.argmax())
    e = (scores.double() - scores.max()).exp()
    assert f"key {j} {'abcde'[j]!r}: e^(" in text and f" ÷ {float(e.sum()):.3f} = **{float(pattern[j]):.3f}**" in text
    assert f"‖z‖ = {float(z.norm()):.3f}" in text
    assert all(arithmetic.holds(*eq) for eq in arithmetic.equations(text)) and len(arithmetic.equations(text)) == 6


def test_the_output_worked_example_ties_the_gap_to_the_ratio_and_the_logit_to_a_dot_product():
    torch.manual_seed(1)
    w_u, z = torch.randn(8, 20), torch.randn(8)
    logits = (z @ w_u).double()  # [V]
    text = notices.output_worked(logits, z, w_u, {i: f"t{i}" for i in range(20)})
    p = torch.softmax(logits, -1)
    a, b = logits.topk(2).indices.tolist()
    assert f"{float(p[a] / p[b]):.3f} times as likely" in text
    assert f"= {float(logits[a]):.3f}." in text
    assert all(arithmetic.holds(*eq) for eq in arithmetic.equations(text)) and len(arithmetic.equations(text)) == 3


def test_the_mlp_and_block_worked_examples_print_the_run_s_numbers():
    pre = torch.tensor([[0.0, 0.0], [1.0, -1.0]])  # [T, 4d]
    post = torch.nn.functional.gelu(pre, approximate="tanh")
    w_proj = torch.tensor([[3.0, 4.0], [0.0, 1.0]])  # [4d, d]
    text = notices.mlp_worked(pre, post, w_proj, 0)
    assert "a = 1.000" in text and "GELU(1.000) = 0.841" in text and "0.8412 × 5.0000 = 4.206" in text
    x, attn, mlp = torch.tensor([3.0, 4.0]), torch.tensor([0.0, 1.0]), torch.tensor([1.0, 0.0])
    text = notices.block_worked(x, attn, x + attn, mlp, x + attn + mlp, 7)
    assert "position 7" in text and "‖xₙ‖ = 5.00" in text and "‖Δattn‖ ÷ ‖xₙ‖ = 1.00 ÷ 5.00 = 0.20" in text
    assert f"‖xₙ₊₁‖ = {float((x + attn + mlp).norm()):.2f}" in text


def test_the_layernorm_worked_example_takes_one_vector_through_mean_spread_gain_and_bias():
    x = torch.tensor([1.0, 2.0, 3.0, 6.0])  # [d]: μ 3, σ² 3.5
    normalized = (x - 3) / (3.5 + 1e-5) ** 0.5
    gain, bias = torch.tensor([1.0, 1.0, 1.0, 2.0]), torch.tensor([0.0, 0.0, 0.0, -0.5])
    out = normalized * gain + bias
    text = notices.layernorm_worked(x, normalized, out, gain, bias, 1e-5, 4)
    assert re.search(r"add to 12\.0+, so μ = 12\.0+ ÷ 4 = 3\.0+;", text) and "σ² = 3.500" in text
    assert "Coordinate 3" in text and f"= {float(out[3]):.3f}." in text and "standard deviation 1.000" in text
    assert all(arithmetic.holds(*eq) for eq in arithmetic.equations(text)) and len(arithmetic.equations(text)) == 4


def test_printed_arithmetic_is_read_back_and_checked_at_its_printed_precision():
    """The Output page once printed 27.71 × 0.55 × 0.168 = 2.548: 2.560 on a calculator."""
    assert arithmetic.equations("cos θ = 27.71 × 0.55 × 0.168 = 2.548.") == [("27.71 × 0.55 × 0.168", "2.548")]
    assert not arithmetic.holds("27.71 × 0.55 × 0.168", "2.548")
    assert arithmetic.holds("27.7113 × 0.5655 × 0.15200", "2.382")
    assert arithmetic.holds("e^(-0.5 − (-0.25))", "0.779") and arithmetic.holds("√(0.0008 + 0.00001)", "0.0285")
    assert arithmetic.holds("GELU(1.000)", "0.841") and arithmetic.holds("1,000 ÷ 8", "125")
    assert arithmetic.equations("‖xₙ‖ = 5.00; a = 1.000, 64% = 0.64") == []  # no arithmetic: nothing to redo


def test_the_layernorm_page_answers_why_it_rescales():
    text = notices.layernorm_why(0.78, 8.60, 768)
    assert "grows from 0.78 (into block 0) to 8.60" in text and "√d = 27.7" in text
