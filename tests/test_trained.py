"""Where values are shown on random weights, the trained behaviour beside them: each core component
page and each tour stop whose values matter says what the demo model shows there, with numbers
measured on the demo model when the line is made (gpt2viz/teaching/trained.py), not copied."""

import copy

import pytest
import torch
from test_app import open_page

from gpt2viz.analysis import heads
from gpt2viz.model.demo_model import DEMO_PATH
from gpt2viz.model.modes import run
from gpt2viz.model.tokenizer import encode, readable
from gpt2viz.model.weights import load_safetensors
from gpt2viz.spec.schema import Mode
from gpt2viz.teaching import trained
from gpt2viz.teaching.prompts import DEMO_PAIR, DEMO_REPEAT
from gpt2viz.teaching.tour import TOUR
from gpt2viz.ui.links import BESIDE

pytestmark = pytest.mark.skipif(not DEMO_PATH.is_file(), reason="no demo model file")


@pytest.fixture(scope="module")
def demo():
    return load_safetensors(str(DEMO_PATH)).model


def test_the_lines_print_what_the_demo_model_computes(demo):
    m = trained.measure(demo, DEMO_REPEAT, DEMO_PAIR)
    lines = trained.lines(m)
    ids = encode(DEMO_REPEAT.text)
    trace = run(demo, ids, Mode.FULL, names=["blocks.*.attn.pattern", "logits"])
    probs = torch.softmax(trace["logits"][0, -1].double(), -1)
    answer = int(probs.argmax())
    assert readable(answer) == m.answer and f"with p = {float(probs[answer]):.3f}" in lines["output"]
    rows = heads.score_patterns([trace[f"blocks.{b}.attn.pattern"][0] for b in range(demo.config.n_layer)], ids)
    for key, said in (("previous_token", m.previous), ("induction", m.induction)):
        lead = heads.ranked(rows, key)[0]
        assert said == (lead["block"], lead["head"], lead[key])
        assert f"block {lead['block']} head {lead['head']} " in lines["attention"]
        assert f"{lead[key]:.1%}" in lines["attention"]
    assert m.p * demo.config.vocab_size > 1000 and m.lens[-1] == pytest.approx(m.p, abs=1e-4)
    assert lines["heads"] == lines["attention"]
    for url in {s.url for s in TOUR if s.demo} | set(BESIDE):
        assert url in lines and not any(f"is {job}" in lines[url] for job in heads.JOBS.values())


def test_the_lines_follow_the_weights_they_are_measured_on(demo):
    """Not copied: change the model and the lines change with it."""
    before = trained.measure(demo, DEMO_REPEAT, DEMO_PAIR)
    changed = copy.deepcopy(demo)
    with torch.no_grad():
        changed.ln_f.weight.mul_(1.5)  # sharper final distribution, larger gains
    after = trained.measure(changed, DEMO_REPEAT, DEMO_PAIR)
    assert after.gain == pytest.approx((before.gain[0] * 1.5, before.gain[1] * 1.5), rel=1e-6)
    assert after.p != before.p
    assert trained.lines(after)["layernorm"] != trained.lines(before)["layernorm"]
    assert f"with p = {after.p:.3f}" in trained.lines(after)["output"]


@pytest.mark.parametrize("url", BESIDE)
def test_a_core_page_on_random_weights_shows_the_demo_model_beside_its_values(url, demo):
    at = open_page(url, model="gpt2")
    assert not at.exception, at.exception[0].value
    line = trained.lines(trained.measure(demo, DEMO_REPEAT, DEMO_PAIR))[url]
    shown = [c.value for c in at.caption if "Trained, for contrast" in c.value]
    assert len(shown) == 1 and line in shown[0] and "weights=demo" in shown[0], shown
    on_demo = open_page(url, weights="demo")
    assert not [c for c in on_demo.caption if "Trained, for contrast" in c.value]


@pytest.mark.parametrize("url", [s.url for s in TOUR if s.demo and s.url not in BESIDE])
def test_a_tour_stop_whose_values_matter_says_what_the_demo_model_shows(url, demo):
    at = open_page(url)  # the tiny random model
    assert not at.exception, at.exception[0].value
    line = trained.lines(trained.measure(demo, DEMO_REPEAT, DEMO_PAIR))[url]
    tour = [c.value for c in at.caption if "stop " in c.value and "random weights learned nothing" in c.value]
    assert len(tour) == 1 and f"on the demo model, {line}" in tour[0], tour
