"""The "What if" and "Compare and patch" pages through AppTest (as tests/test_app.py drives the
others): deep links, the sweep and patch buttons, the honest notes, and bad input said plainly."""

import base64

import numpy as np
import pytest
import torch
from app_charts import charts
from streamlit.testing.v1 import AppTest

from gpt2viz.analysis.whatif import Target, knockout, log_probs
from gpt2viz.model.modes import run
from gpt2viz.model.tokenizer import encode
from gpt2viz.model.weights import random_model
from gpt2viz.spec.config import get_config
from gpt2viz.ui.cache import trace_cache
from gpt2viz.ui.whatif_view import Knocked


def open_page(file: str, **params) -> AppTest:
    at = AppTest.from_file("../app.py", default_timeout=180)
    for key, value in {"model": "tiny", **params}.items():
        at.query_params[key] = str(value)
    at.run()
    at.switch_page(f"views/{file}")
    return at.run()


def specs(at) -> list[dict]:
    return [c.figure for c in charts(at)]


def heatmap_z(spec: dict) -> np.ndarray:
    z = spec["data"][0]["z"]  # plotly's binary form: base64 of the float32 values, and their shape
    shape = [int(n) for n in z["shape"].split(",")]
    return np.frombuffer(base64.b64decode(z["bdata"]), dtype=z["dtype"]).reshape(shape)


def text_of(at) -> str:
    return " ".join(e.value for kind in ("markdown", "caption", "info", "warning") for e in at.get(kind))


def test_whatif_deep_link_sets_target_and_method():
    at = open_page("whatif.py", block=1, head=3, part="head", method="mean")
    assert not at.exception
    assert at.radio(key="part").value == "head" and at.radio(key="method").value == "mean"
    shown = text_of(at)
    assert "head 3's slice of" in shown and "blocks.1.attn.z" in shown and "mean over this text's" in shown
    assert "The knock-out changed `blocks.1.attn.z`" in shown
    assert "Random weights: these effects are noise" in shown and "trained weights" in shown
    titles = [s["layout"]["title"]["text"].replace(" <br>", " ") for s in specs(at)]  # wrapped in a column
    assert any("After knocking out head 1.3" in t for t in titles)


def test_a_mean_over_one_position_says_nothing_changed_and_lists_nothing():
    """A trial: "The knock-out changed `blocks.0.attn.z` … Below are the later values that changed most" above an
    empty table, where a mean over the one position wrote z with its own values."""
    at = open_page("whatif.py", text=" Hello", block=0, head=0, part="head", method="mean")
    assert not at.exception
    shown = text_of(at)
    # said from the knock-out's own comparison: here nothing moves (a matrix library that rounds the copy apart
    # would list rounding, and say so); never the list's sentence above an empty table
    assert ("nothing computed after it changed" in shown) == (not at.dataframe), shown
    assert ("Below are the later values" in shown) == bool(at.dataframe), shown
    assert all(len(table.value) for table in at.dataframe)  # no list's sentence above an empty table
    at = open_page("whatif.py", text=" Hello", block=0, head=0, part="head", method="zero")
    assert "Below are the later values" in text_of(at) and at.dataframe


def test_whatif_after_chart_is_the_knockout():
    at = open_page("whatif.py", block=0, head=2, part="head", method="zero")
    after = next(s for s in specs(at) if s["layout"]["title"]["text"].startswith("After"))
    model = random_model(get_config("tiny"), 0)
    ids = encode("The quick brown fox jumps over the lazy dog because")
    want = log_probs(knockout(model, ids, Target(0, "head", 2), "zero")).exp()
    clean_top = log_probs(run(model, ids)).exp().topk(10).indices
    assert torch.allclose(torch.tensor(after["data"][0]["x"]), want[clean_top], atol=1e-6)
    # a trial: "Before" ran to 2e-4 and "After" to 1.5e-4, so the top bar filled both and read as "no change"
    before = next(s for s in specs(at) if s["layout"]["title"]["text"].startswith("Before"))
    shared = max(*before["data"][0]["x"], *after["data"][0]["x"])
    assert before["layout"]["xaxis"]["range"] == after["layout"]["xaxis"]["range"]
    assert before["layout"]["xaxis"]["range"][1] == pytest.approx(shared * 1.03, rel=1e-6)


def test_a_knockout_is_cached_as_what_the_page_shows_not_as_a_trace():
    """In a class every student's knock-out was a full trace in the cache; now its numbers are."""
    open_page("whatif.py", block=1, head=3, part="head", method="mean")
    items = trace_cache()._items
    knocked = [v for k, v in items.items() if k[0] == "knockout" and k[3] == Target(1, "head", 3) and k[4] == "mean"]
    assert len(knocked) == 1 and isinstance(knocked[0], Knocked)
    assert "blocks.1.attn.z" in knocked[0].intervened and knocked[0].changed
    cfg = get_config("tiny")
    assert knocked[0].nbytes == 4 * (cfg.vocab_size + len(knocked[0].loss) + knocked[0].final.numel())
    assert knocked[0].final.shape == (len(knocked[0].loss) + 1, cfg.n_embd)


def test_sweep_button_draws_the_block_by_head_map():
    at = open_page("whatif.py", part="mlp")
    n = len(specs(at))
    at.button(key="sweep_heads").click().run()
    assert not at.exception
    maps = [s for s in specs(at) if s["data"][0]["type"] == "heatmap"]
    assert len(specs(at)) == n + 1 and len(maps) == 1
    z = heatmap_z(maps[0])
    assert z.shape == (2, 4)  # tiny: 2 blocks x 4 heads
    model = random_model(get_config("tiny"), 0)
    ids = encode("The quick brown fox jumps over the lazy dog because")
    clean = log_probs(run(model, ids))
    token = int(clean.argmax())  # the token tracked by default: the top one
    single = log_probs(knockout(model, ids, Target(1, "head", 2), "zero"))[token] - clean[token]
    assert abs(float(z[1, 2]) - float(single)) < 1e-4


def test_a_sweep_draws_its_rows_as_they_finish(monkeypatch):
    """The map is drawn after each batched run (one block's heads a run on tiny): the blocks run so far,
    its title saying how many, then replaced by the finished map: one map on the page at the end."""
    import gpt2viz.ui.whatif_view as wv

    drawn = []
    draw = wv.sweep_map
    monkeypatch.setattr(wv, "sweep_map", lambda slot, cfg, part, token, grid, done=False: (
        drawn.append((grid.clone(), done)), draw(slot, cfg, part, token, grid, done)))
    at = open_page("whatif.py", part="mlp", text="A sweep on another text, drawn row by row")
    at.button(key="sweep_heads").click().run()
    assert not at.exception
    assert [done for _, done in drawn] == [False, True]  # tiny: 2 blocks, one run each
    (draft, _), (final, _) = drawn
    assert torch.equal(draft[0], final[0]) and draft[1].isnan().all()
    titles = [s["layout"]["title"]["text"] for s in specs(at) if s["data"][0]["type"] == "heatmap"]
    assert len(titles) == 1 and "so far" not in titles[0]


def test_patch_page_patches_on_request():
    at = open_page("patch.py", text="Mary gave John a", text_b="John gave Mary a", block=1, head=1)
    assert not at.exception
    assert at.text_area(key="text_b").value == "John gave Mary a"
    n = len(specs(at))
    assert n == 4  # two patterns, two predictions
    at.button(key="run_patch").click().run()
    assert not at.exception
    maps = [s for s in specs(at)[n:] if s["data"][0]["type"] == "heatmap"]
    assert len(maps) == 4  # the exact grids, then attribution patching's estimate of each
    assert heatmap_z(maps[0]).shape == heatmap_z(maps[2]).shape == (2, 4)  # blocks x positions
    assert heatmap_z(maps[1]).shape == heatmap_z(maps[3]).shape == (2, 4)  # blocks x heads


def test_patch_page_says_when_lengths_differ():
    at = open_page("patch.py", text="Mary gave John a drink", text_b="John gave")
    assert not at.exception
    assert "A has 5 tokens and B has 2 tokens" in text_of(at)
    assert not at.get("button") or all(b.key != "run_patch" for b in at.get("button"))


def test_patch_page_empty_text_b_is_said():
    at = open_page("patch.py")
    at.text_area(key="text_b").input("").run()  # a space is text (GPT-2 has a token for it); nothing is not
    assert not at.exception and "Text B: the text is empty" in text_of(at)


def test_patch_page_bounds_the_number_of_runs():
    long = " ".join(["word"] * 70)
    at = open_page("patch.py", text=long, text_b=long)
    assert not at.exception
    assert "patches texts of up to 64 tokens" in text_of(at)
    assert all(b.key != "run_patch" for b in at.get("button"))


@pytest.mark.parametrize("part,name", [("attention", "blocks.1.attn.out"), ("MLP", "blocks.1.mlp.out"),
                                       ("neuron", "blocks.1.mlp.post")])
def test_whatif_knocks_out_each_part(part, name):
    at = open_page("whatif.py", block=1, part=part, neuron=7)
    assert not at.exception
    shown = text_of(at)
    assert f"The knock-out changed `{name}`" in shown
    assert part != "neuron" or "neuron 7 of" in shown


def test_the_random_weights_note_offers_only_weights_there_are():
    from gpt2viz.model.demo_model import DEMO_PATH

    text = text_of(open_page("whatif.py"))
    assert "Random weights: these effects are noise." in text
    assert ("demo model" in text) == DEMO_PATH.is_file()


@pytest.fixture
def local():
    """The app on the operator's own machine (server.address loopback): its pages are not capped."""
    from streamlit import config as st_config

    before = st_config.get_option("server.address")
    st_config.set_option("server.address", "127.0.0.1")
    yield
    st_config.set_option("server.address", before)


def test_a_long_texts_loss_at_every_position_comes_on_request(local):
    """Beyond EVERY_POSITION_TOKENS a knock-out unembeds the last position only; the button unembeds
    them all, and the chart is the full knock-out's change in loss."""
    from gpt2viz.analysis.whatif import loss_per_position
    from gpt2viz.ui.whatif_view import EVERY_POSITION_TOKENS

    text = " ".join(f"word{i}" for i in range(EVERY_POSITION_TOKENS))
    ids = encode(text)
    assert len(ids) > EVERY_POSITION_TOKENS
    at = open_page("whatif.py", text=text, block=1, head=0, part="MLP", method="zero")
    assert not at.exception
    titles = [s["layout"]["title"]["text"] for s in specs(at)]
    assert not any(t.startswith("Change in loss") for t in titles)
    assert "needs all of them unembedded, about as much work as 39 of tiny's blocks" in text_of(at)
    at.button(key="loss_everywhere").click().run()
    assert not at.exception
    assert "loss_everywhere" not in [b.key for b in at.button]  # gone once pressed
    chart = next(s for s in specs(at) if s["layout"]["title"]["text"].startswith("Change in loss"))
    model = random_model(get_config("tiny"), 0)
    want = loss_per_position(knockout(model, ids, Target(1, "mlp"), "zero")) - loss_per_position(run(model, ids))
    got = chart["data"][0]["y"]
    got = np.frombuffer(base64.b64decode(got["bdata"]), dtype=got["dtype"]) if isinstance(got, dict) else got
    assert np.allclose(np.asarray(got, dtype=np.float64), want.numpy(), atol=1e-5)


def test_an_answer_pair_that_a_and_b_give_the_same_margin_is_refused_before_any_run():
    """One token against itself: both margins are 0, every restored fraction would divide by 0. The page says so
    beside the margins and offers no patch (margins_measurable), as the analysis and the CLI give no fraction."""
    at = open_page("patch.py", text="Mary gave John a drink", text_b="John gave Mary a drink")
    common = [t for t in at.selectbox(key="answer_a").options if t in at.selectbox(key="answer_b").options]
    assert common  # one of A's 10 likeliest tokens is among B's on these texts
    at.selectbox(key="answer_a").set_value(common[0])
    at.selectbox(key="answer_b").set_value(common[0]).run()
    assert not at.exception
    shown = text_of(at)
    assert "m_A = 0 · m_B = 0" in shown and "the same margin: there is nothing to restore" in shown, shown
    assert all(b.key != "run_patch" for b in at.get("button"))
