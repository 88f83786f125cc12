"""The app's run accounting: what a full trace takes, what a run reserves, and recording only the
page's names when a full trace would not fit the cache."""

import threading
import time
from fnmatch import fnmatch

import pytest
import torch

from gpt2viz.model.modes import Mode, run
from gpt2viz.model.weights import random_model
from gpt2viz.server.trace_cache import TraceCache
from gpt2viz.spec.config import get_config
from gpt2viz.ui import cache as ui_cache
from gpt2viz.ui.cache import LoadedModel, every_block, full_trace_bytes, get_trace, run_bytes, stored_bytes
from gpt2viz.ui.classroom import GRAD_PARTS

IDS = (464, 2068, 7586, 21831, 18045, 625, 262)
torch_grad = torch.autograd.grad


@pytest.fixture(scope="module")
def weights():
    return LoadedModel(random_model(get_config("tiny"), 0), ("random", "tiny", 0), "random tiny", True, seed=0)


@pytest.mark.parametrize("mode", list(Mode))
def test_full_trace_bytes_is_what_a_run_records(weights, mode):
    trace = run(weights.model, list(IDS), mode)
    assert full_trace_bytes(weights, len(IDS), mode) == trace.nbytes


@pytest.mark.parametrize("mode", list(Mode))
def test_a_run_reserves_at_least_what_it_keeps(weights, mode):
    names = ("blocks.1.attn.*", "logits")
    kept = run(weights.model, list(IDS), mode, names=names).nbytes
    assert run_bytes(weights, len(IDS), mode, names) > kept
    assert run_bytes(weights, len(IDS), mode, None) > full_trace_bytes(weights, len(IDS), mode)
    if mode is Mode.TRAINING:  # autograd keeps every activation for the backward pass
        assert run_bytes(weights, len(IDS), mode, names) > full_trace_bytes(weights, len(IDS), Mode.FULL)


def admit_every_run(monkeypatch):
    """These tests shrink the budget to a few traces of 7 tokens, to see which names are kept; the run's
    own transient peak (3 MiB, mostly the logits) would then be refused as too large for the server."""
    import gpt2viz.ui.cache as cache_module

    monkeypatch.setattr(cache_module, "run_bytes", lambda *a, **k: 0)


def test_only_the_pages_names_are_recorded_when_a_full_trace_does_not_fit(weights, monkeypatch):
    admit_every_run(monkeypatch)
    full = full_trace_bytes(weights, len(IDS), Mode.FULL)
    needs = ("blocks.0.mlp.*",)
    in_every_block = stored_bytes(weights, len(IDS), Mode.FULL, ("blocks.*.mlp.*",))
    # a full trace may take 1/4 of the budget, and so may the page's names in every block: neither fits
    roomy, tight = TraceCache(100 * full), TraceCache(4 * in_every_block - 1)
    everything = get_trace(weights, IDS, Mode.FULL, 0, needs, cache=roomy)
    assert everything.nbytes == full
    partial = get_trace(weights, IDS, Mode.FULL, 0, needs, cache=tight)
    assert partial.names and all(fnmatch(n, needs[0]) for n in partial.names)
    assert set(partial.names) == {n for n in everything.names if fnmatch(n, needs[0])}
    for name in partial.names:
        assert (partial[name] == everything[name]).all()
    assert tight.nbytes == partial.nbytes <= tight.budget and tight.in_flight == 0


def test_a_pages_names_are_recorded_in_every_block_where_they_fit_and_everything_does_not(weights, monkeypatch):
    """A long text on gpt2 (1,024 tokens: a full trace is 602 MiB): another block is a view of the
    same trace, not a new run of the whole model."""
    admit_every_run(monkeypatch)
    full = full_trace_bytes(weights, len(IDS), Mode.FULL)
    in_every_block = stored_bytes(weights, len(IDS), Mode.FULL, ("blocks.*.mlp.*",))
    assert every_block(("blocks.0.mlp.*", "blocks.1.mlp.pre", "blocks.*.resid_pre", "logits")) == \
        ("blocks.*.mlp.*", "blocks.*.mlp.pre", "blocks.*.resid_pre", "logits")
    cache = TraceCache(4 * in_every_block)
    assert 4 * full > cache.budget
    everything = run(weights.model, list(IDS), Mode.FULL)
    for block in range(weights.model.config.n_layer):
        trace = get_trace(weights, IDS, Mode.FULL, 0, (f"blocks.{block}.mlp.*",), cache=cache)
        for name in (n for n in everything.names if fnmatch(n, "blocks.*.mlp.*")):
            assert torch.equal(trace[name], everything[name])
    assert cache.misses == 1 and cache.hits == weights.model.config.n_layer - 1
    assert not [n for n in trace.names if not fnmatch(n, "blocks.*.mlp.*")]


@pytest.mark.parametrize(("running", "scripts", "env", "threads"), [
    (1, 1, {}, ui_cache.CORES),  # one user, one run: every core
    (2, 1, {}, 1),  # two runs side by side: a core each
    (1, 3, {}, 1),  # other sessions' pages being drawn meanwhile
    (2, 5, {"GPT2VIZ_THREADS": "3"}, 3),  # the operator's setting wins
])
def test_a_run_takes_every_core_alone_and_one_beside_others(running, scripts, env, threads):
    assert ui_cache.run_threads(running, env, scripts) == threads


def test_the_cache_sets_torchs_threads_in_the_thread_that_computes():
    asked, seen = [], []
    cache = TraceCache(10**9, threads=lambda running: asked.append(running) or 1)

    def compute():
        seen.append(torch.get_num_threads())
        return run(random_model(get_config("tiny"), 0), [1, 2], Mode.FULL, names=("logits",))

    before = torch.get_num_threads()
    worker = threading.Thread(target=cache.get_or_compute, args=("k", compute))
    worker.start()
    worker.join()
    assert asked == [1] and seen == [1]
    cache.get_or_compute("here", compute)  # in this thread: set for the run, then as it was
    assert seen == [1, 1] and torch.get_num_threads() == before


def test_two_sessions_asking_for_one_view_at_once_cause_one_forward_pass(weights, monkeypatch):
    """Two script threads (two sessions) ask for the same text, mode and weights while the first
    run is under way: one forward pass, one trace object for both."""
    cache, runs = TraceCache(100 * full_trace_bytes(weights, len(IDS), Mode.FULL)), []

    def counted_run(*args, **kwargs):
        runs.append(1)
        end = time.monotonic() + 10
        while cache.shared < 1 and time.monotonic() < end:  # hold the run until the other waits
            time.sleep(0.005)
        return run(*args, **kwargs)

    monkeypatch.setattr(ui_cache, "run", counted_run)
    got = [None, None]

    def session(i):
        got[i] = get_trace(weights, IDS, Mode.FULL, 0, ("logits",), cache=cache)

    threads = [threading.Thread(target=session, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert len(runs) == 1 and cache.shared == 1
    assert got[0] is got[1] and got[0].nbytes == full_trace_bytes(weights, len(IDS), Mode.FULL)
    assert get_trace(weights, IDS, Mode.FULL, 0, ("blocks.0.*",), cache=cache) is got[0]  # another page: a hit
    assert len(runs) == 1


def test_training_pages_share_one_forward_pass_without_the_gradients(weights, monkeypatch):
    """In training the parameters' gradients are as large as the weights, so a full trace rarely fits:
    the pages that show none of them share one run of everything else; the training page, which
    shows them, gets its own."""
    full = full_trace_bytes(weights, len(IDS), Mode.TRAINING)
    _, nbytes = ui_cache._all_but_weight_grads(weights.model.config, len(IDS), False)
    assert nbytes < full // 2
    cache, runs = TraceCache(4 * nbytes + (4 * full - 4 * nbytes) // 2), []  # room for one, not the other
    monkeypatch.setattr(ui_cache, "run", lambda *a, **kw: runs.append(kw["names"]) or run(*a, **kw))
    mlp = get_trace(weights, IDS, Mode.TRAINING, 0, ("blocks.0.mlp.*",), cache=cache)
    attn = get_trace(weights, IDS, Mode.TRAINING, 0, ("blocks.1.attn.*", "loss*"), cache=cache)
    assert attn is mlp and len(runs) == 1 and nbytes * 0.99 <= mlp.nbytes <= nbytes  # the estimate: a few streams alias
    assert not any(ui_cache.is_weight_grad(n) for n in mlp.names)
    assert set(mlp.names) == {n for n in ui_cache._tensor_bytes(weights, len(IDS), Mode.TRAINING)
                              if not n.startswith("grad.")}
    grads = get_trace(weights, IDS, Mode.TRAINING, 0, ("grad.h.*.weight", "loss"), cache=cache)
    assert grads is not mlp and len(runs) == 2 and any(ui_cache.is_weight_grad(n) for n in grads.names)


@pytest.mark.parametrize("dropout", [True, False])
def test_the_training_page_keeps_a_summary_not_the_weights_gradients(weights, monkeypatch, dropout):
    """The Training page shows each weight's gradient as one norm: when its run does not fit a full
    trace, the cache keeps the page's numbers (a few hundred bytes), equal to the run's."""
    full = full_trace_bytes(weights, len(IDS), Mode.TRAINING)
    cache, runs = TraceCache(2 * full), []
    monkeypatch.setattr(ui_cache, "run", lambda *a, **kw: runs.append(1) or run(*a, **kw))
    summary = ui_cache.get_training_summary(weights, IDS, 0, dropout, cache=cache)
    assert ui_cache.get_training_summary(weights, IDS, 0, dropout, cache=cache) is summary and len(runs) == 1
    assert cache.nbytes == summary.nbytes < 1000
    trace = run(weights.model, list(IDS), Mode.TRAINING, seed=0, dropout=dropout)
    assert float(summary.weight_grad_norms[1, 0]) == float(trace["grad.h.0.attn.c_attn.weight"].norm())
    assert all(float(summary.weight_grad_norms[r, i]) == float(trace[f"grad.h.{i}.{part}.weight"].norm())
               for r, (part, _) in enumerate(GRAD_PARTS) for i in range(weights.model.config.n_layer))
    assert summary.stream_grad_norms[1] == float(trace["grad.blocks.1.resid_pre"].norm())
    assert torch.equal(summary.loss_per_token, trace["loss.per_token"][0])
    assert len(summary.dropout) == (1 + 3 * weights.model.config.n_layer if dropout else 0)
    roomy = TraceCache(100 * full)  # even where a full trace fits, the cache keeps the page's numbers only
    assert ui_cache.get_training_summary(weights, IDS, 0, dropout, cache=roomy).weight_grad_norms.equal(
        summary.weight_grad_norms) and roomy.nbytes == summary.nbytes


def test_training_pages_share_a_forward_pass_even_where_all_would_fit(weights, monkeypatch):
    """The pages that show no gradient share the forward pass of a training run: no backward pass,
    the same values as a training run of everything (the same dropout)."""
    full = full_trace_bytes(weights, len(IDS), Mode.TRAINING)
    roomy = TraceCache(100 * full)
    backward = []
    monkeypatch.setattr(torch.autograd, "grad", lambda *a, **kw: backward.append(1) or torch_grad(*a, **kw))
    trace = get_trace(weights, IDS, Mode.TRAINING, 0, ("blocks.0.mlp.*",), cache=roomy)
    assert not backward and not [n for n in trace.names if n.startswith("grad.")]
    assert trace.nbytes <= ui_cache._all_but_weight_grads(weights.model.config, len(IDS), False)[1] < full // 2
    everything = get_trace(weights, IDS, Mode.TRAINING, 0, None, cache=roomy)  # asked for everything
    assert everything.nbytes == full and backward
    for name in trace.names:
        assert torch.equal(trace[name], everything[name]), name
    stream = get_trace(weights, IDS, Mode.TRAINING, 0, ("grad.blocks.1.resid_pre",), cache=roomy)
    assert "grad.blocks.0.resid_pre" in stream and not any(ui_cache.is_weight_grad(n) for n in stream.names)


def test_server_settings_from_the_environment_take_positive_integers_only():
    assert ui_cache.torch_threads({"GPT2VIZ_THREADS": "1"}) == 1
    assert ui_cache.max_runs({"GPT2VIZ_MAX_RUNS": "3"}) == 3
    for bad in ("0", "-1", "two", "1.5", ""):
        assert ui_cache.torch_threads({"GPT2VIZ_THREADS": bad}) is None
        assert ui_cache.max_runs({"GPT2VIZ_MAX_RUNS": bad}) == ui_cache.MAX_RUNS


def test_the_about_pages_decode_check_reads_the_two_modes_runs(weights):
    """The live check on the About page: DECODE's last logits against FULL's, from the trace cache."""
    checked = ui_cache.decode_check(weights, IDS)
    cached = [get_trace(weights, IDS, mode, 0, ("logits",))["logits"][0, -1] for mode in (Mode.FULL, Mode.DECODE)]
    assert checked == float((cached[0] - cached[1]).abs().max()) < 1e-4  # the very runs the cache holds
    full = run(weights.model, list(IDS), Mode.FULL)["logits"][0, -1]
    decode = run(weights.model, list(IDS), Mode.DECODE)["logits"][0, -1]
    assert abs(checked - float((full - decode).abs().max())) < 1e-6  # torch's threads may round apart
