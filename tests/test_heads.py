"""The head finder: its scores against their written-out definitions on a fixed
pattern; the CLI's JSON contract and one-line errors; the demo model's heads ranked as it was
trained to have them (a block-1 induction head, block 0 head 0 on the previous token)."""

import json
import math
import subprocess
import sys

import pytest
import torch
from app_charts import charts

from gpt2viz.analysis import heads
from gpt2viz.model import tokenizer
from gpt2viz.model.demo_model import DEMO_PATH
from gpt2viz.model.modes import Mode, run
from gpt2viz.teaching import head_notices

KEYS = {"block", "head", "previous_token", "induction", "first_token", "entropy", "mean_distance"}
FRESH = " people play one good game after work"  # words of the demo model's own vocabulary, no repeat


def cli(*args):
    return subprocess.run([sys.executable, "-m", "gpt2viz", *args], capture_output=True, text=True, timeout=300)


def fixed_patterns() -> tuple[torch.Tensor, list[int]]:
    """Two blocks of three heads: softmax of seeded scores under the causal mask [2, 3, T, T], and
    ids in which tokens 7 and 8 occur twice and 7 three times."""
    ids = [7, 8, 9, 7, 8, 5, 7]
    T = len(ids)
    g = torch.Generator().manual_seed(3)
    scores = torch.randn(2, 3, T, T, generator=g) * 2
    future = torch.ones(T, T, dtype=torch.bool).triu(1)
    return scores.masked_fill(future, float("-inf")).softmax(-1), ids


def written_out(a: torch.Tensor, ids: list[int]) -> dict:
    """One head's scores from pattern a [T, T], each by its definition, in plain loops."""
    T = len(ids)
    rows, apart = range(1, T), range(2, T)  # at 1 the previous token is the first: neither score reads it
    prev = sum(float(a[i, i - 1]) for i in apart) / len(apart)
    first = sum(float(a[i, 0]) for i in apart) / len(apart)
    entropy = sum(-sum(float(a[i, j]) * math.log(float(a[i, j])) for j in range(i + 1)) / math.log(i + 1)
                  for i in rows) / len(rows)
    distance = sum(sum(float(a[i, j]) * (i - j) for j in range(i + 1)) for i in rows) / len(rows)
    induction = []
    for i in range(T):
        earlier = [j for j in range(i) if ids[j] == ids[i]]
        if earlier and earlier[-1] + 1 < i - 1:  # the token right after the most recent one, if not i or i − 1
            induction.append(float(a[i, earlier[-1] + 1]))
    return {"previous_token": prev, "first_token": first, "entropy": entropy, "mean_distance": distance,
            "induction": sum(induction) / len(induction) if induction else None}


def test_scores_equal_their_written_out_definitions():
    patterns, ids = fixed_patterns()
    rows = heads.score_patterns(list(patterns), ids)
    assert [(r["block"], r["head"]) for r in rows] == [(b, h) for b in range(2) for h in range(3)]
    for r in rows:
        assert set(r) == KEYS
        expected = written_out(patterns[r["block"], r["head"]], ids)
        for key, value in expected.items():
            assert r[key] == pytest.approx(value, rel=1e-9), (r["block"], r["head"], key)


def test_mean_distance_of_a_previous_token_head_and_of_an_even_head():
    ids = list(range(6))
    prev = torch.zeros(6, 6)
    prev[0, 0] = 1
    prev[torch.arange(1, 6), torch.arange(0, 5)] = 1
    (row,) = heads.score_patterns([prev[None]], ids)
    assert row["mean_distance"] == 1.0 and row["previous_token"] == 1.0 and row["induction"] is None
    even = heads.uniform(ids)
    assert even["mean_distance"] == pytest.approx(sum(i / 2 for i in range(1, 6)) / 5)  # row i: i/2 back
    assert even["entropy"] == pytest.approx(1.0)


def test_ranking_puts_the_leader_first_and_skips_missing_scores():
    rows = [{"block": 0, "head": h, "previous_token": p, "induction": None, "first_token": 0.1, "entropy": e,
             "mean_distance": 1.0} for h, (p, e) in enumerate([(0.2, 0.9), (0.7, 0.3), (0.7, 0.5)])]
    assert [r["head"] for r in heads.ranked(rows, "previous_token")] == [1, 2, 0]  # ties by head
    assert [r["head"] for r in heads.ranked(rows, "entropy")] == [1, 2, 0]  # the lowest entropy leads
    assert heads.ranked(rows, "induction") == []
    assert "repeats no token" in head_notices.finder_notice(rows, "induction", "demo", [1, 2, 3])[0]
    lines = head_notices.finder_notice(rows, "previous_token", "random", [1, 2, 3])
    assert "Block 0 head 1" in lines[0] and "nothing stands out" in lines[1]


@pytest.mark.parametrize("text,n_positions", [(" people play one good game", 32), ("The quick brown fox", 1024),
                                              ("one two three four five six seven eight nine ten", 8)])
def test_the_repeat_is_the_text_twice_within_the_context(text, n_positions):
    twice = heads.repeated_text(text, n_positions)
    ids = tokenizer.encode(twice)
    assert len(ids) <= n_positions and heads.has_repeat(ids)
    half = len(ids) // 2  # two copies of as many tokens; the first of the second may differ (" The")
    assert len(ids) % 2 == 0 and ids[half + 1:] == ids[1:half]


def test_cli_json_on_the_demo_model_ranks_its_trained_heads():
    text = heads.repeated_text(FRESH, 32)
    p = cli("heads", "--weights", "demo", "--text", text, "--json")
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)
    assert all(set(r) == KEYS for r in rows)
    assert [(r["block"], r["head"]) for r in rows] == sorted((r["block"], r["head"]) for r in rows)
    assert all(isinstance(r[k], float) for r in rows for k in KEYS - {"block", "head"})
    ind = heads.ranked(rows, "induction")[0]
    prev = heads.ranked(rows, "previous_token")[0]
    assert ind["block"] == 1 and (prev["block"], prev["head"]) == (0, 0)


def test_cli_text_without_a_repeat_has_null_induction():
    p = cli("heads", "--model", "tiny", "--text", "The quick brown fox", "--json")
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)
    assert len(rows) == 2 * 4 and all(r["induction"] is None for r in rows)


@pytest.mark.parametrize("args,needle", [
    (["heads", "--model", "tiny", "--text", ""], "empty"),
    (["heads", "--model", "tiny", "--text", "hi"], "at least 2 tokens"),
    (["heads", "--weights", "demo", "--text", "a " * 40], "at most 32"),
    (["heads", "--weights", "/nonexistent/model.safetensors", "--text", "hi there"], "no weights file"),
    (["heads", "--model", "huge", "--text", "hi there"], "unknown model"),
    (["heads", "--text"], "expected one argument"),
])
def test_heads_bad_input_is_one_line_exit_2(args, needle):
    p = cli(*args)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and needle in p.stderr


@pytest.mark.skipif(not DEMO_PATH.is_file(), reason="no demo model")
def test_weights_demo_is_accepted_by_the_other_verbs():
    p = cli("trace", "--weights", "demo", "--text", FRESH, "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["model"] == "demo"


def open_heads(**params):
    from streamlit.testing.v1 import AppTest

    from gpt2viz.spec.pages import BY_URL

    at = AppTest.from_file("../app.py", default_timeout=120)
    for key, value in params.items():
        at.query_params[key] = str(value)
    at.run()
    at.switch_page(BY_URL["heads"].file)
    return at.run()


def page_text(at) -> str:
    return " ".join(m.value for m in at.markdown) + " ".join(c.value for c in at.caption)


@pytest.mark.skipif(not DEMO_PATH.is_file(), reason="no demo model")
def test_page_on_the_demo_model_runs_full_and_opens_its_leading_heads():
    at = open_heads(weights="demo", mode="decode")  # the demo's first prompt is its repeat
    assert not at.exception, at.exception[0].value
    assert len(charts(at)) == 6  # five maps and the scatter
    shown = page_text(at)
    assert "always runs the full sequence" in shown
    assert "Block 0 head 0** reads the previous token most" in " ".join(n.value for n in at.info)
    assert 'href="/attention?' in shown and "block=1" in shown and "mode=full" in shown
    assert "repeats no token" not in shown


def test_page_offers_the_text_twice_where_nothing_repeats():
    from urllib.parse import quote

    at = open_heads(model="tiny", text="The quick brown fox")
    assert not at.exception, at.exception[0].value
    assert len(charts(at)) == 5  # no induction map
    shown = page_text(at)
    assert "The text repeats no token" in shown
    assert 'href="/heads?' in shown and quote("The quick brown fox The quick brown fox") in shown
    assert "nothing stands out" in " ".join(n.value for n in at.info)


def test_head_scatter_draws_every_head_over_the_scores_range():
    from gpt2viz import plots

    fig = plots.head_scatter([0.1, 0.9], [0.5, 0.2], [0, 1], [0, 3], "s", "previous-token score", "induction score",
                             (0.0, 1.0), (0.0, 1.0))
    (trace,) = fig.data
    assert trace.type == "scatter" and list(trace.text) == ["0.0", "1.3"]
    assert fig.layout.xaxis.title.text == "previous-token score" and list(fig.layout.yaxis.range) == [-0.05, 1.05]
    assert "block %{customdata[0]} head %{customdata[1]}" in trace.hovertemplate
    with pytest.raises(ValueError, match="blocks and heads"):
        plots.head_scatter([0.1, 0.9], [0.5, 0.2], [0], [0, 3], "s", "x", "y")


@pytest.mark.parametrize("params", [
    {"score_x": "nan", "score_y": "induction", "open_block": "99", "open_head": "-1"},
    {"text": "a", "mode": "training"}, {"text": "   "}, {"text": "<b>x</b> <b>x</b>", "open_block": "1e309"},
])
def test_page_takes_any_link(params):
    at = open_heads(model="tiny", **params)
    assert not at.exception, at.exception[0].value


@pytest.mark.skipif(not DEMO_PATH.is_file(), reason="no demo model file")
@pytest.mark.parametrize("text", [" people play people play people play people play", " game game game game game game"])
def test_cli_json_gives_no_induction_score_where_no_target_is_valid(text):
    """A repeat one or two tokens apart has no induction target: the token after the earlier
    occurrence is the query or the token before it. The finder called the demo's previous-token head
    an induction head (0.987) on the period-2 text."""
    p = cli("heads", "--weights", "demo", "--text", text, "--json")
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)
    assert all(r["induction"] is None for r in rows)
    ids = tokenizer.encode(text)
    assert "one or two positions after" in head_notices.finder_notice(rows, "induction", "demo", ids)[0]


def test_one_threshold_per_job_above_what_an_even_head_scores():
    """The notices, the finder and the demo's pointer use heads.THRESHOLDS; an even head scores at
    most 1/3 on each job (rows i ≥ 2 have at least 3 keys), so no threshold is reached by doing nothing."""
    import inspect


    assert set(heads.THRESHOLDS.values()) == {0.5}
    assert "0.5" not in inspect.getsource(head_notices.demo_heads_sentence)  # it reads the shared threshold
    for n in range(3, 40):
        ids = list(range(n // 2)) * 2 + [999] * (n % 2)
        even = heads.uniform(ids)
        for key, t in heads.THRESHOLDS.items():
            assert even[key] is None or even[key] < t


def test_a_trace_is_scored_one_head_at_a_time_as_every_blocks_patterns_at_once(tiny, monkeypatch):
    """score_trace derives each head's pattern alone (a block's whole [nh, T, T] patterns, every block's
    at once, held 1.3 GiB on gpt2 at 1,024 tokens) and gives the rows score_patterns gives."""
    from gpt2viz.model.trace import Trace

    ids = [5, 9, 2, 7, 5, 9, 2, 7, 1]
    whole = run(tiny, ids, Mode.FULL, names=heads.PATTERNS)
    expected = heads.score_patterns([whole.get("attn.pattern", b)[0] for b in range(tiny.config.n_layer)], ids)
    asked = []
    real = Trace.get
    monkeypatch.setattr(Trace, "get", lambda self, short, block=None, **kw:
                        asked.append(kw) or real(self, short, block, **kw))
    rows = heads.score_trace(run(tiny, ids, Mode.FULL, names=heads.PATTERNS))
    assert all(kw.get("head") is not None or kw.get("queries") == slice(0, 1) for kw in asked) and asked
    assert [(r["block"], r["head"]) for r in rows] == [(r["block"], r["head"]) for r in expected]
    for got, want in zip(rows, expected):
        for k in heads.SCORE_NAMES:
            assert (got[k] is None) == (want[k] is None) and (got[k] is None or abs(got[k] - want[k]) < 1e-9), k
