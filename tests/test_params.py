"""Parameter accounting: the closed form, a real model, a checkpoint header and the catalogue rows agree.

Hand-computed for gpt2 (d = 768, V = 50,257, n_ctx = 1,024, 12 blocks):
  wte 50,257 × 768 = 38,597,376; wpe 1,024 × 768 = 786,432
  per block: ln 2 × 1,536 + c_attn 768 × 2,304 + 2,304 + c_proj 768 × 768 + 768
             + c_fc 768 × 3,072 + 3,072 + c_proj 3,072 × 768 + 768 = 7,087,872
  38,597,376 + 786,432 + 12 × 7,087,872 + ln_f 1,536 = 124,439,808 (tied lm_head adds 0).
Big sizes are built on the meta device; their headers are written as sparse files (no data bytes).
"""

import json
import math
import struct

import pytest
import torch
from arith import evaluate
from safetensors.torch import save_file

from gpt2viz.anatomy import params
from gpt2viz.anatomy.components import component_tree
from gpt2viz.anatomy.params import (
    accounting_report,
    closed_form,
    closed_form_total,
    count_header,
    count_model,
    meta_model,
)
from gpt2viz.model.weights import expected_shapes, random_model, save_safetensors
from gpt2viz.spec.config import PRESETS, GPT2Config, get_config

TOTALS = {"gpt2": 124_439_808, "gpt2-medium": 354_823_168, "gpt2-large": 774_030_080, "gpt2-xl": 1_557_611_200}
MINI = GPT2Config("mini", n_layer=2, n_head=2, n_embd=8, vocab_size=11, n_positions=16)



def write_header_only(path, shapes: dict, metadata: dict | None = None, dtype: str = "F32") -> None:
    """A valid safetensors file whose data section is a hole: the header is real, the bytes are zeros
    the filesystem never stores, so a gpt2-xl header costs a few kilobytes of disk."""
    header, offset = {}, 0
    for key, shape in shapes.items():
        n = math.prod(shape) * {"F32": 4, "F16": 2}[dtype]
        header[key] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + n]}
        offset += n
    if metadata:
        header["__metadata__"] = metadata
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw)
        f.truncate(8 + len(raw) + offset)


def by_component_totals(cfg: GPT2Config) -> dict[str, int]:
    return {c.id: c.total for c in component_tree(cfg).leaves if c.total}


# ---------------------------------------------------------------------------- the required figures
@pytest.mark.parametrize("name, total", TOTALS.items())
def test_published_totals(name, total):
    report = accounting_report(name)
    assert report["total"] == total == closed_form_total(get_config(name))
    assert evaluate(report["formula"]["calculation"]) == total


def test_gpt2_component_figures():
    comps = {c["id"]: c for c in accounting_report("gpt2")["components"]}
    mlp, merge = comps["block.mlp"], comps["block.attn.merge"]
    assert (mlp["per_instance"], mlp["instances"], mlp["total"]) == (4_722_432, 12, 56_669_184)
    assert [r["parameters"] for r in mlp["rows"]] == [2_362_368, 2_360_064]  # expansion, projection
    assert (merge["per_instance"], merge["total"]) == (590_592, 7_087_104)
    assert comps["unembed"]["total"] == 0 and comps["unembed"]["rows"][0]["calculation"] == "0"
    assert comps["block"]["per_instance"] == 7_087_872 and comps["model"]["total"] == 124_439_808
    assert comps["block.attn.heads"]["weights_note"].startswith("Owns no weights")


# ---------------------------------------------------------------------------- three ways agree
@pytest.mark.parametrize("name", PRESETS)
def test_three_ways_agree_for_every_preset(name, tmp_path):
    cfg = get_config(name)
    rows = by_component_totals(cfg)  # the catalogue's rows, from the parameter axes
    formula = {cid: n * component_tree(cfg)[cid].instances for cid, n in closed_form(cfg).items()}
    model = count_model(meta_model(cfg))  # a real GPT2, on the meta device
    write_header_only(tmp_path / "model.safetensors", expected_shapes(cfg), {"n_head": str(cfg.n_head)})
    header = count_header(tmp_path / "model.safetensors")
    assert rows == formula == model == header.by_component()
    assert header.total == sum(model.values()) == closed_form_total(cfg) == component_tree(cfg).root.total
    assert header.config == cfg and not header.mismatches
    assert sum(p.numel() for p in meta_model(cfg).parameters()) == closed_form_total(cfg)


@pytest.mark.parametrize("name", PRESETS)
def test_every_row_evaluates_to_its_count(name):
    report = accounting_report(name)
    for c in report["components"]:
        assert sum(r["parameters"] for r in c["rows"]) == c["per_instance"], c["id"]
        for r in c["rows"]:
            assert evaluate(r["calculation"]) == r["parameters"], (c["id"], r["calculation"])
    for o in report["other_totals"]:
        if o["value"] is not None:
            assert evaluate(o["calculation"]) == o["value"], o["label"]
    for w in report["weight_bytes"]:
        assert evaluate(w["calculation"]) == w["value"]


# ---------------------------------------------------------------------------- other totals
def test_other_totals_for_gpt2():
    others = {o["label"].split(" (")[0]: o for o in accounting_report("gpt2")["other_totals"]}
    assert others["tied total"]["value"] == 124_439_808
    assert others["without embeddings"]["value"] == 85_056_000
    assert others["weight matrices only"]["value"] == 84_934_656
    assert others["if the output matrix were untied"]["value"] == 163_037_184
    paper = others['the paper\'s label "117M"']
    assert paper["value"] is None and "error" in paper["explanation"] and "124M" in paper["explanation"]
    assert not [o for o in accounting_report("tiny")["other_totals"] if "paper" in o["label"]]


def test_other_totals_agree_with_transformers():
    transformers = pytest.importorskip("transformers")
    with torch.device("meta"):
        hf = transformers.GPT2LMHeadModel(transformers.GPT2Config())
    others = accounting_report("gpt2")["other_totals"]
    assert others[0]["value"] == hf.num_parameters()
    assert others[1]["value"] == hf.num_parameters(exclude_embeddings=True)


# ---------------------------------------------------------------------------- real checkpoint files
def test_header_of_a_saved_tiny_model(tmp_path):
    path = tmp_path / "model.safetensors"
    save_safetensors(random_model(get_config("tiny")), path)
    report = accounting_report("tiny", checkpoint=str(path))
    ckpt = report["checkpoint"]
    assert ckpt["total"] == ckpt["expected_total"] == report["total"] == 3_382_080
    assert ckpt["matches"] and ckpt["mismatches"] == [] and ckpt["buffers"] == [] and ckpt["prefix"] == ""
    assert ckpt["config"]["n_head"] == 4 and ckpt["n_head_source"] == "file metadata"
    assert all(t["status"] == "ok" for t in ckpt["tensors"]) and len(ckpt["tensors"]) == 4 + 2 * 12
    assert all(c["header"] == c["expected"] for c in ckpt["components"])


def test_buffers_prefix_and_tied_copy_are_listed_apart(tmp_path):
    model = random_model(MINI)
    state = {f"transformer.{k}": v.contiguous() for k, v in model.state_dict().items()}
    for i in range(MINI.n_layer):  # transformers' old causal-mask buffers
        state[f"transformer.h.{i}.attn.bias"] = torch.ones(1, 1, 16, 16, dtype=torch.bool).tril()
        state[f"transformer.h.{i}.attn.masked_bias"] = torch.tensor(-1e4)
    state["lm_head.weight"] = model.wte.weight.detach().clone()
    path = tmp_path / "model.safetensors"
    save_file(state, str(path), metadata={"n_head": "2"})
    ckpt = accounting_report("gpt2", checkpoint=str(path))["checkpoint"]
    assert ckpt["total"] == closed_form_total(MINI) == sum(p.numel() for p in model.parameters())
    assert ckpt["matches"] and ckpt["prefix"] == "transformer."
    assert sorted(b["key"] for b in ckpt["buffers"]) == sorted(
        f"transformer.h.{i}.attn.{b}" for i in range(2) for b in ("bias", "masked_bias"))
    assert ckpt["buffers"][0]["elements"] in (256, 1)
    assert [h["key"] for h in ckpt["lm_head"]] == ["lm_head.weight"]
    assert not ckpt["preset"]["same_sizes"]  # a mini model, not the gpt2 preset asked for
    text = params.format_accounting(accounting_report("gpt2", checkpoint=str(path)))
    assert "buffer (not counted): transformer.h.0.attn.bias" in text and "tied copy (not counted)" in text


def test_a_disagreeing_header_is_reported_tensor_by_tensor(tmp_path):
    shapes = dict(expected_shapes(MINI))
    del shapes["h.1.ln_2.bias"]  # missing
    shapes["h.0.mlp.c_fc.weight"] = (8, 33)  # wrong shape
    shapes["h.0.attn.rotary.weight"] = (4,)  # not GPT-2
    path = tmp_path / "model.safetensors"
    write_header_only(path, shapes, {"n_head": "2"})
    ckpt = accounting_report("tiny", checkpoint=str(path))["checkpoint"]
    assert not ckpt["matches"]
    status = {t["name"]: t["status"] for t in ckpt["tensors"] if t["status"] != "ok"}
    assert status == {"h.1.ln_2.bias": "missing", "h.0.mlp.c_fc.weight": "shape",
                      "h.0.attn.rotary.weight": "unexpected"}
    assert "h.0.mlp.c_fc.weight: shape [8, 33], expected [8, 32]" in ckpt["mismatches"]
    fc = next(c for c in ckpt["components"] if c["id"] == "block.mlp.fc")
    assert fc["header"] == fc["expected"] + 8  # one extra column of 8
    assert ckpt["total"] == closed_form_total(MINI) + 8 - 8  # +8 in c_fc, −8 for the missing bias


def test_a_header_without_embeddings_is_compared_with_the_preset(tmp_path):
    shapes = {k: v for k, v in expected_shapes(MINI).items() if k != "wte.weight"}
    path = tmp_path / "model.safetensors"
    write_header_only(path, shapes)
    ckpt = accounting_report("tiny", checkpoint=str(path))["checkpoint"]
    assert ckpt["compared_with"] == "the tiny preset" and "missing tensor 'wte.weight'" in ckpt["notes"][0]
    assert not ckpt["matches"] and "wte.weight: missing (expected shape [50257, 64])" in ckpt["mismatches"]


def test_pickles_and_garbage_are_refused(tmp_path):
    bad = tmp_path / "model.bin"
    bad.write_bytes(b"\x80\x02junk")
    with pytest.raises(ValueError, match="pickle"):
        accounting_report("gpt2", checkpoint=str(bad))
    with pytest.raises(ValueError, match="no weights file"):
        accounting_report("gpt2", checkpoint=str(tmp_path / "absent.safetensors"))


def test_format_accounting_shows_the_arithmetic():
    text = params.format_accounting(accounting_report("gpt2"))
    for needle in ("124,439,808 parameters", "768 × 3,072 + 3,072 = 2,362,368", "85,056,000", "84,934,656",
                   "163,037,184", "117M", "fp16  124,439,808 × 2", "Owns no weights"):
        assert needle in text, needle


def test_header_of_a_transformers_checkpoint(hf_dir):
    """transformers' own save_pretrained output: its count from the header alone equals num_parameters()."""
    hf, path = hf_dir
    report = accounting_report("gpt2", checkpoint=str(path / "model.safetensors"))
    ckpt = report["checkpoint"]
    assert ckpt["matches"] and ckpt["total"] == report["total"] == hf.num_parameters()
    assert (ckpt["config"]["n_layer"], ckpt["config"]["n_embd"], ckpt["config"]["n_head"]) == (3, 128, 4)
    assert ckpt["n_head_source"] == "config.json beside the file" and ckpt["prefix"] == "transformer."


@pytest.mark.parametrize("model", ["gpt2", "gpt2-medium", "distilgpt2", "tiny", "shakespeare"])
def test_the_accounting_csv_sums_to_the_total_and_says_what_it_counted(model):
    """The CSV mixed parents and children (its "parameters" summed to 224,469,504 for
    gpt2) and did not record a custom size's config. Now: leaves only, each with its parent, the
    `parameters` column summing to the total, and the config on every line."""
    import csv
    import io

    from gpt2viz.anatomy.params import CSV_CONFIG, accounting_csv, accounting_report
    from gpt2viz.spec.config import custom_config

    cfg = custom_config(vocab_size=65, n_positions=256, n_embd=384, n_layer=6, n_head=6, bias=False) \
        if model == "shakespeare" else model
    report = accounting_report(cfg)
    rows = list(csv.DictReader(io.StringIO(accounting_csv(report))))
    assert sum(int(r["parameters"]) for r in rows) == report["total"]
    if model == "gpt2":
        assert report["total"] == 124_439_808
    assert all(int(r["parameters"]) == int(r["parameters_each"]) * int(r["instances"]) for r in rows)
    parents = {c["id"] for c in report["components"] if not c["leaf"]}
    leaves = {c["id"] for c in report["components"] if c["leaf"]}
    assert {r["component_id"] for r in rows} == leaves and {r["parent_id"] for r in rows} <= parents
    said = {k: {r[k] for r in rows} for k in ("model", *CSV_CONFIG)}
    want = report["config"] | {"model": report["model"]}
    assert said == {k: {str(v).lower()} for k, v in want.items()}
    if model == "shakespeare":
        assert said["n_embd"] == {"384"} and said["bias"] == {"false"} and said["vocab_size"] == {"65"}
