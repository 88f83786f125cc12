"""Direct logit attribution against a decomposition computed from transformers' own forward pass
(hooks on its modules, the same weights read from the file), and the identity, rows sum to the
logit, on every weights source: random presets, the demo model, files, no biases, an untied head."""

import copy
import json
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file

import gpt2viz
from gpt2viz import cli
from gpt2viz.analysis.attribution import NEEDS, attribute, attribute_text, component_names, one_token
from gpt2viz.model.demo_model import DEMO_PATH
from gpt2viz.model.modes import run
from gpt2viz.model.tokenizer import encode
from gpt2viz.model.weights import hf_config, load_safetensors, random_model, save_safetensors, to_transformers
from gpt2viz.spec.config import custom_config, get_config
from gpt2viz.spec.schema import Mode
from gpt2viz.teaching.prompts import DEMO_REPEAT

TEXT = "When Mary and John went to the store, John gave a drink to"
TOL = 1e-4


def hf_from_file(path):
    """transformers' GPT-2 holding the file's tensors as they are (not through gpt2viz's loader)."""
    from transformers import GPT2LMHeadModel

    hf = GPT2LMHeadModel(hf_config(load_safetensors(path).model.config)).eval()
    state = {k.removeprefix("transformer."): w.float() for k, w in load_file(str(path)).items()}
    assert not hf.transformer.load_state_dict(state, strict=False).missing_keys
    return hf


@torch.no_grad()
def hf_rows(hf, ids, answer, versus=None, position=-1) -> tuple[dict[str, float], float]:
    """The decomposition, by hand from transformers' run: c_proj's input (the heads side by side),
    each MLP's output and ln_f's input caught by hooks; W_O, b_O, the tables and ln_f from its modules."""
    seen = {}
    hooks = [hf.transformer.ln_f.register_forward_pre_hook(lambda m, a: seen.update(x=a[0]))]
    for b, block in enumerate(hf.transformer.h):
        hooks.append(block.attn.c_proj.register_forward_pre_hook(lambda m, a, b=b: seen.update({f"z{b}": a[0]})))
        hooks.append(block.mlp.register_forward_hook(lambda m, a, out, b=b: seen.update({f"mlp{b}": out})))
    logits = hf(torch.tensor([ids])).logits[0, position].double()
    for h in hooks:
        h.remove()
    cfg = hf.config
    d, nh = cfg.n_embd, cfg.n_head
    dh = d // nh
    p = position % len(ids)
    t = hf.transformer
    parts = {"embed": t.wte.weight[ids[p]] + t.wpe.weight[p]}
    for b, block in enumerate(t.h):
        z = seen[f"z{b}"][0, p]
        for h in range(nh):
            parts[f"blocks.{b}.attn.head.{h}"] = z[h * dh:(h + 1) * dh] @ block.attn.c_proj.weight[h * dh:(h + 1) * dh]
        parts[f"blocks.{b}.attn.bias"] = block.attn.c_proj.bias
        parts[f"blocks.{b}.mlp"] = seen[f"mlp{b}"][0, p]
    x = seen["x"][0, p].double()
    sigma = (x.var(unbiased=False) + t.ln_f.eps).sqrt()
    u = hf.lm_head.weight[answer].double() - (0 if versus is None else hf.lm_head.weight[versus].double())
    gu = t.ln_f.weight.double() * u
    rows = {n: float(((c.double() - c.double().mean()) / sigma) @ gu) for n, c in parts.items()}
    rows["ln_f.bias"] = float(t.ln_f.bias.double() @ u)
    target = logits[answer] - (0 if versus is None else logits[versus])
    return rows, float(target)


def cli_json(capsys, *args) -> dict:
    assert cli.main(["attribute", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def assert_rows_match(ours: dict, theirs: dict, target: float):
    got = {r["component"]: r["value"] for r in ours["rows"]}
    assert list(got) == list(theirs)  # the same components, in the same order
    worst = max(abs(got[n] - theirs[n]) for n in theirs)
    assert worst < TOL, worst
    assert abs(ours["target"] - target) < TOL
    assert abs(sum(got.values()) - ours["target"]) < TOL and abs(ours["residual"]) < TOL


@pytest.mark.skipif(not DEMO_PATH.is_file(), reason="the demo model file is not in this checkout")
@pytest.mark.parametrize("versus,position", [(None, None), (" has", None), (" work", 6)])
def test_cli_rows_are_transformers_decomposition_on_the_demo_model(capsys, versus, position):
    ids = encode(DEMO_REPEAT.text)
    args = ["--text", DEMO_REPEAT.text, "--answer", " after", "--weights", "demo"]
    args += ["--versus", versus] if versus else []
    args += ["--position", str(position)] if position is not None else []
    ours = cli_json(capsys, *args)
    theirs, target = hf_rows(hf_from_file(DEMO_PATH), ids, one_token(" after"),
                             None if versus is None else one_token(versus), -1 if position is None else position)
    assert_rows_match(ours, theirs, target)
    assert (ours["answer"], ours["versus"], ours["model"]) == (" after", versus, "demo")
    assert ours["position"] == (len(ids) - 1 if position is None else position)


def test_cli_rows_are_transformers_decomposition_on_a_random_model(capsys, hf_dir):
    hf, path = hf_dir  # transformers' own random initialisation, saved by save_pretrained
    hf = copy.deepcopy(hf)  # the fixture is the session's: the parity tests compare it with its file
    seeded = torch.Generator().manual_seed(0)  # the same biases in every run
    with torch.no_grad():  # its biases start at zero: give them values, so their rows are tested
        for name, p in hf.named_parameters():
            if name.endswith("bias"):
                p.normal_(0, 0.1, generator=seeded)
    hf.save_pretrained(path / "biased")
    file = path / "biased" / "model.safetensors"
    ours = cli_json(capsys, "--text", TEXT, "--answer", " Mary", "--versus", " John", "--weights", str(file))
    theirs, target = hf_rows(hf_from_file(file), encode(TEXT), one_token(" Mary"), one_token(" John"))
    assert_rows_match(ours, theirs, target)
    assert all(abs(theirs[f"blocks.{b}.attn.bias"]) > 1e-6 for b in range(3))  # the bias rows are not zero


def test_cli_random_preset_weights_match_transformers(capsys):
    ours = cli_json(capsys, "--text", TEXT, "--answer", " Mary", "--model", "tiny", "--seed", "3")
    theirs, target = hf_rows(to_transformers(random_model(get_config("tiny"), 3)), encode(TEXT), one_token(" Mary"))
    assert_rows_match(ours, theirs, target)


def sources():
    yield "tiny, seed 0", random_model(get_config("tiny"), 0)
    yield "no biases", random_model(custom_config(50257, 64, 64, 2, 4, bias=False), 1)
    yield "untied head", random_model(custom_config(50257, 64, 64, 2, 4, tied=False), 2)
    if DEMO_PATH.is_file():
        yield "demo", load_safetensors(DEMO_PATH).model


@pytest.mark.parametrize("label,model", list(sources()), ids=lambda x: x if isinstance(x, str) else "")
def test_rows_sum_to_the_logit_on_every_weights_source(label, model, tmp_path):
    ids = encode(DEMO_REPEAT.text)
    models = [model]
    if model.config.bias and model.config.tied:  # and read back from a file (as the loader takes GPT-2's)
        save_safetensors(model, tmp_path / "model.safetensors")
        models.append(load_safetensors(tmp_path / "model.safetensors").model)
    for m in models:
        for versus, position in ((None, None), (one_token(" has"), 3)):
            a = attribute_text(m, ids, one_token(" after"), versus, position)
            assert abs(a.residual) < TOL, (label, a.residual)
            assert a.target != 0 and a.values.abs().max() > 0  # not an all-zero identity
            assert a.names == tuple(component_names(m.config))
    names = component_names(model.config)
    assert ("ln_f.bias" in names) == model.config.bias and ("blocks.0.attn.bias" in names) == model.config.bias


def test_the_default_answer_is_the_top_prediction_and_the_api_is_the_cli(capsys, tiny):
    trace = run(tiny, encode(TEXT), Mode.FULL, names=NEEDS)
    a = attribute(tiny, trace)
    assert a.answer == int(trace["logits"][0, -1].argmax()) and a.versus is None
    api = gpt2viz.load("random:tiny:seed=0").attribute(TEXT, " Mary", versus=" John", position=4)
    assert api == cli_json(capsys, "--text", TEXT, "--answer", " Mary", "--versus", " John", "--position", "4",
                           "--model", "tiny")
    assert set(api) == {"target", "rows", "residual", "answer", "versus", "position", "model"}


def test_a_head_row_is_what_zeroing_its_output_rows_removes_from_the_stream(tiny):
    """The head's part, read back from the stream: the final stream minus that of a model whose W_O
    rows for the head are zero, with the same attention upstream (block 1 is the last)."""
    import copy

    ids = encode(TEXT)
    m = copy.deepcopy(tiny)
    with torch.no_grad():
        m.h[1].attn.c_proj.weight[2 * 16:3 * 16] = 0  # tiny: dh = 16
    a, b = run(tiny, ids), run(m, ids)
    part = (a["blocks.1.resid_mid"] - b["blocks.1.resid_mid"])[0, -1]  # [d]: head 1.2's output
    x = a["blocks.1.resid_post"][0, -1]
    sigma = (a["ln_f.var"][0, -1] + tiny.ln_f.eps).sqrt()
    u = tiny.wte.weight[one_token(" Mary")]
    want = ((part - part.mean()) / sigma) @ (tiny.ln_f.weight * u).detach()
    got = attribute(tiny, a, one_token(" Mary")).value("blocks.1.attn.head.2")
    assert abs(float(want) - got) < 1e-5 and x.shape == part.shape


def test_only_a_full_run_is_attributed(tiny):
    with pytest.raises(ValueError, match="full-mode"):
        attribute(tiny, run(tiny, encode(TEXT), Mode.DECODE))


@pytest.mark.parametrize("args,needle", [
    (["--answer", " after work"], "is 2 tokens"),
    (["--answer", " after", "--versus", " Mary Ann"], "--versus ' Mary Ann' is 2 tokens"),
    (["--answer", " after", "--position", "99"], "position must be a token index between 0 and 13, got 99"),
    (["--answer", " after", "--position", "-1"], "between 0 and 13, got -1"),
    (["--answer", ""], "empty"),
])
def test_cli_errors_are_one_line(args, needle):
    p = subprocess.run([sys.executable, "-m", "gpt2viz", "attribute", "--text", TEXT, "--model", "tiny", *args],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and needle in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_cli_table_ends_with_the_sum_and_residual():
    p = subprocess.run([sys.executable, "-m", "gpt2viz", "attribute", "--text", TEXT, "--answer", " Mary",
                        "--model", "tiny"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert "logit(' Mary') =" in lines[0] and lines[1].split()[0] == "embed"
    assert lines[-1].split()[0] == "sum" and "residual" in lines[-1]
    assert len(lines) == 2 + len(component_names(get_config("tiny"))) + 1 - 1


def test_the_identity_holds_on_a_checkpoint_from_the_hugging_face_cache(hf_cache_tiny):
    from gpt2viz.model.weights import find_hf_checkpoints

    (found,) = [c for c in find_hf_checkpoints() if c.name == "gpt2"]  # the tiny model, cached as gpt2
    r = gpt2viz.load(str(found.path)).attribute(TEXT, " Mary", versus=" John")
    assert abs(r["residual"]) < TOL and abs(sum(row["value"] for row in r["rows"]) - r["target"]) < TOL
