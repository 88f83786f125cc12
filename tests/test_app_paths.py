"""The "Which path carries it" page through AppTest: on the demo repeat, head 0.0's effect on ' after'
goes through MLP 0 and the page's bars, line, table and sentence say so with path patching's
numbers; the sender, ablation and answer come from the URL; random weights say nothing is a mechanism."""

import re
import sys
from pathlib import Path

import numpy as np
import pytest
from app_charts import charts

from gpt2viz.analysis.attribution import one_token
from gpt2viz.analysis.paths import path_patch
from gpt2viz.model.demo_model import DEMO_PATH
from gpt2viz.model.tokenizer import encode
from gpt2viz.model.weights import load_safetensors
from gpt2viz.teaching.prompts import DEMO_REPEAT

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_links import run as visit  # noqa: E402

needs_demo = pytest.mark.skipif(not DEMO_PATH.is_file(), reason="the demo model file is not in this checkout")


def open_page(**params):
    at = visit("paths", **{"model": "tiny", **{k: str(v) for k, v in params.items()}})
    assert not at.exception, at.exception[0].value
    return at


def shown(at) -> str:
    return " ".join(e.value for kind in ("markdown", "caption", "info", "warning") for e in at.get(kind))


def bars(at) -> tuple[dict[str, float], float]:
    """{receiver: Δ log p} of the chart's bars, and the total line's height."""
    spec = charts(at)[0].figure
    out = {}
    for trace in spec["data"]:
        out.update(zip(trace["customdata"], trace["y"]))
    (line,) = [s for s in spec["layout"]["shapes"]]
    return out, line["y0"]


@needs_demo
def test_on_the_demo_repeat_the_route_is_mlp_0():
    at = open_page(weights="demo", block=0, head=0, sender="head", method="zero", answer=" after")
    model = load_safetensors(DEMO_PATH).model
    p = path_patch(model, encode(DEMO_REPEAT.text), "blocks.0.attn.head.0", one_token(" after"))
    got, total = bars(at)
    assert set(got) == {part.name for part, _ in p.rows}
    for part, r in p.rows:
        assert got[part.name] == pytest.approx(r.logprob - p.clean.logprob, abs=1e-6)
    assert total == pytest.approx(p.total_change, abs=1e-6)
    text = shown(at)
    assert "**the path into MLP 0** carries the largest share of that change" in text
    assert "paths need not add up to the total" in text and "nothing here is a mechanism" not in text
    table = at.dataframe[0].value
    assert table.iloc[0]["receiver"] == "total (everywhere)" and table.iloc[1]["receiver"] == "blocks.0.mlp"
    assert table.iloc[1]["share of the total"] == f"{round(100 * p.share('blocks.0.mlp'))}%"


def test_random_weights_say_nothing_is_a_mechanism_and_controls_come_from_the_url():
    at = open_page(block=1, head=2, sender="MLP", method="mean", answer=" fox")
    assert at.radio(key="sender").value == "MLP" and at.radio(key="method").value == "mean"
    assert "nothing here is a mechanism" in shown(at)
    got, _ = bars(at)
    assert list(got) == ["logits"]  # the MLP of the last block of tiny sends to the logits alone
    assert np.isfinite(list(got.values())).all()


def test_a_head_sender_lists_every_later_receiver():
    at = open_page(block=0, head=1)
    got, _ = bars(at)
    assert "blocks.0.mlp" in got and "blocks.1.attn.head.3.v" in got and "blocks.0.attn.head.2.q" not in got
    assert len(got) == 1 + 4 * 3 + 1 + 1


def test_a_multi_token_answer_is_said_not_raised():
    at = open_page(answer=" quick brown")
    assert any("is 2 tokens" in w.value for w in at.warning) and not charts(at)


def _paths_links(at) -> list[dict[str, str]]:
    from html import unescape
    from urllib.parse import parse_qsl

    found = []
    for m in at.markdown:
        if "Which path carries it" in m.value:
            for href in re.findall(r'<a href="([^"]+)" target="_self">', m.value):
                path, _, query = unescape(href).partition("?")
                found.append({"path": path, **dict(parse_qsl(query))})
    return found


def test_attributions_head_map_links_its_largest_heads_here():
    at = visit("attribution", model="tiny", answer=" fox")
    assert not at.exception
    links = _paths_links(at)
    assert len(links) == 4 and all(x["path"] == "/paths" and x["sender"] == "head" and x["answer"] == " fox"
                                   for x in links)
    page = visit("paths", **{k: v for k, v in links[0].items() if k != "path"})
    assert not page.exception and page.text_input(key="answer").value == " fox"
    assert (page.sidebar.slider(key="block").value, page.sidebar.slider(key="head").value) == \
        (int(links[0]["block"]), int(links[0]["head"]))


def test_what_ifs_head_sweep_links_its_largest_heads_here():
    at = visit("whatif", model="tiny", method="mean")
    at.button(key="sweep_heads").click().run()
    assert not at.exception
    links = _paths_links(at)
    assert len(links) == 4 and all(x["method"] == "mean" and x["answer"] for x in links)


def test_a_large_view_runs_on_request():
    at = open_page(model="gpt2", text=" one two three four five six seven eight nine ten eleven twelve thirteen "
                   "fourteen fifteen sixteen seventeen", block=10, head=0)  # 1 x 3 x 12 + 2 + 1 receivers: runs
    assert charts(at)
    at = open_page(model="gpt2", text=" one two three four five six seven eight nine ten eleven twelve thirteen "
                   "fourteen fifteen sixteen seventeen", block=0, head=0)
    (button,) = [b for b in at.button if b.key == "run_paths"]
    assert "along each of its 409 paths" in button.label and not charts(at)


def test_a_shared_server_removes_a_part_along_its_paths_at_the_first_64_positions_only():
    """A trial: removing a head along its 409 paths at position 255 of gpt2 held both cores for a minute, under a
    note that promised a quick view. The page runs the text as Who wrote the answer does (its links carry that
    page's answer at that page's position), and a shared server refuses the paths past position 63 in one line,
    with no button; at position 63 the button is there."""
    text = " ".join(["the cat sat on the mat"] * 30)  # 180 tokens
    n = len(encode(text))
    at = open_page(model="gpt2", text=text)
    said = shown(at)
    assert f"on the first {n:,}" not in said and "on the first 64 of" not in said  # the text is not cut to 64
    assert f"at the first 64 positions (each path runs the positions up to the one patched); this one is position " \
           f"{n - 1:,}" in said, said
    assert all(b.key != "run_paths" for b in at.get("button"))
    at = open_page(model="gpt2", text=text, position=63)
    assert "this one is position" not in shown(at) and any(b.key == "run_paths" for b in at.get("button"))
