"""The "What if" and "Compare and patch" pages' logic: their controls (bound to the URL), the cached
knock-outs, sweeps and patchings (in the trace cache, within its budget), and the sections they draw.

Every run here is a FULL run of the whole text, whatever the sidebar's mode: a knock-out changes
what every later position computes, and the mean over positions needs them all.
"""

import functools
from dataclasses import dataclass

import streamlit as st
import torch

from .. import plots
from ..analysis.whatif import (
    Knocked,
    Patching,
    Target,
    default_answers,
    knockout_from,
    log_probs,
    logit_diff,
    loss_from,
    loss_per_position,
    margins_measurable,
    patch,
    sweep,
)
from ..model import ranking
from ..model.demo_model import DEMO_PATH
from ..model.tokenizer import TextError, encode, readable
from ..model.trace import Trace
from ..spec.schema import Mode
from ..teaching import whatif_text as say
from ..teaching.prompts import DEMO_REPEAT
from . import present
from .anatomy import plot, text_notes
from .anatomy import side_by_side as level_row
from .cache import get_trace, heavy_for, loss_bytes, records_everything, trace_cache, unembedding_run_bytes
from .caps import sweep_refused
from .overview import say_tie
from .state import MAX_TEXT_CHARS, Selection, default_text_b, fit_link, link_cut_caption, locked, number
from .text import code_span
from .working import progress_bar, working

# bound widgets put the option they show into the URL, so options are shown as their URL values
PARTS = {"head": "head", "attention": "attn", "MLP": "mlp", "neuron": "neuron"}  # shown -> Target.part
METHODS = {"zero": "zero", "mean": "mean over positions"}
MAX_PATCH_TOKENS = 64  # patching every (block, position) takes n_layer x T runs
SWEEP_SHARE = 4  # a sweep's batch may hold at most 1/4 of the trace budget
TOP_K = 10
EVERY_POSITION_TOKENS = 256  # a knock-out's loss at each position comes with it up to here, else on request

RANDOM_WEIGHTS_NOTE = (
    "**Random weights: these effects are noise.** Nothing here has learned anything, so no part matters "
    "more than another for a reason. With trained weights ({trained}, under *Weights*) a repeated sequence is "
    "predicted by induction heads reading a previous-token head, and how much one knock-out moves the "
    "prediction depends on how the heads share the job.{measured} In GPT-2 small, tutorials that feed it "
    "repeated random tokens (TransformerLens, ARENA) find several induction heads (block 5 heads 1 and 5, block "
    "6 head 9, block 7 heads 2 and 10); how evenly they share the job is not measured there, so knocking out one "
    "may move the prediction more or less than you expect.")
# p(after) on the demo model's repeat with one head knocked out (zero), measured (tests/test_prompts.py)
DEMO_KNOCKOUTS = {"0.0": 0.0014, "1.0": 0.81, "1.1": 0.53, "1.2": 0.90, "1.3": 0.08}  # "block.head"
DEMO_MEASURED = (
    " On the demo model's repeat ({text}: next, after, p = 0.92), knocking out block 0 head 0, the "
    "previous-token head, takes p(after) to {k[0.0]:.2g}: the copy needs it. Knocking out one of block 1's four "
    "induction heads takes p(after) to {k[1.0]:.2f}, {k[1.1]:.2f}, {k[1.2]:.2f} or {k[1.3]:.2f} (heads 0 to 3): "
    "head 3 carries most of this copy, and without any one of the others, the rest still copy.")


def demo_knockouts() -> str:
    """What knocking out the demo model's heads one at a time measured on its repeat."""
    return DEMO_MEASURED.format(k=DEMO_KNOCKOUTS, text=DEMO_REPEAT.text.strip()).strip()


def random_weights_note() -> str:
    """The note, naming the demo model (and what knocking its heads out measured) only where its file
    is there to pick."""
    if not DEMO_PATH.is_file():
        return RANDOM_WEIGHTS_NOTE.format(trained="a GPT-2 checkpoint", measured="")
    return RANDOM_WEIGHTS_NOTE.format(trained="a GPT-2 checkpoint, or the small demo model trained for this project",
                                      measured=" " + demo_knockouts())


@dataclass(frozen=True)
class Grid:
    """A sweep's result, cached in the trace cache (which needs nbytes)."""
    values: torch.Tensor  # [n_layer, nh] or [n_layer, 1]

    @property
    def nbytes(self) -> int:
        return self.values.numel() * 4


# ---------------------------------------------------------------------------- controls
def stop_without_text(sel: Selection, error_b: str | None = None) -> None:
    """Say why there is nothing to run (an empty text A or B), and stop the page; then the weights note."""
    if sel.text_error or error_b:
        st.warning(sel.text_error or f"Text B: {error_b}", icon=":material/edit:")
        st.stop()
    text_notes(sel)
    if sel.weights.random:  # projected, a closed line the lecturer opens: the first chart in the first screen
        with present.folded(sel.present, "Random weights: these effects are noise"):
            st.info(random_weights_note(), icon=":material/casino:")


def target_controls(sel: Selection) -> tuple[Target, str]:
    """Part and method (and neuron) pickers, URL-bound; block and head come from the sidebar."""
    cols = st.columns([3, 2, 2])
    part = PARTS[cols[0].radio("Knock out", list(PARTS), horizontal=True, key="part", bind="query-params",
                               disabled=locked("part"),
                               help="head: one head's output · attention: the block's whole attention update · "
                                    "MLP: the block's MLP update · neuron: one MLP neuron")]
    method = cols[1].radio("Replace by", list(METHODS), horizontal=True, key="method", bind="query-params",
                           disabled=locked("method"),
                           help="zero, or the mean over the text's positions")
    index = sel.head
    if part == "neuron":
        index = number(cols[2], "Neuron", 0, sel.config.d_mlp - 1, 0, key="neuron")
    return Target(sel.block, part, index), method


def what_is_replaced(target: Target, method: str, T: int) -> str:
    return say.what_is_replaced(target.part, target.index, code_span(target.name), method, T)


def text_b_box(sel: Selection) -> str:
    """Text B; by default the B of the weights' ready pair where they have one (the demo model's is
    as long as its A, the sidebar's default text there)."""
    text = st.text_area("Text B", value=default_text_b(sel.source), max_chars=MAX_TEXT_CHARS, height=80, key="text_b",
                        bind="query-params", disabled=locked("text_b"), on_change=fit_link, args=("text_b",),
                        help="The sidebar's text is A. Patching needs A and B of equal length.")
    link_cut_caption(st, "text_b", "Text B", text)
    return text


def ids_of(text: str, n_positions: int) -> tuple[tuple[int, ...], int, str | None]:
    """Text B's tokens cut to the context, how many were cut, and why there are none (else None)."""
    try:
        ids = encode(text)
    except TextError as e:
        return (), 0, str(e)
    return tuple(ids[:n_positions]), max(0, len(ids) - n_positions), None


# ---------------------------------------------------------------------------- cached runs
# what the pages read when a full recording would not fit the budget (long texts on big models)
NEEDS = ("blocks.*.resid_*", "blocks.*.attn.out", "blocks.*.mlp.out", "blocks.*.attn.pattern", "logits")


def _names(sel: Selection, n_tokens: int) -> tuple[str, ...] | None:
    return None if records_everything(sel.weights, n_tokens, Mode.FULL) else NEEDS


def clean_trace(sel: Selection, ids: tuple[int, ...] | None = None) -> Trace:
    ids = sel.ids if ids is None else ids
    with working(say.running(sel.config.name, len(ids))) as progress:
        return get_trace(sel.weights, ids, Mode.FULL, sel.weights.seed, NEEDS, progress=progress)


def every_position(n_tokens: int) -> bool:
    """Whether a knock-out unembeds every position (the loss at each) or the last one only: the
    unembedding costs as much as about five of gpt2's blocks (unembedding_blocks), so beyond
    EVERY_POSITION_TOKENS a knock-out in a late block would take several times what its blocks do."""
    return n_tokens <= EVERY_POSITION_TOKENS


def unembedding_blocks(cfg, n_tokens: int) -> float:
    """How many blocks' work unembedding every position is: 2 d V multiply-adds a position against a
    block's 24 d² (the projections and the MLP) and about 2 T d (attention, half the keys on average)."""
    return cfg.vocab_size / (12 * cfg.n_embd + n_tokens)


def knocked_out(sel: Selection, target: Target, method: str, clean: Trace) -> Knocked:
    """The knock-out, what the page shows of it only (cached instead of its trace: in a class, a full
    trace for every knock-out a student tried pushed the students' own traces out of the cache),
    resumed from the clean run's input of the block it is in."""
    everywhere = every_position(len(sel.ids))
    key = ("knockout", sel.weights.key, sel.ids, target, method, everywhere)
    with working(say.running_knocked(target.block, sel.config.n_layer - 1, target.label)) as progress:
        return trace_cache().get_or_compute(
            key, lambda: knockout_from(sel.weights.model, clean, target, method, everywhere, progress.step),
            progress=progress, estimate=unembedding_run_bytes(sel.weights, len(sel.ids)),
            heavy=heavy_for(len(sel.ids)))


def knocked_loss(sel: Selection, target: Target, method: str, knocked: Knocked) -> torch.Tensor:
    """The knocked-out run's loss at every position [T-1], unembedded from what it kept."""
    if knocked.loss is not None:
        return knocked.loss
    return _loss(sel, ("knockout loss", sel.weights.key, sel.ids, target, method),
                 lambda: loss_from(sel.weights.model, knocked.final, sel.ids))


def clean_loss(sel: Selection, clean: Trace) -> torch.Tensor:
    """The clean run's loss at every position [T-1], once per text (it held 99 MiB at 256 tokens and
    246 at 1,024 on gpt2 inside the trace's memo, which reserves nothing)."""
    return _loss(sel, ("clean loss", sel.weights.key, sel.ids), lambda: loss_per_position(clean))  # FULL, no dropout


def _loss(sel: Selection, key: tuple, compute) -> torch.Tensor:
    """A loss at every position [T-1], cached under `key` within its reservation (cache.loss_bytes)."""
    with working(say.unembedding(len(sel.ids))):
        return trace_cache().get_or_compute(key, lambda: Grid(compute()),
                                            estimate=loss_bytes(sel.weights, len(sel.ids)),
                                            heavy=heavy_for(len(sel.ids))).values


def rows_per_run(sel: Selection, n_tokens: int, most: int) -> int:
    """How many rows a batched run may have: at most `most`, within 1/SWEEP_SHARE of the budget."""
    per_row = unembedding_run_bytes(sel.weights, n_tokens)
    return max(1, min(most, trace_cache().budget // SWEEP_SHARE // per_row))


def _progress(label: str):
    return progress_bar(label)  # "label: 3 of 12 runs · about 4 s left"


def sweep_grid(sel: Selection, part: str, method: str, token: int, clean: Trace | None = None,
               partial=None) -> Grid:
    """Every head's or MLP's knock-out; resumed from `clean` (the page's FULL trace of the text) if
    given, block by block: the same numbers, bit for bit, without running the blocks before each.
    `partial`: given the grid so far after each batched run (NaN still to run), as sweep's."""
    cfg = sel.config
    batch = rows_per_run(sel, len(sel.ids), cfg.n_head)
    key = ("sweep", sel.weights.key, sel.ids, part, method, token)
    n = cfg.n_layer * (cfg.n_head if part == "head" else 1)

    def compute():
        values = sweep(sel.weights.model, list(sel.ids), part, method, token, batch,
                       _progress(say.sweeping(n, part)), clean, partial)
        return Grid(values)
    estimate = batch * unembedding_run_bytes(sel.weights, len(sel.ids))
    return trace_cache().get_or_compute(key, compute, estimate=estimate, heavy=True)


def patching(sel: Selection, ids_b: tuple[int, ...], answers: tuple[int, int]) -> Patching:
    batch = rows_per_run(sel, len(ids_b), max(sel.config.n_head, len(ids_b)))
    key = ("patch", sel.weights.key, sel.ids, ids_b, answers)
    return trace_cache().get_or_compute(
        key, lambda: patch(sel.weights.model, sel.ids, ids_b, answers, batch=batch,
                           progress=_progress("Patching A into B")),
        estimate=batch * unembedding_run_bytes(sel.weights, len(ids_b)), heavy=True)


def requested(key: tuple, pressed: bool) -> bool:
    """True once the button for `key` was pressed in this session (the result is then cached)."""
    done = st.session_state.setdefault("_whatif_requested", set())
    if pressed:
        done.add(key)
    return key in done


# ---------------------------------------------------------------------------- sections
def top_tokens(trace: Trace, k: int = TOP_K) -> tuple[list[float], list[str], list[int]]:
    def compute():
        lp = log_probs(trace)  # [V]
        ids = ranking.ranked(lp, k)  # [k]
        return lp[ids].exp().tolist(), [readable(int(i)) for i in ids], ids.tolist()
    return trace.memo(("top tokens", k), compute)


def before_after(sel: Selection, clean: Trace, knocked: Knocked, target: Target, method: str) -> None:
    """Next-token probabilities side by side, the top token's change, the loss per position (on
    request for a long text: see every_position)."""
    label = target.label
    cols = st.columns(2)
    probs, labels, ids = top_tokens(clean)
    after = knocked.probs
    upto = max(*probs, *after[ids].tolist())  # one scale for both: a bar's length is compared across the two
    level_row(plots.topk_tokens(probs, labels, f"Before: next token after {clean.tokens[-1]!r}", upto=upto),
              plots.topk_tokens(after[ids].tolist(), labels, f"After knocking out {label} (same tokens)", upto=upto),
              columns=cols)
    top = ids[0]
    say_tie(clean.at("logits", -1)[0])
    new_top = ranking.top(after.log())
    cols = st.columns(3)
    cols[0].metric(f"p({readable(top)!r})", *say.probability_metric(probs[0], float(after[top])))
    cols[1].metric("Top token after", repr(readable(new_top)), "unchanged" if new_top == top else "changed",
                   delta_color="off")
    st.caption(say.probability_change(repr(readable(top)), probs[0], float(after[top])))
    if len(clean.token_ids) > 1:
        key = ("knockout loss", sel.weights.key, sel.ids, target, method)
        if knocked.loss is None and not requested(key, False):
            slot = cols[2].empty()  # the button, gone once pressed
            if requested(key, slot.button("Loss at every position", key="loss_everywhere")):
                slot.empty()
            else:
                cols[2].caption(say.loss_offer(len(sel.ids), unembedding_blocks(sel.config, len(sel.ids)),
                                               sel.config.name))
                return
        loss_b, loss_a = clean_loss(sel, clean), knocked_loss(sel, target, method, knocked)  # [T-1] each
        cols[2].metric("Mean next-token loss", *say.loss_metric(float(loss_a.mean()), float((loss_a - loss_b).mean())),
                       delta_color="inverse")
        plot(plots.position_values(loss_a - loss_b, list(clean.tokens[1:]),
                                   "Change in loss at each position (after − before; up = worse)",
                                   "Δ cross-entropy (nats)", offset=1))


def changed_table(knocked: Knocked) -> None:
    st.caption(say.changed_caption([code_span(n) for n in knocked.intervened], len(knocked.changed)))
    if knocked.changed:
        st.dataframe(say.changed_rows(knocked.changed), hide_index=True, width="stretch")


def sweep_section(sel: Selection, clean: Trace, method: str) -> None:
    cfg = sel.config
    ids = top_tokens(clean)[2]
    shown = [readable(i) for i in ids]
    token = ids[shown.index(st.selectbox("Token to track", shown, key="track", bind="query-params",
                                         disabled=locked("track"),
                                         help="one of the 10 most likely next tokens before any knock-out"))]
    st.caption(say.sweep_caption(repr(readable(token)), METHODS[method]))
    if sweep_refused(len(sel.ids)):
        return
    cols = st.columns(2)
    head_label, mlp_label = say.sweep_buttons(cfg.n_layer, cfg.n_head)
    heads = cols[0].button(head_label, key="sweep_heads")
    mlps = cols[1].button(mlp_label, key="sweep_mlps")
    for part, pressed in (("head", heads), ("mlp", mlps)):
        if requested(("sweep", sel.weights.key, sel.ids, part, method, token), pressed):
            slot = st.empty()  # the map, its rows drawn as their runs finish, then the finished map
            draw = functools.partial(sweep_map, slot, cfg, part, token)
            grid = sweep_grid(sel, part, method, token, clean, draw).values
            draw(grid, done=True)
            if part == "head":
                from .paths_view import head_links  # here: paths_view reads this module's METHODS
                head_links(grid, token, method)


def sweep_map(slot, cfg, part: str, token: int, grid: torch.Tensor, done: bool = False) -> None:
    """The sweep's map in `slot`: Δ log p for each knock-out [n_layer, nh or 1]; until `done`, a draft
    of the blocks whose every knock-out has run (rows fill in block order; NaN: still to run), its
    title saying how many."""
    cols = [f"head {h}" for h in range(cfg.n_head)] if part == "head" else ["MLP"]
    title = f"Δ log p({readable(token)!r}) with each {'head' if part == 'head' else 'MLP'} knocked out"
    if not done:
        rows = int(grid.isnan().any(dim=1).int().argmax()) if grid.isnan().any() else len(grid)  # leading rows run
        if rows == 0:
            return
        grid, title = grid[:rows], title + f": {rows} of {cfg.n_layer} blocks so far"
    with slot.container():
        plot(plots.matrix_heatmap(grid, [f"block {b}" for b in range(len(grid))], cols, title, "Δ log p",
                                  x_title="head" if part == "head" else "", y_title="block", signed=True,
                                  helps_when_negative=True), draft=not done)


def side_by_side(sel: Selection, a: Trace, b: Trace, text_b: str) -> None:
    """The chosen head's pattern and the next-token prediction of A and B, in two columns, each chart
    captioned with its own text."""
    for col, trace, name, text in zip(st.columns(2), (a, b), ("A", "B"), (sel.text, text_b)):
        with col:
            tokens = list(trace.tokens)
            plot(plots.attention_heatmap(trace.get("attn.pattern", sel.block)[0, sel.head], tokens, tokens,
                                         f"{name}: block {sel.block} head {sel.head}", share=0.5), share=0.5,
                 text=text)
            probs, labels, _ = top_tokens(trace)
            plot(plots.topk_tokens(probs, labels, f"{name}: next token after {trace.tokens[-1]!r}"), share=0.5,
                 text=text)


def answer_controls(a: Trace, b: Trace) -> tuple[int, int]:
    """The metric's token pair, URL-bound: one of A's 10 most likely next tokens against one of B's;
    by default A's top token against B's (B's best other one when both have the same top)."""
    default = default_answers(a.at("logits", -1)[0], b.at("logits", -1)[0])
    cols = st.columns(2)
    chosen = []
    for col, trace, token, key, label in zip(cols, (a, b), default, ("answer_a", "answer_b"),
                                             ("Token for A (what A's run should predict)",
                                              "Against a token for B (what B's run predicts instead)")):
        ids = top_tokens(trace)[2]
        shown = [readable(i) for i in ids]
        pick = col.selectbox(label, shown, index=ids.index(token), key=key, bind="query-params", disabled=locked(key),
                             help="one of this text's 10 most likely next tokens")
        chosen.append(ids[shown.index(pick)])
    return chosen[0], chosen[1]


def patching_section(sel: Selection, a: Trace, b: Trace) -> tuple[int, int]:
    """The patching controls and maps; returns the answer pair chosen (for the Code panel)."""
    answers = answer_controls(a, b)
    ta, tb = (code_span(readable(t)) for t in answers)
    st.markdown(f"Metric: the logit difference m = logit({ta}) − logit({tb}) at the last position. Each cell "
                "runs B with one activation taken from A's run and shows the **restored fraction** "
                "(m_patched − m_B) / (m_A − m_B): 0 = the patch changed nothing, 1 = A's margin is back in full.")
    if len(b.token_ids) > MAX_PATCH_TOKENS:
        st.warning(say.patch_too_long(sel.config.n_layer, len(b.token_ids), MAX_PATCH_TOKENS), icon=":material/timer:")
        return answers
    m_a, m_b = (float(logit_diff(t.at("logits", -1)[0], answers)) for t in (a, b))
    if not margins_measurable(m_a, m_b):  # said before any run: every fraction would divide by rounding
        st.caption(say.margins(m_a, m_b))
        st.warning(say.margins_too_close(m_a, m_b), icon=":material/straighten:")
        return answers
    pressed = st.button(say.patch_button(sel.config.n_layer, len(sel.ids), sel.config.n_head), key="run_patch")
    if not requested(("patch", sel.weights.key, sel.ids, b.token_ids, answers), pressed):
        return answers
    p = patching(sel, b.token_ids, answers)
    st.caption(say.margins(p.clean_diff, p.corrupt_diff))
    if not margins_measurable(p.clean_diff, p.corrupt_diff):  # the patch's own margins, as it computed them
        st.warning(say.margins_too_close(p.clean_diff, p.corrupt_diff), icon=":material/straighten:")
        return answers
    blocks = [f"block {i}" for i in range(sel.config.n_layer)]
    positions = [f"{i}·{t}" for i, t in enumerate(b.tokens)]
    plot(plots.matrix_heatmap(p.resid, blocks, positions, "Patching resid_pre at (block, position) from A into B",
                              "restored", x_title="position·token of B", y_title="block", signed=True))
    plot(plots.matrix_heatmap(p.heads, blocks, [f"head {h}" for h in range(sel.config.n_head)],
                              "Patching one head's attn.z (every position) from A into B", "restored",
                              x_title="head", y_title="block", signed=True))
    from .estimate_view import beside  # attribution patching, beside the exact grids
    beside(sel, b.token_ids, b.tokens, answers, p)
    return answers

