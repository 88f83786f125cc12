"""The dot product behind a score (analysis/dot.py, plots.sorted_products, the Attention page's
section): its products add up to the recorded score times √dh in every mode, a masked cell says
so, the weight is the row's softmax, and the page opens on the cell its link names."""

import math
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from app_charts import charts
from streamlit.testing.v1 import AppTest

from gpt2viz import plots
from gpt2viz.analysis.dot import score_parts
from gpt2viz.model.modes import run
from gpt2viz.model.tokenizer import encode
from gpt2viz.model.weights import random_model
from gpt2viz.spec.config import get_config
from gpt2viz.spec.schema import Mode
from gpt2viz.teaching import lessons as lf

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_links import run as visit  # noqa: E402

TEXT = "When Mary and John went to the store, John gave a drink to"


@pytest.mark.parametrize("mode,query,key", [(Mode.FULL, 5, 2), (Mode.FULL, 13, 13), (Mode.PREFILL, 7, 0),
                                            (Mode.DECODE, 0, 9)])
def test_the_products_add_up_to_the_recorded_score(tiny, mode, query, key):
    trace = run(tiny, encode(TEXT), mode)
    s = score_parts(trace, 1, 2, query, key)
    dh = tiny.config.d_head
    assert s.d_head == dh and torch.allclose(s.products, s.q * s.k)
    assert abs(s.dot - float(s.q @ s.k)) < 1e-9 and abs(s.scaled - s.dot / math.sqrt(dh)) < 1e-9
    assert abs(s.scaled - s.recorded) < 1e-5
    ranked = s.products[s.order]
    assert torch.all(ranked[:-1] >= ranked[1:])  # largest first
    row = trace.get("attn.pattern", 1, head=2)[0, query]  # [L]
    assert abs(s.weight - float(row[key])) < 1e-7 and s.rank == int((row > row[key]).sum()) + 1
    assert not s.masked and s.readable == trace.P + query + 1


def test_the_weight_is_the_softmax_of_the_readable_scores(tiny):
    trace = run(tiny, encode(TEXT), Mode.FULL)
    i = 6
    parts = [score_parts(trace, 0, 1, i, j) for j in range(i + 1)]
    scores = torch.tensor([p.scaled for p in parts])
    assert torch.allclose(torch.tensor([p.weight for p in parts]), scores.softmax(-1).float(), atol=1e-6)
    best = max(range(i + 1), key=lambda j: parts[j].scaled)
    others = [p.scaled for j, p in enumerate(parts) if j != best]
    assert abs(parts[best].best_other - max(others)) < 1e-5 and parts[best].rank == 1


def test_a_key_after_the_query_is_masked_and_weighs_nothing(tiny):
    s = score_parts(run(tiny, encode(TEXT), Mode.FULL), 0, 0, 2, 7)
    assert s.masked and s.weight == 0.0
    with pytest.raises(ValueError, match="key must be between 0 and 13"):
        score_parts(run(tiny, encode(TEXT), Mode.FULL), 0, 0, 2, 14)


def test_decode_reads_the_same_key_as_the_full_run(tiny):
    full, decode = run(tiny, encode(TEXT), Mode.FULL), run(tiny, encode(TEXT), Mode.DECODE)
    a, b = score_parts(full, 1, 3, 13, 4), score_parts(decode, 1, 3, 0, 4)
    assert torch.allclose(a.k, b.k, atol=1e-5) and abs(a.scaled - b.scaled) < 1e-4


def test_sorted_products_figure_sorts_and_ends_at_the_dot_product():
    q, k = np.array([1.0, -2.0, 0.5, 3.0]), np.array([2.0, 1.0, -1.0, 1.0])
    fig = plots.sorted_products(q, k, "t")
    bars, running = fig.data
    assert list(bars.y) == [3.0, 2.0, -0.5, -2.0] and [int(c[0]) for c in bars.customdata] == [3, 0, 2, 1]
    assert running.y[-1] == pytest.approx(float(q @ k))
    assert bars.marker.color[-1] != bars.marker.color[0]  # a product that pulls down is told apart
    with pytest.raises(ValueError, match="both must be"):
        plots.sorted_products(q, k[:3], "t")


def open_attention(**params) -> AppTest:
    at = visit("attention", **{"model": "tiny", **{k: str(v) for k, v in params.items()}})
    assert not at.exception, at.exception[0].value
    return at


def test_the_attention_page_opens_on_the_cell_of_its_link():
    at = open_attention(block=1, head=2, qi=5, kj=2)
    assert (at.number_input(key="qi").value, at.number_input(key="kj").value) == (5, 2)
    s = score_parts(run(random_model(get_config("tiny"), 0), encode("The quick brown fox jumps over the lazy dog "
                                                                      "because")), 1, 2, 5, 2)
    latex = " ".join(e.value for e in at.get("latex"))
    shown = float(latex.split(r"{4} = ")[1].split()[0])  # the result, from the printed dot / 4
    assert abs(shown - s.scaled) <= 1e-3 * abs(s.scaled) and r"\sqrt{16}" in latex
    assert f"\\frac{{{s.dot:.4g}}}{{4}} = {float(f'{s.dot:.4g}') / 4:.4g}" in latex  # holds from its printed digits
    text = " ".join(m.value for m in at.markdown)
    assert f"weighs **{s.weight:.3g}**" in text and "agree in sign" in text
    titles = [c.figure["layout"]["title"]["text"] for c in charts(at)]
    assert any("products q[c] · k[c]" in t for t in titles)


def test_a_masked_cell_is_said_and_lessons_may_name_the_cell():
    at = open_attention(qi=1, kj=6)
    assert any("causal mask sets this score to −∞" in m.value for m in at.markdown)
    stop = lf.parse({"title": "t", "weights": {"source": "demo"}, "text": "x",
                     "stops": [{"page": "attention", "values": {"qi": 3, "kj": 1}}]}).stops[0]
    assert stop.values == {"qi": 3, "kj": 1}


def test_beside_the_pattern_a_caveat_links_the_heads_attribution_and_knock_out():
    at = open_attention(block=1, head=3)
    line = next(m.value for m in at.markdown if "not that what it reads matters" in m.value)
    assert 'href="/attribution?' in line and "block=1" in line and "head=3" in line
    assert 'href="/whatif?' in line and "part=head" in line


@pytest.mark.parametrize("mode", ["full", "prefill", "decode", "training"])
def test_one_score_taken_apart_from_a_trace_of_the_attention_pages_names_alone(tiny, mode):
    """Where a trace of everything does not fit, the Attention page records its own names: decode stores
    its scores, not their sources, so the page asks for the keys its score taken apart reads (a review
    found a KeyError for decode's k_cache there)."""
    import ast
    import re

    from gpt2viz.model.modes import run

    page = (Path(__file__).resolve().parents[1] / "views" / "attention.py").read_text()
    shorts = ast.literal_eval(re.search(r'^SHOWS = tuple\(f"blocks\.\{\{b\}\}\.attn\.\{s\}" for s in (\(.*\))\)$',
                                        page, re.M).group(1))  # the page's names, as it asks for them
    ids = [464, 2068, 7586, 21831, 18045, 625, 262]
    alone = run(tiny, ids, mode, names=[f"blocks.1.attn.{s}" for s in shorts], grads=False)
    whole = run(tiny, ids, mode, grads=False)
    last = alone.T - 1
    a, w = score_parts(alone, 1, 2, last, 0), score_parts(whole, 1, 2, last, 0)
    assert math.isclose(a.dot, w.dot, rel_tol=1e-5, abs_tol=1e-6) and math.isclose(a.weight, w.weight, abs_tol=1e-6)
    assert a.rank == w.rank  # two runs agree within rounding, not bit for bit on every machine
