"""teaching/estimate_text.py over a corpus of patching pairs (the demo pair, random tiny and gpt2 pairs,
1-token texts, a period-2 repeat, A = B): each sentence's correlation, miss count and worst cell are
the ones analysis/estimate.py computes from the two grids, recomputed here."""

import math

import pytest
import torch

import gpt2viz
from gpt2viz.analysis.estimate import MISS, agreement, estimate
from gpt2viz.analysis.whatif import patch
from gpt2viz.model import tokenizer
from gpt2viz.teaching import estimate_text
from gpt2viz.teaching.prompts import prompts_for

PAIRS = {"one token": (" game", " point"), "period-2": (" a b a b a b", " a b a b a c"),
         "same": (" a b c", " a b c"), "prose": (" the cat sat on the mat", " the dog sat on the mat")}


def corpus():
    for spec in ("demo", "random:tiny:seed=0", "random:tiny:seed=3", "random:gpt2:seed=0"):
        m = gpt2viz.load(spec)
        before = tokenizer.current()
        tokenizer.use(m.vocabulary)
        try:
            pairs = dict(PAIRS)
            if spec == "demo":
                pair = prompts_for("demo")["pair"]
                pairs["demo pair"] = (pair.text, pair.text_b)
            if spec.startswith("random:gpt2"):
                pairs = {"one token": PAIRS["one token"], "period-2": PAIRS["period-2"]}
            for label, (a, b) in pairs.items():
                ia, ib = tokenizer.encode(a), tokenizer.encode(b)
                exact = patch(m.model, ia, ib)
                yield spec, label, exact, estimate(m.model, ia, ib, exact.answers)
        finally:
            tokenizer.use(before)


def test_the_agreement_sentences_are_true_over_the_corpus():
    said = 0
    for spec, label, exact, est in corpus():
        for grid, e, s in (("the residual stream's grid", exact.resid, est.resid),
                           ("the heads' grid", exact.heads, est.heads)):
            a = agreement(e, s)
            text = estimate_text.agreement_sentence(grid, a, "CELL")
            ok = torch.isfinite(e) & torch.isfinite(s)
            assert a.cells == int(ok.sum()), (spec, label)
            if a.cells == 0:
                assert "nothing to compare" in text
                continue
            miss = (s - e).abs()[ok]
            assert a.misses == int((miss > MISS).sum())
            assert (f"in {a.misses} of {a.cells} cells" in text) if a.misses else ("in none of" in text)
            assert f"The largest miss is at CELL: exact {a.exact:.3g}, estimated {a.estimated:.3g}" in text
            assert abs(abs(a.estimated - a.exact) - float(miss.max())) < 1e-5
            if math.isnan(a.correlation):
                assert "not measurable" in text
            else:
                x, y = e[ok].double(), s[ok].double()
                r = float(torch.corrcoef(torch.stack([x, y]))[0, 1])
                assert abs(r - a.correlation) < 1e-6 and f"correlates {a.correlation:.2f}" in text
            said += 1
    assert said >= 10


def test_the_constant_sentences():
    assert "One forward and one backward pass" in estimate_text.intro()
    assert "saturates" in estimate_text.why() and "cancel" in estimate_text.why()


@pytest.mark.parametrize("cells", [1, 2])
def test_a_grid_of_few_cells(cells):
    from gpt2viz.analysis.estimate import Agreement

    s = estimate_text.agreement_sentence("g", Agreement(float("nan"), (0, 0), 0.0, 0.0, 0, cells), "x")
    assert "not measurable" in s and ("its one cell" if cells == 1 else "the 2 cells") in s
