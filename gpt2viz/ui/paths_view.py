"""The "Which path carries it" page's logic: the sender's controls (URL-bound: the sidebar's block
and head, a head or the block's MLP, zero or mean as on What if; the answer and position as on Who
wrote the answer), the cached path patching (a heavy run on a shared server: a fair slot in the
trace cache), its chart and its table. The sentences are teaching/paths_text.py's.

Every run here is a FULL run of the whole text (capped on a shared server as What if's), whatever the
sidebar's mode.
"""

import streamlit as st

from .. import plots
from ..analysis.paths import NEEDS, ROW_POSITIONS, Part, Paths, parse_sender, path_patch, receivers_of
from ..model import ranking
from ..model.tokenizer import decode, readable
from ..model.trace import Trace
from ..spec.schema import Mode
from ..teaching import paths_text
from .anatomy import plot, random_note
from .cache import get_trace, trace_cache, unembedding_run_bytes
from .caps import paths_refused
from .layout import wide_table
from .links import anchor
from .state import Selection, locked
from .text import code_span
from .whatif_view import METHODS, requested
from .working import working

SENDERS = ("head", "MLP")  # shown in the URL as they read
# receivers x positions a view runs with the page (gpt2's block-0 head at 16 tokens, any demo view); more on
# request: every receiver reruns the blocks after its own, so gpt2 at 1,024 tokens is minutes of work
AUTO_WORK = 410 * 16


def sender_controls(sel: Selection) -> tuple[str, str]:
    """(the sender's name, the ablation): the sidebar's block and head choose where."""
    cols = st.columns([3, 2])
    kind = cols[0].radio("Sender", list(SENDERS), horizontal=True, key="sender", bind="query-params",
                         disabled=locked("sender"),
                         help="head: the sidebar's head, its z·W_O rows without b_O · MLP: the sidebar's block's MLP")
    method = cols[1].radio("Replace by", list(METHODS), horizontal=True, key="method", bind="query-params",
                           disabled=locked("method"), help="zero, or the mean over the text's positions")
    name = Part(sel.block, sel.head if kind == "head" else None).name
    return name, method


def clean_trace(sel: Selection) -> Trace:
    with working(f"Running {sel.config.name} on {len(sel.ids):,} tokens in full mode…") as progress:
        return get_trace(sel.weights, sel.ids, Mode.FULL, sel.weights.seed, NEEDS, progress=progress)


def answer(sel: Selection, trace: Trace) -> tuple[int, int | None, int]:
    """(answer, versus, position) from Who wrote the answer's controls, the likeliest tokens under them; a
    blank answer is the top prediction at the position. Tokens that cannot be used: said, and the page stops."""
    from .attribution_view import controls, likeliest  # here: attribution_view links to this page

    chosen, versus, position, error = controls(sel, trace)
    likeliest(sel, trace, position)
    if error:
        st.warning(error, icon=":material/edit:")
        st.stop()
    return (ranking.top(trace.at("logits", position)[0]) if chosen is None else chosen), versus, position


def _estimate(sel: Selection, n_tokens: int) -> int:
    """The bytes a path patching holds at its peak beyond the clean run (analysis/paths.py path_patch
    runs one block's receivers at a time): that block's 3·nh receiver rows with their change and their
    MLP's two 4d-wide buffers, a batch of them (ROW_POSITIONS positions at most) through each later
    block, and their logits, read in double precision. Measured on gpt2, sender block 0 head 0: it
    held 659 and 986 MiB at 34 and 256 tokens when it made every block's rows and logits before
    reading one (estimated 315 and 410 then)."""
    cfg = sel.config
    rows = 3 * cfg.n_head  # the most receivers a block has: every head's q, k and v
    made = rows * n_tokens * (4 * cfg.n_embd + 2 * cfg.d_mlp) * 4
    batch = min(rows, max(1, ROW_POSITIONS // max(n_tokens, 1)))
    through = batch * n_tokens * (cfg.d_mlp + 6 * cfg.n_embd) * 4 + rows * cfg.vocab_size * (4 + 8 + 8)
    return made + through + unembedding_run_bytes(sel.weights, n_tokens)


def paths(sel: Selection, trace: Trace, sender: str, answer: int, versus: int | None, position: int,
          method: str) -> Paths | None:
    """The path patching of this view; computed with the page when small (AUTO_WORK), else once the button
    is pressed (None until then)."""
    key = ("paths", sel.weights.key, sel.ids, sender, answer, versus, position, method)
    n = len(receivers_of(sel.config, parse_sender(sender, sel.config)))
    if n * (position + 1) > AUTO_WORK:
        if paths_refused(position):
            return None
        pressed = st.button(f"Remove {Part(sel.block, sel.head if '.head.' in sender else None).label} along each of "
                            f"its {n} paths ({n + 1} runs of up to {sel.config.n_layer} blocks on {position + 1} "
                            "positions)", key="run_paths")
        if not requested(key, pressed):
            return None
    with working(f"Removing {sender} along each path, one receiver at a time…") as progress:
        return trace_cache().get_or_compute(
            key, lambda: path_patch(sel.weights.model, sel.ids, sender, answer, versus, position, method, clean=trace),
            progress=progress, estimate=_estimate(sel, position + 1), heavy=True)


def _kind(part: Part) -> str:
    return part.input or ("logits" if part.block < 0 else "mlp")


def _group(part: Part) -> str:
    return "logits" if part.block < 0 else f"block {part.block}"


def _bar(part: Part) -> str:
    return part.name


def answer_shown(token: int) -> str:
    return code_span(readable(token))


def chart(sel: Selection, p: Paths) -> None:
    base = p.clean.logprob
    plot(plots.path_bars([r.logprob - base for _, r in p.rows], [_bar(part) for part, _ in p.rows],
                         [_group(part) for part, _ in p.rows], [_kind(part) for part, _ in p.rows],
                         p.total_change, f"{p.sender.label} removed along one path at a time",
                         f"Δ log p({readable(p.answer)})", paths_text.total_label(p.total_change)))
    st.caption(paths_text.chart_caption(p.sender.label, answer_shown(p.answer), p.position, p.ablation))


def sentence(p: Paths) -> str:
    return paths_text.route(p.sender.label, answer_shown(p.answer), p.clean.logprob, p.total.logprob,
                            [(part.path_label, r.logprob) for part, r in p.rows])


def notes(sel: Selection) -> None:
    if sel.weights.random:
        st.info(paths_text.random_note(), icon=":material/casino:")
    else:
        random_note(sel)


def table(p: Paths, k: int = 12) -> None:
    """The paths that move log p most, largest first, with their share of the total where measurable."""
    base = p.clean.logprob
    order = sorted(p.rows, key=lambda row: -abs(row[1].logprob - base))[:k]
    logit = "Δ logit" if p.versus is None else f"Δ (logit − logit({readable(p.versus)}))"
    rows = [{"receiver": part.name, "p(answer)": round(r.prob, 4), "Δ log p": round(r.logprob - base, 4),
             logit: round(r.logit - p.clean.logit, 4),
             "share of the total": "not measurable" if p.share(part.name) is None else
             paths_text.percent(p.share(part.name))}
            for part, r in order]
    rows.insert(0, {"receiver": "total (everywhere)", "p(answer)": round(p.total.prob, 4),
                    "Δ log p": round(p.total_change, 4), logit: round(p.total.logit - p.clean.logit, 4),
                    "share of the total": "—"})
    wide_table(rows)


def head_links(grid, token: int | None, method: str = "zero", k: int = 4) -> None:
    """Under a head map (grid [n_layer, nh]): links to this page for the k heads largest in size on it,
    with the map's answer token and replacement, in the same tab."""
    nh, flat = grid.shape[1], grid.abs().flatten()
    chosen = [int(i) for i in flat.argsort(descending=True)[:k]]
    answer = {} if token is None else {"answer": decode([token])}
    links = [anchor(f"head {i // nh}.{i % nh}", "paths", block=str(i // nh), head=str(i % nh), sender="head",
                    method=method, **answer) for i in chosen]
    st.markdown(paths_text.head_links_intro(len(links)) + " " + " · ".join(links), unsafe_allow_html=True)
