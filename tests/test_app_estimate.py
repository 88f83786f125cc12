"""Compare and patch with attribution patching beside the exact grids (AppTest): on the demo pair the
estimate's grids and the scatter are drawn, and the sentences give the correlation and the worst cell as
analysis/estimate.py computes them."""

import sys
from pathlib import Path

import pytest
from app_charts import charts

from gpt2viz.analysis.estimate import agreement, estimate
from gpt2viz.analysis.whatif import patch
from gpt2viz.model.demo_model import DEMO_PATH
from gpt2viz.model.tokenizer import encode
from gpt2viz.model.weights import load_safetensors
from gpt2viz.teaching.prompts import prompts_for

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_links import run as visit  # noqa: E402


@pytest.mark.skipif(not DEMO_PATH.is_file(), reason="the demo model file is not in this checkout")
def test_on_the_demo_pair_the_estimate_is_beside_the_exact_grid_with_correlation_and_worst_cell():
    at = visit("patch", weights="demo")
    at.button(key="run_patch").click().run()
    assert not at.exception, at.exception[0].value
    pair = prompts_for("demo")["pair"]
    model = load_safetensors(DEMO_PATH).model
    a, b = encode(pair.text), encode(pair.text_b)
    exact = patch(model, a, b)
    est = estimate(model, a, b, exact.answers)
    r = agreement(exact.resid, est.resid)
    text = " ".join(m.value for m in at.markdown)
    assert f"the estimate correlates {r.correlation:.2f} with the exact patching" in text
    assert f"The largest miss is at block {r.worst[0]}, position {r.worst[1]}·" in text
    assert f"exact {r.exact:.3g}, estimated {r.estimated:.3g}" in text
    titles = [c.spec for c in charts(at)]
    assert any("Linear estimate: resid_pre" in t for t in titles) and any("the estimate against" in t for t in titles)
