"""Each core page as the app draws it (AppTest, the page's own record of its charts and notices,
gpt2viz/ui/export.py): every number its notices and worked example print for a named quantity is
the one the chart beside it is drawn from, two of them never give one quantity two values, and
every equation the worked example prints holds at its printed precision. On random gpt2 (the
app's default) and on the demo model, with the default text."""

import pytest
from app_charts import kind
from page_numbers import disagree, quantities
from test_app import open_page

from gpt2viz.model.demo_model import DEMO_PATH
from gpt2viz.teaching import arithmetic

PAGES = ("attention", "output", "mlp", "layernorm", "block")
WEIGHTS = {"random gpt2": {"model": "gpt2"}, "demo": {"weights": "demo"}}
# what each page must say and draw for the check to mean something: quantities printed and drawn
MUST = {"attention": {"‖z‖ of the last query"}, "output": {"p(top)", "p(first) / p(second)"},
        "mlp": {"the top neuron", "the top neuron's activation"},
        "layernorm": {"μ entering", "σ² entering", "σ after", "scaled[j]", "out[j]"},
        "block": {"‖Δattn‖ last", "‖Δmlp‖ / ‖x′‖ last", "stream's mean norm first"}}


@pytest.mark.parametrize("weights", list(WEIGHTS))
@pytest.mark.parametrize("url", PAGES)
def test_a_core_page_prints_its_charts_numbers_and_arithmetic_that_holds(url, weights):
    if weights == "demo" and not DEMO_PATH.is_file():
        pytest.skip("no demo model file")
    at = open_page(url, **WEIGHTS[weights])
    assert not at.exception, at.exception[0].value
    page = at.session_state["_page_record"]
    found = quantities(url, page.notes, [fig for fig, _ in page.charts])
    for quantity in MUST[url]:
        numbers, truth = found.get(quantity, ([], None))
        assert numbers and truth is not None, (quantity, found)
    assert not disagree(found), disagree(found)
    worked = [line for line in page.notes if line.startswith("**Worked example")]
    assert len(worked) == 1, page.notes
    printed = arithmetic.equations(worked[0])
    assert len(printed) >= 2 and [eq for eq in printed if not arithmetic.holds(*eq)] == [], printed


def in_order(node):
    """The page's elements top to bottom, those inside containers too."""
    for child in getattr(node, "children", {}).values():
        if getattr(child, "children", None):
            yield from in_order(child)
        else:
            yield child


def test_layernorm_answers_its_question_above_its_picture_with_the_stream_the_block_page_draws():
    """Its first screen: the question, the answer with this run's numbers (on the default text the
    stream grows from 0.78 into block 0 to 8.60 out of the last), then the picture; the numbers are
    the mean norms the Block page's residual chart draws."""
    at = open_page("layernorm", model="gpt2")
    shown = list(in_order(at.main))
    kinds, bodies = [kind(e) for e in shown], [getattr(e, "value", "") for e in shown]
    why = next(i for i, b in enumerate(bodies) if isinstance(b, str) and b.startswith("**Why rescale?**"))
    assert why < kinds.index("chart"), kinds
    block = open_page("block", model="gpt2").session_state["_page_record"]
    found = quantities("block", [bodies[why].replace("(into block 0)", "(x)")], [fig for fig, _ in block.charts])
    assert found["stream's mean norm first"][0] == ["0.78"] and found["stream's mean norm last"][0] == ["8.60"]
    assert not disagree(found), disagree(found)
