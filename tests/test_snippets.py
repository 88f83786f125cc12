"""The Code panel's snippets (gpt2viz/teaching/snippets.py): each is run as a student would run it, and the
numbers it leaves in `result` are the page's, computed as the page computes them from its trace:
exactly with gpt2viz, within 1e-4 with transformers on the same weights."""

import dataclasses

import pytest
import torch

from gpt2viz.analysis import attribution
from gpt2viz.analysis.heads import PATTERNS, score_trace
from gpt2viz.analysis.lens import logit_lens
from gpt2viz.analysis.whatif import Target, default_answers, knockout, log_probs, patch
from gpt2viz.api import load
from gpt2viz.model.generation import distribution  # noqa: E402
from gpt2viz.model.modes import Mode, run
from gpt2viz.model.tokenizer import encode
from gpt2viz.model.weights import random_model, to_transformers
from gpt2viz.spec.config import get_config
from gpt2viz.teaching.snippets import PAGES, WIDTH, View, cells, snippet
from gpt2viz.ui.overview import residual_norm_series, top_next_tokens
from gpt2viz.ui.whatif_view import NEEDS, top_tokens

pytest.importorskip("transformers")

TEXT = " people play one good game people play"
TOL = {"gpt2viz": dict(rtol=0, atol=1e-6), "transformers": dict(rtol=0, atol=1e-4)}
LN_PREFIX = {"ln_1": "blocks.{b}.ln1.", "ln_2": "blocks.{b}.ln2.", "ln_f": "ln_f."}


def page_numbers(page: str, v: View) -> torch.Tensor:
    """The page's main numbers, by the calls its view script makes (views/<page>.py, gpt2viz/ui/)."""
    b, h, model, ids = v.block, v.head, load(v.weights).model, encode(v.text)
    if page == "heads":  # heads_view.scores: one full run of every pattern
        rows = score_trace(run(model, ids, Mode.FULL, names=PATTERNS))
        return torch.tensor([r["previous_token"] for r in rows]).view(v.n_layer, v.n_head)
    if page == "whatif":  # whatif_view: the clean run's top tokens, their probabilities after the knock-out
        clean = run(model, ids, Mode.FULL, names=NEEDS)
        part, method = v.value("part"), v.value("method")
        index = v.value("neuron") if part == "neuron" else h  # whatif_view.target_controls
        after = log_probs(knockout(model, ids, Target(b, part, index), method)).exp()
        return after[top_tokens(clean)[2]]
    if page == "attribution":  # attribution_view.attribution: the heads' grid of the page's heatmap
        trace = run(model, ids, Mode.FULL, names=attribution.NEEDS)
        return attribution.attribute(model, trace, v.value("answer"), v.value("versus"), v.value("position")).heads()
    if page == "patch":  # whatif_view.patching: A into B, the page's answer pair
        return patch(model, ids, encode(v.value("text_b")), v.value("answers")).resid[b]
    trace = run(model, ids, v.mode, seed=v.seed)
    if page == "lens":
        return torch.tensor([r.final_prob for r in logit_lens(model, trace, position=v.value("lens_pos"))])
    if page == "attention":
        return trace.get("attn.pattern", b, head=h)[0]  # [T, L]
    if page == "mlp":
        return trace.get("mlp.post", b)[0]
    if page == "output" and v.values:  # views/output.py: the ten likeliest, after its temperature, top-k, top-p
        logits = trace["logits"][0, -1].double()
        after = distribution(logits, v.value("temp", 1.0), int(v.value("topk", 0)) or None, v.value("topp"))
        return after[logits.softmax(-1).topk(10).indices]
    if page == "output":
        return torch.tensor(top_next_tokens(trace, k=10)[0], dtype=torch.float64)  # the page computes in float64
    if page == "overview":
        return residual_norm_series(trace)[1][2::2]  # rows: block i in, block i mid, ..., final
    if page == "merge":
        return trace.get("attn.out", b)[0]
    if page == "block":
        return trace.get("resid_post", b)[0]
    if page == "tokens":
        return trace["embed.out"][0]
    if page == "layernorm":
        return trace[LN_PREFIX[v.value("ln", "ln_1")].format(b=b) + "out"][0]
    raise AssertionError(page)


def view(weights: str, mode: str, page_values=(), block: int = 1, head: int = 2) -> View:
    cfg = load(weights).config
    return View(TEXT, weights, mode, block, head, values=page_values, n_layer=cfg.n_layer, n_head=cfg.n_head,
                d_head=cfg.d_head, n_tokens=len(encode(TEXT)))


def check(page: str, v: View, kind: str) -> float:
    """Run the snippet; assert its `result` is the page's; return the largest difference."""
    namespace = {}
    exec(compile(snippet(page, v, kind), f"<{page} {kind}>", "exec"), namespace)
    expected = page_numbers(page, v)
    got = namespace["result"]
    assert got.shape == expected.shape
    torch.testing.assert_close(got, expected, **TOL[kind])
    return float((got - expected).abs().max())


@pytest.mark.parametrize("kind", ["gpt2viz", "transformers"])
@pytest.mark.parametrize("mode", ["full", "decode"])
@pytest.mark.parametrize("weights", ["random:tiny:seed=0", "demo"])
@pytest.mark.parametrize("page", ["attention", "mlp", "output"])
def test_snippet_reproduces_the_page(page, weights, mode, kind):
    check(page, view(weights, mode), kind)


@pytest.mark.parametrize("kind", ["gpt2viz", "transformers"])
@pytest.mark.parametrize("page,values", [("overview", ()), ("tokens", ()), ("block", ()), ("merge", ()),
                                         ("layernorm", (("ln", "ln_2"),)), ("layernorm", (("ln", "ln_f"),))])
def test_every_component_page_in_full_mode(page, values, kind):
    check(page, view("random:tiny:seed=1", "full", values), kind)


@pytest.mark.parametrize("kind", ["gpt2viz", "transformers"])
@pytest.mark.parametrize("weights,mode,values", [
    ("demo", "full", (("part", "head"), ("method", "zero"))), ("demo", "full", (("part", "head"), ("method", "mean"))),
    ("random:tiny:seed=2", "decode", (("part", "attn"), ("method", "mean"))),  # the page runs full mode anyway
    ("demo", "full", (("part", "mlp"), ("method", "zero"))),
    ("demo", "full", (("part", "neuron"), ("method", "mean"), ("neuron", 77)))])
def test_whatif_knockouts(weights, mode, values, kind):
    check("whatif", view(weights, mode, values), kind)


@pytest.mark.parametrize("kind", ["gpt2viz", "transformers"])
@pytest.mark.parametrize("weights,mode,position", [("demo", "full", 3), ("demo", "decode", 0),
                                                   ("random:tiny:seed=0", "prefill", 6)])
def test_logit_lens(weights, mode, position, kind):
    check("lens", view(weights, mode, (("lens_pos", position),)), kind)


@pytest.mark.parametrize("kind", ["gpt2viz", "transformers"])
@pytest.mark.parametrize("weights", ["demo", "random:tiny:seed=0"])
def test_head_finder(weights, kind):
    check("heads", view(weights, "training"), kind)  # the page scores the full run whatever the mode


@pytest.mark.parametrize("kind", ["gpt2viz", "transformers"])
@pytest.mark.parametrize("weights,block", [("demo", 1), ("demo", 0), ("random:tiny:seed=0", 1)])
def test_activation_patching(weights, block, kind):
    text_b = " people play one good game people eat"  # as long as TEXT in tokens, its last word changed
    model = load(weights).model
    answers = default_answers(*(run(model, encode(t), Mode.FULL)["logits"][0, -1] for t in (TEXT, text_b)))
    v = view(weights, "decode", (("text_b", text_b), ("answers", answers)), block=block)
    check("patch", v, kind)


@pytest.mark.parametrize("kind", ["gpt2viz", "transformers"])
@pytest.mark.parametrize("weights,mode,versus,position", [("demo", "decode", None, 6), ("demo", "full", " work", 6),
                                                         ("random:tiny:seed=0", "full", None, 3)])
def test_attribution(weights, mode, versus, position, kind):
    values = (("answer", encode(" play")[0]), ("versus", None if versus is None else encode(versus)[0]),
              ("position", position))
    check("attribution", view(weights, mode, values), kind)


def test_prefill_output_and_a_one_token_decode():
    check("output", view("demo", "prefill"), "transformers")
    one = dataclasses.replace(view("demo", "decode"), text=" people", n_tokens=1)  # no cache to build first
    assert "cache" not in snippet("attention", one, "transformers")
    check("attention", one, "transformers")


def test_training_gpt2viz_snippet_draws_the_pages_dropout():
    v = dataclasses.replace(view("random:tiny:seed=3", "training"), seed=3)
    assert "seed=3" in snippet("mlp", v, "gpt2viz")
    check("mlp", v, "gpt2viz")
    assert "without dropout" in snippet("mlp", v, "transformers")  # transformers cannot draw the same masks


def test_cells_file_runs_both_kinds_as_cells():
    v = view("random:tiny:seed=0", "full")
    text = cells("attention", v)
    parts = text.split("# %%\n")
    assert len(parts) == 3 and text.count("result = ") == 2
    namespace = {}
    exec(text, namespace)  # a cells file is also a plain script
    assert namespace["result"].shape == (len(encode(TEXT)),) * 2


def test_every_page_has_a_snippet_and_unknown_ones_say_which_exist():
    v = view("random:tiny:seed=0", "full")
    for page in PAGES:
        for kind in ("gpt2viz", "transformers"):
            w = dataclasses.replace(v, values=(("text_b", TEXT), ("answers", (11, 12)), ("answer", 13))) \
                if page in ("patch", "attribution") else v
            lines = snippet(page, w, kind).splitlines()
            compile("\n".join(lines), page, "exec")
            code = [x for x in lines if x.strip() and not x.lstrip().startswith("#")]
            assert len(code) <= 32, (page, kind)  # short enough to read
            assert all(len(x) <= WIDTH for x in lines if not x.startswith("TEXT = ")), (page, kind)
    with pytest.raises(ValueError, match="attention"):
        snippet("nowhere", v, "gpt2viz")
    with pytest.raises(ValueError, match="kind"):
        snippet("attention", v, "jax")


@pytest.mark.parametrize("bias,tied,n_inner", [(True, True, None), (False, False, 100)])
def test_to_transformers_computes_our_logits(bias, tied, n_inner):
    cfg = dataclasses.replace(get_config("tiny"), bias=bias, tied=tied, n_inner=n_inner)
    ours = random_model(cfg, 5)
    with torch.no_grad():
        for p in ours.parameters():  # away from the fresh init's zero biases and unit gains
            p.add_(torch.randn(p.shape, generator=torch.Generator().manual_seed(p.numel())) * 0.05)
        ids = torch.tensor([encode(TEXT)])
        hf = to_transformers(ours)
        torch.testing.assert_close(hf(ids).logits, ours(ids)[0], rtol=0, atol=1e-4)
    assert hf.config._attn_implementation == "eager" and not hf.training
    if not tied:
        assert not torch.equal(hf.lm_head.weight, hf.transformer.wte.weight)


def test_a_checkpoint_file_in_view(tmp_path):
    """A checkpoint path (as the Hugging Face cache or a local file gives it): transformers reads the
    file itself."""
    from gpt2viz.model.weights import save_safetensors

    model = random_model(get_config("tiny"), 4)
    with torch.no_grad():
        for p in model.parameters():  # biases and gains away from their fresh values
            p.add_(0.05)
    path = tmp_path / "model.safetensors"
    save_safetensors(model, path)
    v = view(str(path), "decode")
    assert f"load_file({str(path)!r})" in snippet("mlp", v, "transformers")
    check("mlp", v, "transformers")
    check("attention", v, "gpt2viz")



@pytest.mark.parametrize("kind", ["gpt2viz", "transformers"])
@pytest.mark.parametrize("values", [(("temp", 2.0), ("topk", 3.0)), (("temp", 0.7), ("topp", 0.8)),
                                    (("temp", 2.0), ("topk", 5.0), ("topp", 0.5)), (("temp", 0.0),)])
def test_the_output_snippets_follow_the_pages_temperature_top_k_and_top_p(values, kind):
    """The Output page at temperature 2, top-k 3 printed the temperature-1 top 10: now each snippet prints the
    page's after-sampling numbers for its own controls."""
    v = view("demo", "full", values)
    check("output", v, kind)
    assert "temperature" in snippet("output", v, kind)
