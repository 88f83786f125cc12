"""A knock-out or a sweep resumed from the clean run's input of the block it touches, against the
same knock-out run from the tokens: the prediction and the loss bit for bit where both unembed every
position, within float tolerance where the resumed run unembeds only the last one (a matrix product
of another shape); the relative changes within float tolerance (summed a slice of positions at a time)."""

from dataclasses import replace

import pytest
import torch

from gpt2viz.analysis.whatif import (
    Target,
    changed_most,
    knockout,
    knockout_from,
    log_probs,
    loss_from,
    loss_per_position,
    sweep,
)
from gpt2viz.model.modes import run
from gpt2viz.model.tokenizer import encode
from gpt2viz.model.weights import random_model
from gpt2viz.spec.config import get_config

IDS = encode("When Mary and John went to the store, John gave a drink to Mary because she was")
NEEDS = ("blocks.*.resid_*", "blocks.*.attn.out", "blocks.*.mlp.out", "blocks.*.attn.pattern", "logits")


@pytest.fixture(scope="module")
def four():
    """Four blocks, so that a knock-out can resume in the first, a middle and the last one."""
    return random_model(replace(get_config("tiny"), name="tiny4", n_layer=4), seed=3)


TARGETS = [Target(0, "head", 0), Target(1, "head", 3), Target(3, "head", 2), Target(2, "attn"),
           Target(0, "mlp"), Target(3, "mlp"), Target(1, "neuron", 17)]


@pytest.mark.parametrize("names", [None, NEEDS], ids=["everything", "the page's needs"])
@pytest.mark.parametrize("method", ["zero", "mean"])
@pytest.mark.parametrize("target", TARGETS, ids=lambda t: t.label)
def test_resumed_knockout_is_the_full_one_bit_for_bit(four, target, method, names):
    clean = run(four, IDS, names=names)
    full = knockout(four, IDS, target, method, names=names)
    resumed = knockout_from(four, clean, target, method)
    assert torch.equal(resumed.probs, log_probs(full).exp())
    assert torch.equal(resumed.loss, loss_per_position(full))
    assert resumed.intervened == full.intervened == (target.name,)
    expected = changed_most(clean, full, model=four)  # the logits' change too
    assert [n for n, _ in resumed.changed] == [n for n, _ in expected]  # the same tensors, in the same order
    assert [c for _, c in resumed.changed] == pytest.approx([c for _, c in expected], rel=1e-4)  # summed by slices
    assert resumed.changed  # something after the knock-out moved


@pytest.mark.parametrize("method", ["zero", "mean"])
@pytest.mark.parametrize("target", TARGETS[:4] + TARGETS[5:], ids=lambda t: t.label)
def test_last_position_only_is_within_float_tolerance(four, target, method):
    clean = run(four, IDS, names=NEEDS)
    full = knockout(four, IDS, target, method, names=NEEDS)
    resumed = knockout_from(four, clean, target, method, every_position=False)
    assert resumed.loss is None
    torch.testing.assert_close(resumed.probs, log_probs(full).exp(), rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(loss_from(four, resumed.final, IDS), loss_per_position(full), rtol=1e-5, atol=1e-5)
    expected = dict(changed_most(clean, full, model=four))
    got = dict(resumed.changed)
    assert got.keys() == expected.keys()  # the logits' change among them, computed without unembedding
    for name, value in expected.items():
        assert got[name] == pytest.approx(value, rel=1e-4), name


def test_resuming_tells_progress_block_by_block(four):
    told = []
    knockout_from(four, run(four, IDS, names=NEEDS), Target(1, "mlp"), "zero",
                  progress=lambda done, total, what: told.append((done, total, what)))
    assert told == [(0, 3, "forward pass: block 1"), (1, 3, "forward pass: block 1"), (2, 3, "forward pass: block 2"),
                    (3, 3, "forward pass: block 3")]


@pytest.mark.parametrize("part,method", [("head", "zero"), ("head", "mean"), ("mlp", "zero"), ("attn", "mean")])
def test_resumed_sweep_is_the_full_one_bit_for_bit(four, part, method):
    clean = run(four, IDS, names=NEEDS)
    token = int(clean["logits"][0, -1].argmax())
    done = []
    resumed = sweep(four, IDS, part, method, token, batch=3, clean=clean, progress=lambda d, n: done.append((d, n)))
    assert torch.equal(resumed, sweep(four, IDS, part, method, token, batch=3))
    rows = 4 * (4 if part == "head" else 1)
    assert done[-1] == (rows, rows) and len(done) == -(-rows // 3)


def test_a_sweep_hands_out_its_rows_as_they_finish(four):
    """After each batched run but the last, the grid so far: the rows run equal to the finished grid's,
    bit for bit, the rest NaN; one block's row a run here (batch = n_head), so block by block."""
    clean = run(four, IDS, names=NEEDS)
    token = int(clean["logits"][0, -1].argmax())
    drafts = []
    grid = sweep(four, IDS, "head", "zero", token, batch=4, clean=clean, partial=drafts.append)
    assert len(drafts) == 3  # 4 runs of 4 heads: a draft after each but the last
    for blocks_done, draft in enumerate(drafts, start=1):
        assert draft.shape == grid.shape
        assert torch.equal(draft[:blocks_done], grid[:blocks_done])
        assert draft[blocks_done:].isnan().all()
    assert not grid.isnan().any()


def test_a_sweep_resumes_only_from_its_own_text(four):
    clean = run(four, IDS[:-1], names=NEEDS)
    with pytest.raises(ValueError, match="another text"):
        sweep(four, IDS, "mlp", "zero", 0, clean=clean)


def test_the_logits_change_without_unembedding_matches_the_unembedded_one(four):
    """‖Δx W_U^T‖ from W_U^T W_U: the same number as the logits' own change, within float tolerance."""
    clean = run(four, IDS)
    full = knockout(four, IDS, Target(2, "mlp"), "mean")
    direct = float((full["logits"] - clean["logits"]).norm() / clean["logits"].norm())
    got = dict(knockout_from(four, clean, Target(2, "mlp"), "mean", every_position=False).changed)["logits"]
    assert got == pytest.approx(direct, rel=1e-4)
