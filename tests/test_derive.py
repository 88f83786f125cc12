"""Derived names (scores, pattern, LayerNorm outputs, GELU, resid_mid): equal to what the written-out
forward pass computes, in every mode and block; stored by a save; counted by the catalogue."""

import pytest
import torch
import torch.nn.functional as F

from gpt2viz.analysis.whatif import Target, knockout, last_logits
from gpt2viz.model import gpt2 as model_module
from gpt2viz.model.gpt2 import Dropout, causal_mask, fused_attention, gelu_new, no_dropout
from gpt2viz.model.interventions import InterveningRecorder, Intervention
from gpt2viz.model.modes import as_batch, prefill, run
from gpt2viz.model.record import Recorder
from gpt2viz.model.trace import Trace
from gpt2viz.spec.schema import Mode, derived_in, owns_storage, recorded_names, stored

IDS = [464, 2068, 7586, 21831, 18045, 625, 262, 16931, 13]


def written_out(model, ids, mode: Mode) -> dict[str, torch.Tensor]:
    """Every tensor the forward pass hands to the recorder, derived names included, with attention
    written out (scores, masked softmax, pattern @ v): the path autograd takes."""
    ids, rec = as_batch(ids), Recorder()
    with torch.enable_grad():
        if mode is Mode.FULL:
            model(ids, rec=rec)
        elif mode is Mode.TRAINING:
            drop = Dropout(model.config.dropout, 0) if model.config.dropout else no_dropout
            logits, _ = model(ids, rec=rec, drop=drop)  # [1, T, V]
            per_token = F.cross_entropy(logits[0, :-1], ids[0, 1:], reduction="none")[None]  # [1, T-1], all at once
            rec.tensors |= {"loss.per_token": per_token, "loss": per_token.mean()}
        elif mode is Mode.PREFILL:
            model(ids, rec=rec, use_cache=True, last_only=True)
        else:
            with torch.no_grad():
                _, past = prefill(model, ids[:, :-1])
            model(ids[:, -1:], rec=rec, past=past, use_cache=True)
    return rec.tensors


def short(name: str) -> str:
    return name.split(".", 2)[2] if name.startswith("blocks.") else name


@pytest.mark.parametrize("mode", list(Mode))
def test_derived_names_equal_the_written_out_forward(tiny, mode):
    # training without a backward pass: one with it computes its loss and stores it (the next test)
    trace, reference = run(tiny, IDS, mode, seed=0, grads=False), written_out(tiny, IDS, mode)
    derived = [n for n in trace.names if n not in trace.tensors]
    assert derived == [n for n in recorded_names(tiny.config, mode) if derived_in(short(n), mode)]
    assert ("logits" in derived) == (mode in (Mode.FULL, Mode.TRAINING))  # prefill, decode compute one position's
    assert ("loss" in derived) == ("loss.per_token" in derived) == (mode is Mode.TRAINING)
    # decode stores its one query row of scores and pattern: a 64th of the keys they derive from on gpt2
    assert {n.rsplit(".", 1)[-1] for n in derived if ".attn." in n} == (
        set() if mode is Mode.DECODE else {"scores", "pattern"})
    rows = [n for n in trace.tensors if n.endswith((".attn.scores", ".attn.pattern"))] if mode is Mode.DECODE else []
    assert len(rows) == (2 * tiny.config.n_layer if mode is Mode.DECODE else 0)
    for name in derived + rows:
        got, want = trace[name], reference[name].detach()
        assert got.shape == want.shape, name
        torch.testing.assert_close(got, want, rtol=0, atol=1e-6, msg=name)


def test_a_backward_pass_stores_the_loss_it_differentiates_the_one_a_forward_pass_derives(tiny):
    """A training run with a backward pass computes its loss (next_token_loss, 256 positions' logits at
    a time) and stores it; one without derives the same loss from ln_f.out when a page reads it, with
    the same products: bit for bit the same with dropout on (both write attention out, as the pages
    run training), up to rounding with it off (a run without a backward pass takes the fused one)."""
    backward, forward = run(tiny, IDS, Mode.TRAINING, seed=3), run(tiny, IDS, Mode.TRAINING, seed=3, grads=False)
    assert {"loss", "loss.per_token"} <= set(backward.tensors) and "logits" in backward.derived
    assert not {"loss", "loss.per_token", "logits"} & set(forward.tensors) and "ln_f.out" in forward.derived
    for name in ("loss.per_token", "loss"):
        assert torch.equal(forward[name], backward[name]), name
    logits = forward["logits"][0]  # [T, V], the derived blocks of 32: the loss's up to rounding
    torch.testing.assert_close(forward["loss.per_token"][0], F.cross_entropy(logits[:-1], torch.tensor(IDS[1:]),
                                                                              reduction="none"), rtol=1e-6, atol=1e-6)
    gen = forward.nbytes
    forward["loss"]  # read again: cached with the trace, a [1, T-1] tensor, not the logits of every position
    assert forward.nbytes - gen <= (len(IDS) - 1) * 4 + 4
    off = [run(tiny, IDS, Mode.TRAINING, seed=3, dropout=False, grads=g) for g in (True, False)]
    torch.testing.assert_close(off[1]["loss.per_token"], off[0]["loss.per_token"], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("mode", [Mode.FULL, Mode.PREFILL, Mode.DECODE])
def test_fused_attention_is_pattern_times_values(tiny, mode):
    trace = run(tiny, IDS, mode)
    values = "attn.v_cache" if mode is not Mode.FULL else "attn.v"
    for b in range(tiny.config.n_layer):
        pattern = trace.get("attn.pattern", b)  # [B, nh, T, L]
        torch.testing.assert_close(trace.get("attn.z", b), pattern @ trace.get(values, b), rtol=0, atol=1e-5)


def test_decode_pattern_is_the_last_row_of_full(tiny):
    full, decode = run(tiny, IDS, Mode.FULL), run(tiny, IDS, Mode.DECODE)
    for b in range(tiny.config.n_layer):
        for short in ("attn.scores", "attn.pattern"):
            torch.testing.assert_close(decode.get(short, b), full.get(short, b)[:, :, -1:], rtol=0, atol=1e-6)


@pytest.mark.parametrize("mode", [Mode.FULL, Mode.DECODE])
def test_a_saved_trace_stores_the_derived_names(tiny, tmp_path, mode):
    trace = run(tiny, IDS, mode)
    trace.save(tmp_path / "t.safetensors")
    back = Trace.load(tmp_path / "t.safetensors")
    assert back.names == trace.names and set(back.tensors) == set(trace.names)  # derived ones stored
    for name in trace.names:
        assert torch.equal(back[name], trace[name]), name
    (tmp_path / "one.safetensors").write_bytes(trace.to_bytes(["blocks.1.attn.pattern"]))  # a page's export
    one = Trace.load(tmp_path / "one.safetensors")
    assert one.names == ["blocks.1.attn.pattern"]
    assert torch.equal(one["blocks.1.attn.pattern"], back["blocks.1.attn.pattern"])


@pytest.mark.parametrize("mode", list(Mode))
def test_bytes_held_are_the_catalogues(tiny, mode):
    trace = run(tiny, IDS, mode)
    per_value = {"float32": 4, "bool": 1}
    sizes = {n: t.numel() * per_value[str(t.dtype).removeprefix("torch.")] for n, t in trace.tensors.items()}
    assert trace.nbytes == sum(sizes[n] for n, _, _ in stored(tiny.config, mode, trace.P))
    made = {"loss", "loss.per_token"} if mode is Mode.TRAINING else set()  # by its backward pass: stored
    assert not [n for n in trace.tensors if derived_in(short(n), mode) and n not in made]
    views = {n for n in trace.tensors if not owns_storage(n, tiny.config, mode, trace.P)}
    owners = {trace[n].untyped_storage().data_ptr() for n in trace.tensors if n not in views}
    assert all(trace[n].untyped_storage().data_ptr() in owners for n in views)  # each a view of one counted


@pytest.mark.parametrize("mode", [Mode.FULL, Mode.PREFILL, Mode.TRAINING])  # decode stores its row
def test_one_head_or_some_queries_derive_that_part_alone(tiny, mode):
    whole = run(tiny, IDS, mode)
    rows = slice(whole.T - 2, whole.T) if whole.T > 1 else slice(0, 1)
    for b in range(tiny.config.n_layer):
        for short in ("attn.scores", "attn.pattern"):
            trace = run(tiny, IDS, mode)
            held, part = trace.nbytes, trace.get(short, b, head=1)
            parts = (1 if short == "attn.scores" else 2) * part.numel() * 4  # a pattern's and its scores' rows
            assert trace.nbytes - held == parts  # the parts are cached, never the whole
            torch.testing.assert_close(part, whole.get(short, b)[:, 1], rtol=0, atol=1e-6)
            torch.testing.assert_close(trace.get(short, b, queries=rows), whole.get(short, b)[:, :, rows],
                                       rtol=0, atol=1e-6)
        assert torch.equal(whole.get("attn.pattern", b, head=2, queries=rows), whole.get("attn.pattern", b)[:, 2, rows])


# ---------------------------------------------------------------------------- interventions on derived names
def as_computed(model, ids, interventions) -> dict[str, torch.Tensor]:
    """Every tensor the model hands to an intervening recorder (fused attention but where an
    intervention changes the scores or the pattern): what the run actually computed."""
    rec = InterveningRecorder(interventions)
    with torch.no_grad():
        model(as_batch(ids), rec=rec)
    return rec.tensors


def test_an_intervened_derived_name_is_stored_as_changed(tiny):
    neuron = Target(1, "neuron", 3)
    ivs = [neuron.intervention("zero"), Intervention("blocks.0.resid_mid", "zero", position=2)]
    trace = run(tiny, IDS, interventions=ivs)
    assert set(trace.intervened) == {"blocks.1.mlp.post", "blocks.0.resid_mid"}
    for name in trace.intervened:  # stored after the intervention, not derived from the sources
        assert name in trace.tensors and name not in trace.derived
    post, resid_mid = trace["blocks.1.mlp.post"], trace["blocks.0.resid_mid"]  # [B, T, 4d], [B, T, d]
    assert not post[..., 3].any() and not resid_mid[:, 2].any()
    others = [u for u in range(post.shape[-1]) if u != 3]
    assert torch.equal(post[..., others], gelu_new(trace["blocks.1.mlp.pre"])[..., others])
    rest = [p for p in range(len(IDS)) if p != 2]
    assert torch.equal(resid_mid[:, rest], (trace["blocks.0.resid_pre"] + trace["blocks.0.attn.out"])[:, rest])
    # what derives from an intervened name stays derived, and equals what the model computed from it
    assert "blocks.0.ln2.normalized" in trace.derived and "blocks.1.mlp.pre" in trace.tensors
    computed = as_computed(tiny, IDS, ivs)
    for name, t in computed.items():
        torch.testing.assert_close(trace[name], t, rtol=0, atol=1e-6, msg=name)
    # downstream: the logits are what-if's (one knock-out: its own page's run; both: its batched run)
    assert torch.equal(knockout(tiny, IDS, neuron, "zero")["logits"],
                       run(tiny, IDS, interventions=ivs[:1])["logits"])
    torch.testing.assert_close(trace["logits"][:, -1], last_logits(tiny, IDS, ivs), rtol=0, atol=1e-5)
    assert not torch.allclose(trace["logits"], run(tiny, IDS)["logits"])


@pytest.mark.parametrize("mode", [Mode.FULL, Mode.DECODE])
def test_an_intervention_on_scores_or_pattern_writes_that_block_out(tiny, mode, monkeypatch):
    fused = []
    monkeypatch.setattr(model_module, "fused_attention", lambda *a: fused.append(1) or fused_attention(*a))
    head = Intervention("blocks.1.attn.pattern", "zero", head=1)
    trace = run(tiny, IDS, mode, interventions=[head])
    # block 1 written out, block 0 fused: in full mode's one pass, and in decode's prefill of the cache (the
    # intervention applies there too); decode's step writes every block out (one query against the cache:
    # it stores their one row of scores and pattern)
    assert len(fused) == tiny.config.n_layer - 1
    assert "blocks.1.attn.pattern" in trace.tensors and trace.intervened == ("blocks.1.attn.pattern",)
    assert not trace["blocks.1.attn.pattern"][:, 1].any() and not trace["blocks.1.attn.z"][:, 1].any()
    # a head's pattern zeroed is its z zeroed (the z intervention leaves attention as the mode runs it)
    via_z = run(tiny, IDS, mode, interventions=[Intervention("blocks.1.attn.z", "zero", head=1)])
    torch.testing.assert_close(trace["logits"], via_z["logits"], rtol=0, atol=1e-5)
    # scores zeroed on one head: its derived pattern is uniform over the keys each query reads
    flat = run(tiny, IDS, mode, interventions=[Intervention("blocks.0.attn.scores", "zero", head=0)])
    assert "blocks.0.attn.scores" in flat.tensors
    assert ("blocks.0.attn.pattern" in flat.derived) == (mode is Mode.FULL)  # decode stores it
    pattern = flat["blocks.0.attn.pattern"][0, 0]  # [T, L]
    reads = (~causal_mask(flat.T, flat.L)).float()  # [T, L]
    torch.testing.assert_close(pattern, reads / reads.sum(-1, keepdim=True), rtol=0, atol=1e-6)
