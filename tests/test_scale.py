"""The sizes a class will try: gpt2 at its full context of 1,024 tokens, and gpt2-xl (1.56 B
parameters, 6.2 GB of float32 random weights), through the app. A full trace would not fit the
cache at these sizes, so each page records only what it shows, and says so."""

import pytest
from test_app import charts, open_page

from gpt2viz.tokenizer import encode
from gpt2viz.ui.pages import BY_URL

FULL_CONTEXT = "the" + " the" * 1023  # 1,024 tokens


def test_the_text_has_1024_tokens():
    assert len(encode(FULL_CONTEXT)) == 1024


@pytest.mark.parametrize("page", ["attention", "mlp", "output"])
def test_gpt2_at_the_full_context(page):
    at = open_page(page, model="gpt2", text=FULL_CONTEXT)
    assert not at.exception, at.exception[0].value
    assert len(charts(at)) >= BY_URL[page].charts
    assert any("Recording only what this page shows" in c.value for c in at.caption)
    assert not any("cut to the model's context" in i.value for i in at.info)  # 1,024 fits exactly


def test_gpt2_xl_with_any_text():
    at = open_page("attention", model="gpt2-xl", block=47, head=24)
    assert not at.exception, at.exception[0].value
    assert any("random gpt2-xl weights" in c.value for c in at.sidebar.caption)
    titles = [c.proto.spec for c in charts(at)]
    assert any("block 47 head 24" in t for t in titles)  # the last block and head exist and are shown
