"""The one-knob experiments and the intervention kinds they need (scale, function), checked against
computations made apart from the recorded q and k or the logits, in full and training modes."""

import math

import pytest
import torch

from gpt2viz.analysis import experiments as ex
from gpt2viz.analysis.whatif import Target, knockout, last_logits
from gpt2viz.model.gpt2 import causal_mask
from gpt2viz.model.interventions import Intervention
from gpt2viz.model.modes import run
from gpt2viz.model.tokenizer import encode
from gpt2viz.spec.schema import Mode

IDS = encode("The quick brown fox jumps over the lazy dog because")
ROWS = [Mode.FULL, Mode.TRAINING]


def plain(model, mode, names=None):
    """The run without any change (TRAINING: dropout off), every tensor recorded."""
    kw = {"dropout": False, "grads": False} if mode is Mode.TRAINING else {}
    return run(model, IDS, mode, names=names, **kw)


def masked_softmax(scores: torch.Tensor) -> torch.Tensor:
    T, L = scores.shape[-2:]
    return torch.softmax(scores.masked_fill(causal_mask(T, L), float("-inf")), dim=-1)


# ---------------------------------------------------------------------------- the intervention kinds
def test_scale_multiplies_only_its_slice(tiny):
    base = plain(tiny, Mode.FULL)
    iv = Intervention("blocks.1.attn.scores", "scale", head=2, factor=3.0)
    scores = run(tiny, IDS, interventions=[iv])["blocks.1.attn.scores"]  # [1, nh, T, T]
    want = base["blocks.1.attn.scores"].clone()
    want[:, 2] *= 3.0
    torch.testing.assert_close(scores, want, rtol=1e-6, atol=0)


@pytest.mark.parametrize("kw,msg", [({"method": "scale"}, "a scale needs a factor"),
                                    ({"method": "zero", "factor": 2.0}, "only a scale takes one"),
                                    ({"method": "function"}, "a function needs a function"),
                                    ({"method": "zero", "reads": ("embed.pos",)}, "only a function reads")])
def test_new_kinds_check_their_arguments(kw, msg):
    with pytest.raises(ValueError, match=msg):
        Intervention("blocks.0.attn.scores", **kw)


def test_a_function_must_read_what_came_before(tiny):
    late = Intervention("blocks.0.attn.scores", "function", fn=lambda x, y: x, reads=("blocks.0.attn.pattern",))
    with pytest.raises(ValueError, match="reads blocks.0.attn.pattern, which this run did not compute before"):
        run(tiny, IDS, interventions=[late])


def test_a_function_in_one_batch_row_leaves_the_other_row_alone(tiny):
    """The row machinery: row 1 without the mask in block 0 (its earlier positions then differ, and
    block 1's last position reads them), row 0 the plain run."""
    iv = ex.no_mask_interventions(tiny.config.n_layer)[0]
    rows = last_logits(tiny, IDS, [Intervention(iv.name, "function", fn=iv.fn, reads=iv.reads, row=1)])  # [2, V]
    torch.testing.assert_close(rows[0], plain(tiny, Mode.FULL)["logits"][0, -1], rtol=0, atol=1e-5)
    torch.testing.assert_close(rows[1], run(tiny, IDS, interventions=[iv])["logits"][0, -1], rtol=0, atol=1e-5)
    assert not torch.allclose(rows[0], rows[1])


def test_training_runs_interventions_and_their_gradients(tiny):
    """A knock-out in TRAINING (dropout off) computes FULL's knocked-out logits, and its gradients."""
    target = Target(1, "head", 2)
    trained = run(tiny, IDS, Mode.TRAINING, dropout=False, interventions=[target.intervention("zero")])
    assert trained.intervened == ("blocks.1.attn.z",)
    torch.testing.assert_close(trained["logits"], knockout(tiny, IDS, target, "zero")["logits"], rtol=0, atol=1e-5)
    # head 2's output is zero, so W_O's rows that read it get no gradient
    dh = tiny.config.d_head
    grad = trained["grad.h.1.attn.c_proj.weight"]  # [d, d]
    assert not grad[2 * dh:3 * dh].any() and grad[:2 * dh].abs().sum() > 0


# ---------------------------------------------------------------------------- 1. no 1/sqrt(dh)
@pytest.mark.parametrize("mode", ROWS)
@pytest.mark.parametrize("block,head", [(0, 1), (1, 3)])
def test_no_scale_pattern_is_the_softmax_of_the_unscaled_scores(tiny, mode, block, head):
    base = plain(tiny, mode)
    q, k = base.get("attn.q", block)[0], base.get("attn.k", block)[0]  # [nh, T, dh]
    out = ex.no_scale(tiny, IDS, mode, block, head)
    unscaled = masked_softmax(q @ k.transpose(-1, -2))  # [nh, T, T], no 1/sqrt(dh)
    scaled = masked_softmax(q @ k.transpose(-1, -2) / math.sqrt(tiny.config.d_head))
    torch.testing.assert_close(out.pattern_without, unscaled[head], rtol=0, atol=1e-6)
    torch.testing.assert_close(out.pattern_with, scaled[head], rtol=0, atol=1e-6)
    assert out.score_ratio == pytest.approx(math.sqrt(tiny.config.d_head), rel=1e-5)
    def h(p):
        return -(p * p.clamp_min(1e-30).log()).sum(-1).mean(-1)  # [nh]
    torch.testing.assert_close(out.entropy_without, h(unscaled), rtol=0, atol=1e-5)
    torch.testing.assert_close(out.entropy_with, h(scaled), rtol=0, atol=1e-5)
    assert out.entropy_without.mean() < out.entropy_with.mean() and out.answer == "sharper"
    assert f"{out.entropy_without.mean():.4g} nats instead of {out.entropy_with.mean():.4g}" in out.reading


def test_no_scale_in_decode_reads_the_last_row(tiny):
    full, decode = ex.no_scale(tiny, IDS, Mode.FULL, 1, 0), ex.no_scale(tiny, IDS, Mode.DECODE, 1, 0)
    torch.testing.assert_close(decode.pattern_without[0], full.pattern_without[-1], rtol=0, atol=1e-6)


# ---------------------------------------------------------------------------- 2. temperature
@pytest.mark.parametrize("mode", [*ROWS, Mode.DECODE])
def test_temperature_zero_is_the_argmax_and_two_halves_the_logits(tiny, mode):
    logits = plain(tiny, Mode.FULL, ["logits"])["logits"][0, -1]  # [V]
    out = ex.temperatures(tiny, IDS, mode)
    top = list(out.top_ids)
    assert top[0] == int(logits.argmax()) and out.probs[0, 0] == 1 and not out.probs[0, 1:].any()
    # rtol 1e-5: decode computes the last position apart from the full pass these logits come from
    torch.testing.assert_close(out.probs[1], torch.softmax(logits.double(), -1)[top], rtol=1e-5, atol=0)
    torch.testing.assert_close(out.probs[2], torch.softmax(logits.double() / 2, -1)[top], rtol=1e-5, atol=0)
    p2 = torch.softmax(logits.double() / 2, -1)
    assert float(out.entropies[0]) == 0 and float(out.entropies[2]) == pytest.approx(float(-(p2 * p2.log()).sum()),
                                                                                      rel=1e-5)
    assert out.answer == "2"


def test_a_notebook_mode_given_as_its_name_is_that_mode(tiny):
    """"training" (a string, as a notebook types it) runs without dropout like Mode.TRAINING: the two
    runs of an experiment then differ by its knob alone."""
    assert tiny.config.dropout > 0
    for f in (ex.temperatures, ex.no_scale):
        by_name, by_mode = f(tiny, IDS, "training", 1, 0), f(tiny, IDS, Mode.TRAINING, 1, 0)
        assert by_name.reading == by_mode.reading, f.__name__
    assert ex.no_mask(tiny, IDS, "training").reading == ex.no_mask(tiny, IDS, Mode.FULL).reading


def test_the_temperature_experiment_sums_to_one_on_the_demo_model():
    """The demo model gives most tokens one logit: a float32 softmax of them summed to 0.99998 and
    printed the entropy at temperature 2 a digit off."""
    from gpt2viz.model.demo_model import DEMO_PATH
    from gpt2viz.model.weights import load_safetensors

    if not DEMO_PATH.is_file():
        pytest.skip("no demo model file")
    demo = load_safetensors(str(DEMO_PATH)).model
    ids = encode(" people play one good game after work")
    logits = run(demo, ids, Mode.FULL, names=["logits"])["logits"][0, -1].double()  # [V]
    out = ex.temperatures(demo, ids, Mode.FULL)
    for i, t in enumerate((1.0, 2.0), 1):
        p = torch.softmax(logits / t, -1)
        assert float(out.entropies[i]) == pytest.approx(float(-(p * p.log()).sum()), rel=1e-12, abs=0)
        assert f"{float(out.entropies[i]):.4g}" in out.reading


# ---------------------------------------------------------------------------- 3. no causal mask
@pytest.mark.parametrize("mode", ROWS)
def test_without_the_mask_the_future_leaks_into_every_earlier_position(tiny, mode):
    out = ex.no_mask(tiny, IDS, mode)
    assert len(out.moved_with) == len(IDS) and out.new_token != IDS[-1]
    assert float(out.moved_with[:-1].max()) < 1e-5 and float(out.moved_with[-1]) > 1e-3
    assert float(out.moved_without[:-1].min()) > 1e-5 and out.answer == "every position"


@pytest.mark.parametrize("mode", ROWS)
def test_the_unmasked_pattern_is_the_softmax_over_every_key(tiny, mode):
    base = plain(tiny, mode)
    kw = {"dropout": False, "grads": False} if mode is Mode.TRAINING else {}
    free = run(tiny, IDS, mode, interventions=ex.no_mask_interventions(tiny.config.n_layer), **kw)
    q, k = base.get("attn.q", 0)[0], base.get("attn.k", 0)[0]  # [nh, T, dh]: block 0 reads the same input
    want = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(tiny.config.d_head), -1)  # [nh, T, T]
    torch.testing.assert_close(free.get("attn.pattern", 0)[0], want, rtol=0, atol=1e-6)
    assert free.get("attn.pattern", 0)[0, :, 0, 1:].sum() > 0  # position 0 reads later keys


def test_the_mask_experiment_needs_every_position(tiny):
    with pytest.raises(ValueError, match="full or training"):
        ex.no_mask(tiny, IDS, Mode.DECODE)


# ---------------------------------------------------------------------------- 4. no position embeddings
@pytest.mark.parametrize("mode", ROWS)
def test_without_positions_block_0_weights_follow_the_tokens(tiny, mode):
    out = ex.no_position(tiny, IDS, mode, head=2)
    base = plain(tiny, mode).get("attn.pattern", 0)[0, 2, -1]  # [T] the text's own order
    torch.testing.assert_close(out.with_pos[0], base, rtol=0, atol=1e-6)
    assert out.moved_without < 1e-6 and out.moved_with > 1e-4 and out.answer == "the same weight"
    torch.testing.assert_close(out.without_pos[0], out.without_pos[1], rtol=0, atol=1e-6)
    # read back by hand: the reversed text's last row, token by token
    kw = {"dropout": False, "grads": False} if mode is Mode.TRAINING else {}
    rev = run(tiny, ex.reverse_earlier(IDS), mode, interventions=[Intervention("embed.pos", "zero")], **kw)
    row = rev.get("attn.pattern", 0)[0, 2, -1]  # [T]
    T = len(IDS)
    for j in range(T - 1):  # token j of the text stands at T - 2 - j in the reversed one
        assert float(row[T - 2 - j]) == pytest.approx(float(out.without_pos[0, j]), abs=1e-6)


def test_reverse_earlier_keeps_the_last_token_last():
    assert ex.reverse_earlier([1, 2, 3, 4]) == [3, 2, 1, 4]


# ---------------------------------------------------------------------------- the chart the answers use
def test_grouped_bars_draws_one_trace_a_series_on_a_numeric_axis():
    from gpt2viz import plots

    fig = plots.grouped_bars([[1, 2, 3], [3, 2, 1]], ["with", "without"], ["␣the", "␣cat", "␣the"], "t", "weight")
    assert [t.name for t in fig.data] == ["with", "without"] and fig.layout.barmode == "group"
    assert list(fig.data[1].y) == [3, 2, 1] and list(fig.data[0].x) == [0, 1, 2]  # repeated tokens stay apart
    assert list(fig.layout.xaxis.ticktext) == ["␣the", "␣cat", "␣the"] and fig.layout.yaxis.title.text == "weight"
    assert fig.data[0].marker.color != fig.data[1].marker.color and fig.layout.yaxis.type != "log"
    assert plots.grouped_bars([[1e-5, 1]], ["p"], ["a", "b"], "t", "p", log=True).layout.yaxis.type == "log"
    long = plots.grouped_bars([list(range(100))], ["p"], [f"{i}·␣word" for i in range(100)], "t", "p").layout.xaxis
    assert len(long.tickvals) <= plots.MAX_TICKS and long.tickangle == -45 and long.ticktext[1] == "4·␣word"
    with pytest.raises(ValueError, match="categories"):
        plots.grouped_bars([[1, 2]], ["a"], ["x"], "t", "y")
    with pytest.raises(ValueError, match="at most 4"):
        plots.grouped_bars([[1]] * 5, list("abcde"), ["x"], "t", "y")
