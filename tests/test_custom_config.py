"""Any GPT-2-shaped config, counted: MLP width, biases on or off, tied or untied output matrix.

The reference count comes from a model built here from torch.nn primitives (nn.Embedding,
nn.LayerNorm, nn.Linear), not from gpt2viz's model class, on the meta device (no memory).
nanoGPT's Shakespeare-character model, by hand (V = 65, n_ctx = 256, d = 384, 6 blocks, m = 4d,
no biases, tied):
  per block: 2 LayerNorm gains 2 × 384 + W_QKV 384 × 1,152 + W_O 384 × 384 + W_fc 384 × 1,536
             + W_proj 1,536 × 384 = 768 + 442,368 + 147,456 + 589,824 + 589,824 = 1,770,240
  wte 65 × 384 = 24,960; wpe 256 × 384 = 98,304; ln_f gain 384
  total 24,960 + 98,304 + 6 × 1,770,240 + 384 = 10,745,088
  nanoGPT's printed count (position table left out) 10,745,088 − 98,304 = 10,646,784 ≈ 10.65M.
"""

import json
import subprocess
import sys

import pytest
import torch
from arith import evaluate
from torch import nn

from gpt2viz.anatomy.components import component_tree
from gpt2viz.anatomy.params import accounting_report, closed_form, closed_form_total, count_model, meta_model
from gpt2viz.cli import shapes_report
from gpt2viz.model.modes import run
from gpt2viz.model.weights import random_model
from gpt2viz.spec import costs, schema
from gpt2viz.spec.config import PRESETS, custom_config
from gpt2viz.spec.schema import parameter_axes, parameter_names

SHAKESPEARE = {"vocab_size": 65, "n_positions": 256, "n_embd": 384, "n_layer": 6, "n_head": 6, "bias": False,
               "tied": True}


def reference_model(V, n_ctx, d, n_layer, m, bias, tied) -> nn.Module:
    """A GPT-2-shaped parameter set from torch.nn primitives only (how nanoGPT's model.py lays it out)."""
    def block():
        return nn.ModuleDict({
            "ln_1": nn.LayerNorm(d, bias=bias), "c_attn": nn.Linear(d, 3 * d, bias=bias),
            "c_proj": nn.Linear(d, d, bias=bias), "ln_2": nn.LayerNorm(d, bias=bias),
            "c_fc": nn.Linear(d, m, bias=bias), "mlp_proj": nn.Linear(m, d, bias=bias)})
    with torch.device("meta"):
        parts = {"wte": nn.Embedding(V, d), "wpe": nn.Embedding(n_ctx, d),
                 "h": nn.ModuleList(block() for _ in range(n_layer)), "ln_f": nn.LayerNorm(d, bias=bias)}
        if not tied:
            parts["lm_head"] = nn.Linear(d, V, bias=False)
        return nn.ModuleDict(parts)


def reference_count(cfg) -> int:
    model = reference_model(cfg.vocab_size, cfg.n_positions, cfg.n_embd, cfg.n_layer, cfg.d_mlp, cfg.bias, cfg.tied)
    return sum(p.numel() for p in model.parameters())


CONFIGS = [  # (V, n_ctx, d, n_layer, n_head, n_inner, bias, tied)
    (65, 256, 384, 6, 6, None, False, True),  # nanoGPT shakespeare-char
    (65, 256, 384, 6, 6, None, True, True),
    (65, 256, 384, 6, 6, None, False, False),
    (50304, 1024, 768, 12, 12, None, False, True),  # nanoGPT's padded vocabulary
    (1000, 64, 48, 3, 4, 100, True, False),
    (1000, 64, 48, 3, 4, 100, False, False),
    (7, 5, 12, 1, 3, 12, True, True),
    (50257, 1024, 1600, 48, 25, 4 * 1600, True, True),  # gpt2-xl spelled out
]


@pytest.mark.parametrize("V, n_ctx, d, n_layer, n_head, n_inner, bias, tied", CONFIGS)
def test_custom_totals_equal_an_independent_torch_model(V, n_ctx, d, n_layer, n_head, n_inner, bias, tied):
    cfg = custom_config(V, n_ctx, d, n_layer, n_head, n_inner, bias=bias, tied=tied)
    expected = reference_count(cfg)
    report = accounting_report(cfg)
    assert report["total"] == expected == closed_form_total(cfg) == component_tree(cfg).root.total
    assert evaluate(report["formula"]["calculation"]) == expected
    assert sum(count_model(meta_model(cfg)).values()) == expected  # gpt2viz's own model agrees
    for c in report["components"]:
        for r in c["rows"]:
            assert evaluate(r["calculation"]) == r["parameters"], (c["id"], r)
            assert bias or not any(t.endswith(".bias") for t in r["tensors"]), r
    leaves = {c.id: c.per_instance for c in component_tree(cfg).leaves if c.per_instance}
    assert leaves == {k: v for k, v in closed_form(cfg).items() if v}


@pytest.mark.parametrize("bias, tied", [(True, True), (False, True), (True, False), (False, False)])
def test_parameter_table_names_and_shapes_are_the_models(bias, tied):
    cfg = custom_config(97, 40, 24, 2, 3, 56, bias=bias, tied=tied)
    values = schema.dims(cfg)
    table = {n: schema.concrete(schema.for_config(parameter_axes(n), cfg), values) for n in parameter_names(cfg)}
    built = {n: list(p.shape) for n, p in meta_model(cfg).named_parameters()}
    assert list(table) == list(built) and table == built
    assert ("lm_head.weight" in built) == (not tied)


def test_presets_through_the_custom_path_give_todays_totals():
    for name, preset in PRESETS.items():
        cfg = custom_config(preset.vocab_size, preset.n_positions, preset.n_embd, preset.n_layer, preset.n_head,
                            4 * preset.n_embd, name=name)
        assert cfg == preset  # n_inner = 4d is the default, spelled either way
        assert accounting_report(cfg)["total"] == accounting_report(name)["total"]
    assert accounting_report("gpt2")["total"] == 124_439_808


def test_nanogpt_shakespeare_in_both_conventions():
    cfg = custom_config(**SHAKESPEARE)
    report = accounting_report(cfg)
    assert report["total"] == 10_745_088 == reference_count(cfg)
    nanogpt = next(o for o in report["other_totals"] if "nanoGPT" in o["label"])
    assert nanogpt["value"] == 10_745_088 - 256 * 384 == 10_646_784 == evaluate(nanogpt["calculation"])
    assert f"{nanogpt['value'] / 1e6:.2f}M" == "10.65M"  # what nanoGPT prints for this model
    for o in report["other_totals"]:
        if o["calculation"]:
            assert evaluate(o["calculation"]) == o["value"], o["label"]


@pytest.mark.parametrize("bias, tied, n_inner", [(False, True, None), (True, False, 40), (False, False, 24)])
@pytest.mark.parametrize("mode", ["full", "training", "prefill", "decode"])
def test_custom_shapes_match_a_run(mode, bias, tied, n_inner):
    cfg = custom_config(53, 16, 16, 2, 4, n_inner, bias=bias, tied=tied)
    model = random_model(cfg, seed=3)
    n = 5 if mode == "decode" else 4  # decode: the last of 5 tokens against 4 cached ones
    trace = run(model, torch.randint(0, 53, (1, n), generator=torch.Generator().manual_seed(0)), mode)
    held = trace.nbytes  # before the loop below derives names into the trace's small cache
    report = shapes_report(cfg, mode, T=None if mode == "decode" else n, P=4 if mode == "decode" else None)
    assert [t["name"] for t in report["tensors"]] == trace.names
    for t in report["tensors"]:
        assert t["shape"] == list(trace[t["name"]].shape), t["name"]
    if n_inner:
        assert next(t for t in report["tensors"] if t["name"] == "blocks.0.mlp.pre")["symbolic"] == "[B, T, d_mlp]"
    assert report["costs"]["trace"]["value"] == held


def test_custom_flops_use_the_mlp_width():
    cfg = custom_config(50, 32, 16, 2, 4, 40)
    rows = {r.component: r for r in costs.forward_flops(cfg, 1, 3, 3)}
    fc = rows["block.mlp.fc"].per_instance
    assert fc.value == 2 * 3 * 16 * 40 == evaluate(fc.calculation)
    assert "d_mlp" in rows["block.mlp.proj"].per_instance.symbolic


@pytest.mark.parametrize("kw, message", [
    ({"n_embd": 385}, "n_embd 385 is not divisible by n_head 6"),
    ({"n_layer": 0}, "n_layer must be positive, got 0"),
    ({"vocab_size": -3}, "vocab_size must be positive"),
    ({"n_inner": 0}, "n_inner must be positive"),
    ({"n_positions": 10**12}, "n_positions 1,000,000,000,000 is out of range"),
])
def test_bad_custom_configs_are_one_line_errors(kw, message):
    args = {k: v for k, v in SHAKESPEARE.items() if k not in ("bias", "tied")} | kw
    with pytest.raises(ValueError, match=message):
        custom_config(**args)


# ---------------------------------------------------------------------------- the command line
def cli(*args):
    return subprocess.run([sys.executable, "-m", "gpt2viz", *args], capture_output=True, text=True, timeout=300,
                          check=False)


NANOGPT_FLAGS = ["--vocab-size", "65", "--n-positions", "256", "--n-embd", "384", "--n-layer", "6", "--n-head", "6",
                 "--no-bias"]


def test_cli_params_of_a_custom_config():
    p = cli("params", *NANOGPT_FLAGS, "--json")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["total"] == 10_745_088 and r["config"]["bias"] is False and r["config"]["n_inner"] == 1536
    text = cli("params", *NANOGPT_FLAGS, "--untied-head", "--n-inner", "1000").stdout
    untied = custom_config(65, 256, 384, 6, 6, 1000, bias=False, tied=False)
    assert text.startswith(f"custom: {reference_count(untied):,} parameters")
    assert "lm_head.weight" in text and "nanoGPT" in text


def test_cli_shapes_of_a_custom_config():
    p = cli("shapes", *NANOGPT_FLAGS, "--n-inner", "100", "--mode", "training", "--json")
    assert p.returncode == 0, p.stderr
    tensors = {t["name"]: t for t in json.loads(p.stdout)["tensors"]}
    assert tensors["blocks.5.mlp.post"]["shape"] == [1, 8, 100]
    assert "grad.h.0.mlp.c_fc.bias" not in tensors and tensors["grad.h.0.mlp.c_fc.weight"]["shape"] == [384, 100]


@pytest.mark.parametrize("args, needle", [
    (["params", "--n-embd", "385", "--n-head", "6"], "not divisible by n_head 6"),
    (["params", "--n-layer", "0"], "n_layer must be positive"),
    (["shapes", "--vocab-size", "-1"], "vocab_size must be positive"),
    (["params", "--n-inner", "x"], "invalid int value"),
    (["params", "--n-layer", "2", "--checkpoint", "model.safetensors"], "without the custom config flags"),
])
def test_cli_bad_custom_configs_exit_2_in_one_line(args, needle):
    p = cli(*args)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and needle in p.stderr
