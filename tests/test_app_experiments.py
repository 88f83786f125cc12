"""The Experiments page through AppTest: the answer waits for a prediction, then shows the run's
numbers; the experiment and the prediction live in the URL; a mode or text that cannot run an
experiment is said plainly."""

import pytest
import torch
from app_charts import charts
from test_app import open_page as open_url
from test_app_whatif import specs

from gpt2viz.analysis import experiments as ex
from gpt2viz.model.tokenizer import encode
from gpt2viz.model.weights import random_model
from gpt2viz.spec.config import get_config
from gpt2viz.spec.schema import Mode
from gpt2viz.ui.state import DEFAULT_TEXT as TEXT
from gpt2viz.ui.text import plain


def open_page(**params):
    return open_url("experiments", **params)


def shown(at) -> str:
    return " ".join(e.value for kind in ("markdown", "caption", "info", "warning", "success") for e in at.get(kind))


def test_the_answer_waits_for_the_prediction_then_shows_the_runs_numbers():
    at = open_page(experiment="no mask")
    assert not at.exception and at.radio(key="experiment").value == "no mask"
    assert at.radio(key="predict_no_mask").value is None
    assert not specs(at) and "Measured" not in shown(at) and "Choose a prediction" in shown(at)
    at.radio(key="predict_no_mask").set_value("only the last").run()
    assert not at.exception
    assert "You predicted **only the last**; the run says **every position**." in shown(at)
    (chart,) = specs(at)
    want = ex.no_mask(random_model(get_config("tiny"), 0), encode(TEXT), Mode.FULL)
    torch.testing.assert_close(torch.tensor(chart["data"][0]["y"]), want.moved_with, rtol=1e-6, atol=1e-9)
    torch.testing.assert_close(torch.tensor(chart["data"][1]["y"]), want.moved_without, rtol=1e-6, atol=1e-9)
    assert plain(want.reading) in shown(at)


def test_experiment_and_prediction_round_trip_through_the_url():
    """Both controls are bound to URL keys (the browser writes a bound control's value into the
    address bar; AppTest does not), and a URL with both opens on the answer."""
    at = open_page()
    at.radio(key="experiment").set_value("no positions").run()
    at.radio(key="predict_no_positions").set_value("a different weight").run()
    assert at.radio(key="experiment").proto.query_param_key == "experiment"
    assert at.radio(key="predict_no_positions").proto.query_param_key == "predict_no_positions"
    assert "the run says **the same weight**" in shown(at)
    again = open_page(experiment="no positions", predict_no_positions="a different weight")
    assert not again.exception and again.radio(key="predict_no_positions").value == "a different weight"
    assert [c.spec for c in charts(again)] == [c.spec for c in charts(at)]
    assert len(specs(again)) == 2


@pytest.mark.parametrize("key,choice,charts", [("no scale", "sharper", 3), ("temperature", "0", 1),
                                               ("no mask", "every position", 1),
                                               ("no positions", "the same weight", 2)])
@pytest.mark.parametrize("mode", ["full", "training"])
def test_every_experiment_answers_in_full_and_training(key, choice, charts, mode):
    at = open_page(experiment=key, mode=mode, **{"predict_" + key.replace(" ", "_"): choice}, block=1, head=2)
    assert not at.exception
    assert len(specs(at)) == charts and "Measured:" in shown(at)
    assert ("dropout off" in shown(at)) == (mode == "training")


@pytest.mark.parametrize("mode", ["prefill", "decode"])
def test_a_mode_that_computes_too_little_is_said(mode):
    at = open_page(experiment="no positions", mode=mode, predict_no_positions="the same weight")
    assert not at.exception and not specs(at)
    assert "choose *full* or *training* under **Mode**" in shown(at)
    scale = open_page(experiment="no scale", mode=mode, predict_no_scale="sharper")
    assert not scale.exception and len(specs(scale)) == 3  # the scores of the positions this mode computes


def test_a_text_too_short_is_said():
    at = open_page(experiment="no positions", text=" people play", predict_no_positions="the same weight")
    assert not at.exception and "at least 3 tokens" in shown(at) and not specs(at)


def test_a_link_with_values_the_controls_lack_falls_back():
    at = open_page(experiment="no gravity", predict_no_scale="sideways")
    assert not at.exception and at.radio(key="experiment").value == "no scale"
    assert at.radio(key="predict_no_scale").value is None and not specs(at)
