"""Hostile input, fuzzed and counted: every case ends in a clear message (or works), never a
traceback. Counts: URL_CASES random links, TRUNCATIONS + HEADER_FLIPS + DATA_FLIPS weight files,
len(TEXTS) texts."""

import random
import struct

import pytest
import torch

from gpt2viz.model.modes import run
from gpt2viz.model.tokenizer import TextError, encode
from gpt2viz.model.weights import WeightsError, load_safetensors, save_safetensors

URL_CASES = 48
TRUNCATIONS = 64
HEADER_FLIPS = 64
DATA_FLIPS = 32

NASTY = ["", "-1", "-999999999999", "99999999999999999999", "1e309", "nan", "inf", "0x10", "3.5", " 2",
         "ünïcødé ☃", "<script>alert(1)</script>", "**bold** [x](javascript:alert(1))", "%00", "\u202e", "a" * 5000,
         "../../etc/passwd", "gpt2-xxl", "decode ", "DECODE", "tiny"]
KEYS = ["text", "weights", "model", "seed", "mode", "block", "head", "steps", "temperature", "top_k", "gen_seed",
        "step", "set", "questions", "teacher", "path", "unknown_key"]


@pytest.mark.parametrize("case", range(URL_CASES))
def test_random_links_never_break_a_page(case):
    from test_app import open_page

    from gpt2viz.spec.pages import PAGES

    rng = random.Random(case)
    params = {k: rng.choice(NASTY) for k in rng.sample(KEYS, rng.randint(1, 6))}
    params.setdefault("model", "tiny")
    if params["model"] not in ("tiny",):  # keep the fuzz fast: big sizes are a link away, not a test away
        params["model"] = "tiny"
    file = rng.choice(PAGES).url
    at = open_page(file, **params)
    assert not at.exception, (file, params, at.exception[0].value if at.exception else None)


@pytest.fixture(scope="module")
def good_file(tmp_path_factory, tiny):
    path = tmp_path_factory.mktemp("w") / "model.safetensors"
    save_safetensors(tiny, path)
    return path.read_bytes()


def _loads_or_refuses(tmp_path, data: bytes, name="model.safetensors") -> str:
    path = tmp_path / name
    path.write_bytes(data)
    try:
        load_safetensors(path)
        return "loaded"
    except WeightsError as e:
        assert "\n" not in str(e) and str(e)
        return "refused"


def test_truncated_at_many_offsets(tmp_path, good_file):
    rng = random.Random(0)
    cuts = sorted({0, 1, 7, 8, 9, len(good_file) - 1} | {rng.randrange(len(good_file)) for _ in range(TRUNCATIONS - 6)})
    assert all(_loads_or_refuses(tmp_path, good_file[:cut]) == "refused" for cut in cuts)


def test_header_bytes_flipped(tmp_path, good_file):
    (n,) = struct.unpack("<Q", good_file[:8])
    rng = random.Random(1)
    outcomes = []
    for _ in range(HEADER_FLIPS):
        data = bytearray(good_file)
        i = rng.randrange(0, 8 + n)
        data[i] = rng.randrange(256)
        outcomes.append(_loads_or_refuses(tmp_path, bytes(data)))
    assert outcomes.count("refused") > HEADER_FLIPS // 2  # most flips break the header, none crash


def test_data_bytes_flipped_load_or_refuse(tmp_path, good_file):
    (n,) = struct.unpack("<Q", good_file[:8])
    rng = random.Random(2)
    for _ in range(DATA_FLIPS):
        data = bytearray(good_file)
        for _ in range(8):
            data[rng.randrange(8 + n, len(data))] = 0xFF  # 0xFF… bytes make NaN floats
        _loads_or_refuses(tmp_path, bytes(data))


def test_nan_written_on_purpose_is_named(tmp_path, tiny):
    sd = {k: v.clone() for k, v in tiny.state_dict().items()}
    sd["h.0.ln_1.weight"][0] = float("nan")
    from safetensors.torch import save_file
    save_file(sd, str(tmp_path / "model.safetensors"), metadata={"n_head": "4"})
    with pytest.raises(WeightsError, match="h.0.ln_1.weight"):
        load_safetensors(tmp_path / "model.safetensors")


TEXTS = ["x" * 1_000_000, "\x00\x01\x02\x1b[31m\x7f", " \t\n\r " * 10, "\u202e\u200b\ufeff", "<|endoftext|>" * 3,
         "🧪" * 600, "a\x00b"]


@pytest.mark.parametrize("text", TEXTS, ids=range(len(TEXTS)))
def test_texts_run_or_say_why(tiny, text):
    try:
        ids = encode(text, max_tokens=1024, truncate=True)
    except TextError as e:
        assert "empty" in str(e)
        return
    t = run(tiny, ids, "decode", names=["logits"])
    assert torch.isfinite(t["logits"]).all() and len(ids) <= 1024
