"""The component catalogue and the shapes per mode, checked against what the model really records.

Every recorded name, in every mode, for tiny and gpt2 and several (B, T, P): the catalogue's shape
equals the recorded tensor's shape, in the recorded order; the trace's bytes equal the cost model's.
"""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from arith import evaluate

from gpt2viz.anatomy.components import component_tree
from gpt2viz.cli import format_shapes, shapes_report
from gpt2viz.model.modes import Mode, run
from gpt2viz.model.weights import random_model
from gpt2viz.spec import costs, schema
from gpt2viz.spec import references as references_module
from gpt2viz.spec.config import GPT2Config, get_config
from gpt2viz.spec.references import references
from gpt2viz.spec.schema import recorded_names, run_dims

REQUIRED_IDS = ("embed.tok", "embed.pos", "block", "block.ln1", "block.attn", "block.attn.qkv", "block.attn.heads",
                "block.attn.merge", "block.ln2", "block.mlp", "block.mlp.fc", "block.mlp.gelu", "block.mlp.proj",
                "ln_f", "unembed")
SHARED = Path(__file__).resolve().parents[2] / "shared" / "reference_lines.json"



@pytest.fixture(scope="module")
def models():
    return {"tiny": random_model(get_config("tiny"), seed=1), "gpt2": random_model(get_config("gpt2"), seed=1)}


def ids_for(mode: str, B: int, T: int, P: int, V: int) -> torch.Tensor:
    n = P + 1 if mode == "decode" else T  # decode runs the text's last token against P cached ones
    return torch.randint(0, V, (B, n), generator=torch.Generator().manual_seed(B * 100 + n))


CASES = [  # (model, mode, B, T, P): T and P as the report will see them
    ("tiny", "full", 1, 1, 0), ("tiny", "full", 2, 5, 0), ("tiny", "training", 2, 4, 0),
    ("tiny", "prefill", 3, 6, 0), ("tiny", "decode", 2, 1, 5), ("tiny", "decode", 1, 1, 0),
    ("gpt2", "full", 1, 3, 0), ("gpt2", "training", 1, 2, 0), ("gpt2", "prefill", 2, 3, 0),
    ("gpt2", "decode", 1, 1, 4),
]


# ---------------------------------------------------------------------------- shapes vs the model
@pytest.mark.parametrize("name, mode, B, T, P", CASES)
def test_every_recorded_shape_matches_the_catalogue(models, name, mode, B, T, P):
    model = models[name]
    trace = run(model, ids_for(mode, B, T, P, model.config.vocab_size), mode)
    held = trace.nbytes  # before any lookup: what a run holds (a lookup caches derived tensors)
    report = shapes_report(name, mode, B=B, T=None if mode == "decode" else T, P=P if mode == "decode" else None)
    assert (report["B"], report["T"], report["P"], report["L"]) == (B, trace.T, trace.P, trace.L) == (B, T, P, P + T)
    assert [t["name"] for t in report["tensors"]] == trace.names  # same names, same order
    for t in report["tensors"]:
        assert t["shape"] == list(trace[t["name"]].shape), t["name"]
        assert t["dtype"] == str(trace[t["name"]].dtype).removeprefix("torch."), t["name"]
    assert report["costs"]["trace"]["value"] == held


def test_names_follow_dropout_and_cache_rules():
    no_dropout = GPT2Config("nodrop", n_layer=1, n_head=1, n_embd=8, vocab_size=16, dropout=0.0)
    names = recorded_names(no_dropout, "training")
    assert not [n for n in names if "dropout_mask" in n]  # no masks are drawn when p = 0
    assert "grad.h.0.mlp.c_fc.weight" in names and names[-1] == "grad.blocks.0.resid_post"
    assert not [n for n in recorded_names(get_config("tiny"), "full") if "cache" in n or n.startswith("grad.")]
    assert "blocks.1.attn.k_cache" in recorded_names(get_config("tiny"), "prefill")


def test_decode_after_1000_cached_tokens():
    r = shapes_report("gpt2", "decode", B=1, P=1000)
    shapes = {t["name"]: t["shape"] for t in r["tensors"]}
    assert (r["T"], r["P"], r["L"]) == (1, 1000, 1001)
    assert shapes["blocks.0.attn.z"] == [1, 12, 1, 64]  # H, per head
    assert shapes["blocks.0.attn.out"] == [1, 1, 768]  # Δattn
    assert shapes["blocks.11.attn.k_cache"] == [1, 12, 1001, 64]
    assert shapes["blocks.0.attn.pattern"] == [1, 12, 1, 1001]
    kv = r["costs"]["kv_cache"][0]
    assert kv["value"] == 2 * 12 * 1 * 12 * 1001 * 64 * 4 == evaluate(kv["calculation"])


def test_defaults_per_mode():
    cfg = get_config("gpt2")
    assert run_dims(cfg, "full") == {"B": 1, "T": 8, "P": 0, "L": 8}
    assert run_dims(cfg, "training") == {"B": 1, "T": 8, "P": 0, "L": 8}
    assert run_dims(cfg, "prefill") == {"B": 1, "T": 8, "P": 0, "L": 8}
    assert run_dims(cfg, "prefill", T=5) == {"B": 1, "T": 5, "P": 0, "L": 5}
    assert run_dims(cfg, "decode") == {"B": 1, "T": 1, "P": 7, "L": 8}
    shapes = {t["name"]: t for t in shapes_report("gpt2", "prefill", B=2)["tensors"]}
    assert shapes["logits"]["shape"] == [2, 1, 50257] and shapes["logits"]["symbolic"] == "[B, 1, V]"
    assert shapes["embed.pos"]["shape"] == [8, 768]
    assert shapes["blocks.0.attn.k_cache"]["shape"] == [2, 12, 8, 64]


@pytest.mark.parametrize("mode, kw, message", [
    ("full", {"B": 0}, "batch B must be at least 1"),
    ("full", {"T": 0}, "T (tokens) must be at least 1"),
    ("decode", {"P": -1}, "P (past) must be 0 or more"),
    ("full", {"P": 3}, "no KV cache"),
    ("decode", {"T": 2}, "T must be 1"),
    ("decode", {"P": 1024}, "1,025 positions exceed gpt2's context of 1,024"),
    ("full", {"T": 1025}, "exceed"),
    ("prefill", {"T": 3, "P": 4}, "prefill starts from an empty cache (P = 0)"),
    ("training", {"T": 1}, "training needs T >= 2"),
])
def test_bad_runs_are_refused_in_one_line(mode, kw, message):
    with pytest.raises(ValueError, match=re.escape(message)) as e:
        shapes_report("gpt2", mode, **kw)
    assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match="unknown mode"):
        shapes_report("gpt2", "sideways")


def test_format_shapes_lists_every_tensor_and_the_costs():
    r = shapes_report("tiny", "decode", P=3)
    text = format_shapes(r)
    assert "L=4" in text and "blocks.1.attn.v_cache" in text and "[1, 4, 4, 16]" in text
    assert "KV cache (fp32)" in text and "per token" in text
    assert len(text.splitlines()) > len(r["tensors"])


# ---------------------------------------------------------------------------- the tree
def test_tree_has_the_required_ids_in_a_consistent_tree():
    cat = component_tree("gpt2")
    assert set(REQUIRED_IDS) <= set(cat.by_id)
    assert cat.root.id == "model" and cat.root.parent is None
    for c in cat:
        for child in c.children:
            assert child.parent == c.id and cat[child.id] is child
        assert c.title and c.equation and c.description and c.explanation
        assert c.references, f"{c.id} cites nothing"
        assert c.instances == (12 if c.per_block else 1)
    assert [c.id for c in cat.ancestors("block.attn.merge")] == ["model", "block", "block.attn", "block.attn.merge"]
    assert [c.id for c in cat["block.mlp"].children] == ["block.mlp.fc", "block.mlp.gelu", "block.mlp.proj"]
    with pytest.raises(KeyError, match="no component 'block.moe'"):
        cat["block.moe"]


def test_parameter_free_components_say_they_own_no_weights():
    cat = component_tree("gpt2")
    for cid in ("block.attn.heads", "block.mlp.gelu"):
        assert not cat[cid].learned and cat[cid].per_instance == 0 and "no weights" in cat[cid].weights_note
    assert cat["unembed"].learned and cat["unembed"].total == 0 and "tied" in cat["unembed"].weights_note
    for c in cat.leaves:
        assert (c.per_instance == 0) == (c.weights_note is not None), c.id


def test_component_inputs_and_outputs_are_recorded_names():
    cfg = get_config("tiny")
    cat = component_tree(cfg)
    for mode in schema.MODES:
        names = set(recorded_names(cfg, mode))
        for c in cat:
            for s in c.shapes[mode]:
                if s.name.recorded:
                    assert s.name.full(0) in names, (c.id, mode, s.name.short)
    assert cat["ln_f"].inputs[0].full() == "blocks.1.resid_post"
    with pytest.raises(ValueError, match="give a block index"):
        cat["block.attn.merge"].inputs[0].full()


def test_merge_in_decode_takes_per_head_outputs_and_gives_delta_attn():
    merge = component_tree("gpt2")["block.attn.merge"]
    shapes = {(s.role, s.name.short): s for s in merge.shapes["decode"]}
    z, out = shapes[("in", "attn.z")], shapes[("out", "attn.out")]
    gpt2 = get_config("gpt2")
    assert z.symbolic == "[B, nh, T, dh]"
    assert schema.labelled(z.axes, gpt2, "decode") == "[B batch, 12 nh, 1 T (the new position), 64 dh]"
    assert schema.labelled(out.axes, gpt2, "decode") == "[B batch, 1 T (the new position), 768 d]"
    values = schema.dims(get_config("gpt2"), B=1, T=1, P=1000)
    assert schema.concrete(z.axes, values) == [1, 12, 1, 64] and schema.concrete(out.axes, values) == [1, 1, 768]
    assert ("out", "attn.out_dropout_mask") not in shapes  # training only
    assert ("out", "attn.out_dropout_mask") in {(s.role, s.name.short) for s in merge.shapes["training"]}
    assert [schema.labelled(s.axes, gpt2, "full") for s in component_tree("gpt2")["embed.tok"].shapes["full"]
            if s.role == "out"] == ["[B batch, T positions, 768 d]"]


def test_rows_are_the_checkpoint_tensors_and_evaluate_to_their_counts():
    cat = component_tree("gpt2")
    mlp = cat["block.mlp"]
    assert [r.parameters for r in mlp.rows] == [2_362_368, 2_360_064]
    assert [r.calculation for r in mlp.rows] == ["768 × 3,072 + 3,072", "3,072 × 768 + 768"]
    assert mlp.rows[0].tensors == ("h.{i}.mlp.c_fc.weight", "h.{i}.mlp.c_fc.bias")
    assert cat.root.rows[2].calculation == "12 × 7,087,872"
    for c in cat:
        for r in c.rows:
            assert evaluate(r.calculation) == r.parameters, (c.id, r.calculation)


# ---------------------------------------------------------------------------- references
def test_references_resolve_and_label_their_certainty():
    refs = references()
    absent = [r for r in refs.values() if r.absent]
    assert len(absent) == 4
    for r in absent:  # "openai/gpt-2 has no embedding dropout (no such code in src/model.py)"
        assert r.permalink is None and r.what.startswith("openai/gpt-2")
        assert r.label == f"{r.what.rstrip('.')} (no such code in src/model.py)"
    for r in refs.values():
        if r.absent:
            continue
        anchor = f"#L{r.start}" if r.start == r.end else f"#L{r.start}-L{r.end}"
        assert r.permalink == r.file_url + anchor and len(r.commit) == 40
        if r.ambiguous:
            assert "covering range" in r.label and r.candidates
            assert all(r.start <= s and e <= r.end for s, e in r.candidates)
    heads = component_tree("gpt2")["block.attn.heads"].references
    assert any(r.absent and "dropout" in r.what for r in heads)


@pytest.mark.skipif(not SHARED.is_file(), reason="shared/reference_lines.json is not beside this checkout")
def test_reference_facts_match_the_shared_file():
    shared = json.loads(SHARED.read_text())
    ours = json.loads((Path(references_module.__file__).parent / "references.json").read_text())["references"]
    for e in ours:
        match = [r for r in shared if (r["repo"], r["path"], r["component"]) == (e["repo"], e["path"], e["component"])]
        assert len(match) == 1, e["id"]
        r = match[0]
        for key in ("commit", "start", "end", "permalink", "status"):
            assert e[key] == r[key], (e["id"], key)
        if "candidates" in e:
            assert e["candidates"] == [[r["start_if_pre_pr47459"], r["end_if_pre_pr47459"]],
                                       [r["start_if_post_pr47459"], r["end_if_post_pr47459"]]]
        assert e["what"] != r["description"]  # our own words


# ---------------------------------------------------------------------------- costs
def test_flops_and_bytes_have_arithmetic_that_evaluates():
    cfg = get_config("gpt2")
    r = shapes_report("gpt2", "training", B=2, T=4)
    f = r["costs"]["flops"]
    for row in f["components"]:
        assert evaluate(row["calculation"]) == row["value"] and row["total"] == row["value"] * row["instances"]
    assert evaluate(f["forward"]["calculation"]) == f["forward"]["value"]
    assert f["training_step"]["value"] == 3 * f["forward"]["value"]
    assert evaluate(r["costs"]["trace"]["calculation"]) == r["costs"]["trace"]["value"]
    for w in r["costs"]["weights"]:
        assert evaluate(w["calculation"]) == w["value"]
    # one token reading one key: 2 FLOPs per weight of every matmul, plus 4·d per layer for attention
    one = sum(x.total for x in costs.forward_flops(cfg, B=1, T=1, L=1))
    assert one == 2 * (cfg.n_layer * 12 * 768 * 768 + 50257 * 768) + 4 * 768 * cfg.n_layer
    prefill = {x.component: x.total for x in costs.forward_flops(cfg, 1, 8, 8, T_out=1)}
    assert prefill["unembed"] == 2 * 768 * 50257  # logits of the last position only


def test_kv_cache_bytes_equal_the_recorded_cache(models):
    trace = run(models["tiny"], ids_for("decode", 2, 1, 5, 50257), Mode.DECODE)
    cache = sum(t.numel() * t.element_size() for n, t in trace.tensors.items() if n.endswith("_cache"))
    assert costs.kv_cache_bytes(get_config("tiny"), B=2, L=6).value == cache


# ---------------------------------------------------------------------------- torch-free vocabulary
@pytest.mark.parametrize("module", ["gpt2viz.spec.schema", "gpt2viz.anatomy.components", "gpt2viz.spec.references",
                                    "gpt2viz.spec.config"])
def test_the_vocabulary_imports_without_torch(module):
    """The schema, the component tree and the config are metadata: importing one (in a fresh
    interpreter) must not pull in torch, the model or the tokenizer."""
    code = f"import sys, {module}; print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'tiktoken')))"
    out = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[1],
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", f"{module} imports {out.strip()}"
