"""The Code panel's snippets (gpt2viz/teaching/snippets.py): each is run as a student would run it, and the
numbers it leaves in `result` are the page's, computed as the page computes them from its trace:
exactly with gpt2viz, within 1e-4 with transformers on the same weights. The transformers snippets run
with gpt2viz unimportable, and for random weights after the `python -m gpt2viz weights` command they print."""

import builtins
import dataclasses
import json
import re

import pytest
import torch

from gpt2viz.analysis import attribution
from gpt2viz.analysis.heads import PATTERNS, score_trace
from gpt2viz.analysis.lens import logit_lens
from gpt2viz.analysis.whatif import Target, default_answers, knockout, log_probs, patch
from gpt2viz.api import load
from gpt2viz.cli import main
from gpt2viz.model.generation import Sampler, distribution
from gpt2viz.model.modes import Mode, generate, greedy, run
from gpt2viz.model.tokenizer import encode
from gpt2viz.model.weights import random_model, save_safetensors, to_transformers
from gpt2viz.spec.config import get_config
from gpt2viz.teaching.snippets import PAGES, WIDTH, View, cells, snippet
from gpt2viz.ui.classroom import shown_distribution
from gpt2viz.ui.overview import residual_norm_series, top_next_tokens
from gpt2viz.ui.whatif_view import NEEDS, top_tokens

pytest.importorskip("transformers")

TEXT = " people play one good game people play"
TOL = {"gpt2viz": dict(rtol=0, atol=1e-6), "transformers": dict(rtol=0, atol=1e-4)}
LN_PREFIX = {"ln_1": "blocks.{b}.ln1.", "ln_2": "blocks.{b}.ln2.", "ln_f": "ln_f."}


@pytest.fixture(autouse=True)
def in_a_folder_of_its_own(tmp_path, monkeypatch):
    """Each test in an empty folder, where a snippet's `python -m gpt2viz weights` writes its file."""
    monkeypatch.chdir(tmp_path)


def page_numbers(page: str, v: View) -> torch.Tensor:
    """The page's main numbers, by the calls its view script makes (views/<page>.py, gpt2viz/ui/)."""
    b, h, model, ids = v.block, v.head, load(v.weights).model, list(v.ids)
    if page == "generation":  # ui/cache.get_generation, then classroom.generation_rows' p(chosen)
        t, k, p = v.value("temp"), v.value("topk") or None, v.value("topp") if v.value("topp") < 1 else None
        choose = Sampler(t, k, v.value("gen_seed"), p) if t > 0 else greedy
        gen = generate(model, ids, v.value("steps"), choose=choose)
        return torch.stack([shown_distribution(tr, t, k, p)[c] for tr, c in zip(gen.traces, gen.ids)]), gen.ids
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


def view(weights: str, mode: str, page_values=(), block: int = 1, head: int = 2, text: str = TEXT,
         folder: bool = False) -> View:
    return View(text, weights, mode, block, head, values=page_values, config=load(weights).config,
                ids=tuple(encode(text)), folder=folder)


def without_gpt2viz(name, *args, **kwargs):
    """builtins.__import__ for a transformers snippet: gpt2viz is not there."""
    if name.split(".")[0] == "gpt2viz":
        raise ImportError(f"the transformers snippet imports {name}")
    return builtins.__import__(name, *args, **kwargs)


def run_snippet(page: str, v: View, kind: str) -> dict:
    """Exec the snippet as a student would: a transformers one first runs the shell command it prints
    (random weights to a file), then runs without gpt2viz."""
    code, namespace = snippet(page, v, kind), {}
    if kind == "transformers":
        for command in re.findall(r"^#   python -m gpt2viz (weights .*)$", code, re.M):
            assert main(command.split()) == 0
        namespace["__builtins__"] = {**vars(builtins), "__import__": without_gpt2viz}
    exec(compile(code, f"<{page} {kind}>", "exec"), namespace)
    return namespace


def check(page: str, v: View, kind: str) -> float:
    """Run the snippet; assert its `result` is the page's; return the largest difference."""
    namespace = run_snippet(page, v, kind)
    expected = page_numbers(page, v)
    if page == "generation":  # the tokens chosen, and the probability of each
        expected, chosen = expected
        assert namespace["chosen"] == chosen
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
    v = view(weights, "decode", (("text_b", text_b), ("ids_b", encode(text_b)), ("answers", answers)), block=block)
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
    one = view("demo", "decode", text=" people")  # one token: no cache to build first
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
    (command,) = re.findall(r"^#   python -m gpt2viz (weights .*)$", text, re.M)  # the random weights' file
    assert main(command.split()) == 0
    namespace = {}
    exec(text, namespace)  # a cells file is also a plain script
    assert namespace["result"].shape == (len(encode(TEXT)),) * 2


def test_every_page_has_a_snippet_and_unknown_ones_say_which_exist():
    v = view("random:tiny:seed=0", "full")
    for page in PAGES:
        for kind in ("gpt2viz", "transformers"):
            w = dataclasses.replace(v, values=(("text_b", TEXT), ("ids_b", v.ids), ("answers", (11, 12)),
                                               ("answer", 13))) if page in ("patch", "attribution") else v
            lines = snippet(page, w, kind).splitlines()
            compile("\n".join(lines), page, "exec")
            code = [x for x in lines if x.strip() and not x.lstrip().startswith("#")]
            # short enough to read; transformers' also writes out the config and reads the weights' file
            assert len(code) <= {"gpt2viz": 32, "transformers": 36}[kind], (page, kind)
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
    model = random_model(get_config("tiny"), 4)
    with torch.no_grad():
        for p in model.parameters():  # biases and gains away from their fresh values
            p.add_(0.05)
    path = tmp_path / "model.safetensors"
    save_safetensors(model, path)
    v = view(str(path), "decode")
    assert f"PATH = {str(path)!r}" in snippet("mlp", v, "transformers")
    check("mlp", v, "transformers")
    check("attention", v, "gpt2viz")


def write_folder(folder, model) -> None:
    """A weights folder: model.safetensors and its config.json (GPT2Config's keys, nanoGPT's bias)."""
    cfg = model.config
    folder.mkdir()
    save_safetensors(model, folder / "model.safetensors")
    (folder / "config.json").write_text(json.dumps({
        "n_layer": cfg.n_layer, "n_head": cfg.n_head, "n_embd": cfg.n_embd, "n_positions": cfg.n_positions,
        "vocab_size": cfg.vocab_size, "n_inner": cfg.n_inner, "activation_function": cfg.activation,
        "bias": cfg.bias, "tie_word_embeddings": cfg.tied}))


def test_a_folder_in_view(tmp_path):
    """A weights folder (model.safetensors and config.json): transformers reads its model.safetensors."""
    write_folder(tmp_path / "run", random_model(get_config("tiny"), 8))
    v = view(str(tmp_path / "run"), "decode", folder=True)
    assert f"PATH = {str(tmp_path / 'run' / 'model.safetensors')!r}" in snippet("block", v, "transformers")
    check("block", v, "transformers")


def test_weights_without_biases_an_untied_head_and_their_own_mlp_width(tmp_path):
    """nanoGPT's bias=False, an lm_head of its own, a 100-wide MLP and the exact GELU: transformers' GPT-2
    gets zero biases and the file's lm_head, and computes the page's numbers."""
    cfg = dataclasses.replace(get_config("tiny"), bias=False, tied=False, n_inner=100, activation="gelu")
    model = random_model(cfg, 6)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=torch.Generator().manual_seed(p.numel())) * 0.05)
    write_folder(tmp_path / "nano", model)
    v = view(str(tmp_path / "nano"), "prefill", folder=True)
    code = snippet("output", v, "transformers")
    assert "n_inner=100" in code and "activation_function='gelu'" in code and "tie_word_embeddings=False" in code
    assert "hf.lm_head.load_state_dict(" in code and ".zero_()" in code
    for page in ("output", "mlp", "attention", "block"):
        check(page, v, "transformers")


@pytest.mark.parametrize("kind", ["gpt2viz", "transformers"])
@pytest.mark.parametrize("weights", ["demo", "random:tiny:seed=0"])
@pytest.mark.parametrize("values", [(("temp", 2.0), ("topk", 3.0)), (("temp", 0.7), ("topp", 0.8)),
                                    (("temp", 2.0), ("topk", 5.0), ("topp", 0.5)), (("temp", 0.0),)])
def test_the_output_snippets_follow_the_pages_temperature_top_k_and_top_p(values, weights, kind):
    """The Output page at temperature 2, top-k 3 printed the temperature-1 top 10: now each snippet prints the
    page's after-sampling numbers for its own controls."""
    v = view(weights, "full", values)
    check("output", v, kind)
    assert "temperature" in snippet("output", v, kind)


@pytest.mark.parametrize("kind", ["gpt2viz", "transformers"])
@pytest.mark.parametrize("weights,text,steps,temp,topk,topp,seed", [
    ("demo", TEXT, 6, 0.0, 0, 1.0, 0),  # greedy
    ("demo", TEXT, 8, 0.7, 5, 0.9, 3),
    ("demo", " people", 4, 1.5, 0, 1.0, 11),  # one token: no cache before the first step
    ("random:tiny:seed=2", TEXT, 5, 2.0, 40, 0.95, 1)])
def test_the_generation_snippets_draw_the_pages_tokens(weights, text, steps, temp, topk, topp, seed, kind):
    """The Generation page's tokens and p(chosen), for its steps, temperature, top-k, top-p and seed: the
    transformers snippet draws them with a generator of the page's seed, one decode step at a time."""
    values = (("steps", steps), ("temp", temp), ("topk", topk), ("topp", topp), ("gen_seed", seed))
    v = view(weights, "full", values, text=text)  # the page decodes whatever the sidebar's mode
    check("generation", v, kind)
    code = snippet("generation", v, kind)
    assert f"{steps} steps" in code and ("greedy" in code if temp == 0 else f"seed {seed}" in code)


def test_the_transformers_snippets_import_no_gpt2viz():
    """Every page's transformers snippet, whatever the weights: torch, safetensors and transformers only."""
    views = [view(w, m) for w, m in (("demo", "decode"), ("random:tiny:seed=0", "prefill"))]
    for v in views:
        for page in PAGES:
            w = dataclasses.replace(v, values=(("text_b", TEXT), ("ids_b", v.ids), ("answers", (11, 12)),
                                               ("answer", 13), ("steps", 3), ("temp", 1.0)))
            imports = [x.strip() for x in snippet(page, w, "transformers").splitlines()
                       if re.match(r"\s*(import|from) ", x)]
            assert imports[:2] == ["import torch", "from safetensors.torch import load_file"], (page, imports)
            assert len(imports) == 3 and imports[2].startswith("from transformers import "), (page, imports)
