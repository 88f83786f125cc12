"""The notices of each page, worked out from the run. Head scores against their
written-out definitions on fixed patterns; what to notice on random weights and on the demo model;
the page order: question, live picture, what to notice, then the explanation and the equation."""

import re

import pytest
import torch
from app_charts import kind

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
    assert lines[0].startswith("50.0% of the 4 pre-activations (1 position × 4 neurons)") and "#2" in lines[1]
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
    kinds = [kind(e) for e in at.main.children.values()]
    title, chart, info = (kinds.index(k) for k in ("title", "chart", "info"))
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
    # the GELU's printed result is the next step's operand: 0.841 × 5 would be 4.205, so GELU(a) gets 4 decimals
    # (and a, as every operand, one more than the result it gives)
    assert "a = 1.00000" in text and "GELU(1.00000) = 0.8412" in text and "norm 0.8412 × 5.00000 = 4.206" in text
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


def every_precision(monkeypatch) -> list[str]:
    """Make arithmetic.enough also print its example at every precision it may pick; the texts, gathered."""
    seen, real = [], arithmetic.enough

    def enough(prints, least=2, most=9):
        seen.extend(prints(arithmetic.Sheet(n)) for n in range(least, most + 1))
        return real(prints, least, most)
    monkeypatch.setattr(arithmetic, "enough", enough)
    return seen


def near_ties(base: torch.Tensor, unit: float) -> torch.Tensor:
    """`base` moved to the nearest rounding tie of `unit` (…5 in the next decimal), then a hair off it."""
    ties = (torch.floor(base / unit) + 0.5) * unit
    return ties + torch.tensor([-1e-7, 0.0, 1e-7, 3e-10])[torch.arange(base.numel()) % 4].reshape(base.shape) * unit


def worked_examples(g: torch.Generator, adversarial: bool) -> list[str]:
    """Each worked example of notices.py on random vectors, or on vectors whose printed quantities sit at
    or a hair from a rounding tie of their printed digits."""
    L, d, dh = int(torch.randint(1, 9, (1,), generator=g)), 8, 4
    weights = torch.rand(L, generator=g, dtype=torch.float64) + 0.05
    weights = weights / weights.sum()
    if adversarial and L > 1:  # the weights at ties of 3 decimals, the exponentials then follow them
        weights[:-1] = near_ties(weights[:-1], 1e-3).clamp(min=1e-3)
        weights[-1] = 1 - weights[:-1].sum()
    scores = weights.log() * float(torch.rand(1, generator=g) * 3 + 0.5)  # [L]
    pattern = torch.softmax(scores.float(), -1)  # [L], float32 as the chart draws it
    v = torch.randn(L, dh, generator=g)
    out = [notices.attention_worked(scores.float(), pattern, v, pattern @ v, [f"k{i}" for i in range(L)])]
    w_u, z = torch.randn(d, 20, generator=g), torch.randn(d, generator=g) * 3
    logits = (z @ w_u).double()  # [V]
    if adversarial:  # a gap at a tie, and the top logit at one
        top = logits.topk(2).indices
        logits[top[0]] = float(near_ties(logits[top[0]].reshape(1), 1e-3)[0])
        logits[top[1]] = logits[top[0]] - 0.0015
    out.append(notices.output_worked(logits, z, w_u, {i: f"t{i}" for i in range(20)}))
    pre = torch.randn(3, 16, generator=g, dtype=torch.float64) * 2
    if adversarial:  # GELU(a) at a tie of 3 decimals: a found by bisection
        target = float(near_ties(torch.tensor([0.8411]), 1e-3)[0])
        lo, hi = 0.0, 3.0
        for _ in range(80):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if arithmetic.gelu(mid) < target else (lo, mid)
        pre[-1, 0] = lo
        pre[-1, 1:] = pre[-1, 1:].clamp(max=lo - 0.1)
    for exact in (False, True):
        post = torch.nn.functional.gelu(pre, approximate="none" if exact else "tanh")
        out.append(notices.mlp_worked(pre.float(), post.float(), torch.randn(16, d, generator=g),
                                      notices.top_neuron(post.float())))
    x = torch.randn(d, generator=g, dtype=torch.float64) * float(torch.rand(1, generator=g) * 2 + 0.01)
    if adversarial:  # the centred coordinate at a tie
        x[0] = x[1:].mean() + 10
    mu, var = x.mean(), x.var(unbiased=False)
    normalized = ((x - mu) / (var + 1e-5).sqrt()).float()
    gain, bias = torch.rand(d, generator=g) + 0.5, torch.randn(d, generator=g) * 0.1
    out.append(notices.layernorm_worked(x.float(), normalized, normalized * gain + bias, gain, bias, 1e-5, 3))
    xs = [torch.randn(d, generator=g) for _ in range(3)]
    if adversarial:  # ratios of norms at ties of 2 decimals: 0.125 and 0.375
        xs = [torch.tensor([8.0] + [0.0] * (d - 1)), torch.tensor([0.0, 1.0] + [0.0] * (d - 2)),
              torch.tensor([0.0, 0.0, 3.0] + [0.0] * (d - 3))]
    x0, a, m = xs
    out.append(notices.block_worked(x0, a, x0 + a, m, x0 + a + m, 5))
    return out


@pytest.mark.parametrize("adversarial", [False, True])
def test_every_worked_equation_holds_from_its_printed_digits_at_every_precision(monkeypatch, adversarial):
    """A worked example's results are computed from its printed operands (arithmetic.Sheet), so each
    equation holds whatever precision `enough` picks, and whatever the CPU's rounding of the run."""
    seen = every_precision(monkeypatch)
    g = torch.Generator().manual_seed(7 + adversarial)
    shown = [text for _ in range(60) for text in worked_examples(g, adversarial)]
    assert len(seen) > 60 * 7 * 5  # every example at each of its precisions
    for text in seen + shown:
        printed = arithmetic.equations(text)
        assert printed and [eq for eq in printed if not arithmetic.holds(*eq)] == [], text


def test_a_result_is_computed_from_its_printed_operands_never_from_elsewhere():
    """On an AMD CPU the Attention page printed e^(0.435749680 − 0.489878684) = 0.947309891, the
    exponential of the unrounded scores: from the printed ones it is 0.9473098919."""
    sheet = arithmetic.Sheet(9)
    printed = sheet.equation("e^(0.435749680 − 0.489878684)", 0.9473098914, 9)
    assert printed.endswith("= 0.947309892") and arithmetic.holds(*arithmetic.equations(printed)[0])
    assert sheet.misses == 1  # not the quantity's own rounding: `enough` would try more decimals

    def never(w: arithmetic.Sheet) -> str:  # a quantity no precision of its operands rounds to
        return w.equation(f"{w.num(1 / 3)} × 3", 1.0 + 10 ** -(w.n + 1) * 7, w.n + 1)
    text = arithmetic.enough(never, 2, 6)  # none matches: the most decimals, and the equation holds all the same
    assert text == "0.333333 × 3 = 0.9999990" and arithmetic.holds(*arithmetic.equations(text)[0])


def test_the_mlp_worked_example_writes_an_exact_gelu_as_a_times_phi_of_a():
    pre = torch.tensor([[0.5, -0.3, 1.7, 0.2]])  # [T, 4d]
    text = notices.mlp_worked(pre, torch.nn.functional.gelu(pre), torch.eye(4), 2)  # nanoGPT's exact GELU
    assert "the exact form a × Φ(a) (Φ: the standard normal distribution function), is 1.700 × Φ(1.700) = 1.624" \
        in text and arithmetic.equations(text)[0] == ("1.700 × Φ(1.700)", "1.624")
    assert [eq for eq in arithmetic.equations(text) if not arithmetic.holds(*eq)] == [] and "Φ" not in \
        notices.mlp_worked(pre, torch.nn.functional.gelu(pre, approximate="tanh"), torch.eye(4), 2)


@pytest.mark.parametrize("L", [1, 2, 3, 7])
def test_the_attention_worked_example_counts_the_scores_it_lists(L):
    scores = torch.linspace(0, 1, L)
    pattern = torch.softmax(scores, -1)
    text = notices.attention_worked(scores, pattern, torch.ones(L, 2), pattern @ torch.ones(L, 2),
                                    [f"k{i}" for i in range(L)])
    listed = len(re.findall(r"key \d+ 'k\d+': e\^", text))
    assert listed == min(3, L)
    said = {1: "The only score:", 2: "The row's two scores:", 3: "The row's three scores:"}.get(
        L, "The three largest scores:")
    assert said in text and ("The row's one weight is 1." if L == 1 else f"The row's {L} weights add to 1.") in text


@pytest.mark.parametrize("var", [3.5, 0.00083, 0.02])
def test_the_layernorm_worked_example_says_the_scale_is_gone_only_where_var_dwarfs_eps(var):
    """The review's M8: 'whatever x's scale was' beside a standard deviation of 0.994."""
    x = torch.tensor([-1.0, 1.0, -1.0, 1.0], dtype=torch.float64) * var ** 0.5  # σ² = var
    normalized = (x / (x.var(unbiased=False) + 1e-5).sqrt()).float()
    text = notices.layernorm_worked(x.float(), normalized, normalized, torch.ones(4), None, 1e-5, 0)
    sd = re.search(r"standard deviation (\d\.\d{3})", text).group(1)
    assert "whatever" not in text and (sd == "1.000") == (var > 1000 * 1e-5)
    assert ("takes out x's scale" in text) == (var >= 1000 * 1e-5) and ("not negligible" in text) != (var >= 0.01)


def test_the_layernorm_page_answers_why_it_rescales():
    text = notices.layernorm_why(0.78, 8.60, 768, 10)
    assert "Over this text's 10 positions, the stream's mean norm grows from 0.78 (into block 0) to 8.60" in text
    assert "√d = 27.7" in text
    one = notices.layernorm_why(0.80, 8.11, 768, 1)  # decode: the new position alone
    assert "At the one position computed, the stream's norm grows from 0.80" in one and "mean norm" not in one


def test_a_decode_rows_largest_weight_is_never_printed_as_0_percent():
    """The trial's 1,024-key decode row: its largest weight, 0.002, was said as "0%"."""
    L = 1024
    row = torch.full((1, L), (1 - 0.0024) / (L - 1))  # [T = 1, L]
    row[0, 133] = 0.0024
    (line, *_) = notices.attention_notice(row, list(range(L)), L - 1, "random", 5, 3)
    assert "gives the most weight, 0.24%, to key 133" in line and "1,024 keys, the 1,023 cached" in line
