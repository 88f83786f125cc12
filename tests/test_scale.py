"""The sizes a class will try: gpt2 at its full context of 1,024 tokens, and gpt2-xl (1.56 B
parameters, 6.2 GB of float32 random weights), through the app. A full trace would not fit the
cache at these sizes, so each page records only what it shows, and says so."""

import pytest
from own_process import inside, run_alone
from test_app import charts, open_page

from gpt2viz.model.tokenizer import encode
from gpt2viz.spec.pages import BY_URL

FULL_CONTEXT = "the" + " the" * 1023  # 1,024 tokens


def test_the_text_has_1024_tokens():
    assert len(encode(FULL_CONTEXT)) == 1024


@pytest.mark.parametrize(("page", "kept"), [("attention", "what it shows, in every block"),
                                            ("mlp", "what it shows, in every block"),
                                            ("output", "only what it shows")])
def test_gpt2_at_the_full_context(page, kept):
    """A full trace at 1,024 tokens (602 MiB) does not fit a quarter of the default budget; a block
    page's names in every block do (another block is a view of the same run), the output's are kept alone."""
    at = open_page(page, model="gpt2", text=FULL_CONTEXT)
    assert not at.exception, at.exception[0].value
    assert len(charts(at)) >= BY_URL[page].charts
    assert any(f"this page keeps {kept}" in c.value for c in at.caption)
    assert not any("cut to the model's context" in i.value for i in at.info)  # 1,024 fits exactly


def test_gpt2_xl_with_any_text(monkeypatch):
    if not inside():  # 6.2 GB of weights: kept out of the suite's process, which stays under 4 GB
        return run_alone(f"{__file__}::test_gpt2_xl_with_any_text", "random gpt2-xl, 6.2 GB of weights")
    monkeypatch.setenv("GPT2VIZ_RANDOM_MODELS", "gpt2-xl")  # a server for a class builds it only if its operator says
    at = open_page("attention", model="gpt2-xl", block=47, head=24)
    assert not at.exception, at.exception[0].value
    assert any("random gpt2-xl weights" in c.value for c in at.sidebar.caption)
    titles = [c.spec for c in charts(at)]
    assert any("block 47 head 24" in t for t in titles)  # the last block and head exist and are shown


def test_a_decode_step_costs_one_row_of_a_full_pass():
    from gpt2viz.anatomy.components import component_tree
    from gpt2viz.spec import costs
    from gpt2viz.spec.config import get_config

    cfg = get_config("gpt2")
    n, d, V = 11, cfg.n_embd, cfg.vocab_size
    c = costs.decode_step_vs_full(cfg, n, component_tree(cfg).root.total)
    matmuls = 2 * (12 * d * d) * cfg.n_layer  # QKV 3d², W_O d², MLP 8d² per block, per row
    assert c["decode"].value == matmuls + 4 * n * d * cfg.n_layer + 2 * d * V
    assert c["full"].value == n * matmuls + 4 * n * n * d * cfg.n_layer + n * 2 * d * V
    assert c["cache"].value == 2 * cfg.n_layer * (n - 1) * d * 4 and c["weights"].value == 124_439_808 * 4
