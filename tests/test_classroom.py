"""Classroom logic: sampling, the logit lens, the residual decomposition, and the exercises,
each checked against an independent computation."""

import pytest
import torch
from arith import evaluate

from gpt2viz.analysis.lens import decompose, depth_points, logit_lens
from gpt2viz.anatomy.params import count_model, meta_model
from gpt2viz.model.generation import Sampler, distribution
from gpt2viz.model.modes import Mode, generate, run
from gpt2viz.spec.config import get_config
from gpt2viz.teaching import exercises as ex

IDS = [464, 2068, 7586, 21831, 18045, 625, 262, 16931]


# ---------------------------------------------------------------------------- generation
def test_sampling_with_a_seed_is_reproducible(tiny):
    a = generate(tiny, IDS, 6, names=(), choose=Sampler(temperature=1.5, top_k=50, seed=11)).ids
    b = generate(tiny, IDS, 6, names=(), choose=Sampler(temperature=1.5, top_k=50, seed=11)).ids
    c = generate(tiny, IDS, 6, names=(), choose=Sampler(temperature=1.5, top_k=50, seed=12)).ids
    assert a == b and a != c


def test_temperature_zero_is_greedy(tiny):
    assert generate(tiny, IDS, 4, choose=Sampler(temperature=0)).ids == generate(tiny, IDS, 4).ids


def test_top_k_keeps_only_k_tokens():
    logits = torch.tensor([0.0, 3.0, 1.0, 2.0, -1.0])
    p = distribution(logits, 1.0, 2)
    assert (p > 0).tolist() == [False, True, False, True, False]
    torch.testing.assert_close(p[[1, 3]], torch.softmax(torch.tensor([3.0, 2.0]), -1))
    with pytest.raises(ValueError, match="temperature"):
        distribution(logits, -1, None)


def test_top_p_keeps_the_fewest_tokens_that_reach_p():
    """Nucleus sampling: softmax [0.64, 0.24, 0.09, 0.03] (logits 3, 2, 1, 0 scaled): p 0.7 keeps the first two
    (0.64 alone is short of it), p 0.5 the first alone, p 1 every token; after top-k; bounded (0, 1]."""
    logits = torch.tensor([3.0, 0.0, 2.0, 1.0], dtype=torch.float64)
    full = torch.softmax(logits, -1)
    p = distribution(logits, 1.0, None, 0.7)
    assert (p > 0).tolist() == [True, False, True, False]
    torch.testing.assert_close(p[[0, 2]], full[[0, 2]] / full[[0, 2]].sum())
    assert (distribution(logits, 1.0, None, 0.5) > 0).tolist() == [True, False, False, False]
    torch.testing.assert_close(distribution(logits, 1.0, None, 1.0), full)
    assert (distribution(logits, 1.0, 1, 0.99) > 0).sum() == 1  # top-k first
    for bad in (0.0, 1.5, -0.1):
        with pytest.raises(ValueError, match="top-p"):
            distribution(logits, 1.0, None, bad)
    a = Sampler(temperature=1.0, seed=3, top_p=0.5)
    assert {a(logits) for _ in range(20)} == {0}  # only the nucleus is drawn


def test_generation_traces_grow_the_cache(tiny):
    gen = generate(tiny, IDS, 3)
    assert [(t.P, t.L) for t in gen.traces] == [(7, 8), (8, 9), (9, 10)]
    assert gen.traces[2]["blocks.1.attn.k_cache"].shape == (1, 4, 10, 16)
    assert gen.traces[1].token_ids[-1] == gen.ids[0]  # step 1 reads what step 0 chose


def test_a_steps_choices_are_computed_once_and_equal_a_fresh_computation(tiny, monkeypatch):
    """The generation page's table and chart read each step's distribution once per step and choice
    (trace.memo), shared by every later view: the same numbers as computing it again."""
    from gpt2viz.ui import classroom

    gen = generate(tiny, IDS, 3, choose=Sampler(temperature=1.3, seed=1, top_k=5))
    fresh = [classroom.step_choices(t, c, 1.3, 5) for t, c in zip(gen.traces, gen.ids)]
    calls = []
    real = classroom.shown_distribution
    monkeypatch.setattr(classroom, "shown_distribution", lambda *a: calls.append(a) or real(*a))
    rows = classroom.generation_rows(gen, tiny.config, 1.3, 5)
    assert len(calls) == 3  # one distribution per step, for p(chosen)
    for _ in range(2):  # a second view computes nothing
        again = [classroom.step_choices(t, c, 1.3, 5) for t, c in zip(gen.traces, gen.ids)]
        assert again == fresh and classroom.generation_rows(gen, tiny.config, 1.3, 5) == rows
    assert len(calls) == 3
    for (probs, _, at), row in zip(fresh, rows):
        assert row["p(chosen)"] == f"{probs[at]:.4g}" and float(row["p(chosen)"]) > 0  # sampled: never "0.0000"
    assert classroom.step_choices(gen.traces[0], gen.ids[0], 0.0, None) != fresh[0]  # another choice: its own
    assert len(calls) == 4


# ---------------------------------------------------------------------------- lens and decomposition
@pytest.mark.parametrize("mode", [Mode.FULL, Mode.DECODE])
def test_logit_lens_at_the_last_depth_is_the_model(tiny, mode):
    t = run(tiny, IDS, mode)
    rows = logit_lens(tiny, t)
    assert [r.label for r in rows] == ["block 0 in", "block 1 in", "block 1 out"]
    probs = torch.softmax(t["logits"][0, -1], -1)
    torch.testing.assert_close(torch.tensor(rows[-1].top_probs), probs.topk(5).values)
    assert rows[-1].final_rank == 0


def test_lens_recomputes_layernorm_statistics(tiny):
    t = run(tiny, IDS, Mode.FULL)
    x = t["blocks.1.resid_pre"][0, -1]
    expected = torch.nn.functional.layer_norm(x, (64,), tiny.ln_f.weight, tiny.ln_f.bias, 1e-5) @ tiny.wte.weight.T
    row = logit_lens(tiny, t)[1]
    assert row.top_ids == torch.softmax(expected, -1).topk(5).indices.tolist()


@pytest.mark.parametrize("mode", [Mode.FULL, Mode.TRAINING, Mode.DECODE])
def test_decomposition_sums_to_the_stream(tiny, mode):
    t = run(tiny, IDS, mode, grads=False) if mode is Mode.TRAINING else run(tiny, IDS, mode)
    for block in range(3):
        d = decompose(t, block)
        assert len(d.labels) == 1 + 2 * block
        torch.testing.assert_close(d.parts.sum(0), d.recorded, rtol=0, atol=1e-5)
        assert d.max_abs_error < 1e-5
    with pytest.raises(ValueError, match="between 0 and 2"):
        decompose(t, 3)
    assert depth_points(t)[-1] == ("block 1 out", "blocks.1.resid_post")


def test_a_decomposition_at_one_position_stacks_that_position_alone(tiny):
    """The Logit lens page charts one position: all of them stacked 25 [T, d] parts, 76 MiB on gpt2
    at 1,024 tokens, on every view. One position is a [n_parts, 1, d] stack, equal to the whole's row."""
    t = run(tiny, IDS, Mode.FULL)
    whole = decompose(t, 2)
    for i in (0, len(IDS) - 1):
        one = decompose(t, 2, positions=slice(i, i + 1))
        assert one.labels == whole.labels
        assert one.parts.shape == (5, 1, tiny.config.n_embd)
        torch.testing.assert_close(one.parts, whole.parts[:, i:i + 1], rtol=0, atol=0)
        torch.testing.assert_close(one.recorded, whole.recorded[i:i + 1], rtol=0, atol=0)
        assert one.max_abs_error < 1e-5  # float rounding only (a sum of its own, not bit for bit the whole's)


# ---------------------------------------------------------------------------- exercises
def test_shape_answers_match_a_real_run(tiny):
    """tiny's shapes come from the catalogue; the run records the real tensors."""
    for mode, T, P in [("full", 6, None), ("training", 6, None), ("prefill", 6, None), ("decode", None, 5)]:
        n = T or P + 1
        trace = run(tiny, IDS[:n], mode)
        for short in ex.SHAPE_NAMES:
            name = short if not short.startswith(("attn.", "mlp.", "ln1.")) else f"blocks.1.{short}"
            if name not in trace:
                continue
            e = ex.shape_exercise("tiny", mode, short, 1, T, P, block=1)
            assert e.answer == tuple(trace[name].shape), (mode, short)


def test_param_answers_match_the_model_and_their_arithmetic():
    for model in ("gpt2", "gpt2-xl", "distilgpt2"):
        counts = count_model(meta_model(get_config(model)))
        for cid in ex.PARAM_COMPONENTS:
            e = ex.params_exercise(model, cid)
            n_layer = get_config(model).n_layer
            want = counts[cid] // (n_layer if cid.startswith("block") else 1) if cid in counts else None
            if want is not None:
                assert e.answer == (want,), (model, cid)
            for statement in e.worked.replace("\n", ";").split(";"):  # every "a = b = c" is true arithmetic
                pieces = [p.strip() for p in statement.rsplit(":", 1)[-1].split("=")]
                numeric = [p for p in pieces if p and all(ch in "0123456789,×+ −" for ch in p)]
                assert len({evaluate(p) for p in numeric}) <= 1, statement
                if len(pieces) > 1:
                    assert numeric, statement  # the arithmetic itself is there


def test_model_total_exercise():
    e = ex.params_exercise("gpt2", "model")
    assert e.answer == (124_439_808,) and "= 124,439,808" in e.worked


def test_sets_are_reproducible_and_ids_round_trip():
    a, b = ex.exercise_set(5, 8), ex.exercise_set(5, 8)
    assert [e.id for e in a] == [e.id for e in b]
    assert [e.id for e in ex.exercise_set(6, 8)] != [e.id for e in a]
    for e in a:
        assert ex.from_id(e.id) == e
    with pytest.raises(ValueError, match="not an exercise id"):
        ex.from_id("shape:gpt2:sideways:attn.z:B1:T1:P0:b0")


@pytest.mark.parametrize("text,ok", [("[1, 12, 1, 1001]", True), ("1 × 12 × 1 × 1001", True),
                                     ("1,12,1,1001", True), ("[1, 12, 1, 1000]", False), ("[1, 12]", False)])
def test_checking_shape_answers(text, ok):
    e = ex.shape_exercise("gpt2", "decode", "attn.scores", 1, None, 1000)
    assert ex.check(e, text)[0] is ok


def test_checking_count_answers():
    e = ex.params_exercise("gpt2", "block.mlp")
    assert ex.check(e, "4,722,432")[0] and ex.check(e, "4722432")[0]
    ok, message = ex.check(e, "4,722,000")
    assert not ok and "4,722,432" not in message and "too low" in message  # a hint, not the answer


@pytest.mark.parametrize("text", ["355M", "354.8 million", "", "twelve", "[1, 12, 1, 64]", "1e6"])
def test_an_unreadable_answer_is_not_an_answer(text):
    """"355M" counted as answered (and wrong) and revealed the worked answer."""
    e = ex.params_exercise("gpt2-medium", "model")
    with pytest.raises(ex.Unreadable) as raised:
        ex.check(e, text)
    assert f"{e.answer[0]:,}" not in str(raised.value)


def test_handout_has_questions_and_optional_answers():
    exs = ex.exercise_set(1, 4)
    key, sheet = ex.handout(exs), ex.handout(exs, answers=False)
    assert key.count("**Answer:**") == 4 and "**Answer:**" not in sheet
    assert all(e.question in sheet for e in exs)


def test_a_tiny_temperature_is_still_a_distribution():
    p = distribution(torch.tensor([1.0, 3.0, 2.0]), 1e-40, None)
    assert torch.isfinite(p).all() and p.tolist() == [0.0, 1.0, 0.0]


def test_sets_never_repeat_an_exercise():
    for seed in range(40):
        ids = [e.id for e in ex.exercise_set(seed, 20)]
        assert len(ids) == len(set(ids))


@pytest.mark.parametrize("text", ["[1,12,1,1001]", "1 12 1 1001", "(1, 12, 1, 1001)"])
def test_shape_answers_in_any_spacing(text):
    assert ex.check(ex.shape_exercise("gpt2", "decode", "attn.scores", 1, None, 1000), text)[0]


def test_generation_reaches_the_last_position_of_the_context(tiny):
    from gpt2viz.model.modes import room

    n_ctx = tiny.config.n_positions
    ids = [464] * 1020
    assert room(n_ctx, len(ids)) == 5
    gen = generate(tiny, ids, 5, names=("logits",))
    assert [t.L for t in gen.traces] == [1020, 1021, 1022, 1023, 1024]  # the last step reads exactly n_ctx keys
    with pytest.raises(ValueError, match="exceed the context"):
        generate(tiny, ids, 6, names=("logits",))
    assert room(n_ctx, n_ctx) == 1 and [t.L for t in generate(tiny, [464] * n_ctx, 1, names=()).traces] == [1024]


@pytest.mark.parametrize("mode", [Mode.FULL, Mode.PREFILL, Mode.TRAINING])
def test_the_lens_grid_agrees_with_the_lens_at_each_position(tiny, mode):
    """The lens over depth × position, cell by cell the one-position lens."""
    from gpt2viz.analysis.lens import lens_grid, lens_window

    t = run(tiny, IDS, mode, grads=False) if mode is Mode.TRAINING else run(tiny, IDS, mode)
    grid = lens_grid(tiny, t, 2, 6)
    assert grid.top_probs.shape == grid.final_ranks.shape == (3, 5) and grid.labels[-1] == "block 1 out"
    for j, position in enumerate(range(2, 7)):
        rows = logit_lens(tiny, t, position=position)  # prefill too: the model's prediction from the lens
        assert grid.top_ids[:, j].tolist() == [r.top_ids[0] for r in rows]
        lens = torch.tensor([r.top_probs[0] for r in rows], dtype=torch.float64)  # [depths]
        torch.testing.assert_close(grid.top_probs[:, j], lens)
        assert grid.final_ranks[:, j].tolist() == [r.final_rank for r in rows] and rows[-1].final_rank == 0
    assert lens_window(7, 8, width=24) == (0, 7) and lens_window(100, 200, width=24) == (77, 100)
    assert lens_window(3, 200, width=24) == (0, 23)


@pytest.mark.parametrize("rows", [1, 10, 15, 48])
def test_the_lens_grid_is_each_depths_lens_whatever_depths_one_product_takes(monkeypatch, rows):
    """The grid unembeds several depths in one product (LENS_ROWS rows): on a 4-block model at 5 positions,
    a depth a product (1), two (10: products of 2 and 2), three (15: 3 then 1), all four (48). Each cell is
    that depth's own lens, computed here a depth at a time, and the last row the model's prediction."""
    from dataclasses import replace

    from gpt2viz.analysis import lens
    from gpt2viz.model.weights import random_model

    model = random_model(replace(get_config("tiny"), n_layer=4), seed=1)
    t = run(model, IDS, Mode.FULL)
    monkeypatch.setattr(lens, "LENS_ROWS", rows)
    grid = lens.lens_grid(model, t, 2, 6)
    assert grid.top_ids.shape == (5, 5) and grid.labels[-1] == "block 3 out"
    for i, (_, name) in enumerate(lens.depth_points(t)):
        p = lens.lens_probs(model, t[name][0, 2:7])  # [5, V], this depth alone
        top = p.argmax(-1)
        assert grid.top_ids[i].tolist() == top.tolist(), i
        torch.testing.assert_close(grid.top_probs[i], p.gather(-1, top[:, None])[:, 0])
    assert grid.top_ids[-1].tolist() == t.at("logits", slice(2, 7))[0].argmax(-1).tolist()


def test_a_sampled_tokens_probability_is_printed_in_significant_digits(tiny):
    """A trial: at temperature 5 the table printed p(chosen) = 0.0000 for tokens the sampler drew (1.86e-05 each),
    beside a chart that said 1.882e-05: every printed p(chosen) of a sampled step is above 0 and its value."""
    from gpt2viz.ui import classroom

    gen = generate(tiny, IDS, 4, choose=Sampler(temperature=5.0, seed=0))
    for trace, chosen, row in zip(gen.traces, gen.ids, classroom.generation_rows(gen, tiny.config, 5.0, None)):
        p = float(classroom.shown_distribution(trace, 5.0, None)[chosen])
        assert p < 5e-5 and float(row["p(chosen)"]) == pytest.approx(p, rel=1e-3), (p, row["p(chosen)"])
