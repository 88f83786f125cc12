"""The recording model: golden names per mode, and the invariants every trace must satisfy."""

from pathlib import Path

import pytest
import torch

from gpt2viz.model.gpt2 import causal_mask
from gpt2viz.model.modes import Mode, run

GOLDEN = Path(__file__).parent / "golden"
IDS = [464, 2068, 7586, 21831, 18045, 625, 262, 16931]


@pytest.mark.parametrize("mode", list(Mode))
def test_golden_names_in_execution_order(tiny, mode):
    want = (GOLDEN / f"names_tiny_{mode.value}.txt").read_text().split()
    assert run(tiny, IDS, mode).names == want


def test_names_filter_records_only_what_is_asked(tiny):
    trace = run(tiny, IDS, "full", names=["blocks.*.ln1.mean", "ln_f.var"])
    assert trace.names == ["blocks.0.ln1.mean", "blocks.1.ln1.mean", "ln_f.var"]


def test_decode_records_its_pattern_row_not_the_keys_it_comes_from(tiny):
    """A generation's every step asks for the pattern: decode stores its one query row [B, nh, 1, L], a
    64th of the keys it would derive from on gpt2 (each step kept its own), the same values."""
    trace = run(tiny, IDS, Mode.DECODE, names=["blocks.1.attn.pattern", "logits"])
    assert set(trace.tensors) == {"blocks.1.attn.pattern", "logits"}
    assert trace["blocks.1.attn.pattern"].shape == (1, tiny.config.n_head, 1, len(IDS))
    whole = run(tiny, IDS, Mode.DECODE)  # two runs: within rounding (the matrix library may round another
    # buffer's alignment differently on another machine), far below what a wrong row or block moves
    torch.testing.assert_close(trace["blocks.1.attn.pattern"], whole["blocks.1.attn.pattern"], rtol=0, atol=1e-6)
    torch.testing.assert_close(trace["logits"], whole["logits"], rtol=0, atol=1e-5)


@pytest.mark.parametrize("mode, keys", [(Mode.FULL, "attn.k"), (Mode.PREFILL, "attn.k_cache")])
def test_asking_for_a_derived_name_records_its_sources(tiny, mode, keys):
    trace = run(tiny, IDS, mode, names=["blocks.1.attn.pattern", "logits"])
    # full derives its logits from the last stream and ln_f's statistics; decode computes one position's
    final = ["blocks.1.resid_post", "ln_f.mean", "ln_f.var"] if mode is Mode.FULL else ["logits"]
    assert set(trace.tensors) == {"blocks.1.attn.q", f"blocks.1.{keys}", *final}
    final += ["ln_f.normalized", "ln_f.out", "logits"] if mode is Mode.FULL else []  # and what derives from them
    assert trace.names == ["blocks.1.attn.q", f"blocks.1.{keys}", "blocks.1.attn.scores",
                           "blocks.1.attn.pattern", *final]
    assert torch.equal(trace["blocks.1.attn.pattern"], run(tiny, IDS, mode)["blocks.1.attn.pattern"])
    assert torch.equal(trace["logits"], run(tiny, IDS, mode)["logits"])


def test_recording_keeps_references_not_copies(tiny):
    trace = run(tiny, IDS, "full")
    qkv, q = trace["blocks.0.attn.qkv"], trace["blocks.0.attn.q"]
    assert q.untyped_storage().data_ptr() == qkv.untyped_storage().data_ptr()  # q is a view of qkv
    # the output of one block is the input of the next: one tensor, two names
    assert trace["blocks.0.resid_post"].data_ptr() == trace["blocks.1.resid_pre"].data_ptr()


@pytest.mark.parametrize("mode", [Mode.FULL, Mode.PREFILL, Mode.DECODE])
def test_residual_stream_adds_up(tiny, mode):
    t = run(tiny, IDS, mode)
    for i in range(tiny.config.n_layer):
        def g(short, i=i):
            return t.get(short, i)
        torch.testing.assert_close(g("resid_mid"), g("resid_pre") + g("attn.out"), rtol=0, atol=0)
        torch.testing.assert_close(g("resid_post"), g("resid_mid") + g("mlp.out"), rtol=0, atol=0)
    torch.testing.assert_close(t["blocks.0.resid_pre"], t["embed.out"], rtol=0, atol=0)
    torch.testing.assert_close(t["embed.out"], t["embed.tok"] + t["embed.pos"], rtol=0, atol=0)


@pytest.mark.parametrize("mode", [Mode.FULL, Mode.DECODE])
def test_pattern_is_causal_softmax(tiny, mode):
    t = run(tiny, IDS, mode)
    for i in range(tiny.config.n_layer):
        pattern = t.get("attn.pattern", i)  # [B, nh, T, L]
        T, L = pattern.shape[-2:]
        assert (T, L) == (t.T, t.L)
        torch.testing.assert_close(pattern.sum(-1), torch.ones(pattern.shape[:-1]))
        assert (pattern[..., causal_mask(T, L)] == 0).all()
        assert (pattern[..., ~causal_mask(T, L)] > 0).all()
        scores = t.get("attn.scores", i)
        torch.testing.assert_close(pattern, torch.softmax(scores.masked_fill(causal_mask(T, L), -1e9), -1))


def test_lower_right_mask():
    assert causal_mask(3, 3).tolist() == [[False, True, True], [False, False, True], [False, False, False]]
    assert causal_mask(1, 4).tolist() == [[False] * 4]  # decode reads every cached key
    assert causal_mask(2, 4).tolist() == [[False, False, False, True], [False] * 4]


def test_layernorm_records_its_statistics(tiny):
    t = run(tiny, IDS, "full")
    for prefix, x, params in [("blocks.1.ln1.", t["blocks.1.resid_pre"], tiny.h[1].ln_1),
                              ("blocks.0.ln2.", t["blocks.0.resid_mid"], tiny.h[0].ln_2),
                              ("ln_f.", t["blocks.1.resid_post"], tiny.ln_f)]:
        mean, var = t[prefix + "mean"], t[prefix + "var"]
        torch.testing.assert_close(mean, x.mean(-1, keepdim=True))
        torch.testing.assert_close(var, x.var(-1, keepdim=True, unbiased=False))
        normalized = t[prefix + "normalized"]
        torch.testing.assert_close(normalized, (x - mean) / torch.sqrt(var + 1e-5))
        torch.testing.assert_close(t[prefix + "out"], normalized * params.weight + params.bias)
        torch.testing.assert_close(t[prefix + "out"], torch.nn.functional.layer_norm(
            x, x.shape[-1:], params.weight, params.bias, 1e-5))


def test_merge_is_heads_moved_and_joined(tiny):
    t = run(tiny, IDS, "full")
    z, merged = t["blocks.0.attn.z"], t["blocks.0.attn.merged"]  # [B, nh, T, dh], [B, T, d]
    B, nh, T, dh = z.shape
    assert torch.equal(merged, z.permute(0, 2, 1, 3).reshape(B, T, nh * dh))
    assert torch.equal(merged[0, :, dh:2 * dh], z[0, 1])  # head 1 owns columns dh..2dh


def test_qkv_splits_into_heads(tiny):
    t = run(tiny, IDS, "full")
    qkv, d, dh = t["blocks.0.attn.qkv"], tiny.config.n_embd, tiny.config.d_head
    assert torch.equal(t["blocks.0.attn.k"][0, 2], qkv[0, :, d + 2 * dh: d + 3 * dh])
    q, k = t["blocks.0.attn.q"], t["blocks.0.attn.k"]  # [B, nh, T, dh]
    torch.testing.assert_close(t["blocks.0.attn.scores"], q @ k.transpose(-1, -2) / dh**0.5)


def test_mlp_is_gelu_tanh(tiny):
    t = run(tiny, IDS, "full")
    x = t["blocks.0.mlp.pre"]
    manual = 0.5 * x * (1 + torch.tanh((2 / torch.pi) ** 0.5 * (x + 0.044715 * x**3)))
    torch.testing.assert_close(t["blocks.0.mlp.post"], manual)


def test_decode_positions_are_offset_by_P(tiny):
    t = run(tiny, IDS, "decode")
    assert (len(IDS) - 1, 1, len(IDS)) == (t.P, t.T, t.L)
    torch.testing.assert_close(t["embed.pos"], tiny.wpe.weight[len(IDS) - 1:len(IDS)])
    assert t["blocks.0.attn.k_cache"].shape == (1, 4, len(IDS), 16)
    assert t["blocks.0.attn.scores"].shape == (1, 4, 1, len(IDS))


def test_context_limit_is_enforced(tiny):
    with pytest.raises(ValueError, match="exceed"):
        run(tiny, list(range(1025)), "full")


@pytest.mark.parametrize("mode,steps", [
    (Mode.FULL, ["forward pass: block 0", "forward pass: block 1"]),
    (Mode.TRAINING, ["forward pass: block 0", "forward pass: block 1", "backward pass: block 1",
                     "backward pass: block 0"]),
    (Mode.DECODE, ["caching the 7 tokens before: block 0", "caching the 7 tokens before: block 1",
                   "the new token: block 0", "the new token: block 1"])])
def test_a_run_tells_its_progress_block_by_block(tiny, mode, steps):
    """A long run (33 s of training on 1,024 tokens of gpt2) says how far it got, from before its first
    block (0 steps done: a page shows the run at once, not after a block of a long text)."""
    told = []
    run(tiny, IDS, mode, progress=lambda done, total, what: told.append((done, total, what)))
    assert told == [(0, len(steps), steps[0])] + [(i + 1, len(steps), what) for i, what in enumerate(steps)]


def test_a_backward_pass_a_block_at_a_time_hands_on_each_gradient_and_stores_none(tiny):
    """The Training page's run: the blocks' weight gradients handed on a block at a time from the last
    (modes.run's on_grad), never stored, equal bit for bit to those of one backward pass of everything (which
    the embedding's gradient, outside the blocks, makes one autograd call); its progress told once
    a block."""
    from gpt2viz.ui.classroom import TRAINING_NEEDS

    handed, told = [], []
    trace = run(tiny, IDS, Mode.TRAINING, names=TRAINING_NEEDS, seed=2, on_grad=lambda n, g: handed.append((n, g)),
                progress=lambda done, total, what: told.append((done, total, what)))
    whole = run(tiny, IDS, Mode.TRAINING, seed=2)  # every name: the embedding's gradient too, in one call
    n = tiny.config.n_layer
    assert [name.split(".")[1] for name, _ in handed] == [str(i) for i in reversed(range(n)) for _ in range(6)]
    assert not [k for k in trace.tensors if k.startswith("grad.h.")]  # handed on, not stored
    for name, grad in handed:  # autograd runs the same nodes on the same values either way: bit for bit
        assert torch.equal(grad, whole["grad." + name]), name
    for i in range(n):  # the stream's gradients, stored
        assert torch.equal(trace[f"grad.blocks.{i}.resid_pre"], whole[f"grad.blocks.{i}.resid_pre"])
    assert torch.equal(trace["loss"], whole["loss"])
    assert [what for _, _, what in told[-n:]] == [f"backward pass: block {i}" for i in reversed(range(n))]
    assert [done for done, _, _ in told] == list(range(2 * n + 1)) and {total for _, total, _ in told} == {2 * n}


def test_generation_tells_each_step(tiny):
    from gpt2viz.model.modes import generate

    told = []
    generate(tiny, IDS, 3, progress=lambda done, total, what: told.append((done, total)))
    assert told == [(0, 3), (1, 3), (2, 3), (3, 3)]


@pytest.mark.parametrize("mode,grads", [(Mode.FULL, False), (Mode.TRAINING, False), (Mode.TRAINING, True)])
def test_an_intervention_on_the_logits_is_reached_though_the_logits_are_derived(tiny, mode, grads):
    """Full and training mode derive their logits from ln_f.out, so a run that records only the loss
    (or nothing of the output) would never compute them: an intervention on them must still be made,
    and training's loss is then that of the changed logits."""
    from gpt2viz.model.interventions import Intervention

    names = ["loss*", "grad.blocks.0.resid_pre"] if grads else ["loss*"] if mode is Mode.TRAINING else ["ln_f.out"]
    halved = run(tiny, IDS, mode, names=names, seed=1, interventions=[Intervention("logits", "scale", factor=0.5)])
    assert halved.intervened == ("logits",)
    if mode is Mode.TRAINING:
        plain = run(tiny, IDS, mode, seed=1, grads=grads)
        logits = plain["logits"][0] * 0.5  # [T, V]
        want = torch.nn.functional.cross_entropy(logits[:-1], torch.tensor(IDS[1:]), reduction="none")
        torch.testing.assert_close(halved["loss.per_token"][0], want, rtol=1e-5, atol=1e-5)
        assert "loss" in halved.tensors and torch.equal(halved["loss"], halved["loss.per_token"].mean())
