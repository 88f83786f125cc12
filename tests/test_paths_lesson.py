"""The paths lesson (lessons/paths-demo.json) and its claim measure, path_share (analysis/claims.py):
its claims agree on the demo model and are "not measurable" or "differ" on random weights, never
"agree"; a malformed path_share claim names its field; the lesson opens from a signed link, steps to
the end, and its path patching stop shows the claims measured; the attention lesson's sentence about
the route says what path patching measures."""

import json
import re
import sys
from pathlib import Path

import pytest

import gpt2viz
from gpt2viz.analysis import claims
from gpt2viz.model import tokenizer
from gpt2viz.model.demo_model import DEMO_PATH
from gpt2viz.teaching import lessons as lf
from gpt2viz.teaching.prompts import DEMO_REPEAT

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_links import run as visit  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
LESSON = ROOT / "lessons" / "paths-demo.json"
KEY = "lecture-key-" + "p" * 20
needs_demo = pytest.mark.skipif(not DEMO_PATH.is_file(), reason="the demo model file is not in this checkout")


def path_claims() -> list[dict]:
    return [c for s in lf.load(LESSON).stops for c in s.claims]


def measured(spec: str, c: dict) -> claims.Measured | str:
    m = gpt2viz.load(spec)
    before = tokenizer.current()
    tokenizer.use(m.vocabulary)
    try:
        return claims.path_share(m.model, c["sender"], c["receiver"], c["answer"], c["on_text"], c["threshold"],
                                 c["bound"] == "at most", c["ablation"])
    except ValueError as e:
        return str(e)
    finally:
        tokenizer.use(before)


@needs_demo
def test_the_claims_agree_on_the_demo_model():
    mlp, keys = path_claims()
    m = measured("demo", mlp)
    assert m.agrees and m.value >= 0.9, m  # measured: 0.989 (-6.45 of -6.52)
    m = measured("demo", keys)
    assert m.agrees and m.value <= 0.1, m  # measured: 0.0004, the largest of the four heads' keys
    assert m.seen["paths"] == 4 and m.seen["receiver"].startswith("blocks.1.attn.head.")
    assert all(c["on_text"] == DEMO_REPEAT.text and "measured on the demo model" in c["citation"]
               for c in (mlp, keys))


@pytest.mark.parametrize("spec", ["gpt2", "random:gpt2:seed=3", "tiny", "random:tiny:seed=3"])
def test_on_random_weights_the_claims_never_agree(spec):
    for c in path_claims():
        m = measured(spec, c)
        assert isinstance(m, str) or not m.agrees, (spec, c["receiver"], m)
        if isinstance(m, str):
            assert "knocked out everywhere moves" in m and "\n" not in m


def test_a_claim_about_a_receiver_the_weights_lack_is_not_measurable():
    c = path_claims()[0] | {"receiver": "blocks.7.mlp"}
    m = measured("tiny", c)
    assert isinstance(m, str) and "sends to no blocks.7.mlp" in m


@pytest.mark.parametrize("change,field", [
    ({"bound": "about"}, "claims[0].bound: 'about' is not one of at least, at most"),
    ({"ablation": "half"}, "claims[0].ablation: 'half' is not one of zero, mean"),
    ({"heads": [[0, 0]]}, "claims[0].heads: unknown field"),
    ({"sender": None}, "claims[0].sender"),
])
def test_a_malformed_path_share_claim_names_its_field(change, field):
    c = {"text": "t", "citation": "c", "measure": "path_share", "sender": "blocks.0.attn.head.0",
         "receiver": "blocks.0.mlp", "answer": " after", "on_text": "x", "threshold": 0.9} | change
    c = {k: v for k, v in c.items() if v is not None}
    with pytest.raises(lf.LessonError, match=re.escape(field)):
        lf.parse({"title": "t", "weights": {"source": "demo"}, "text": "x",
                  "stops": [{"page": "paths", "claims": [c]}]})


def test_the_lesson_checks_and_its_link_carries_the_claims():
    lesson = lf.load(LESSON)
    assert [s.page for s in lesson.stops] == ["output", "whatif", "attribution", "paths", "paths"]
    token = lf.sign(lesson, KEY.encode())
    assert lf.verify(token, KEY.encode()) == lesson and len(path_claims()) == 2
    assert len(lf.href(lesson.stops[0].page, token, 0)) < 4000


@needs_demo
def test_the_lesson_opens_from_a_signed_link_and_its_paths_stop_shows_the_claims_agree(monkeypatch):
    monkeypatch.setenv(lf.KEY_ENV, KEY)
    monkeypatch.delenv("GPT2VIZ_TEACHER_PASSWORD", raising=False)
    token = lf.sign(lf.load(LESSON), KEY.encode())
    at = visit("paths", lesson=token, stop="3")
    assert not at.exception, at.exception[0].value
    assert at.radio(key="sender").value == "head" and at.radio(key="sender").disabled
    assert "stop 4 of 5" in " ".join(e.value for e in at.caption) + " ".join(e.value for e in at.markdown)
    agreed = [s.value for s in at.success if "Measured here" in s.value]
    assert len(agreed) == 2 and all("**agrees**" in s for s in agreed), agreed
    assert "at most 10% of the total effect along the path as agreeing" in agreed[1]
    text = " ".join(e.value for e in at.markdown)
    assert "**the path into MLP 0** carries the largest share" in text
    # the same lesson on random weights: nothing agrees
    d = json.loads(LESSON.read_text()) | {"weights": {"source": "random", "model": "tiny"}}
    at = visit("paths", lesson=lf.sign(lf.parse(d), KEY.encode()), stop="3")
    assert not at.exception and not [s for s in at.success if "Measured here" in s.value]
    said = [w.value for w in at.warning if "Measured here" in w.value]
    assert len(said) == 2 and all("not measurable" in s or "**differs**" in s for s in said)


def test_the_attention_lessons_route_sentence_names_the_route():
    note = lf.load(ROOT / "lessons" / "attention-demo.json").stops[3].note
    assert "through it" not in note and "MLP 0" in note and "Which path carries it" in note


@needs_demo
def test_the_lesson_exports_as_a_static_site(tmp_path, capsys):
    from gpt2viz import cli

    out = tmp_path / "site"
    assert cli.main(["lesson", "export", str(LESSON), "--out", str(out)]) == 0
    names = sorted(p.name for p in out.iterdir())
    assert [n for n in names if n.startswith("stop-")] == [
        "stop-1-output.html", "stop-2-whatif.html", "stop-3-attribution.html", "stop-4-paths.html", "stop-5-paths.html"]
    page = (out / "stop-4-paths.html").read_text(encoding="utf-8")
    assert page.count("agrees") >= 2 and "the path into MLP 0" in page
