"""The immutable Trace: lookups, and the safetensors round trip."""

import pytest
import torch
from safetensors.numpy import load_file
from together import together

from gpt2viz.model.modes import Mode, run
from gpt2viz.model.trace import AT_KEPT, Trace

IDS = [15496, 995, 11, 314]


def test_lookup_by_full_name_and_block(tiny):
    t = run(tiny, IDS, "full")
    assert t.get("attn.z", 1) is t["blocks.1.attn.z"]
    assert t.get("ln_f.mean") is t["ln_f.mean"]
    assert torch.equal(t.get("logits"), t["logits"])  # derived in full, each time the same
    with pytest.raises(KeyError, match="not recorded"):
        t["blocks.9.attn.z"]


def test_trace_is_immutable(tiny):
    t = run(tiny, IDS, "full")
    with pytest.raises(TypeError):
        t.tensors["x"] = torch.zeros(1)
    with pytest.raises(AttributeError):
        t.P = 3


@pytest.mark.parametrize("mode", ["training", "decode"])
def test_save_load_round_trip(tiny, tmp_path, mode):
    t = run(tiny, IDS, mode)
    t.save(tmp_path / "t.safetensors")
    back = Trace.load(tmp_path / "t.safetensors")
    assert back.names == t.names  # execution order survives
    assert (back.mode, back.model, back.token_ids, back.tokens, back.P, back.L) == \
        (t.mode, t.model, t.token_ids, t.tokens, t.P, t.L)
    for name in t.names:
        assert torch.equal(back[name], t[name]), name
    raw = load_file(str(tmp_path / "t.safetensors"))  # readable without gpt2viz
    assert raw["logits"].shape == tuple(t["logits"].shape)


def test_nbytes_counts_real_storage_once(tiny):
    t = run(tiny, IDS, "full", names=["ln_f.mean", "blocks.0.attn.pattern"])
    assert "blocks.0.attn.pattern" not in t.tensors and {"blocks.0.attn.q", "blocks.0.attn.k"} <= set(t.tensors)
    qkv = 4 * 3 * 64  # q and k are views of one [1, 4, 3d] qkv
    assert t.nbytes == (4 + qkv) * 4
    t.get("attn.pattern", 0)  # derived and cached with the scores it came from: [1, 4, 4, 4] each
    assert t.nbytes == (4 + qkv + 2 * 4 * 4 * 4) * 4


def test_nbytes_counts_the_stored_tensors_once_per_trace(tiny, monkeypatch):
    """The trace cache sums every trace's bytes before each run: a trace's stored tensors never
    change, so their storages are counted on the first asking only (40 traces of 300 names took
    0.65 s of a class's start)."""
    t = run(tiny, IDS, "full")
    first = t.nbytes
    calls = []
    real = torch.Tensor.untyped_storage
    monkeypatch.setattr(torch.Tensor, "untyped_storage", lambda self: calls.append(1) or real(self))
    assert t.nbytes == first and not calls
    fresh = run(tiny, IDS, "full")
    assert fresh.nbytes == first and len(calls) == len(fresh.tensors)


def test_derived_cache_holds_one_blocks_scores_and_pattern(tiny):
    t = run(tiny, IDS, "prefill")
    first = t.get("attn.pattern", 0)
    assert t.get("attn.pattern", 0) is first  # cached
    t.get("attn.pattern", 1)
    assert t.nbytes - run(tiny, IDS, "prefill").nbytes == t.derived_cache_bytes == 2 * 4 * 4 * 4 * 4
    assert t.get("attn.pattern", 0) is not first and torch.equal(t.get("attn.pattern", 0), first)


def test_full_derives_its_logits_a_position_at_a_time(tiny):
    """FULL (and TRAINING) stores no logits: the forward pass stops at ln_f, and a page that reads one position
    computes that one and keeps it, apart from the derived cache (other lookups do not push it out)."""
    t = run(tiny, IDS, "full")
    assert "logits" not in t.tensors and "logits" in t.names and t.derived_cache_bytes == 2 * 4 * 4 * 4 * 4
    last = t.at("logits", -1)  # [1, V]
    assert t.at("logits", -1).data_ptr() == last.data_ptr() and last.shape == (1, 50257)  # cached
    assert last.untyped_storage().nbytes() == 50257 * 4  # its own memory, not a view of its block of rows
    whole = t["logits"]  # [1, T, V]
    assert all(torch.equal(t.at("logits", p), whole[:, p]) for p in range(-4, 4))  # on one grid: bit for bit
    assert torch.equal(t.at("logits", slice(1, 3)), whole[:, 1:3])
    t.get("attn.pattern", 0), t["ln_f.out"], t.get("attn.pattern", 1)  # the derived cache turns over
    assert t.at("logits", -1).data_ptr() == last.data_ptr() and t.at("logits", 3).data_ptr() == last.data_ptr()
    held = len(t._at) * 50257 * 4  # the positions read alone, each kept once (-1 is 3), at most AT_KEPT
    assert len(t._at) == AT_KEPT == 4 and t.nbytes - run(tiny, IDS, "full").nbytes <= t.derived_cache_bytes + held
    for grads in (True, False):  # training derives its logits too, with a backward pass or without
        trained = run(tiny, IDS, "training", grads=grads)
        assert "logits" not in trained.tensors and torch.equal(trained.at("logits", -1), trained["logits"][:, -1])


def test_a_batch_keeps_every_row_and_the_mode_is_a_mode(tiny, tmp_path):
    ids = [IDS, list(reversed(IDS))]
    t = run(tiny, ids, "prefill")
    assert t.mode is Mode.PREFILL and t.metadata()["mode"] == "prefill"
    assert t.rows == tuple(map(tuple, ids)) and t.token_ids == tuple(IDS)
    t.save(tmp_path / "b.safetensors")
    back = Trace.load(tmp_path / "b.safetensors")
    assert back.mode is Mode.PREFILL and back.rows == t.rows


def test_a_summary_is_computed_once_per_trace_by_any_thread(tiny):
    """Pages keep small summaries of a shared trace (a lens table, gradient norms) with it."""
    t, calls = run(tiny, [1, 2, 3], Mode.FULL), []

    def norms():
        calls.append(1)
        return [float(t.get("resid_pre", b).norm()) for b in range(2)]

    got = together(*[lambda: t.memo("norms", norms)] * 4)
    assert len(calls) == 1 and all(g is got[0] for g in got) and len(got) == 4
    assert run(tiny, [1, 2, 3], Mode.FULL).memo("norms", lambda: "fresh") == "fresh"  # another trace, its own


def test_a_cached_full_trace_keeps_no_evicted_models_embedding_alive(tiny):
    """A full trace derives its logits from its model's W_U, held weakly: a trace the cache keeps after
    its model is evicted must not hold the embedding (147 MiB on gpt2, counted nowhere) alive. Once
    the same weights are built again (get_trace binds them), it reads the same logits."""
    import gc
    import weakref

    from gpt2viz.model.weights import random_model
    from gpt2viz.spec.config import get_config

    kept = run(random_model(get_config("tiny"), seed=3), IDS, "full")  # a script's run: its model dropped
    assert kept.at("logits", -1).shape == (1, 50257)  # held as long as the trace, by default
    model = random_model(get_config("tiny"), seed=3)
    t = run(model, IDS, "full")
    t.bind(model, weak=True)  # as get_trace gives every trace of the server's cache
    last, embedding = t.at("logits", -1).clone(), weakref.ref(model.wte.weight)
    del model
    gc.collect()
    assert embedding() is None  # freed: the trace held it weakly
    with pytest.raises(RuntimeError, match="model that ran this trace is gone"):
        t.at("logits", 0)
    again = random_model(get_config("tiny"), seed=3)
    t.bind(again, weak=True)
    assert torch.equal(t.at("logits", -1), last) and torch.equal(t["logits"][:, -1], last)
