"""Weights: GPT-2's initialisation, safetensors round trips, and every kind of bad file."""

import json
import math
import struct
from dataclasses import replace

import pytest
import torch
from safetensors.torch import save_file

from gpt2viz.model.weights import (
    WeightsError,
    find_hf_checkpoints,
    infer_config,
    load_safetensors,
    random_model,
    read_header,
    save_safetensors,
)
from gpt2viz.spec.config import GPT2Config, get_config


def test_initialisation_statistics():
    cfg = GPT2Config("t", n_layer=8, n_head=4, n_embd=256)
    m = random_model(cfg, seed=1)
    assert abs(m.wte.weight.std().item() - 0.02) < 0.0005
    assert abs(m.h[3].attn.c_attn.weight.std().item() - 0.02) < 0.001
    resid = 0.02 / math.sqrt(2 * 8)
    for w in (m.h[5].attn.c_proj.weight, m.h[5].mlp.c_proj.weight):
        assert abs(w.std().item() - resid) < 0.05 * resid
        assert abs(w.mean().item()) < 0.1 * resid
    assert (m.h[0].mlp.c_fc.bias == 0).all() and (m.ln_f.weight == 1).all() and (m.h[2].ln_2.bias == 0).all()


def test_initialisation_is_seeded():
    cfg = get_config("tiny")
    a, b, c = random_model(cfg, 3), random_model(cfg, 3), random_model(cfg, 4)
    assert torch.equal(a.wte.weight, b.wte.weight)
    assert not torch.equal(a.wte.weight, c.wte.weight)


def test_round_trip(tiny, tmp_path):
    path = tmp_path / "model.safetensors"
    save_safetensors(tiny, path)
    loaded = load_safetensors(path)
    assert loaded.model.config == tiny.config
    assert loaded.n_head_source == "file metadata"
    for (name, p), (name2, q) in zip(tiny.named_parameters(), loaded.model.named_parameters()):
        assert name == name2 and torch.equal(p, q)


def _hf_layout(model, prefix="transformer.", buffers=True, lm_head=False):
    sd = {prefix + k: v.clone() for k, v in model.state_dict().items()}
    if buffers:
        n_pos = model.config.n_positions
        for i in range(model.config.n_layer):
            sd[f"{prefix}h.{i}.attn.bias"] = torch.tril(torch.ones(n_pos, n_pos)).view(1, 1, n_pos, n_pos)
            sd[f"{prefix}h.{i}.attn.masked_bias"] = torch.tensor(-1e4)
    if lm_head:
        sd["lm_head.weight"] = model.wte.weight.clone()
    return sd


@pytest.mark.parametrize("prefix", ["", "transformer."])
def test_hugging_face_layout_with_buffers_and_tied_head(tiny, tmp_path, prefix):
    path = tmp_path / "model.safetensors"
    save_file(_hf_layout(tiny, prefix, buffers=True, lm_head=True), str(path))
    loaded = load_safetensors(path, n_head=4)
    assert len(loaded.buffers) == 4 and all("attn" in b for b in loaded.buffers)
    assert any("tied" in n for n in loaded.notes)
    assert torch.equal(loaded.model.h[1].mlp.c_proj.weight, tiny.h[1].mlp.c_proj.weight)


def test_config_json_beside_the_file_gives_the_head_count(tiny, tmp_path):
    save_file(_hf_layout(tiny, buffers=False), str(tmp_path / "model.safetensors"))
    (tmp_path / "config.json").write_text(json.dumps({"n_head": 8}))
    loaded = load_safetensors(tmp_path / "model.safetensors")
    assert loaded.model.config.n_head == 8 and loaded.n_head_source == "config.json beside the file"


def test_infer_config_from_shapes():
    shapes = {"wte.weight": (50257, 1024), "wpe.weight": (1024, 1024)}
    shapes |= {f"h.{i}.ln_1.weight": (1024,) for i in range(24)}
    cfg = infer_config(shapes)
    assert (cfg.name, cfg.n_layer, cfg.n_head, cfg.n_embd) == ("gpt2-medium", 24, 16, 1024)


# ---------------------------------------------------------------------------- bad files
def _write(tmp_path, sd, name="model.safetensors"):
    path = tmp_path / name
    save_file(sd, str(path))
    return path


def _error(path, **kw) -> str:
    with pytest.raises(WeightsError) as e:
        load_safetensors(path, **kw)
    msg = str(e.value)
    assert "\n" not in msg
    return msg


def test_missing_key_is_named(tiny, tmp_path):
    sd = _hf_layout(tiny, "", buffers=False)
    del sd["h.1.mlp.c_fc.bias"]
    assert "h.1.mlp.c_fc.bias" in _error(_write(tmp_path, sd), n_head=4)


def test_extra_key_is_named(tiny, tmp_path):
    sd = _hf_layout(tiny, "", buffers=False) | {"h.0.attn.rotary": torch.zeros(3)}
    assert "h.0.attn.rotary" in _error(_write(tmp_path, sd), n_head=4)


def test_wrong_shape_is_named_with_expected(tiny, tmp_path):
    sd = _hf_layout(tiny, "", buffers=False)
    sd["h.0.mlp.c_fc.weight"] = sd["h.0.mlp.c_fc.weight"].T.contiguous()  # [out, in] like nn.Linear
    msg = _error(_write(tmp_path, sd), n_head=4)
    assert "h.0.mlp.c_fc.weight" in msg and "[256, 64]" in msg and "[64, 256]" in msg


def test_non_float_dtype_is_named(tiny, tmp_path):
    sd = _hf_layout(tiny, "", buffers=False)
    sd["ln_f.weight"] = sd["ln_f.weight"].to(torch.int32)
    assert "ln_f.weight" in _error(_write(tmp_path, sd), n_head=4)


def test_nan_and_inf_are_named(tiny, tmp_path):
    sd = _hf_layout(tiny, "", buffers=False)
    sd["h.1.attn.c_proj.weight"][3, 4] = float("nan")
    assert "h.1.attn.c_proj.weight" in _error(_write(tmp_path, sd), n_head=4)


def test_half_precision_loads_as_float32(tiny, tmp_path):
    sd = {k: v.half() for k, v in _hf_layout(tiny, "", buffers=False).items()}
    m = load_safetensors(_write(tmp_path, sd), n_head=4).model
    assert m.wte.weight.dtype == torch.float32


def test_truncated_files_are_refused_at_every_offset(tiny, tmp_path):
    good = tmp_path / "good.safetensors"
    save_safetensors(tiny, good)
    data = good.read_bytes()
    for cut in [0, 3, 8, 20, len(data) // 3, len(data) - 1]:
        bad = tmp_path / f"cut{cut}.safetensors"
        bad.write_bytes(data[:cut])
        _error(bad)


def test_corrupt_header_is_refused(tmp_path):
    path = tmp_path / "model.safetensors"
    path.write_bytes(struct.pack("<Q", 10) + b"{not json}" + b"\0" * 100)
    assert "not valid JSON" in _error(path)
    path.write_bytes(b"\x00\x01 not a safetensors file")
    _error(path)
    path.write_bytes(struct.pack("<Q", 2**60) + b"{}")
    assert "claims" in _error(path)


def test_absurd_declared_size_is_refused(tmp_path):
    header = json.dumps({"wte.weight": {"dtype": "F32", "shape": [10**9, 10**9], "data_offsets": [0, 16]}}).encode()
    path = tmp_path / "model.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 16)
    assert "wte.weight" in _error(path)


@pytest.mark.parametrize("name,content", [("pytorch_model.bin", b"PK\x03\x04rest"),
                                          ("model.pt", b"\x80\x02}q\x00."),
                                          ("weights.safetensors", b"PK\x03\x04zip inside")])
def test_pickles_are_refused_without_unpickling(tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(content)
    msg = _error(path)
    assert "pickle" in msg and "safetensors" in msg


def test_missing_file(tmp_path):
    assert "no weights file" in _error(tmp_path / "nope.safetensors")


def test_header_is_read_without_tensor_data(tiny, tmp_path):
    path = tmp_path / "model.safetensors"
    save_safetensors(tiny, path)
    h = read_header(path)
    assert h.entries["wte.weight"].shape == (50257, 64) and h.metadata["n_head"] == "4"


def test_hugging_face_cache_discovery(tiny, tmp_path):
    hub = tmp_path / "hub"
    for repo, snap in [("models--openai-community--gpt2", "abc"), ("models--gpt2-medium", "def"),
                       ("models--someone--gpt2-finetune", "x"), ("models--bert-base", "y")]:
        d = hub / repo / "snapshots" / snap
        d.mkdir(parents=True)
        save_safetensors(tiny, d / "model.safetensors")
    (hub / "models--openai-community--gpt2" / "refs").mkdir()
    (hub / "models--openai-community--gpt2" / "refs" / "main").write_text("abc")
    found = find_hf_checkpoints({"HF_HOME": str(tmp_path)})
    assert [c.name for c in found] == ["gpt2-medium", "gpt2"]
    assert found[1].path.endswith("models--openai-community--gpt2/snapshots/abc/model.safetensors")
    assert find_hf_checkpoints({"HF_HUB_CACHE": str(hub)}) == found


@pytest.mark.parametrize("entry", [{"dtype": ["F32"], "shape": [2], "data_offsets": [0, 8]},
                                   {"dtype": "F32", "shape": [2.5], "data_offsets": [0, 8]},
                                   {"dtype": "F32", "shape": [2], "data_offsets": ["0", "8"]},
                                   {"dtype": "F32", "shape": [2], "data_offsets": {"a": 1}},
                                   "not an object"])
def test_malformed_header_entries_are_refused(tmp_path, entry):
    header = json.dumps({"wte.weight": entry}).encode()
    path = tmp_path / "model.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 8)
    assert "malformed header entry" in _error(path)


def test_metadata_that_is_not_an_object_is_refused(tmp_path):
    header = json.dumps({"__metadata__": 5}).encode()
    path = tmp_path / "model.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header)
    assert "__metadata__" in _error(path)


def test_a_forged_block_number_builds_nothing(tiny, tmp_path):
    sd = _hf_layout(tiny, "", buffers=False)
    sd["h.99999999.ln_1.weight"] = torch.ones(64)
    assert "missing block h.2" in _error(_write(tmp_path, sd), n_head=4)


def test_a_files_own_label_is_believed_only_when_the_shapes_agree(tiny, tmp_path):
    path = tmp_path / "model.safetensors"
    save_safetensors(tiny, path, extra_metadata={"model": "gpt2-xl"})
    assert load_safetensors(path).model.config.name == "tiny"  # named by its shapes instead
    save_safetensors(tiny, path, extra_metadata={"model": "my-tiny"})
    assert load_safetensors(path).model.config.name == "my-tiny"


# ---------------------------------------------------------------------------- files a student may upload
def _header_file(tmp_path, raw: bytes, data: bytes = b"") -> str:
    path = tmp_path / "model.safetensors"
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + data)
    return path


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
def test_pickles_of_every_protocol_are_named_as_pickles(tmp_path, protocol):
    import pickle

    path = tmp_path / "model.safetensors"  # a pickle under a safetensors name (torch.save writes protocol 2)
    path.write_bytes(pickle.dumps({"wte.weight": list(range(100))}, protocol=protocol))
    msg = _error(path)
    assert "pickle checkpoint" in msg and "never unpickle" in msg


@pytest.mark.parametrize("raw, says", [
    (b"[" * 200_000 + b"]" * 200_000, "nests"),  # RecursionError in Python's json
    (b'{"wte.weight": {"dtype": "F32", "shape": [' + b"9" * 5000 + b'], "data_offsets": [0, 4]}}',
     "thousands of digits"),  # over Python's 4,300-digit limit
])
def test_a_malformed_header_gets_a_sentence_not_pythons_words(tmp_path, raw, says):
    msg = _error(_header_file(tmp_path, raw))
    assert says in msg and "Error" not in msg and "4300" not in msg and "\n" not in msg


def test_a_header_larger_than_any_gpt2_checkpoints_is_not_parsed(tmp_path):
    """A 2 MiB header (valid JSON, spaces): gpt2-xl's is about 80 KB; the old bound read up to 100 MiB
    and parsing one took 2.6 GB."""
    raw = b"{}" + b" " * (2 * 2**20)
    msg = _error(_header_file(tmp_path, raw))
    assert "far more than a GPT-2 checkpoint's" in msg


def _model_file(tmp_path, **sizes) -> str:
    cfg = GPT2Config("odd", **{"n_layer": 1, "n_head": 2, "n_embd": 8, **sizes})
    path = tmp_path / "model.safetensors"
    save_safetensors(random_model(cfg, 0), path)
    return path


@pytest.mark.parametrize("shape, says", [([50257, 0], "a width of 0"), ([0, 8], "a vocabulary of 0")])
def test_a_zero_size_is_said_not_divided_by(tmp_path, shape, says):
    sd = {"wte.weight": torch.zeros(shape), "wpe.weight": torch.zeros(4, shape[1]), "h.0.ln_1.weight": torch.zeros(1)}
    msg = _error(_write(tmp_path, sd))
    assert says in msg


def test_the_header_alone_gives_the_checked_config(tmp_path):
    from gpt2viz.model.weights import checkpoint_config

    path = _model_file(tmp_path, vocab_size=50257, n_positions=32)
    assert checkpoint_config(path) == load_safetensors(path).model.config
    with pytest.raises(WeightsError, match="width 8 is not divisible by 3 heads"):
        checkpoint_config(path, n_head=3)



def write_padded(path, state: dict, header_bytes: int) -> None:
    """A safetensors file whose header (its JSON padded with spaces, as the format allows) is exactly
    `header_bytes` long."""
    header, chunks, offset = {}, [], 0
    for key, t in state.items():
        raw = t.contiguous().numpy().tobytes()
        header[key] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", header_bytes) + text.ljust(header_bytes) + b"".join(chunks))


@pytest.mark.parametrize("header_bytes", [640, 896, 1152, 1408])
def test_a_safetensors_header_whose_length_looks_like_a_pickles_start_is_read(tmp_path, header_bytes):
    """A header of 1,408 bytes begins the file with 80 05, a protocol-5 pickle's first two bytes (a bias-free,
    untied tiny model's file was refused as a pickle); 640, 896 and 1,152 bytes give 80 02 to 80 04."""
    cfg = replace(get_config("tiny"), bias=False, tied=False, n_layer=1)
    state = random_model(cfg, 0).state_dict()
    path = tmp_path / "model.safetensors"
    write_padded(path, state if header_bytes > 1000 else {"wte.weight": state["wte.weight"]}, header_bytes)
    assert path.read_bytes()[:2] == bytes([0x80, header_bytes >> 8])
    assert list(read_header(path).entries) == list(state)[: len(read_header(path).entries)]
    if header_bytes > 1000:  # the whole model: it loads
        loaded = load_safetensors(path, config=cfg).model
        assert torch.equal(loaded.lm_head.weight, state["lm_head.weight"]) and not loaded.config.bias
