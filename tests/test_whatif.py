"""Interventions and the "what if" experiments: knock-outs and activation patching, checked against
runs built by hand (a model with a head's output rows zeroed, the clean run itself)."""

import copy

import pytest
import torch

from gpt2viz.analysis.whatif import (
    Target,
    changed_most,
    default_answers,
    knockout,
    last_logits,
    log_probs,
    logit_diff,
    patch,
    restored,
    sweep,
)
from gpt2viz.model.interventions import Intervention
from gpt2viz.model.modes import run
from gpt2viz.model.tokenizer import encode
from gpt2viz.spec.schema import Mode

A = encode("When Mary and John went to the store, John gave a drink to")
B = encode("When Mary and John went to the store, Mary gave a drink to")


def test_inputs_have_equal_length():
    assert len(A) == len(B)


@pytest.mark.parametrize("mode", [Mode.FULL, Mode.DECODE, Mode.PREFILL])
def test_no_intervention_is_the_plain_run_bit_for_bit(tiny, mode):
    plain, none = run(tiny, A, mode), run(tiny, A, mode, interventions=())
    assert plain.names == none.names and none.intervened == ()
    for name in plain.names:
        assert torch.equal(plain[name], none[name]), name


def test_an_intervention_that_changes_nothing_is_bit_for_bit(tiny):
    plain = run(tiny, A)
    same = run(tiny, A, interventions=[Intervention("blocks.1.resid_pre", "patch", source=plain["blocks.1.resid_pre"])])
    assert torch.equal(plain["logits"], same["logits"]) and same.intervened == ("blocks.1.resid_pre",)


def _without_head(model, block: int, head: int):
    """A copy of the model whose c_proj rows reading `head` of `block` are zero."""
    m = copy.deepcopy(model)
    dh = m.config.d_head
    with torch.no_grad():
        m.h[block].attn.c_proj.weight[head * dh:(head + 1) * dh] = 0
    return m


@pytest.mark.parametrize("block,head", [(0, 0), (1, 3)])
def test_zeroing_a_heads_z_is_a_model_without_that_heads_output_rows(tiny, block, head):
    knocked = knockout(tiny, A, Target(block, "head", head), "zero")
    by_hand = run(_without_head(tiny, block, head), A)
    assert knocked.intervened == (f"blocks.{block}.attn.z",)
    assert torch.allclose(knocked["logits"], by_hand["logits"], atol=1e-5)
    assert not torch.allclose(knocked["logits"], run(tiny, A)["logits"], atol=1e-3)


def test_decode_knockout_equals_full_at_the_last_position(tiny):
    target = Target(1, "head", 2)
    full = knockout(tiny, A, target, "zero")
    decode = knockout(tiny, A, target, "zero", mode=Mode.DECODE)
    assert torch.allclose(full["logits"][:, -1], decode["logits"][:, -1], atol=1e-5)
    assert decode.intervened == ("blocks.1.attn.z",)


def test_mean_ablation_uses_the_mean_over_the_texts_positions(tiny):
    clean = run(tiny, A)
    knocked = knockout(tiny, A, Target(1, "head", 2), "mean")
    z, z_clean = knocked.get("attn.z", 1)[0], clean.get("attn.z", 1)[0]  # [nh, T, dh]
    mean = z_clean[2].mean(dim=0)  # [dh]: head 2's output averaged over the T positions
    assert torch.allclose(z[2], mean.expand_as(z[2]))
    assert torch.equal(z[[0, 1, 3]], z_clean[[0, 1, 3]])


@pytest.mark.parametrize("part,name", [("attn", "attn.out"), ("mlp", "mlp.out")])
def test_knocking_out_a_whole_part_zeroes_its_update(tiny, part, name):
    knocked = knockout(tiny, A, Target(0, part), "zero")
    assert knocked.get(name, 0).abs().max() == 0
    assert torch.allclose(knocked.get("resid_post", 0), knocked.get("resid_pre", 0) + knocked.get(
        "attn.out" if part == "mlp" else "mlp.out", 0), atol=1e-6)


def test_one_neuron(tiny):
    knocked = knockout(tiny, A, Target(1, "neuron", 7), "zero")
    post, clean = knocked.get("mlp.post", 1)[0], run(tiny, A).get("mlp.post", 1)[0]  # [T, 4d]
    assert post[:, 7].abs().max() == 0 and torch.equal(post[:, 8:], clean[:, 8:])


def test_sweep_cell_is_a_single_knockout(tiny):
    token = int(run(tiny, A)["logits"][0, -1].argmax())
    grid = sweep(tiny, A, "head", "zero", token, batch=3)
    assert grid.shape == (2, 4)
    clean = log_probs(run(tiny, A))[token]
    for b in range(2):
        for h in range(4):
            single = log_probs(knockout(tiny, A, Target(b, "head", h), "zero"))[token] - clean
            assert abs(float(grid[b, h] - single)) < 1e-4, (b, h)
    mlps = sweep(tiny, A, "mlp", "mean", token)
    assert mlps.shape == (2, 1)
    assert abs(float(mlps[1, 0] - (log_probs(knockout(tiny, A, Target(1, "mlp"), "mean"))[token] - clean))) < 1e-4


def test_patching_all_of_block_0s_input_gives_as_logits_exactly(tiny):
    a, b = run(tiny, A), run(tiny, B)
    patched = run(tiny, B, interventions=[Intervention("blocks.0.resid_pre", "patch", source=a["blocks.0.resid_pre"])])
    assert torch.equal(patched["logits"], a["logits"])
    assert torch.equal(run(tiny, B, interventions=[])["logits"], b["logits"])


def test_restored_fraction_is_0_and_1_at_the_ends(tiny):
    a, b = run(tiny, A), run(tiny, B)
    answers = default_answers(a["logits"][0, -1], b["logits"][0, -1])
    assert answers[0] == int(a["logits"][0, -1].argmax()) and answers[0] != answers[1]
    # the ends as last_logits computes them (one row through ln_f and the unembedding: the full run's
    # last row differs in rounding, ~2e-7, against a logit difference of ~0.007 on random weights)
    ends = last_logits(tiny, A, ())[0], last_logits(tiny, B, ())[0]
    m_a, m_b = (float(logit_diff(logits, answers)) for logits in ends)
    every = [Intervention("blocks.0.resid_pre", "patch", position=p, source=a["blocks.0.resid_pre"])
             for p in range(len(A))]
    patched = last_logits(tiny, B, every)[0]
    assert float(restored(logit_diff(patched, answers), m_a, m_b)) == pytest.approx(1.0, abs=1e-5)
    unpatched = last_logits(tiny, B, ())[0]
    assert float(restored(logit_diff(unpatched, answers), m_a, m_b)) == pytest.approx(0.0, abs=1e-5)


def test_patch_grid(tiny):
    result = patch(tiny, A, B, batch=5)
    assert result.resid.shape == (2, len(A)) and result.heads.shape == (2, 4)
    # positions before the first difference carry the same values in both runs: nothing to restore
    first = next(i for i, (x, y) in enumerate(zip(A, B)) if x != y)
    assert result.resid[:, :first].abs().max() < 1e-4
    # block 0 at the differing position carries everything that differs: all of it comes back
    assert float(result.resid[0, first]) == pytest.approx(1.0, abs=1e-4)
    # one cell by hand
    source = run(tiny, A)
    one = Intervention("blocks.1.attn.z", "patch", head=2, source=source.get("attn.z", 1))
    m = last_logits(tiny, B, [one])[0]
    expect = restored(m[result.answers[0]] - m[result.answers[1]], result.clean_diff, result.corrupt_diff)
    assert float(result.heads[1, 2]) == pytest.approx(float(expect), abs=1e-4)


def test_margins_too_close_to_measure_give_no_fraction_and_no_run(tiny, monkeypatch):
    """A fraction of an m_A − m_B of float32's rounding is a ratio of rounding: NaN (the CLI's null), no patched run."""
    import gpt2viz.analysis.whatif as whatif

    def no_runs(*args, **kwargs):
        raise AssertionError("a patched run was made")
    monkeypatch.setattr(whatif, "batched", no_runs)
    same = patch(tiny, A, B, (5, 5))  # one token against itself: both margins 0
    assert same.clean_diff == same.corrupt_diff == 0
    assert torch.isnan(same.resid).all() and torch.isnan(same.heads).all()


def test_patching_texts_of_different_length_is_refused(tiny):
    with pytest.raises(ValueError, match="equal length"):
        patch(tiny, A, B[:-1])


@pytest.mark.parametrize("bad,match", [
    (lambda: Intervention("blocks.0.attn.z", "shuffle"), "unknown method"),
    (lambda: Intervention("blocks.0.resid_pre", "zero", head=1), "no head axis"),
    (lambda: Intervention("blocks.0.resid_pre", "patch"), "source"),
    (lambda: Target(5, "head").check(__import__("gpt2viz.spec.config").config.get_config("tiny")), "block"),
])
def test_bad_interventions_say_what_is_wrong(bad, match):
    with pytest.raises(ValueError, match=match):
        bad()


def test_an_intervention_where_nothing_is_recorded_is_refused(tiny):
    with pytest.raises(ValueError, match="no recording point blocks.0.attn.k_cache"):
        run(tiny, A, interventions=[Intervention("blocks.0.attn.k_cache", "zero")])
    with pytest.raises(ValueError, match="no recording point blocks.9.attn.z"):
        last_logits(tiny, A, [Intervention("blocks.9.attn.z", "zero", head=0)])


def test_mean_in_decode_is_refused(tiny):
    with pytest.raises(ValueError, match="full mode"):
        knockout(tiny, A, Target(0, "head", 0), "mean", mode=Mode.DECODE)


def test_trace_keeps_what_was_intervened_on(tiny, tmp_path):
    knocked = knockout(tiny, A, Target(0, "mlp"), "zero")
    knocked.save(tmp_path / "t.safetensors")
    from gpt2viz.model.trace import Trace
    assert Trace.load(tmp_path / "t.safetensors").intervened == ("blocks.0.mlp.out",)


# ---------------------------------------------------------------------------- TransformerLens
def _hooked(hf, path):
    """TransformerLens on the weights of `hf` (a transformers GPT-2 saved at `path`), with its hook
    names: a TransformerBridge (TransformerLens 4) without weight processing, or a
    HookedTransformer (TransformerLens 3) with the weights converted as TransformerLens converts them."""
    tl = pytest.importorskip("transformer_lens")
    try:
        from transformer_lens.model_bridge import TransformerBridge
    except ImportError:  # TransformerLens 3
        from transformer_lens.loading_from_pretrained import convert_gpt2_weights
        c = hf.config
        cfg = tl.HookedTransformerConfig(n_layers=c.n_layer, d_model=c.n_embd, n_heads=c.n_head,
                                         d_head=c.n_embd // c.n_head, d_mlp=4 * c.n_embd, d_vocab=c.vocab_size,
                                         n_ctx=c.n_positions, act_fn="gelu_new", normalization_type="LN",
                                         eps=c.layer_norm_epsilon)
        model = tl.HookedTransformer(cfg)
        model.load_state_dict(convert_gpt2_weights(hf, cfg), strict=False)
        return model.eval()
    bridge = TransformerBridge.boot_transformers(str(path), hf_model=hf)
    bridge.enable_compatibility_mode(no_processing=True, disable_warnings=True)  # legacy hook names, raw weights
    return bridge


def test_against_transformer_lens(hf_dir, hf_pair):
    """Zero-ablating hook_z of one head ([batch, pos, head, d_head] there) and patching
    hook_resid_pre mean in TransformerLens what knocking out attn.z and patching resid_pre mean here."""
    hf, ours = hf_pair
    hooked = _hooked(hf, hf_dir[1])
    a, b = torch.tensor([A]), torch.tensor([B])
    assert len(A) != hf.config.n_head  # hook_z is [batch, pos, head, d_head]: the axes must not be confusable

    def zero_head(z, hook):
        z = z.clone()
        z[:, :, 1] = 0  # head 1, every position
        return z
    with torch.no_grad():
        want = hooked.run_with_hooks(a, fwd_hooks=[("blocks.2.attn.hook_z", zero_head)])
    got = knockout(ours, A, Target(2, "head", 1), "zero")["logits"]
    assert torch.allclose(got, want, atol=1e-4)

    _, cache = hooked.run_with_cache(a)
    with torch.no_grad():
        want = hooked.run_with_hooks(b, fwd_hooks=[("blocks.1.hook_resid_pre",
                                                    lambda x, hook: cache["blocks.1.hook_resid_pre"])])
    source = run(ours, A)
    got = run(ours, B, interventions=[Intervention("blocks.1.resid_pre", "patch", source=source["blocks.1.resid_pre"])])
    assert torch.allclose(got["logits"], want, atol=1e-4)


def test_changed_most_lists_only_tensors_after_the_knockout(tiny):
    clean, knocked = run(tiny, A), knockout(tiny, A, Target(1, "head", 0), "zero")
    moved = changed_most(clean, knocked, k=1000)
    names = [n for n, _ in moved]
    assert names and all(n.startswith(("blocks.1.", "ln_f.", "logits")) for n in names)
    assert "blocks.1.attn.z" not in names and "blocks.1.attn.merged" in names
    assert "blocks.1.attn.pattern" not in names  # computed before z: unchanged
    assert [c for _, c in moved] == sorted((c for _, c in moved), reverse=True)


def test_a_run_without_interventions_uses_the_plain_recorder():
    from gpt2viz.model.interventions import InterveningRecorder, recorder
    from gpt2viz.model.record import Recorder
    assert type(recorder(None, ())) is Recorder and type(recorder((), [])) is Recorder
    assert isinstance(recorder(None, [Intervention("logits")]), InterveningRecorder)
