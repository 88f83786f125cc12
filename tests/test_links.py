"""A view is a link, and the links the app writes survive a reload.

A URL with a key given twice means the key's last value (the rule `settle_url` applies before any
control reads the URL), with no note about a value the controls could not take; a change made in
the sidebar is not a link, so it moves a block or head to the nearest one the new weights have,
quietly, and the URL follows. The browser half (each kind of in-app link, followed and then opened
in a fresh context) is in test_browser.py."""

import pytest
from app_charts import charts
from streamlit.testing.v1 import AppTest

from gpt2viz.spec.pages import BY_URL


def run(url: str = "overview", **params) -> AppTest:
    at = AppTest.from_file("../app.py", default_timeout=120)
    at.query_params.update(params)
    at.run()
    if url != "overview":
        at.switch_page(BY_URL[url].file)
        at.run()
    return at


def slider(at: AppTest, key: str) -> int:
    return int(at.sidebar.slider(key=key).value)


@pytest.mark.parametrize("given,shown", [(["0", "1"], 1), (["1", "0"], 0), (["1", "1"], 1)])
def test_a_key_given_twice_means_its_last_value_with_no_warning(given, shown):
    at = run("attention", model="tiny", block=given, head=["3", "2"])
    assert not at.exception
    assert not at.warning, [w.value for w in at.warning]
    assert (slider(at, "block"), slider(at, "head")) == (shown, 2)


def test_a_repeated_block_past_the_last_says_so_once():
    """The last value is the one asked for: a block the model lacks is still said, about that value."""
    at = run("attention", model="tiny", block=["1", "7"])
    notes = [w.value for w in at.warning]
    assert len(notes) == 1 and "block=`'7'`" in notes[0] and "showing block=`0`" in notes[0]


def test_the_whole_view_survives_a_repeated_query_string():
    """What the browser sends after an in-app page link: every key of the view twice."""
    view = {"model": "tiny", "mode": "decode", "block": "1", "head": "3", "text": "One two three four"}
    at = run("attention", **{k: [v, v] for k, v in view.items()})
    assert not at.exception and not at.warning
    assert (slider(at, "block"), slider(at, "head")) == (1, 3)
    assert at.sidebar.selectbox(key="mode").value == "decode"
    assert at.sidebar.text_area(key="text").value == "One two three four"
    assert "block 1 head 3" in " ".join(c.layout.title.text or "" for c in map(chart_fig, charts(at)))


def chart_fig(chart):
    import plotly.io

    return plotly.io.from_json(chart.spec)


def test_new_weights_keep_the_nearest_block_and_head_quietly():
    """gpt2 block 9 head 11, then the tiny size (2 blocks, 4 heads): block 1 head 3, no link note."""
    at = run("attention", model="gpt2", block="9", head="11")
    assert (slider(at, "block"), slider(at, "head")) == (9, 11) and not at.warning
    at.sidebar.selectbox(key="model").set_value("tiny").run()
    assert not at.exception
    assert (slider(at, "block"), slider(at, "head")) == (1, 3)
    assert not at.warning, [w.value for w in at.warning]


def test_a_link_note_is_for_the_link_not_for_later_changes():
    """A note about a link's value stays while the view is the link's; a sidebar change is not a link."""
    at = run("attention", model="tiny", block="9")
    assert any("block=`'9'`" in w.value for w in at.warning)
    at.sidebar.slider(key="head").set_value(2).run()
    assert not at.warning
    at.sidebar.selectbox(key="model").set_value("gpt2").run()
    assert not at.exception and not at.warning
