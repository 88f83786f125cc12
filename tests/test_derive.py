"""Derived names (scores, pattern, LayerNorm outputs, GELU, resid_mid): equal to what the written-out
forward pass computes, in every mode and block; stored by a save; counted by the catalogue."""

import pytest
import torch

from gpt2viz.model import Dropout, no_dropout
from gpt2viz.modes import as_batch, prefill, run
from gpt2viz.record import Recorder
from gpt2viz.schema import DERIVED, Mode, owns_storage, recorded_names, stored
from gpt2viz.trace import Trace

IDS = [464, 2068, 7586, 21831, 18045, 625, 262, 16931, 13]


def written_out(model, ids, mode: Mode) -> dict[str, torch.Tensor]:
    """Every tensor the forward pass hands to the recorder, derived names included, with attention
    written out (scores, masked softmax, pattern @ v): the path autograd takes."""
    ids, rec = as_batch(ids), Recorder()
    with torch.enable_grad():
        if mode is Mode.FULL:
            model(ids, rec=rec)
        elif mode is Mode.TRAINING:
            model(ids, rec=rec, drop=Dropout(model.config.dropout, 0) if model.config.dropout else no_dropout)
        elif mode is Mode.PREFILL:
            model(ids, rec=rec, use_cache=True, last_only=True)
        else:
            with torch.no_grad():
                _, past = prefill(model, ids[:, :-1])
            model(ids[:, -1:], rec=rec, past=past, use_cache=True)
    return rec.tensors


@pytest.mark.parametrize("mode", list(Mode))
def test_derived_names_equal_the_written_out_forward(tiny, mode):
    trace, reference = run(tiny, IDS, mode, seed=0), written_out(tiny, IDS, mode)
    derived = [n for n in trace.names if n not in trace.tensors]
    assert derived == [n for n in recorded_names(tiny.config, mode) if n.split(".", 2)[-1] in DERIVED
                       or n in DERIVED]
    assert {n.rsplit(".", 1)[-1] for n in derived if ".attn." in n} == {"scores", "pattern"}
    for name in derived:
        got, want = trace[name], reference[name].detach()
        assert got.shape == want.shape, name
        torch.testing.assert_close(got, want, rtol=0, atol=1e-6, msg=name)


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
    assert not [n for n in trace.tensors if n.split(".", 2)[-1] in DERIVED or n in DERIVED]
    views = {n for n in trace.tensors if not owns_storage(n, tiny.config, mode, trace.P)}
    owners = {trace[n].untyped_storage().data_ptr() for n in trace.tensors if n not in views}
    assert all(trace[n].untyped_storage().data_ptr() in owners for n in views)  # each a view of one counted


@pytest.mark.parametrize("mode", [Mode.FULL, Mode.PREFILL, Mode.DECODE, Mode.TRAINING])
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
