"""The Head finder page's logic: every head scored on the sidebar's text and weights in full mode
(whatever the sidebar's mode), a block × head map per score with what to notice and its top three
heads, a scatter of two scores, and same-tab links that open a head on the Attention page with the
view kept (text, weights; block, head and mode=full set)."""

import numpy as np
import streamlit as st

from .. import plots
from ..analysis import heads
from ..plots.heatmaps import NARROWEST_PX, annotate
from ..spec.link_text import LINK_TEXT_CHARS, link_length
from ..spec.schema import Mode
from ..teaching import head_notices
from ..teaching.notices import weights_kind
from .anatomy import notice, plot, text_notes
from .cache import get_trace
from .links import anchor
from .state import MAX_TEXT_CHARS, MODE_LABELS, Selection, locked
from .working import working

# the scores as the page's controls show them (and the URL carries them)
LABELS = {key.replace("_", " "): key for key in heads.SCORES}
MAP_HEIGHT = 260  # px at the least: a map of 2 blocks keeps a readable colour bar


def scores(sel: Selection) -> tuple[list[dict], "Patterns"]:
    """Every head's scores on this text from one full run (the shared trace in the trace cache,
    scored once per trace), and the run's patterns (one [nh, T, T] per block: a job is named from the
    leading head's own positions); stops the page, saying why, when there is nothing to score."""
    if not sel.ids:
        st.warning(sel.text_error, icon=":material/edit:")
        st.stop()
    if len(sel.ids) < 2:
        st.warning("The head finder needs at least 2 tokens: every score reads a position from the second on.",
                   icon=":material/edit:")
        st.stop()
    if sel.mode is not Mode.FULL:
        st.caption(f":material/info: The head finder always runs the full sequence, every position's row of every "
                   f"head; the sidebar's mode ({MODE_LABELS[sel.mode]}) does not apply here.")
    text_notes(sel)
    with working(f"Running {sel.config.name} on {len(sel.ids):,} tokens in full mode and scoring every head…") as p:
        trace = get_trace(sel.weights, sel.ids, Mode.FULL, sel.weights.seed, heads.PATTERNS, progress=p)
        return trace.memo("head finder", lambda: heads.score_trace(trace)), Patterns(trace)


class Patterns:
    """A run's attention patterns by block, [nh, T, T] each, read only when asked for (the finder's
    notice reads the leading head's block)."""

    def __init__(self, trace):
        self.trace = trace

    def __getitem__(self, block: int):
        return self.trace.get("attn.pattern", block)[0]


def repeat_offer(sel: Selection) -> None:
    """Where no query has an induction target: say why, and link this page on the text twice (cut to
    the context)."""
    if heads.has_target(sel.ids):
        return
    twice = heads.repeated_text(sel.text, sel.config.n_positions)
    fits = len(twice) <= MAX_TEXT_CHARS and link_length(twice) <= LINK_TEXT_CHARS  # what the box and a link take
    link = anchor("Append a repeat: this text twice →", "heads", text=twice) if fits else ""
    st.markdown(f":material/repeat: {head_notices.no_induction(sel.ids)} {link}", unsafe_allow_html=True)


def head_link(row: dict, label: str) -> str:
    return anchor(label, "attention", block=row["block"], head=row["head"], mode="full")


def maps(sel: Selection, rows: list[dict], patterns: Patterns) -> None:
    """One tab per score: its block × head map, what to notice, and links to its top three heads."""
    cfg, kind = sel.config, weights_kind(sel.weights)
    blocks, cols = [f"block {b}" for b in range(cfg.n_layer)], [f"head {h}" for h in range(cfg.n_head)]
    for tab, key in zip(st.tabs(list(LABELS)), LABELS.values()):
        s = heads.SCORES[key]
        with tab:
            st.caption(f"**{s.title.capitalize()}**: {s.what}.")
            if rows[0][key] is not None:
                z = np.array([r[key] for r in rows]).reshape(cfg.n_layer, cfg.n_head)  # rows come block by block
                plot(score_map(z, blocks, cols, key, len(sel.ids)), "every head")
            notice(head_notices.finder_notice(rows, key, kind, sel.ids, patterns))
            top = heads.ranked(rows, key)[:3]
            if top:
                st.markdown("Open on the Attention page: " + " · ".join(
                    head_link(r, head_notices.head_label(r, key)) for r in top), unsafe_allow_html=True)


def score_map(z: np.ndarray, blocks: list[str], cols: list[str], key: str, T: int):
    """The block × head map of one score, its colours over the score's whole range (random weights'
    small differences then look as small as they are), each cell's value written where it fits."""
    s = heads.SCORES[key]
    fig = plots.matrix_heatmap(z, blocks, cols, f"{s.title.capitalize()} of every head",
                               key.replace("_", " "), x_title="head", y_title="block")
    lo, hi = heads.score_range(key, T)
    values: dict = {}
    annotate(values, len(blocks), len(cols), NARROWEST_PX)
    fig.update_traces(zmin=lo, zmax=hi, **values)
    return fig.update_layout(height=max(fig.layout.height, MAP_HEIGHT))


def scatter(sel: Selection, rows: list[dict]) -> None:
    """Two scores against each other, chosen in URL-bound boxes (previous token × induction to start)."""
    shown = [label for label, key in LABELS.items() if rows[0][key] is not None]
    c = st.columns(2)
    x = c[0].selectbox("Across", shown, index=0, key="score_x", bind="query-params",
                       disabled=locked("score_x"))
    up = next((label for label in ("induction", "first token") if label in shown), shown[-1])
    y = c[1].selectbox("Up", shown, index=shown.index(up), key="score_y", bind="query-params",
                       disabled=locked("score_y"))
    kx, ky = LABELS[x], LABELS[y]
    fig = plots.head_scatter([r[kx] for r in rows], [r[ky] for r in rows], [r["block"] for r in rows],
                             [r["head"] for r in rows], f"Every head: {x} and {y}", heads.SCORES[kx].title,
                             heads.SCORES[ky].title, heads.score_range(kx, len(sel.ids)),
                             heads.score_range(ky, len(sel.ids)))
    plot(fig, "every head")
    notice(head_notices.scatter_notice(rows, kx, ky, weights_kind(sel.weights)))


def open_head(sel: Selection, rows: list[dict]) -> None:
    """Any head, picked by block and head (URL-bound; the best induction head, else the best
    previous-token head, to start), as a link to its Attention page in full mode."""
    cfg = sel.config
    lead = (heads.ranked(rows, "induction") or heads.ranked(rows, "previous_token") or heads.ranked(rows, "entropy"))[0]
    c = st.columns([1, 1, 3], vertical_alignment="bottom")
    b = c[0].selectbox("Block", list(range(cfg.n_layer)), index=lead["block"], key="open_block", bind="query-params",
                       disabled=locked("open_block"))
    h = c[1].selectbox("Head", list(range(cfg.n_head)), index=lead["head"], key="open_head", bind="query-params",
                       disabled=locked("open_head"))
    row = rows[b * cfg.n_head + h]
    c[2].markdown(head_link(row, f"Open block {b} head {h} on the Attention page →"), unsafe_allow_html=True)
    st.caption(head_notices.scores_caption(row))
