"""The Experiments page's logic: which experiment (in the URL), the prediction (in the URL, one
control an experiment), the cached outcome, and the charts and numbers of each answer."""

import streamlit as st

from .. import plots
from ..analysis.experiments import EXPERIMENTS, TEMPERATURE_CHOICES, Experiment, Outcome, question
from ..model.tokenizer import readable, readable_tokens
from ..spec.schema import Mode
from ..teaching import page_text
from .anatomy import plot, side_by_side
from .cache import heavy_for, run_bytes, trace_cache
from .state import Selection, locked
from .text import plain


def pick() -> Experiment:
    """The experiment shown, bound to the URL (?experiment=no+mask)."""
    key = st.radio("Experiment", list(EXPERIMENTS), horizontal=True, key="experiment", bind="query-params",
                   disabled=locked("experiment"),
                   help=" · ".join(f"{k}: {e.title}" for k, e in EXPERIMENTS.items()))
    return EXPERIMENTS[key]


def ask(e: Experiment, sel: Selection) -> str | None:
    """The question and the prediction (None until one is chosen), the prediction bound to the URL."""
    st.header(e.title)
    st.markdown("**Predict first.** " + plain(question(e, sel.config.d_head, sel.block, sel.ids)))
    return st.radio("Your prediction", list(e.choices), index=None, horizontal=True, key=prediction_key(e),
                    bind="query-params")


def prediction_key(e: Experiment) -> str:
    """One control (and URL key) an experiment: each has its own choices."""
    return "predict_" + e.key.replace(" ", "_")


def runnable(e: Experiment, sel: Selection) -> bool:
    """Whether the sidebar's text and mode let the experiment run; if not, say why plainly."""
    if sel.text_error:
        st.warning(sel.text_error, icon=":material/edit:")
        return False
    if sel.mode not in e.modes:
        st.info("This experiment runs the whole text twice and compares every position: choose *full* or "
                "*training* under **Mode** in the sidebar.", icon=":material/tune:")
        return False
    return True


def estimate(sel: Selection) -> int:
    """What an experiment holds at its peak: its two runs (with and without the change), each at most a
    trace of everything in its mode (training's runs record no gradient: a full run's forward pass),
    whose estimate covers the attention an intervention writes out in every block. Measured on gpt2 at
    1,024 tokens: removing the mask held 830 MiB and the others 207-292 when this counted two runs'
    logits (77 MiB); a trace of everything is 742 MiB there."""
    mode = Mode.FULL if sel.mode is Mode.TRAINING else sel.mode
    return 2 * run_bytes(sel.weights, len(sel.ids), mode, None)


def outcome(e: Experiment, sel: Selection) -> Outcome:
    key = ("experiment", e.key, sel.weights.key, sel.ids, sel.mode.value, sel.block, sel.head)
    with st.spinner(f"Running {sel.config.name} with and without the change…"):
        return trace_cache().get_or_compute(
            key, lambda: e.measure(sel.weights.model, sel.ids, sel.mode, sel.block, sel.head),
            estimate=estimate(sel), heavy=heavy_for(len(sel.ids)))


def answer(e: Experiment, sel: Selection, predicted: str) -> None:
    """The verdict on the prediction, the charts, the measured numbers and what they show."""
    try:
        out = outcome(e, sel)
    except ValueError as err:  # a text too short for the experiment
        st.warning(str(err), icon=":material/edit:")
        return
    if predicted == out.answer:
        st.success(f"You predicted **{predicted}**, and the run agrees.", icon=":material/check_circle:")
    else:
        st.info(f"You predicted **{predicted}**; the run says **{out.answer}**.", icon=":material/lightbulb:")
    CHARTS[e.key](out, sel)
    st.markdown("**Measured:** " + plain(out.reading))  # tokens in it are shown as they are, never as markup
    if sel.mode is Mode.TRAINING:
        st.caption("Training mode runs here with dropout off, so the runs differ by the change alone.")
    st.markdown("**What that shows.** " + e.why)


# ---------------------------------------------------------------------------- the charts
def _pattern_axes(pattern, ids) -> tuple[list[str], list[str], int]:
    """(query tokens, key tokens, first query's position) of a pattern [T, L]: in decode one query."""
    T, L = pattern.shape
    keys = readable_tokens(ids[:L])
    return keys[L - T:], keys, L - T


def _scale(out, sel: Selection) -> None:
    q, k, offset = _pattern_axes(out.pattern_with, sel.ids)
    where = f"block {sel.block} head {sel.head}"
    side_by_side(*(plots.attention_heatmap(p, q, k, f"{label} · {where}", query_offset=offset, share=0.5)
                   for p, label in ((out.pattern_with, "With 1/√dh"), (out.pattern_without, "Without 1/√dh"))))
    heads = [f"head {h}" for h in range(sel.config.n_head)]
    plot(plots.grouped_bars([out.entropy_with.tolist(), out.entropy_without.tolist()], ["with 1/√dh", "without"],
                            heads, f"Block {sel.block}: mean entropy of each head's attention rows",
                            "entropy (nats)", subtitle="lower: the weight sits on fewer keys"), f"block {sel.block}")


def _temperature(out, sel: Selection) -> None:
    plot(plots.grouped_bars(out.probs.tolist(), [f"temperature {t}" for t in TEMPERATURE_CHOICES],
                            [readable(i) for i in out.top_ids], "The 10 most likely next tokens at each temperature",
                            "probability (log scale)", "next token (most likely at temperature 1 first)", log=True,
                            subtitle="temperature 0: probability 1 on the first token, 0 (not drawn) on the others"),
         "last position")


def _mask(out, sel: Selection) -> None:
    tokens = readable_tokens(sel.ids)
    change = f"{tokens[-1]}→{readable(out.new_token)}"
    labels = [f"{i}·{t}" for i, t in enumerate(tokens[:-1])] + [f"{len(tokens) - 1}·{change}"]
    still = float(out.moved_with[:-1].max())
    plot(plots.grouped_bars([out.moved_with.tolist(), out.moved_without.tolist()], ["with the mask", "without"],
                            labels, f"How far each position's output moved: last token {change}", "max |change|",
                            "position·token", subtitle=page_text.mask_subtitle(still)))


def _position(out, sel: Selection) -> None:
    labels = [f"{i}·{t}" for i, t in enumerate(readable_tokens(sel.ids))]
    series = ["text's order", "earlier tokens reversed"]
    st.caption(f"Block 0 head {sel.head}: the last position's attention weight on each token, read at the token's "
               "place in the text (in the reversed text it stands elsewhere).")
    side_by_side(*(plots.grouped_bars(w.tolist(), series, labels, f"{which} position embeddings", "attention weight",
                                      "token (at its place in the text)")
                   for w, which in ((out.with_pos, "With"), (out.without_pos, "Without"))))


CHARTS = {"no scale": _scale, "temperature": _temperature, "no mask": _mask, "no positions": _position}
assert set(CHARTS) == set(EXPERIMENTS)
