"""The "Who wrote the answer" page through AppTest: on the demo repeat it names the head that writes
' after' and says where What if's knock-outs rank otherwise and why; its answer, second answer and
position come from the URL (and from a lesson, locked); the charts are the attribution's numbers."""

import base64
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from app_charts import charts
from streamlit.testing.v1 import AppTest

from gpt2viz.analysis.attribution import NEEDS, attribute, compare, one_token
from gpt2viz.analysis.whatif import sweep
from gpt2viz.model.demo_model import DEMO_PATH
from gpt2viz.model.modes import run
from gpt2viz.model.tokenizer import encode
from gpt2viz.model.weights import load_safetensors, random_model
from gpt2viz.spec.config import get_config
from gpt2viz.teaching import lessons as lf
from gpt2viz.teaching.prompts import DEMO_REPEAT

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_links import run as visit  # noqa: E402

DEFAULT_TEXT = "The quick brown fox jumps over the lazy dog because"
needs_demo = pytest.mark.skipif(not DEMO_PATH.is_file(), reason="the demo model file is not in this checkout")


def open_page(**params) -> AppTest:
    at = visit("attribution", **{"model": "tiny", **{k: str(v) for k, v in params.items()}})
    assert not at.exception, at.exception[0].value
    return at


def shown(at) -> str:
    return " ".join(e.value for kind in ("markdown", "caption", "info", "warning") for e in at.get(kind))


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.get("metric")}


def heatmap(at) -> np.ndarray:
    spec = next(c.figure for c in charts(at)
                if c.figure["data"][0]["type"] == "heatmap")
    z = spec["data"][0]["z"]
    shape = [int(n) for n in z["shape"].split(",")]
    return np.frombuffer(base64.b64decode(z["bdata"]), dtype=z["dtype"]).reshape(shape)


@needs_demo
def test_on_the_demo_repeat_the_page_names_the_writer_and_says_why_the_knockouts_rank_otherwise():
    at = open_page(weights="demo")  # the demo's text is the repeat; the answer, its top prediction ' after'
    model = load_safetensors(DEMO_PATH).model
    ids = encode(DEMO_REPEAT.text)
    a = attribute(model, run(model, ids, names=NEEDS), one_token(" after"))
    (b, h, v), = a.top_heads(1)
    text = shown(at)
    assert (f"Of the heads, head {b}.{h} writes the largest direct share of logit(␣after): {v:+.3g} of "
            f"{a.target:.3g} ({v / a.target:.0%})") in text and "writes most of logit" not in text  # 35 %: not most
    assert "The 8 heads together write +8.96 (95%), most of it" in text  # measured: +8.96 of 9.44
    assert (b, h) == (1, 1)  # measured: 1.1 +3.27, 1.3 +3.02 of 9.44
    m = metrics(at)
    assert m["logit(␣after)"] == m["Sum of the 14 rows"] == f"{a.target:.6g}"
    assert abs(float(m["Residual (sum − target)"])) < 1e-4
    # the knock-outs beside it: What if's sweep (zero), computed with the page for 8 heads
    knock = sweep(model, ids, "head", "zero", one_token(" after"))
    cmp = compare(a, knock)
    assert not cmp.agree and cmp.knockout_top[:2] == (0, 0)  # the previous-token head: needed, writes ~nothing
    assert [r[:2] for r in cmp.knockout_order()][:2] == [(1, 3), (1, 1)]
    assert "They differ" in text and "Head 0.0 writes less than 10% of head 1.1's direct share" in text
    assert "through later parts" in text
    assert "the knock-out ranks 1.3" in text and "Against the runner-up ␣has" in text
    assert "the knock-out's order" in text and "still not" not in text
    assert "Among the 4 heads that write most, the knock-out ranks 1.3" in text
    table = at.dataframe[0].value
    row = table[table["head"] == "1.3"].iloc[0]
    assert abs(row["knock-out (zeroed): Δ log p(␣after)"] - float(knock[1, 3])) < 1e-3
    assert "What this does not measure" in text and "direct effect" in text


def test_answer_versus_and_position_come_from_the_url_and_the_map_is_the_attribution():
    at = open_page(answer=" fox", versus=" dog", position=2)
    assert (at.text_input(key="answer").value, at.text_input(key="versus").value) == (" fox", " dog")
    assert at.slider(key="position").value == 2
    model = random_model(get_config("tiny"), 0)
    trace = run(model, encode(DEFAULT_TEXT), names=NEEDS)
    a = attribute(model, trace, one_token(" fox"), one_token(" dog"), 2)
    assert np.allclose(heatmap(at), a.heads().numpy(), atol=1e-6)
    assert "logit(␣fox) − logit(␣dog)" in metrics(at)
    assert "last position" in shown(at)  # What if's knock-outs read the last position only
    assert "Random, untrained weights" in shown(at)


def test_a_blank_answer_is_the_top_prediction_and_the_knockouts_run_on_a_small_model():
    at = open_page()
    model = random_model(get_config("tiny"), 0)
    trace = run(model, encode(DEFAULT_TEXT), names=NEEDS)
    a = attribute(model, trace)
    assert f"logit({a.report()['answer'].replace(' ', '␣')})" in metrics(at)
    assert at.dataframe and any(v in shown(at) for v in ("They agree", "They differ", "Not measurable here"))


@pytest.mark.parametrize("params,needle", [({"answer": " quick brown"}, "is 2 tokens"),
                                           ({"answer": " fox", "versus": "jumps over"}, "the second token")])
def test_a_token_that_is_not_one_token_is_said_not_raised(params, needle):
    at = open_page(**params)
    assert any(needle in w.value for w in at.warning) and not charts(at)


def test_a_lesson_sets_the_answer_and_position_locked(monkeypatch):
    key = "lecture-key-" + "y" * 20
    monkeypatch.setenv(lf.KEY_ENV, key)
    monkeypatch.delenv("GPT2VIZ_TEACHER_PASSWORD", raising=False)
    lesson = lf.parse({"title": "Who wrote it", "weights": {"source": "random", "model": "tiny"},
                       "text": DEFAULT_TEXT, "stops": [{"page": "attribution",
                                                        "values": {"answer": " fox", "position": 3}}]})
    at = visit("attribution", lesson=lf.sign(lesson, key.encode()), stop="0", answer=" cat")
    assert not at.exception
    assert at.text_input(key="answer").value == " fox" and at.text_input(key="answer").disabled
    assert at.slider(key="position").value == 3 and at.slider(key="position").disabled


@pytest.mark.parametrize("values,needle", [({"answer": 3}, "expected a string"),
                                           ({"position": "last"}, "expected a whole number"),
                                           ({"answer": " x" * 30}, "at most 40")])
def test_a_lesson_with_a_bad_value_names_it(values, needle):
    with pytest.raises(lf.LessonError, match=needle):
        lf.parse({"title": "t", "weights": {"source": "demo"}, "text": "x",
                  "stops": [{"page": "attribution", "values": values}]})


def test_the_comparison_names_an_indirect_head():
    """A head needed by the knock-out but writing little directly is listed as acting through others."""
    model = random_model(get_config("tiny"), 0)
    a = attribute(model, run(model, encode(DEFAULT_TEXT), names=NEEDS))
    knock = torch.zeros(2, 4)
    weakest = min(((b, h) for b in range(2) for h in range(4)), key=lambda bh: a.heads()[bh].abs())
    knock[weakest] = -5.0
    cmp = compare(a, knock)
    assert cmp.knockout_top[:2] == weakest and [r[:2] for r in cmp.indirect] == [weakest] and not cmp.agree
