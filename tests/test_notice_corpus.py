"""Every computed notice and live-check grader on a corpus of runs: weights (random gpt2, random tiny,
the demo model) × texts (1, 2 and 3 tokens, a period-1 and a period-2 repeat, a longer repeat,
punctuation only, emoji, 1,024 tokens) × modes × temperatures. The rules they keep are written in
gpt2viz/teaching/notices.py; here each is checked against quantities worked out apart from the
notices, in plain loops over the pattern:

- on random weights no sentence says a head is a previous-token head, an induction head or an
  attention sink;
- a notice names a job only where the run shows it (enough positions, the score at its threshold);
- two notices on one page give one quantity one value;
- a number printed beside a chart is the one the chart is drawn from.

Each run is made once (a module-scoped cache), recording only what the pages read; the 1,024-token
text runs on tiny in every mode and on gpt2 in full mode only, and is dropped once checked."""

import functools
import re
from collections import defaultdict

import pytest
import torch
from own_process import inside, run_alone
from page_numbers import disagree, quantities

from gpt2viz import plots
from gpt2viz.analysis import heads
from gpt2viz.model.demo_model import DEMO_PATH
from gpt2viz.model.gpt2 import causal_mask
from gpt2viz.model.modes import run
from gpt2viz.model.tokenizer import decode, encode, readable
from gpt2viz.model.weights import load_safetensors, random_model
from gpt2viz.spec.config import get_config
from gpt2viz.spec.schema import Mode
from gpt2viz.teaching import arithmetic, live_checks, notices
from gpt2viz.ui.overview import residual_norm_series, top_next_tokens

TEXTS = {
    "1 token": " Hello",
    "2 tokens": "Hello world",
    "3 tokens": " people play one",
    "period 1": " game game game game game game game",
    "period 2": " people play people play people play people play",
    "long repeat": " people play one good game after work" * 3,
    "punctuation": "?! ... , ; -- !!",
    "emoji": "🙂 🎉🙂",
}
LONG = "1024 tokens"
MODES = tuple(Mode)
TEMPERATURES = (0.0, 0.1, 1.0, 2.0)
NAMES = ["blocks.*.attn.pattern", "blocks.*.attn.out", "blocks.*.mlp.pre", "blocks.*.mlp.post", "blocks.*.mlp.out",
         "blocks.*.resid_pre", "blocks.*.resid_mid", "blocks.*.resid_post", "blocks.*.ln1.normalized",
         "blocks.*.ln1.out", "ln_f.normalized", "ln_f.out", "logits", "embed.out",
         "blocks.0.attn.scores", "blocks.0.attn.v", "blocks.0.attn.z"]  # the worked example's block
CHARTED = 64  # the pages' charts are built (slowly) for texts up to this long
# a sentence that gives a head a job, in any of the notices' phrasings
JOB_CLAIM = re.compile(r"\b(is|are)\s+(a|an)\s+(previous-token head|induction head|attention sink)"
                       r"|\*\*(A|An) (previous-token head|induction head|attention sink)", re.IGNORECASE)
LABELS = {"previous_token": "**A previous-token head:**", "induction": "**An induction head:**",
          "first_token": "**An attention sink:**"}


def long_ids() -> list[int]:
    words = " ".join(f"word{i % 97} and then, {i}." for i in range(600))
    ids = encode(words)
    assert len(ids) >= 1024
    return ids[:1024]


@pytest.fixture(scope="module")
def models():
    out = {"gpt2": random_model(get_config("gpt2"), seed=0), "tiny": random_model(get_config("tiny"), seed=0)}
    if DEMO_PATH.is_file():
        out["demo"] = load_safetensors(str(DEMO_PATH)).model
    return out


def cases():
    for weights in ("gpt2", "tiny", "demo"):
        for text in TEXTS:
            for mode in MODES:
                if not (mode is Mode.TRAINING and text == "1 token"):  # training predicts a next token: 2 or more
                    yield weights, text, mode
    for mode in MODES:
        yield "tiny", LONG, mode
    yield "gpt2", LONG, Mode.FULL


def ids_of(text: str) -> list[int]:
    return long_ids() if text == LONG else encode(TEXTS[text])


# ---------------------------------------------------------------------------- written-out scores
@functools.cache
def scored_cells(ids: tuple[int, ...], offset: int, T: int) -> dict[str, tuple[list[int], list[int]]]:
    """(rows, keys) of the cells each job score reads, by its definition, in a plain loop: previous and
    first token over queries i ≥ 2; induction over queries whose most recent earlier occurrence j has
    j + 1 < i − 1."""
    cells = {"previous_token": ([], []), "first_token": ([], []), "induction": ([], [])}
    last: dict[int, int] = {}
    for i in range(offset + T):
        r = i - offset
        if r >= 0 and i >= 2:
            cells["previous_token"][0].append(r), cells["previous_token"][1].append(i - 1)
            cells["first_token"][0].append(r), cells["first_token"][1].append(0)
        if r >= 0 and ids[i] in last and last[ids[i]] + 1 < i - 1:
            cells["induction"][0].append(r), cells["induction"][1].append(last[ids[i]] + 1)
        last[ids[i]] = i
    return cells


def plain_scores(pattern: torch.Tensor, ids, offset: int) -> dict:
    """Each job score of one head's pattern [T, L] and how many queries it reads: {job: (score or
    None, n)}."""
    out = {}
    for key, (rows, keys) in scored_cells(tuple(ids), offset, pattern.shape[0]).items():
        out[key] = (float(pattern[rows, keys].double().mean()) if rows else None, len(rows))
    return out


def shows(value_n: tuple) -> str | None:
    """What the run shows of one job: "job" (enough queries, at the threshold), else None."""
    value, n = value_n
    return value is not None and n >= heads.MIN_ROWS and value >= 0.5


# ---------------------------------------------------------------------------- the corpus
@pytest.mark.parametrize("weights,text,mode", list(cases()),
                         ids=lambda v: v.value if isinstance(v, Mode) else str(v))
def test_the_notices_of_one_run_keep_the_rules(models, weights, text, mode):
    if weights == "gpt2" and text == LONG and not inside():  # 1.5 GiB of a run: kept out of the suite's process
        return run_alone(f"{__file__}::test_the_notices_of_one_run_keep_the_rules[gpt2-{LONG}-{mode.value}]",
                         "gpt2 on 1,024 tokens, 1.5 GiB recorded")
    if weights not in models:
        pytest.skip("no demo model file")
    model = models[weights]
    ids = ids_of(text)
    if len(ids) > model.config.n_positions:
        pytest.skip(f"{len(ids)} tokens exceed {weights}'s context")
    kind = "random" if weights != "demo" else "demo"
    trace = run(model, ids, mode, names=NAMES)
    offset, T = trace.P, trace.T
    said: list[str] = []

    # Attention: every head of every block (of the first and the last on 1,024 tokens: each head's
    # scores read a million cells)
    last = model.config.n_layer - 1
    for b in range(model.config.n_layer) if text != LONG else (0, last):
        patterns = trace[f"blocks.{b}.attn.pattern"][0]  # [nh, T, L]
        for h in range(model.config.n_head):
            lines = notices.attention_notice(patterns[h], ids, offset, kind, b, h)
            said += lines
            plain = plain_scores(patterns[h], ids, offset)
            for key, label in LABELS.items():
                named = any(line.startswith(label) for line in lines)
                assert named == (kind != "random" and shows(plain[key])), (b, h, key, plain[key], lines)
                if named:  # the share printed is the written-out score
                    assert f"{plain[key][0]:.0%}" in next(line for line in lines if line.startswith(label))

    # MLP: the neuron named is the chart's first bar, with its value (figures are slow to build: the
    # charts are drawn for the last block, in full mode and in decode, whose chart has one row)
    q = [readable(t) for t in ids[offset:offset + T]]
    charts = mode in (Mode.FULL, Mode.DECODE)
    for b in range(model.config.n_layer):
        pre, post = trace[f"blocks.{b}.mlp.pre"][0], trace[f"blocks.{b}.mlp.post"][0]
        lines = notices.mlp_notice(pre, post, kind)
        said += lines
        if charts and b == last:
            bar = plots.top_neurons(post, q, k=10, offset=offset).data[0]
            assert f"is {bar.x[0]} ({bar.y[0]:.2f})" in lines[1], (lines[1], bar.x[0], bar.y[0])
        negative = float((pre < 0).double().mean())
        assert lines[0].startswith(f"{negative:.0%} of the {pre.numel():,} pre-activations")

    # Block: the numbers of the updates notice are the two charts' bars
    if T > 1:
        for b in range(model.config.n_layer):
            attn, mlp = trace[f"blocks.{b}.attn.out"][0], trace[f"blocks.{b}.mlp.out"][0]
            lines = notices.updates_notice(attn.norm(dim=-1), mlp.norm(dim=-1), kind)
            said += lines
            if mode is Mode.FULL and b == last:
                a_bars = plots.position_norms(attn, q, "a", offset=offset).data[0].y
                m_bars = plots.position_norms(mlp, q, "m", offset=offset).data[0].y
            else:
                a_bars, m_bars = attn.norm(dim=-1).tolist(), mlp.norm(dim=-1).tolist()
            assert (f"‖Δattn‖ is {a_bars[0]:.2f} at the first position and {a_bars[-1]:.2f} at the last; ‖Δmlp‖ stays "
                    f"between {min(m_bars):.2f} and {max(m_bars):.2f}") in lines[0]
            ratio = a_bars[0] / a_bars[-1]
            rule = any("1/√n as long:" in line for line in lines)
            assert rule == (kind == "random" and abs(ratio / T ** 0.5 - 1) <= notices.ROOT_N_TOLERANCE), lines
    labels, norms = residual_norm_series(trace)
    said += notices.residual_notice(norms, labels)

    # LayerNorm: the last position through ln_1 of block 0 and through ln_f
    for prefix, source in (("blocks.0.ln1.", "blocks.0.resid_pre"), ("ln_f.", f"blocks.{last}.resid_post")):
        x, n, out = trace[source][0, -1], trace[prefix + "normalized"][0, -1], trace[prefix + "out"][0, -1]
        lines = notices.layernorm_notice(x, n, out, model.config.layer_norm_epsilon)
        said += lines
        assert "-0.000" not in lines[0]
        sd = float(n.double().std(unbiased=False))
        assert f"standard deviation {sd:.3f}" in lines[0]
        if f"{sd:.3f}" != "1.000":
            assert "1 up to ε" in lines[0] and "whatever" not in lines[0]

    # Output and Overview: one top probability, the chart's first bar, the same in the temperature notice
    probs, tokens = top_next_tokens(trace, k=10)
    output = notices.output_notice(probs[0], tokens[0], model.config.vocab_size, kind)
    said += output
    if mode is Mode.FULL:
        bar = plots.topk_tokens(probs, tokens, "t").data[0]
        assert max(bar.x if isinstance(bar.x[0], float) else bar.y) == probs[0]
    assert f"gets {probs[0]:.3g};" in output[0]
    if kind == "random":
        assert f"{probs[0] * model.config.vocab_size:.1f} times the uniform" in output[1]
        assert "barely" not in output[1]
    from gpt2viz.model.generation import distribution

    logits = trace["logits"][0, -1].double()
    before = torch.softmax(logits, -1)
    for t in TEMPERATURES:
        for k in (None, 5):
            after = distribution(logits, t, k)
            (line,) = notices.temperature_notice(before, after, t, k)
            said.append(line)
            assert line.startswith(f"The top token's probability goes from {probs[0]:.3g} to ")
            zero = int((after == 0).sum())
            if "keep one" in line:
                assert zero == 0 or f"{zero:,} are below" in line
            else:
                assert f"{zero:,} get" in line, (line, zero)

    # Tokens: the counts are the text's
    tok = notices.tokens_notice(ids, [readable(i) for i in ids], decode(ids))
    said += tok
    assert tok[0].startswith(f"{len(ids):,} token")

    # Head finder and live checks: what a full run of the text gives
    if mode is Mode.FULL and T >= 2:
        patterns = [trace[f"blocks.{b}.attn.pattern"][0] for b in range(model.config.n_layer)]
        rows = heads.score_patterns(patterns, ids)
        for key in heads.SCORES:
            lines = heads.notice(rows, key, kind, ids)
            said += lines
            if key in heads.JOBS:
                lead = heads.ranked(rows, key)
                claims = any(line.startswith(f"It is {heads.JOBS[key]}") for line in lines)
                written = lead and shows(plain_scores(patterns[lead[0]["block"]][lead[0]["head"]], ids, 0)[key])
                assert claims == bool(kind != "random" and written), (key, lines)
            if key == "induction":
                assert all(r["induction"] is None for r in rows) == (not heads.has_target(ids))
        for b in {0, last}:
            asked = live_checks.checks(tuple(ids), trace["logits"][0, -1], patterns[b], b, "k", random=kind == "random")
            for check in asked:
                said += [check.question, check.worked]
                right = f"{check.answer:.4g}" if check.kind == "probability" else str(check.answer)
                assert live_checks.grade(check, right).ok, (check.kind, right)
                if check.kind == "probability":
                    assert live_checks.grade(check, "0").ok is False
                if check.kind == "head":
                    scores = [plain_scores(patterns[b][h], ids, 0)["previous_token"][0]
                              for h in range(model.config.n_head)]
                    for h, s in enumerate(scores):  # right exactly for the heads within a tie of the best
                        assert bool(live_checks.grade(check, str(h)).ok) == (max(scores) - s < live_checks.HEAD_TIE)

    # Worked examples: every equation holds at its printed precision; each page's numbers for one
    # quantity agree with each other and with its charts (built as the pages build them, on short texts)
    pages, figures, worked = page_texts(model, trace, ids, mode, kind, probs, tokens, labels, norms)
    for url, texts in pages.items():
        wrong = disagree(quantities(url, texts, figures[url]))
        assert not wrong, (url, wrong)
    for text in worked:
        printed = arithmetic.equations(text)
        assert len(printed) >= 2 and [eq for eq in printed if not arithmetic.holds(*eq)] == [], printed
    said += worked

    if kind == "random":
        claims = [line for line in said if JOB_CLAIM.search(line)]
        assert not claims, claims


def page_texts(model, trace, ids, mode, kind, probs, tokens, labels, norms):
    """What the five core pages print on this run (their notices and worked examples, by url), the
    charts they draw beside them (texts up to CHARTED tokens, full sequence), and the worked examples."""
    cfg, T, offset = model.config, trace.T, trace.P
    q, keys = [readable(t) for t in ids[offset:offset + T]], [readable(t) for t in ids[:offset + T]]
    charts = mode is Mode.FULL and T <= CHARTED
    pages, figures, worked = defaultdict(list), defaultdict(list), []
    if not offset:  # attention, block 0, every head (decode keeps its cached values out of the trace)
        scores, pattern = trace["blocks.0.attn.scores"][0], trace["blocks.0.attn.pattern"][0]  # [nh, T, L]
        v, z = trace["blocks.0.attn.v"][0], trace["blocks.0.attn.z"][0]  # [nh, T, dh]
        for h in range(cfg.n_head):
            worked.append(notices.attention_worked(scores[h, -1], pattern[h, -1], v[h], z[h, -1], keys))
            listed = len(re.findall(r"key \d+ .{1,40}?: e\^\(", worked[-1]))  # the review's U2: "three" said always
            assert listed == min(3, T), worked[-1]
            assert ("The only score:" if T == 1 else f"The row's {['two', 'three'][T - 2]} scores:" if T <= 3 else
                    "The three largest scores:") in worked[-1]
        pages["attention"] += notices.attention_notice(pattern[0], ids, 0, kind, 0, 0) + [worked[0]]
        if charts:
            figures["attention"].append(plots.attention_maps(scores[0], pattern[0], z[0].norm(dim=-1), q, keys,
                                                             "Attention · block 0 head 0", mask=causal_mask(T, T)))
    logits = trace["logits"][0, -1].double()  # [V]
    w_u = (model.wte.weight.T if cfg.tied else model.lm_head.weight.T).detach()  # [d, V]
    worked.append(notices.output_worked(logits, trace["ln_f.out"][0, -1], w_u, readable_ids()))
    before = torch.softmax(logits, -1)
    pages["output"] += notices.output_notice(probs[0], tokens[0], cfg.vocab_size, kind) + [worked[-1]]
    pages["output"] += notices.temperature_notice(before, before, 1.0, None)
    if charts:
        figures["output"] += [plots.topk_tokens(probs, tokens, "Next token after"),
                              plots.topk_tokens(before.topk(10).values.tolist(), tokens, "temperature 1")]
    for b in range(cfg.n_layer):
        pre, post = trace[f"blocks.{b}.mlp.pre"][0], trace[f"blocks.{b}.mlp.post"][0]  # [T, 4d]
        worked.append(notices.mlp_worked(pre, post, model.h[b].mlp.c_proj.weight.detach(), notices.top_neuron(post)))
    pages["mlp"] += notices.mlp_notice(pre, post, kind) + [worked[-1]]  # the last block's page
    if charts:
        figures["mlp"].append(plots.top_neurons(post, q, k=10, title="Most active neurons", offset=offset))
    x, ln = trace["blocks.0.resid_pre"][0, -1], model.h[0].ln_1
    n, out = trace["blocks.0.ln1.normalized"][0, -1], trace["blocks.0.ln1.out"][0, -1]
    eps = cfg.layer_norm_epsilon
    worked.append(notices.layernorm_worked(x, n, out, ln.weight.detach(), None if ln.bias is None else ln.bias.detach(),
                                           eps, offset + T - 1))
    pages["layernorm"] += notices.layernorm_notice(x, n, out, eps) + [worked[-1]]
    var = float(x.double().var(unbiased=False))  # the review's M8: "whatever x's scale was" beside 0.994
    assert "whatever" not in worked[-1] and ("takes out x's scale" in worked[-1]) == (var >= 1000 * eps)
    assert ("standard deviation 1.000" in worked[-1]) >= ("takes out x's scale" in worked[-1]), worked[-1]
    figures["layernorm"].append(plots.layernorm_stages(x, n, out, eps, "One position through ln_1"))
    if T > 1:
        for b in range(cfg.n_layer):
            x, a, mid = (trace[f"blocks.{b}.{s}"][0] for s in ("resid_pre", "attn.out", "resid_mid"))  # [T, d]
            m, out = trace[f"blocks.{b}.mlp.out"][0], trace[f"blocks.{b}.resid_post"][0]
            worked.append(notices.block_worked(x[-1], a[-1], mid[-1], m[-1], out[-1], offset + T - 1))
        pages["block"] += notices.updates_notice(a.norm(dim=-1), m.norm(dim=-1), kind) + [worked[-1]]
        pages["block"] += notices.residual_notice(norms, labels)
        if charts:
            figures["block"] += [
                plots.position_norms(a, q, "‖Δattn‖ added", offset=offset),
                plots.position_norms(m, q, "‖Δmlp‖ added", offset=offset),
                plots.position_values(a.norm(dim=-1) / x.norm(dim=-1), q, "‖Δattn‖ / ‖xₙ‖", "r", offset=offset),
                plots.position_values(m.norm(dim=-1) / mid.norm(dim=-1), q, "‖Δmlp‖ / ‖x′ₙ‖", "r", offset=offset),
                plots.residual_norms(norms, labels, q, "‖residual stream‖", offset=offset)]
    return pages, figures, worked


class readable_ids(dict):
    """Every token id's readable form, as the pages print it."""

    def __missing__(self, i):
        return readable(i)
