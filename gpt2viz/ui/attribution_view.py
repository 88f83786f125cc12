"""The "Who wrote the answer" page's logic: its controls (answer, second answer, position; URL-bound),
the cached attribution, its charts, and the knock-outs of What if beside it with the sentences that
say whether the two agree and, where not, why.

The run is a FULL run of the whole text, whatever the sidebar's mode: the attribution reads every
block's output at one position of an uncached run without dropout.
"""

import streamlit as st

from .. import plots
from ..analysis.attribution import NEEDS, Attribution, Comparison, attribute, compare, one_token
from ..model import ranking
from ..model.tokenizer import decode, readable
from ..model.trace import Trace
from ..spec.schema import Mode
from ..teaching import attribution_text as say
from ..teaching import whatif_text
from .anatomy import plot
from .cache import get_trace
from .caps import sweep_refused
from .layout import wide_table
from .overview import say_tie
from .state import Selection, locked
from .text import code_span
from .whatif_view import requested, sweep_grid
from .working import working

AUTO_SWEEP = 48  # heads: a sweep this small (the demo model's 8) runs with the page; a bigger one on request
TOP = 4  # heads set beside their knock-outs


def full_trace(sel: Selection) -> Trace:
    with working(whatif_text.running(sel.config.name, len(sel.ids))) as progress:
        return get_trace(sel.weights, sel.ids, Mode.FULL, sel.weights.seed, NEEDS, progress=progress)


def shown(token: int) -> str:
    """A token as the answer box takes it (" after"), in a code span."""
    return code_span(repr(decode([token])))


def controls(sel: Selection, trace: Trace) -> tuple[int | None, int | None, int, str | None]:
    """(answer, versus, position, why the tokens typed cannot be used). A blank answer is the top
    prediction at the position; a blank second answer, none."""
    cols = st.columns([2, 2, 3])
    answer = cols[0].text_input("Answer token", key="answer", bind="query-params", disabled=locked("answer"),
                                placeholder="blank: the top prediction",
                                help="one token, as the tokenizer has it: mind the space before a word (' after')")
    versus = cols[1].text_input("Against a second token", key="versus", bind="query-params", disabled=locked("versus"),
                                placeholder="blank: the answer's logit alone",
                                help="attribute logit(answer) − logit(this token): the logit difference")
    position = int(cols[2].slider("Position", 0, trace.T - 1, trace.T - 1, key="position", bind="query-params",
                                  disabled=locked("position"),
                                  help="the token whose next-token logits are split (0-based)")) if trace.T > 1 else 0
    try:
        a = one_token(answer) if answer else None
        b = one_token(versus, "the second token") if versus else None
    except ValueError as e:
        return None, None, position, str(e)
    return a, b, position, None


def likeliest(sel: Selection, trace: Trace, position: int, k: int = 5) -> None:
    logits = trace.at("logits", position)[0]  # [V]
    probs, ids = logits.softmax(-1), ranking.ranked(logits, k)  # [V], [k]
    st.caption(say.likeliest(position, code_span(trace.tokens[position]),
                             [(shown(int(i)), float(probs[i])) for i in ids]))
    say_tie(logits)


def attribution(sel: Selection, trace: Trace, answer: int | None, versus: int | None, position: int) -> Attribution:
    return trace.memo(("attribution", answer, versus, position),
                      lambda: attribute(sel.weights.model, trace, answer, versus, position))


def target_label(a: Attribution) -> str:
    return f"logit({readable(a.answer)})" + ("" if a.versus is None else f" − logit({readable(a.versus)})")


def totals(a: Attribution) -> None:
    """The target, the rows' sum beside it, and what is left."""
    for col, (label, value, why) in zip(st.columns(3), say.totals(target_label(a), a.target, len(a.names),
                                                                    float(a.values.sum()), a.residual)):
        col.metric(label, value, help=why or None)


def charts(sel: Selection, a: Attribution) -> None:
    cfg = sel.config
    plot(plots.matrix_heatmap(a.heads(), [f"block {b}" for b in range(cfg.n_layer)],
                              [f"head {h}" for h in range(cfg.n_head)],
                              f"Each head's direct share of {target_label(a)}", "contribution",
                              x_title="head", y_title="block", signed=True, cell_text="+.2f"))
    from .paths_view import head_links  # here: paths_view reads this module's controls
    head_links(a.heads(), a.answer)
    others = a.others()
    plot(plots.depth_bars([v for _, v in others], [bar_label(n) for n, _ in others],
                          "The rest: embedding, attention biases b_O, MLPs, ln_f's bias", "contribution"))


def bar_label(name: str) -> str:
    """A row's name short enough to stand under its bar: blocks.3.attn.bias -> "b_O 3", blocks.3.mlp -> "MLP 3"."""
    if not name.startswith("blocks."):
        return name.replace(".", " ")  # ln_f.bias: a dot in a tilted label read as none
    _, b, part = name.split(".", 2)
    return f"{'b_O' if part == 'attn.bias' else 'MLP'} {b}"


def named(a: Attribution, random: bool) -> str:
    """The headline over the map (teaching/attribution_text.py), and what its colours mean."""
    grid = a.heads()  # [n_layer, nh]
    heads = [(b, h, float(grid[b, h])) for b in range(a.n_layer) for h in range(a.n_head)]
    return say.headline(target_label(a), a.target, heads, a.others(), random) + " " + say.COLOURS


DIRECT_ONLY = (
    "**What this does not measure.** Each row is what a part writes *straight* into the final stream, read "
    "through the final LayerNorm with its scale held at this run's value. A head whose output later heads or "
    "MLPs read (a previous-token head feeding an induction head) is credited here only for what it writes to "
    "the answer itself: its **direct effect**. Its total effect, everything that changes when it is gone, is "
    "what What if's knock-out measures; the two are side by side below.")


def verdict(cmp: Comparison, a: Attribution, margin: Attribution | None, random: bool, trace: Trace) -> list[str]:
    """The verdict (teaching/attribution_text.py), with the margin over the runner-up of the two heads
    it may set against each other: the writer the knock-out ranks first and the attribution's first."""
    writers = [r for r in cmp.direct if r[:2] not in {x[:2] for x in cmp.indirect}]
    split = None
    if margin is not None and len(writers) > 1:
        first = min(writers, key=lambda r: r[3])
        grid = margin.heads()  # [n_layer, nh]
        split = (readable(margin.versus), target_label(margin), float(grid[first[0], first[1]]),
                 float(grid[writers[0][0], writers[0][1]]))
    logits = trace.at("logits", a.position)[0].double()  # [V]
    clean = float(logits.log_softmax(-1)[a.answer])  # log p(answer) before any knock-out
    return say.verdict(cmp.direct, cmp.knockout_top, cmp.indirect, readable(a.answer), random, split, clean,
                       cmp.heads_moved)


def runner_up(sel: Selection, trace: Trace, a: Attribution) -> Attribution | None:
    """The answer against the likeliest other token, where no second token was given."""
    if a.versus is not None:
        return None
    top2 = ranking.ranked(trace.at("logits", a.position)[0], 2).tolist()
    other = top2[1] if top2[0] == a.answer else top2[0]
    return attribution(sel, trace, a.answer, other, a.position)


def beside_knockouts(sel: Selection, trace: Trace, a: Attribution) -> Comparison | None:
    """What's knock-out of every head (zero, Δ log p of the answer at the last position) beside the
    attribution's top heads; computed with the page when small, on request when not."""
    st.subheader("Beside What if's knock-outs")
    cfg = sel.config
    if a.position != trace.T - 1:
        st.info("What if's knock-outs measure the prediction at the last position: choose the last position "
                "to set them beside this attribution.", icon=":material/info:")
        return None
    n = cfg.n_layer * cfg.n_head
    if sweep_refused(len(sel.ids)):  # the sweep What if runs, under What if's cap on this server
        return None
    pressed = n <= AUTO_SWEEP or st.button(say.sweep_button(n), key="attr_sweep")
    if not requested(("sweep", sel.weights.key, sel.ids, "head", "zero", a.answer), pressed):
        st.caption(say.sweep_offer(n))
        return None
    slot = st.empty()  # the sweep's progress bar, gone once it is done
    with slot.container():
        knock = sweep_grid(sel, "head", "zero", a.answer).values  # [n_layer, nh]
    slot.empty()
    cmp = compare(a, knock, k=min(TOP, n))
    rank = {(b, h): i + 1 for i, (b, h) in enumerate(
        (int(j) // cfg.n_head, int(j) % cfg.n_head) for j in knock.flatten().argsort())}
    rows = say.comparison_table(cmp.direct + [r for r in cmp.indirect if r not in cmp.direct], rank, target_label(a),
                                readable(a.answer), n)
    wide_table(rows)  # at 800 px its columns scroll sideways under the pinned head column
    st.markdown("\n".join(verdict(cmp, a, runner_up(sel, trace, a), sel.weights.random, trace)))
    return cmp
