"""The tour teaches. Its first part adds each part's parameters to a running tally that
ends at the model's total; its second part visits the classroom pages; stops whose values matter
say, on random weights, where the demo model shows them."""

import re

from streamlit.testing.v1 import AppTest

from gpt2viz.anatomy.components import component_tree
from gpt2viz.spec.config import get_config
from gpt2viz.spec.pages import BY_URL
from gpt2viz.teaching import tour


def test_the_tally_reaches_gpt2s_total_where_the_model_part_ends():
    cat = component_tree(get_config("gpt2"))
    totals = {c.id: c.total for c in cat}
    model_part = [i for i, s in enumerate(tour.TOUR) if s.part == tour.TOUR[0].part]
    met = [tour.tally(totals, i)[0] for i in model_part]
    assert met == sorted(met) and met[-1] == cat.root.total == 124_439_808
    attention = tour.stop("attention")
    assert tour.tally(totals, attention)[1] == 12 * (768 * 2304 + 2304)  # c_attn in every block: 21,261,312
    assert {s.url for s in tour.TOUR if s.part != tour.TOUR[0].part} >= {"lens", "whatif", "patch", "training"}


def run(url: str, **params) -> AppTest:
    at = AppTest.from_file("../app.py", default_timeout=120)
    at.query_params.update(params)
    at.run()
    at.switch_page(BY_URL[url].file)
    return at.run()


def test_each_stop_says_the_tally_and_offers_the_demo_where_values_matter():
    at = run("attention", model="gpt2")
    line = next(c.value for c in at.caption if "stop " in c.value)
    cat = component_tree(get_config("gpt2"))
    met = sum(cat[c].total for c in ("embed", "block.ln1", "block.ln2", "ln_f", "block.attn.qkv"))
    assert f"**{met:,}** of 124,439,808" in line
    assert "21,261,312 added here (query, key and value projection, in every block)" in line  # not all of attention
    assert re.search(r'href="/attention\?[^"]*weights=demo[^"]*"', line), line
    demo = run("attention", weights="demo")
    assert "see this page on the demo model" not in next(c.value for c in demo.caption if "stop " in c.value)
    lens = run("lens", model="tiny")
    lens_line = next(c.value for c in lens.caption if "stop " in c.value)
    assert "In the classroom" in lens_line and "parameters met" not in lens_line
