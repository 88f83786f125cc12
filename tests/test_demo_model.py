"""The demo model: the training command on a few steps, its data, and the shipped file's heads
measured on held-out sequences made with a seed that neither training nor the file's own
measurement used."""

import json
import math

import pytest
import torch

from gpt2viz.cli import main
from gpt2viz.model import tokenizer
from gpt2viz.model.demo_model import (
    DEMO_PATH,
    RULED,
    Recipe,
    chain_successors,
    demo_heads,
    head_scores,
    held_out,
    repeated_spans,
    successor,
    training_words,
)
from gpt2viz.model.weights import load_safetensors, read_header
from gpt2viz.teaching.prompts import DEMO_REPEAT

TINY = ["--phases", "2x8x2x20,2x32x2x50", "--n-embd", "16", "--n-head", "2", "--n-positions", "32",
        "--n-words", "50", "--threads", "1"]
HELD_OUT_SEED = 424242  # training used seeds 0 (data) and 1 (probe); the file's own scores, 1000


def test_train_demo_writes_a_loadable_fp16_model_that_says_how_it_was_made(tmp_path, capsys):
    out = tmp_path / "demo.safetensors"
    assert main(["train-demo", *TINY, "--seed", "3", "--out", str(out)]) == 0
    assert "induction head block" in capsys.readouterr().out
    header = read_header(out)
    assert {e.dtype for e in header.entries.values()} == {"F16"}
    recipe = json.loads(header.metadata["recipe"])
    assert recipe["phases"] == "2x8x2x20,2x32x2x50" and recipe["seed"] == 3 and recipe["n_head"] == 2
    assert header.metadata["trained_by"] == "python -m gpt2viz train-demo --seed 3"
    assert len(json.loads(header.metadata["history"])) >= 1
    model = load_safetensors(out).model
    cfg = model.config
    assert (cfg.n_layer, cfg.n_head, cfg.n_embd, cfg.n_positions, cfg.vocab_size) == (2, 2, 16, 32, 50257)
    assert model.wte.weight.dtype == torch.float32
    assert set(demo_heads(out)) == {"induction", "previous"}


def test_train_demo_is_seeded(tmp_path):
    a, b = tmp_path / "a.safetensors", tmp_path / "b.safetensors"
    for out in (a, b):
        assert main(["train-demo", *TINY, "--out", str(out)]) == 0
    wa, wb = load_safetensors(a).model.state_dict(), load_safetensors(b).model.state_dict()
    assert all(torch.equal(wa[k], wb[k]) for k in wa)


def test_train_demo_refuses_bad_numbers_with_one_line(tmp_path, capsys):
    assert main(["train-demo", "--threads", "0", "--out", str(tmp_path / "x.safetensors")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--threads" in err
    assert main(["train-demo", "--n-head", "3", "--out", str(tmp_path / "x.safetensors")]) == 2
    assert "divisible" in capsys.readouterr().err
    assert main(["train-demo", "--phases", "10x512x4x100", "--out", str(tmp_path / "x.safetensors")]) == 2
    assert "context 4..32" in capsys.readouterr().err
    assert main(["train-demo", "--loss-on", "fresh", "--out", str(tmp_path / "x.safetensors")]) == 2
    assert "'all' or 'repeated'" in capsys.readouterr().err
    assert not (tmp_path / "x.safetensors").exists()


def test_repeats_copy_the_words_they_point_at():
    ruled = 0
    for seed in range(20):
        ids, source = repeated_spans(torch.Generator().manual_seed(seed), 4, 256, 2000, 0.25, successor(2000, seed))
        b, i = (source >= 0).nonzero(as_tuple=True)
        assert torch.equal(ids[b, i], ids[b, source[b, i]]) and (source[b, i] < i).all()
        assert 0.2 < (source >= 0).float().mean() < 0.6
        b, i = (source == RULED).nonzero(as_tuple=True)  # skip segments: the word two before decides
        assert torch.equal(ids[b, i], successor(2000, seed)[ids[b, i - 2]])
        ruled += len(i)
    assert ruled > 0


def test_training_words_are_common_space_words():
    words = training_words(2000)
    assert len(set(words.tolist())) == 2000
    assert {tokenizer.readable(int(w)) for w in words[:3]} == {"␣t", "␣a", "␣the"}


# ---------------------------------------------------------------------------- the shipped file
# No recipe has yet produced a model that passes these (see the README): until one is shipped in
# assets/demo-model/, they are skipped, and the app does not offer the demo source.
needs_demo = pytest.mark.skipif(not DEMO_PATH.is_file(), reason=f"no demo model shipped at {DEMO_PATH}")


@pytest.fixture(scope="module")
def shipped():
    return load_safetensors(DEMO_PATH).model


@pytest.fixture(scope="module")
def recipe():
    return Recipe(**json.loads(read_header(DEMO_PATH).metadata["recipe"]))


@pytest.fixture(scope="module")
def scores(shipped, recipe):
    return head_scores(shipped, *held_out(recipe, HELD_OUT_SEED, B=8))


@needs_demo
def test_shipped_file_is_small_and_fp16():
    assert DEMO_PATH.stat().st_size <= 16 * 2**20
    assert {e.dtype for e in read_header(DEMO_PATH).entries.values()} == {"F16"}


@needs_demo
def test_shipped_model_has_an_induction_head(scores):
    block, head, score = scores.best("induction")
    assert score >= 0.5
    assert (block, head) == demo_heads()["induction"][:2]  # the head the Attention page points at


@needs_demo
def test_shipped_model_has_a_previous_token_head(scores):
    block, head, score = scores.best("previous")
    assert score >= 0.5
    assert (block, head) == demo_heads()["previous"][:2]


@needs_demo
def test_shipped_model_predicts_repeats_and_not_fresh_words(scores, recipe):
    # fresh words are a uniform draw from the training words (ln n_words nats at best); repeats are copied
    assert scores.loss_fresh > math.log(recipe.n_words) - 0.5
    assert scores.loss_repeated < 1.0
    assert scores.loss_repeated < scores.loss_fresh - 3.0


@needs_demo
def test_the_offered_text_shows_the_induction_head(shipped):
    ids = tokenizer.encode(DEMO_REPEAT.text)
    first, source = {}, []  # each repeated word's earlier occurrence (the words of a span are distinct)
    for i, t in enumerate(ids):
        source.append(first.get(t, -1))
        first.setdefault(t, i)
    assert sum(s >= 0 for s in source) >= 5
    block, head, _ = demo_heads()["induction"]
    scores = head_scores(shipped, torch.tensor([ids]), torch.tensor([source]))
    assert scores.induction[block][head] >= 0.5 and scores.loss_repeated < 1.0


# ---------------------------------------------------------------------------- the app
def test_the_app_offers_the_demo_model_and_says_what_it_learned(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from gpt2viz.ui import cache, demo, state, story

    path = tmp_path / "model.safetensors"  # a tiny trained stand-in for the shipped file
    assert main(["train-demo", *TINY, "--out", str(path)]) == 0
    for module in (cache, demo, state, story):
        monkeypatch.setattr(module, "DEMO_PATH", path)
    at = AppTest.from_file("../app.py", default_timeout=120)
    at.query_params["weights"] = "demo"
    at.run()
    at.switch_page("views/attention.py")
    at.run()
    assert not at.exception
    assert "demo model trained here" in " ".join(c.value for c in at.sidebar.caption)
    assert "(2 blocks, 2 heads, d = 16, context 32)" in " ".join(c.value for c in at.caption)
    assert "knows no English" in " ".join(c.value for c in at.caption)
    block, head, _ = demo_heads(path)["induction"]
    pointer = " ".join(i.value for i in at.info)
    assert f"Block {block} head {head} comes closest to an induction head" in pointer  # untrained: no claim
    assert "weights=demo" in " ".join(m.value for m in at.markdown if "target=\"_self\"" in m.value)
    assert at.sidebar.radio(key="weights").value == "demo"


def test_without_a_demo_file_the_app_does_not_offer_it(tmp_path, monkeypatch):
    from gpt2viz.ui import state

    monkeypatch.setattr(state, "DEMO_PATH", tmp_path / "absent.safetensors")
    assert "demo" not in state.sources_enabled()


def test_fresh_words_follow_the_chain_and_repeats_and_rules_still_hold():
    V, g = 300, torch.Generator().manual_seed(5)
    rule, successors = successor(V, 0), chain_successors(V, 0)
    ids, source = repeated_spans(g, 16, 64, V, 0.3, rule, 0.8, successors)
    b, i = (source >= 0).nonzero(as_tuple=True)
    assert torch.equal(ids[b, i], ids[b, source[b, i]])
    b, i = (source == RULED).nonzero(as_tuple=True)
    assert torch.equal(ids[b, i], rule[ids[b, i - 2]])
    b, i = (source[:, 1:] == -1).nonzero(as_tuple=True)
    follows = (successors[ids[b, i]] == ids[b, i + 1, None]).any(-1).float().mean()  # i + 1: the fresh word
    assert 0.7 < follows < 0.95  # 0.8 by the chain, plus uniform draws that hit a successor by chance
