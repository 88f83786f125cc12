"""Every sentence of teaching/paths_text.py, driven over a corpus of runs (random gpt2 on short texts,
the demo model, a random tiny model; a 1-token text; a period-2 repeat; zero and mean; head and MLP
senders) and checked against values recomputed here from the run: the path named as carrying the
largest share has the largest share, every number printed is the run's, the sum is said with its own
number, and a total near zero is "not measurable", never shared out."""

import re

import pytest

import gpt2viz
from gpt2viz.analysis.paths import MEASURABLE_NATS, MEASURABLE_PROB, clean_run, path_patch
from gpt2viz.model import tokenizer
from gpt2viz.teaching import paths_text
from gpt2viz.teaching.prompts import DEMO_REPEAT

TEXTS = {"one token": " game", "period-2": " a b a b a b a b", "demo repeat": DEMO_REPEAT.text,
         "prose": "The quick brown fox jumps over the lazy dog because"}
MODELS = ("random:gpt2:seed=0", "demo", "random:tiny:seed=0", "random:tiny:seed=3")


@pytest.fixture(scope="module")
def models():
    return {name: gpt2viz.load(name) for name in MODELS}


def corpus(models):
    for name, m in models.items():
        before = tokenizer.current()
        tokenizer.use(m.vocabulary)
        try:
            for label, text in TEXTS.items():
                ids = tokenizer.encode(text)
                cfg = m.config
                # gpt2: the last two blocks' senders (a block-0 sender's 410 runs are the benchmark's); the
                # small models every sender
                blocks = (cfg.n_layer - 2, cfg.n_layer - 1) if cfg.n_layer > 4 else range(cfg.n_layer)
                senders = [f"blocks.{b}.attn.head.{h}" for b in blocks for h in (0, cfg.n_head - 1)]
                senders += [f"blocks.{b}.mlp" for b in blocks]
                clean = clean_run(m.model, ids)  # one clean run a text, as the page's trace
                answer = int(clean["logits"][0, -1].argmax())
                for ablation in ("zero", "mean"):
                    for sender in senders:
                        yield name, label, path_patch(m.model, ids, sender, answer, ablation=ablation, clean=clean)
        finally:
            tokenizer.use(before)


def check(p) -> str:
    paths = [(part.path_label, r.logprob) for part, r in p.rows]
    s = paths_text.route(p.sender.label, "`x`", p.clean.logprob, p.total.logprob, paths)
    change = p.total.logprob - p.clean.logprob
    was, now = f"{p.clean.logprob:.3g}", f"{p.total.logprob:.3g}"
    if change == 0:  # a mean over one position: not "moves log p by +0" (a trial)
        assert f"does not move log p(`x`) (it stays at {was})." in s, s
    else:
        assert f"moves log p(`x`) by {change:+.3g}" in s
        assert (f"(it stays at {was})." if was == now else f"(from {was} to {now}).") in s, s  # never "from X to X"
    moved = [lp - p.clean.logprob for _, lp in paths]
    n = len(moved)
    if abs(change) < MEASURABLE_NATS or max(p.clean.prob, p.total.prob) < MEASURABLE_PROB:
        assert "*not measurable*" in s and "share of that change" not in s and "%" not in s
        assert ("nats in size" in s) == (abs(change) < MEASURABLE_NATS)
        assert p.share(p.rows[0][0].name) is None
        return "not measurable"
    assert "not measurable" not in s
    shares = [d / change for d in moved]
    top = max(range(n), key=lambda i: shares[i])
    assert paths[top][0] in s
    assert f"{round(100 * shares[top])}%" in s
    if n == 1:  # one path is said as itself: not "Of the 1 path, X carries the largest share" (a trial)
        assert (f"Its one path is **{paths[0][0]}**." if shares[0] > 0 else
                f"Its one path, {paths[0][0]}, does not move it the way the total does.") in s, s
        assert "largest share" not in s and "nearest" not in s
    elif shares[top] > 0:
        assert f"**{paths[top][0]}** carries the largest share" in s
        assert all(shares[i] <= shares[top] for i in range(n))
    else:
        assert f"None of the {n} paths" in s and all(x <= 0 for x in shares)
    assert f"{sum(moved):+.3g}" in s and f"{round(100 * sum(moved) / change)}% of the total" in s
    assert ("need not add up" in s) if n > 1 else ("need not carry the whole total" in s)
    assert abs(p.share(p.rows[top][0].name) - shares[top]) < 1e-9
    return "measured"


def test_route_sentence_is_true_over_the_corpus(models):
    seen = {"measured": 0, "not measurable": 0}
    kinds = set()
    for name, label, p in corpus(models):
        seen[check(p)] += 1
        kinds.add((name, label))
    assert seen["measured"] > 10 and seen["not measurable"] > 10, seen  # both branches are exercised
    assert len(kinds) == len(MODELS) * len(TEXTS)


def test_sentence_functions_are_registered_and_plain():
    assert set(paths_text.SENTENCES) == {paths_text.route, paths_text.chart_caption, paths_text.random_note,
                                         paths_text.head_links_intro, paths_text.total_label}
    assert paths_text.total_label(-6.5213) == "total (everywhere): -6.52"
    assert "for the 1 head largest" in paths_text.head_links_intro(1)
    assert paths_text.percent(-0.004) == "0%" and paths_text.percent(0.996) == "100%"
    cap = paths_text.chart_caption("head 0.0", "`x`", 3, "mean")
    assert "replaced by its mean over the text's positions" in cap and "position 3" in cap
    assert "nothing here is a mechanism" in paths_text.random_note()


def test_a_single_path_and_opposite_paths():
    one = paths_text.route("MLP 1", "`x`", -1.0, -2.0, [("the direct path (into the logits)", -1.5)])
    assert "Its one path is **the direct path (into the logits)**." in one and "1 path," not in one
    assert "This one path's change is -0.5, 50% of the total" in one
    against = paths_text.route("MLP 1", "`x`", -1.0, -2.0, [("the direct path (into the logits)", -0.5)])
    assert "Its one path, the direct path (into the logits), does not move it the way the total does." in against
    still = paths_text.route("head 0.0", "`x`", -1.0, -1.0, [("a", -1.0)])
    assert still.startswith("Knocked out everywhere, head 0.0 does not move log p(`x`) (it stays at -1).")
    opposite = paths_text.route("head 0.0", "`x`", -1.0, -2.0, [("a", -0.5), ("b", -1.0 + 0.2)])
    assert "None of the 2 paths moves it the way the total does: the nearest, b, moves it by +0.2" in opposite
    tiny = paths_text.route("head 0.0", "`x`", -1.0, -1.01, [("a", -1.3), ("b", -1.0)])
    assert "not measurable" in tiny and re.search(r"largest in size is -0\.3 \(a\)", tiny)
    unlikely = paths_text.route("head 0.0", "`x`", -10.0, -12.0, [("a", -11.0)])
    assert "less than 0.01 in both runs" in unlikely and "*not measurable*" in unlikely
