"""The prompt library (gpt2viz/teaching/prompts.py) measured again: every demo prompt produces its greedy next
token on the shipped demo model, and the figures its sentences (and What if's note) state hold."""

import pytest
import torch

from gpt2viz.analysis.whatif import Target, knockout, log_probs, patch
from gpt2viz.model.demo_model import DEMO_PATH, demo_heads, demo_vocabulary, head_scores
from gpt2viz.model.modes import generate, run
from gpt2viz.model.tokenizer import decode, encode
from gpt2viz.model.weights import load_safetensors
from gpt2viz.teaching.prompts import DEMO_PAIR, DEMO_REPEAT, DEMO_SINK, PROMPTS, induction_cells, prompts_for
from gpt2viz.ui.whatif_view import DEMO_KNOCKOUTS, random_weights_note

needs_demo = pytest.mark.skipif(not DEMO_PATH.is_file(), reason=f"no demo model shipped at {DEMO_PATH}")


@pytest.fixture(scope="module")
def demo():
    return load_safetensors(DEMO_PATH).model


def next_probs(model, text: str) -> torch.Tensor:
    return log_probs(run(model, encode(text))).exp()  # [V]


def test_induction_cells_point_at_the_word_after_the_most_recent_earlier_occurrence():
    """The outline marks the cells the induction score reads: at 7 the most recent 5 is at 6, whose
    next word is 7 itself, so 7 has no target."""
    #        0  1  2  3  4  5  6  7
    ids = [5, 6, 7, 5, 6, 9, 5, 5]
    assert induction_cells(ids) == [(3, 1), (4, 2), (6, 4)]
    assert induction_cells([1, 2, 3]) == [] and induction_cells([1, 1]) == []  # j + 1 = i: the current word
    assert induction_cells([1, 2, 1, 2, 1, 2]) == []  # j + 1 = i − 1: the previous word


def test_only_measured_sources_have_prompts():
    assert set(PROMPTS) == {"demo"} and prompts_for("random") == {}
    assert list(prompts_for("demo")) == ["repeat", "pair"]


@needs_demo
@pytest.mark.parametrize("prompt", PROMPTS["demo"], ids=lambda p: p.key)
def test_demo_prompts_use_only_tokens_the_model_knows(prompt):
    known = set(demo_vocabulary())
    for text in filter(None, (prompt.text, prompt.text_b)):
        assert set(encode(text)) <= known and text.startswith(" ")


@needs_demo
@pytest.mark.parametrize("prompt", PROMPTS["demo"], ids=lambda p: p.key)
def test_demo_prompts_produce_their_greedy_next_token(demo, prompt):
    assert decode([int(next_probs(demo, prompt.text).argmax())]) == prompt.next_token
    if prompt.text_b is not None:
        assert decode([int(next_probs(demo, prompt.text_b).argmax())]) == prompt.next_token_b


@needs_demo
def test_the_repeat_copies_and_its_sentence_says_how_much(demo):
    ids = encode(DEMO_REPEAT.text)
    p = float(next_probs(demo, DEMO_REPEAT.text)[encode(DEMO_REPEAT.next_token)[0]])
    assert f"p = {p:.2f}" in DEMO_REPEAT.shows and p > 0.5
    # the copy: the word after the earlier occurrence of the last word, and greedy generation goes on copying
    first = ids.index(ids[-1])
    assert encode(DEMO_REPEAT.next_token) == [ids[first + 1]]
    period = len(ids) - 1 - first  # the text's cycle: 7 words
    gen = generate(demo, ids, 8).ids
    assert gen == [ids[(len(ids) + s) % period] for s in range(8)]
    # the stripe: every block-1 head attends from a repeated word to the word after its earlier occurrence
    source = [ids.index(t) if ids.index(t) < i else -1 for i, t in enumerate(ids)]
    scores = head_scores(demo, torch.tensor([ids]), torch.tensor([source]))
    assert min(scores.induction[1]) >= 0.5
    assert demo_heads()["induction"][0] == 1


@needs_demo
def test_the_pair_is_patchable_and_its_sentence_says_what_patching_finds(demo):
    a, b = encode(DEMO_PAIR.text), encode(DEMO_PAIR.text_b)
    assert len(a) == len(b) and a[:-1] == b[:-1] and b[-1] not in b[:-1]  # only the last word, a new one
    pb = float(next_probs(demo, DEMO_PAIR.text_b)[encode(DEMO_PAIR.next_token_b)[0]])
    assert f"B guesses would (p = {pb:.2f})" in DEMO_PAIR.shows
    p = patch(demo, a, b)
    assert [decode([t]) for t in p.answers] == [DEMO_PAIR.next_token, DEMO_PAIR.next_token_b]
    lo, hi = float(p.heads[1].min()), float(p.heads[1].max())
    assert f"restores {lo:.2f} to {hi:.2f}" in DEMO_PAIR.shows
    assert p.heads[0].abs().max() < 0.01


@needs_demo
def test_what_ifs_note_states_the_measured_knockouts(demo):
    ids = encode(DEMO_REPEAT.text)
    token = encode(DEMO_REPEAT.next_token)[0]
    for where, said in DEMO_KNOCKOUTS.items():
        block, head = map(int, where.split("."))
        measured = float(log_probs(knockout(demo, ids, Target(block, "head", head), "zero")).exp()[token])
        assert measured == pytest.approx(said, abs=0.005 if said > 0.01 else 0.0001), where
    note = random_weights_note()
    assert "0.0014" in note and "0.81, 0.53, 0.90 or 0.08" in note and "moves it a lot" not in note


@needs_demo
def test_the_demo_sink_head_puts_its_weight_on_the_first_word(demo):
    """The Glossary's attention sink: on the repeat, the head's queries from the fifth word on put at least
    0.85 of their weight on the first word, more than any other head of the model does."""
    trace = run(demo, encode(DEMO_REPEAT.text), names=["blocks.*.attn.pattern"])
    on_first = {(b, h): float(trace.get("attn.pattern", b)[0, h, 4:, 0].mean())
                for b in range(demo.config.n_layer) for h in range(demo.config.n_head)}
    assert on_first[DEMO_SINK] >= 0.85 and max(on_first, key=on_first.get) == DEMO_SINK, on_first
