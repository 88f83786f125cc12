"""One order of tokens for every page (gpt2viz/model/ranking.py): tokens whose logits lie within
TIE_NATS of the top one tie with it and come first in token-id order; the rest follow by value. The
demo model gives 49,957 tokens it never trained on the same logit up to float32 rounding, so on an
English text the pages, the modes and the machines all used to pick their own "top token"."""

import random

import pytest
import torch

from gpt2viz.model import ranking
from gpt2viz.model.demo_model import DEMO_PATH
from gpt2viz.model.generation import distribution
from gpt2viz.model.modes import greedy, run
from gpt2viz.model.tokenizer import encode, readable
from gpt2viz.model.weights import load_safetensors
from gpt2viz.spec.schema import Mode
from gpt2viz.teaching import live_checks, notices


def written_out(x: torch.Tensor) -> list[int]:
    """The rule in a plain loop: the tied by id, then the others by value, equal values by id."""
    top = max(x.tolist())
    tied = [i for i, v in enumerate(x.tolist()) if v >= top - ranking.TIE_NATS]
    rest = sorted((i for i in range(len(x)) if i not in tied), key=lambda i: (-float(x[i]), i))
    return tied + rest


@pytest.mark.parametrize("seed", range(40))
def test_ranked_keeps_the_written_out_order(seed):
    rng = random.Random(seed)
    V = rng.choice([3, 40, 500])
    scale = rng.choice([1.0, 1e-5, 1e-4, 0.3])  # values on a grid: exact ties, ties within TIE_NATS, none
    x = torch.tensor([rng.randrange(6) * scale for _ in range(V)], dtype=rng.choice([torch.float32, torch.float64]))
    want = written_out(x)
    k = rng.randint(1, V)
    assert ranking.ranked(x, k).tolist() == want[:k]
    assert ranking.top(x) == want[0]
    assert ranking.tied_at_top(x) == sum(float(v) >= float(x.max()) - ranking.TIE_NATS for v in x)
    assert ranking.rank(x, torch.tensor(want[0])) == 1
    batch = torch.stack([x, x.flip(0)])  # [2, V]: rows ranked alone
    assert ranking.ranked(batch, k)[1].tolist() == written_out(x.flip(0))[:k]


def test_rounding_inside_a_tie_does_not_move_the_first_token():
    """What another CPU's rounding does: the same tie, its members' last bits shuffled."""
    x = torch.full((1000,), -3.0)
    x[[7, 40, 300]] = 2.0
    firsts = set()
    for seed in range(20):
        noise = torch.randn(1000, generator=torch.Generator().manual_seed(seed)) * 5e-7  # [V]: float32 rounding's size
        y = x + noise  # [V]
        firsts.add((ranking.top(y), tuple(ranking.ranked(y, 3).tolist()), ranking.tied_at_top(y)))
    assert firsts == {(7, (7, 40, 300), 3)}


@pytest.fixture(scope="module")
def demo():
    if not DEMO_PATH.is_file():
        pytest.skip("no demo model file")
    return load_safetensors(str(DEMO_PATH)).model


def test_the_demo_model_on_english_has_one_top_token_in_every_mode_and_every_reader(demo):
    """Before: in decode the Output page's first bar was id 8 while the exercise graded id 0 (a
    49,956-way exact tie, ordered by topk), and a full run's first bar was whichever token rounding
    lifted 5e-7 above the others."""
    ids = encode("the cat sat on the mat")
    seen = set()
    for mode in (Mode.FULL, Mode.PREFILL, Mode.DECODE, Mode.TRAINING):
        logits = run(demo, ids, mode, names=["logits"], dropout=False).at("logits", -1)[0]  # [V]
        first = ranking.ranked(logits, 10)[0]
        assert ranking.tied_at_top(logits) == 49_957
        by = {c.kind: c for c in live_checks.checks(tuple(ids), logits, torch.zeros(1, len(ids), len(ids)), 0, "k")}
        assert by["token"].answer == readable(int(first)).replace("␣", " ")
        assert "49,957 tokens** tie for the top" in by["token"].worked
        assert "Here 49,957 tokens tie for first" in by["token"].question  # asked knowing it, not only graded
        bars = [readable(int(i)).replace("␣", " ") for i in ranking.ranked(logits, 10)]
        assert all(live_checks.grade(by["token"], bar).ok for bar in bars)  # any bar the page shows counts
        assert distribution(logits.double(), 0, None)[first] == 1 and greedy(logits) == first
        seen.add(int(first))
        (line, *_) = notices.output_notice(0.00002, "t", 50257, "demo", ranking.tied_at_top(logits))
        assert "49,957 tokens tie for the top" in line and "token-id order" in line
    assert seen == {0}


def test_one_top_token_is_said_as_one(demo):
    logits = run(demo, encode(" people play one good game after work people play one good game"), Mode.FULL,
                 names=["logits"]).at("logits", -1)[0]
    assert ranking.tied_at_top(logits) == 1
    (line, *_) = notices.output_notice(0.9, " after", 50257, "demo", 1)
    assert "The top token, ' after', gets 0.9;" in line and "tie for" not in line


def test_a_page_that_names_the_top_token_says_the_tie():
    """A trial's pages on the demo model's English text: Generation, Logit lens, What if, Attribution and
    Paths named '!' without a word of the 49,957 tokens tied with it."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from test_links import run

    for page, mode in (("generation", "full"), ("lens", "full"), ("lens", "prefill"), ("whatif", "full"),
                       ("attribution", "full"), ("paths", "full")):
        at = run(page, weights="demo", text="the cat sat on the mat", mode=mode)
        assert not at.exception, (page, at.exception)
        said = " ".join(c.value for c in at.caption)
        assert "49,957 tokens tie for the top here, `!` first among them by token id" in said, (page, mode)
    at = run("lens", weights="demo")  # the demo's own repeat: one top token, no tie said
    assert "tie for the top" not in " ".join(c.value for c in at.caption)


def test_a_distribution_that_top_k_cut_ranks_each_token_once():
    """The review's: with fewer than k finite log-probabilities the tied were taken twice, and the
    Generation page's step chart showed the top token twice (top-k 3 of 10 bars)."""
    inf = float("inf")
    assert ranking.ranked(torch.tensor([0.0, -inf, -inf, -inf]), 3).tolist() == [0, 1, 2]
    assert ranking.ranked(torch.tensor([1.0, 0.0, 0.0, 0.0]).log(), 2).tolist() == [0, 1]
    logits = torch.randn(50257, generator=torch.Generator().manual_seed(0))
    logits[2] = 5.0
    shown = ranking.ranked(distribution(logits, 1.0, 3, None).log(), 10).tolist()
    assert len(set(shown)) == 10 and shown[0] == 2


def test_nan_ranks_last():
    nan = float("nan")
    x = torch.tensor([0.0, nan, 1.0, 2.0])
    assert ranking.top(x) == 3 and ranking.tied_at_top(x) == 1 and ranking.ranked(x, 4).tolist() == [3, 2, 0, 1]
    assert ranking.ranked(torch.tensor([[0.0, 1.0], [nan, nan]]), 2).tolist() == [[1, 0], [0, 1]]
