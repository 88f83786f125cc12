"""TRAINING mode: seeded dropout, next-token loss, and the recorded gradients."""

import torch
import torch.nn.functional as F

from gpt2viz.model.modes import Mode, run
from gpt2viz.spec.schema import recorded_names

IDS = [464, 2068, 7586, 21831, 18045, 625, 262, 16931]


def test_dropout_is_seeded_and_fires_at_rate_p(tiny):
    a, b, c = (run(tiny, IDS, Mode.TRAINING, seed=s, grads=False) for s in (7, 7, 8))
    mask = a["blocks.0.mlp.out_dropout_mask"]
    assert mask.dtype == torch.bool and mask.shape == (1, 8, 64)
    assert torch.equal(mask, b["blocks.0.mlp.out_dropout_mask"])
    assert not torch.equal(mask, c["blocks.0.mlp.out_dropout_mask"])
    kept = torch.cat([a[n].flatten().float() for n in a.names if n.endswith("dropout_mask")]).mean()
    assert 0.85 < kept < 0.95  # p = 0.1


def test_dropout_masks_are_applied(tiny):
    t = run(tiny, IDS, Mode.TRAINING, seed=3, grads=False)
    keep = t["embed.dropout_mask"]
    torch.testing.assert_close(t["blocks.0.resid_pre"], t["embed.out"] * keep / 0.9)
    # what the block adds is the dropped-out delta, so the residual stream still adds up
    torch.testing.assert_close(t["blocks.0.resid_mid"], t["blocks.0.resid_pre"] + t["blocks.0.attn.out"])
    assert (t["blocks.0.attn.out"][~t["blocks.0.attn.out_dropout_mask"]] == 0).all()
    dropped = t["blocks.1.attn.pattern"] * t["blocks.1.attn.pattern_dropout_mask"] / 0.9
    v = t["blocks.1.attn.v"]
    torch.testing.assert_close(t["blocks.1.attn.z"], dropped @ v)


def test_loss_is_mean_next_token_cross_entropy(tiny):
    t = run(tiny, IDS, Mode.TRAINING, grads=False)
    logits, targets = t["logits"][0, :-1], torch.tensor(IDS[1:])
    torch.testing.assert_close(t["loss.per_token"][0], F.cross_entropy(logits, targets, reduction="none"))
    torch.testing.assert_close(t["loss"], t["loss.per_token"].mean())
    assert t["loss"].shape == ()


def test_gradients_equal_backward(tiny):
    t = run(tiny, IDS, Mode.TRAINING, seed=5)
    model = type(tiny)(tiny.config)
    model.load_state_dict(tiny.state_dict())
    again = run(model, IDS, Mode.TRAINING, seed=5, grads=False)  # same dropout masks, no grads yet
    assert torch.equal(again["loss"], t["loss"])
    # an independent backward through torch's own .backward() on a fresh graph
    from gpt2viz.model.gpt2 import Dropout
    from gpt2viz.model.record import Recorder
    logits, _ = model(torch.tensor([IDS]), Recorder.off(), drop=Dropout(0.1, 5))
    F.cross_entropy(logits[0, :-1], torch.tensor(IDS[1:])).backward()
    for name, p in model.named_parameters():
        torch.testing.assert_close(t["grad." + name], p.grad, rtol=1e-4, atol=1e-6)
    assert t["grad.blocks.0.resid_post"].shape == (1, 8, 64)
    torch.testing.assert_close(t["grad.blocks.0.resid_post"], t["grad.blocks.1.resid_pre"])


def test_training_needs_two_tokens(tiny):
    import pytest
    with pytest.raises(ValueError, match="at least 2 tokens"):
        run(tiny, [464], Mode.TRAINING)


def test_training_without_dropout_is_the_evaluation_loss(tiny):
    """dropout=False: no masks, the names the schema lists, and the loss of the same text in FULL mode."""
    t = run(tiny, IDS, Mode.TRAINING, dropout=False, grads=False)
    assert not [n for n in t.names if n.endswith("dropout_mask")]
    schema_names = recorded_names(tiny.config, Mode.TRAINING, dropout=False)
    assert t.names == [n for n in schema_names if not n.startswith("grad.")]
    logits = run(tiny, IDS, Mode.FULL, names=["logits"])["logits"][0, :-1]  # [T-1, V]
    torch.testing.assert_close(t["loss"], F.cross_entropy(logits, torch.tensor(IDS[1:])))
    with_dropout = run(tiny, IDS, Mode.TRAINING, grads=False)
    assert not torch.equal(with_dropout["loss"], t["loss"])


def test_recorded_names_sit_on_their_documented_side_of_dropout(tiny):
    """schema's docstring: embed.out and attn.pattern before their dropout, attn.out and mlp.out after."""
    t = run(tiny, IDS, Mode.TRAINING, seed=4, grads=False)
    assert (t["embed.out"] != 0).all() and not torch.equal(t["blocks.0.resid_pre"], t["embed.out"])
    torch.testing.assert_close(t["blocks.0.attn.pattern"].sum(-1), torch.ones(1, 4, 8))  # not yet dropped
    for short in ("attn.out", "mlp.out"):  # already dropped: zero where the mask drops
        assert (t.get(short, 1)[~t.get(short + "_dropout_mask", 1)] == 0).all()
