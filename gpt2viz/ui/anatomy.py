"""The anatomy every component page shares (DESIGN.md, "Page anatomy"). A page reads top to bottom:

    page = anatomy.header("block.attn", SHOWS)   # title, equation, the parts inside; runs the trace
    plot(...)                                     # the page's own charts, from page.trace
    anatomy.footer(page)                          # shapes, parameters, the parts, code, sources, export

`SHOWS` names the recorded tensors the page shows, once ("blocks.{b}.attn.pattern" for the selected
block, globs allowed): the run records them (alone, when a full trace would not fit) and the export
button downloads them."""

import inspect
import re
import weakref
from dataclasses import dataclass, replace
from fnmatch import fnmatch

import plotly.graph_objects as go
import pyarrow as pa
import streamlit as st

from ..anatomy.components import Component, ComponentTree, component_tree
from ..model import gpt2 as gpt2_model
from ..model.tokenizer import ENDOFTEXT, ENDOFTEXT_ID, current
from ..model.trace import Trace
from ..plots import chart_box, theme
from ..plots.axes import MODEBAR_PX, escape, fit_rows
from ..spec import bundle
from ..spec.costs import human_bytes
from ..spec.pages import PageRow, home
from ..spec.schema import Mode, concrete, text_dims
from ..teaching import notices, page_text
from . import chart_element, demo, export, present, words
from .cache import every_block, full_trace_bytes, get_trace, model_cache, recorded_names, trace_cache, weights_again
from .code_panel import opened, snippets
from .layout import NARROWEST_PAGE_PX, PHONE_PAGE_PX, PROJECTOR_PAGE_PX, table_html
from .state import MODE_LABELS, STATIC, Selection, carry_view, link_label, link_params
from .working import progress_in, working

# this project's own code that computes each component
OUR_CODE = {"embed": [gpt2_model.GPT2.forward], "embed.tok": [gpt2_model.GPT2.forward],
            "embed.pos": [gpt2_model.GPT2.forward], "block": [gpt2_model.Block.forward],
            "block.ln1": [gpt2_model.LayerNorm.forward], "block.ln2": [gpt2_model.LayerNorm.forward],
            "ln_f": [gpt2_model.LayerNorm.forward], "block.attn": [gpt2_model.Attention.forward],
            "block.attn.qkv": [gpt2_model.Conv1D.forward, gpt2_model.Attention.split_heads],
            "block.attn.heads": [gpt2_model.Attention.forward, gpt2_model.causal_mask],
            "block.attn.merge": [gpt2_model.Attention.forward], "block.mlp": [gpt2_model.MLP.forward],
            "block.mlp.fc": [gpt2_model.Conv1D.forward], "block.mlp.gelu": [gpt2_model.gelu_new],
            "block.mlp.proj": [gpt2_model.Conv1D.forward],
            "unembed": [gpt2_model.GPT2.resume, gpt2_model.unembed_rows],  # full mode: the second, when read
            "model": [gpt2_model.GPT2.forward]}

PAPERS = {
    "gpt2": "Radford et al. (2019), *Language Models are Unsupervised Multitask Learners* — the GPT-2 paper.",
    "transformer": "Vaswani et al. (2017), *Attention Is All You Need* — scaled dot-product and multi-head attention.",
    "layernorm": "Ba, Kiros and Hinton (2016), *Layer Normalization*.",
    "gelu": "Hendrycks and Gimpel (2016), *Gaussian Error Linear Units (GELUs)* — including the tanh approximation.",
    "dropout": "Srivastava et al. (2014), *Dropout: A Simple Way to Prevent Neural Networks from Overfitting*.",
}
PAPERS_OF = {"block.ln1": ["layernorm"], "block.ln2": ["layernorm"], "ln_f": ["layernorm"],
             "block.attn": ["transformer"], "block.attn.heads": ["transformer"], "block.attn.qkv": ["transformer"],
             "block.attn.merge": ["transformer"], "block.mlp.gelu": ["gelu"], "block.mlp": ["gelu"]}


def cat_of(sel: Selection) -> ComponentTree:
    return component_tree(sel.config)


def page_of(cat: ComponentTree, cid: str) -> PageRow:
    """The page that shows component `cid`."""
    return home(cid, {c.id: c.parent for c in cat})[0]


def heading(cat: ComponentTree, cid: str) -> str:
    """The page's h1: its component's title, or the menu's where that says more of the same (the menu's
    "Tokens and embeddings" for the component "Embeddings"), so a page opens under the name it was chosen by."""
    title, menu = cat[cid].title, page_of(cat, cid).title
    return menu if title.lower() in menu.lower() else title


def run_values(sel: Selection, mode: Mode) -> dict[str, int]:
    """B, T, P, L (and model symbols) of this text in `mode` (a drawn diagram's shapes: training's of 2
    tokens for a 1-token text, which `runs_in` tells the tables apart)."""
    n = max(len(sel.ids), 2 if mode is Mode.TRAINING else 1)
    return text_dims(sel.config, n, mode)


def runs_in(sel: Selection, mode: Mode) -> bool:
    """Whether this text runs in `mode`: training needs 2 tokens (each position predicts the next)."""
    return mode is not Mode.TRAINING or len(sel.ids) >= 2


TRAINING_NEEDS_TWO = "Training needs at least 2 tokens: each position predicts the next one, and this text has 1."


def selection_trace(sel: Selection, needs: list[str] | None = None) -> Trace | None:
    """The cached trace of this view; None, with a clear message, when there is nothing to run.
    `needs`: the names (globs) the page shows, recorded alone when a full trace would not fit."""
    if sel.text_error:
        st.warning(sel.text_error, icon=":material/edit:")
        return None
    text_notes(sel)
    names = None if needs is None else recorded_names(sel.weights, len(sel.ids), sel.mode, tuple(needs),
                                                      trace_cache())
    if names is not None:
        full = full_trace_bytes(sel.weights, len(sel.ids), sel.mode)
        kept = "only" if names == tuple(needs) else "every_block" if names == every_block(tuple(needs)) \
            else "but_gradients"
        st.caption(":material/memory: " + page_text.memory_note(kept, len(sel.ids), sel.mode.value, human_bytes(full)))
    seed = sel.weights.seed
    with working(f"Running {sel.config.name} on {len(sel.ids):,} tokens in {sel.mode.value} mode…") as p:
        return get_trace(sel.weights, sel.ids, sel.mode, seed, None if needs is None else tuple(needs), progress=p)


def text_notes(sel: Selection) -> None:
    """What became of the sidebar's text on its way to tokens, on every page that runs it."""
    token_notes(sel.ids, sel.cut, sel.config.n_positions)


def text_or_stop(sel: Selection) -> None:
    """The page's text notes; or, where the text cannot run, why in one line, and the page ends there."""
    if sel.text_error:
        st.warning(sel.text_error, icon=":material/edit:")
        st.stop()
    text_notes(sel)


def token_notes(ids: tuple[int, ...], cut: int, n_positions: int, which: str = "The text") -> None:
    """What became of a typed text on its way to tokens: the end cut off at the context, and
    `<|endoftext|>` read as the one special token."""
    if cut:
        st.info(page_text.cut_note(which, n_positions, cut), icon=":material/content_cut:")
    if ENDOFTEXT_ID in ids and current().end_of_text == ENDOFTEXT_ID:  # a character model has no such token
        n = ids.count(ENDOFTEXT_ID)
        st.info(page_text.endoftext_note(ENDOFTEXT, which, ENDOFTEXT_ID, n), icon=":material/keyboard_return:")


# one line in the page's body, beside the values it qualifies (a tooltip alone was missed)
RANDOM_NOTE = "Random, untrained weights: these values show what the computation does, not what GPT-2 learned."
RANDOM_DETAIL = ("Shapes and parameter counts are GPT-2's exactly. Probabilities of a few ten-thousandths and "
                 "nearly even attention rows are what random weights compute: no token or position is favoured for a "
                 "reason. Choose a checkpoint under Weights to see what training made of them.")


def random_note(sel: Selection) -> None:
    """What the weights in use are not: random weights compute nothing trained, the demo model is no GPT-2."""
    if sel.weights.demo:
        demo.note(sel)
    elif sel.weights.random:
        st.caption(":material/casino: " + RANDOM_NOTE, help=RANDOM_DETAIL)


# ---------------------------------------------------------------------------- the page
@dataclass(frozen=True)
class ComponentPage:
    """What a component page's header hands the page: the selection, the component and the trace."""
    sel: Selection
    component: Component
    row: PageRow  # this page's registry row
    names: tuple[str, ...]  # the recorded names (globs) the page shows, for the selected block
    export_label: str  # "block1-attention", or the page's url when it shows no one block
    trace: Trace | None  # None: nothing to run (the header said why)
    diagram: st.delta_generator.DeltaGenerator  # the slot at the top for a drawn diagram


def selection() -> Selection:
    """The sidebar's selection of this run (app.py declares the controls)."""
    return st.session_state["selection"]


def question(text: str) -> None:
    """The question a page opens with, under its title: a level-2 heading (app.py sizes it; no heading
    level skipped), keyed: a lesson's note, projected, stands for it (ui/present.py)."""
    st.container(key="page-question").markdown(f"## :material/help: {text}")


def page_question(url: str) -> None:
    """The question of a page without a component of its own (teaching/notices.py PAGE_QUESTIONS)."""
    question(notices.PAGE_QUESTIONS[url])


def header(cid: str, shows: tuple[str, ...] = (), before_run=None) -> ComponentPage:
    """The page's opening: where the part sits, its title and the question it answers; then the
    run (the trace holds at least `shows`, formatted with b = the selected block), so that the page's
    live picture comes next, in the first screen. The explanation, the equation and the exact
    details follow the picture, in `footer`. When there is nothing to run it says why, draws the
    footer and stops the page. `before_run(sel, container)`: what the page draws in the diagram's place
    before the run (the Overview's drawing, which needs no run)."""
    sel = selection()
    cat = cat_of(sel)
    c = cat[cid]
    # what `learned` means: computed with weights (the tied unembedding owns none but uses wte). Not
    # "learned", which reads as "trained" while the weights are random
    badge = ":blue-badge[uses parameters]" if c.learned else ":gray-badge[parameter-free]"
    if not sel.present:  # projected, the title and the question stand right above the chart
        st.caption(" › ".join(a.title for a in cat.ancestors(c.id)) + " " + badge)
    st.title(heading(cat, c.id))
    if cid in notices.QUESTIONS:
        question(notices.QUESTIONS[cid])
    row = page_of(cat, cid)
    names = tuple(n.format(b=sel.block) for n in shows)
    if not sel.present:
        # the note right under its heading (app.py trims the heading's padding): the first chart stays in
        # the first screen at 1280x720
        with st.container(gap=None, key="values-heading"):
            st.subheader(f"Intermediate states · {MODE_LABELS[sel.mode]}")
            random_note(sel)
    progress = st.container()  # the run's progress above what is drawn before it (the Overview's drawing
    diagram = st.container()  # fills the first screen at 1280x720)
    if before_run is not None:
        before_run(sel, diagram)
    label = f"block{sel.block}-{row.url}" if any("{b}" in n for n in shows) else row.url
    with progress_in(progress):
        trace = selection_trace(sel, list(names)) if names else None
    page = ComponentPage(sel, c, row, names, label, trace, diagram)
    if names and page.trace is None:
        footer(page)
        st.stop()
    return page


def notice(lines: list[str]) -> None:
    """What to notice in the chart just drawn: one or two lines, worked out from this run."""
    export.notes(lines)
    if lines:
        st.info("\n".join(f"- {line}" for line in lines), icon=":material/visibility:")


def worked(text: str) -> None:
    """A worked example: one vector through the page's computation with this run's numbers. Its
    numbers are the page's too, so the handout keeps it."""
    export.notes([text])
    st.markdown(text)


def footer(page: ComponentPage) -> None:
    """After the picture and what to notice: what the part does in plain words, then how it is
    computed (the equation, the parts inside), then the exact details: shapes in each mode (the
    selected mode first), parameters, code, sources and the export of what the page shows."""
    c, sel = page.component, page.sel
    cat = cat_of(sel)
    st.subheader("What it does")
    st.markdown(carry_view(c.description))  # its glossary links keep the view
    st.markdown(carry_view(c.explanation))
    st.subheader("How it is computed")
    st.latex(r"\small " + c.equation)  # fits an 800 px window
    _open_inside(c, cat, page.row)
    for ch in c.children:
        if page_of(cat, ch.id) == page.row:
            child_section(ch, sel)
    shapes(c, sel)
    parameters(c, sel)
    code(c, page)
    sources(c)
    if page.trace is not None:
        tensors_download(page)


def anchor(c: Component) -> str:
    """The id of a component's section on its page ("block.attn.qkv" -> "block-attn-qkv")."""
    return re.sub(r"[^a-z0-9]+", "-", c.id.lower())


def _open_inside(c: Component, cat: ComponentTree, row: PageRow) -> None:
    """One link per child: to its section when this page shows it, else to its page, in the same
    tab with the same selection (text, weights, mode, block, head)."""
    if not c.children:
        return
    with st.container(horizontal=True, gap="small"):
        st.markdown("**Open inside:**", width="content")
        for ch in c.children:
            if page_of(cat, ch.id) == row:
                st.markdown(f"[{ch.title}](#{anchor(ch)})", width="content")
            else:
                component_link(cat, ch.id)


def component_link(cat: ComponentTree, cid: str, label: str | None = None, icon: str = ":material/arrow_forward:",
                   container=st) -> None:
    """A link to the page of component `cid` that keeps the selection (same tab)."""
    target, params = home(cid, {x.id: x.parent for x in cat})
    container.page_link(target.file, label=link_label(label or cat[cid].title), icon=icon,
                        query_params=link_params() | params)


def child_section(ch: Component, sel: Selection) -> None:
    """A part shown on its parent's page: a section of its own (the "Open inside" links scroll here)."""
    st.subheader(ch.title, anchor=anchor(ch))
    st.markdown(carry_view(ch.description))
    st.latex(ch.equation)
    st.markdown(carry_view(ch.explanation))
    parameters(ch, sel, heading=False)


def shapes(c: Component, sel: Selection) -> None:
    """The component's tensors in each mode; the selected mode's tab first (and open). Only the tab
    on screen is drawn (another, when clicked, in the run its click starts): the three hidden tables
    were 1-4 % of a new tab's view. A click on another tab reruns the page, which finds its run in the
    trace cache (or runs it again if it was evicted). The lesson export reads every tab, so draws them all."""
    st.subheader("Shapes in each mode")
    modes = [sel.mode] + [m for m in Mode if m is not sel.mode]
    labels = [MODE_LABELS[m] for m in modes]
    key = f"shapes-{anchor(c)}-{sel.mode.value}"  # a new mode opens on its own tab, as the sidebar says
    tabs = st.tabs(labels, key=key, on_change="rerun", default=labels[0])
    shown = st.session_state.get(key) or labels[0]
    every = bool(st.session_state.get(STATIC))
    for tab, mode, label in zip(tabs, modes, labels):
        if not every and label != shown:
            continue
        with tab:
            if not runs_in(sel, mode):
                st.caption(TRAINING_NEEDS_TWO)
                continue
            values = run_values(sel, mode)
            rows = [{"role": s.role, "tensor": s.name.short, "symbolic": s.symbolic,
                     "this text": str(concrete(s.axes, values)), "dtype": s.dtype}
                    for s in c.shapes.get(mode.value, ())]
            decode_note = " (L = P + 1: the new token reads every cached key and its own)"
            st.caption(f"B = {values['B']}, T = {values['T']}, P = {values['P']}, L = {values['L']}"
                       + (decode_note if mode is Mode.DECODE else ""))
            if rows:
                text_table(rows)
            else:
                st.caption("This part computes nothing in this mode.")


def text_table(rows: list[dict[str, str]]) -> None:
    """A small table of text, drawn as an HTML table: st.table decodes Arrow in the browser, and a
    component page's two took about 0.09 s of a new tab's view (benchmarks/README.md). The lesson
    export reads the tables back as tables (lesson_site.py), so for it they stay st.table, handed
    Arrow columns (from a list of dicts Streamlit builds a pandas frame, then Arrow: 1.6 ms a table)."""
    if st.session_state.get(STATIC):
        st.table(pa.table({k: [str(r[k]) for r in rows] for k in rows[0]}), hide_index=True)
    else:
        st.markdown(table_html(rows), unsafe_allow_html=True)


def parameters(c: Component, sel: Selection, heading: bool = True) -> None:
    if heading:
        st.subheader("Parameters")
    if not c.per_instance:
        st.markdown(c.weights_note or "This component owns no weights.")
        return
    rows = [{"component": r.name, "formula": r.symbolic, "calculation": r.calculation,
             "parameters": f"{r.parameters:,}", "checkpoint tensors": ", ".join(r.tensors)} for r in c.rows]
    text_table(rows)
    st.markdown(page_text.per_block_total(c.per_instance, c.instances, c.total))
    if c.weights_note:
        st.caption(c.weights_note)


def code(c: Component, page: ComponentPage | None = None) -> None:
    st.subheader("Code")
    if page is not None:
        snippets(page.row.url, page.sel)
    for fn in OUR_CODE.get(c.id, []):
        if fn is gpt2_model.gelu_new and page is not None:  # the function this model's MLP calls
            fn = gpt2_model.activation(page.sel.config)
        lines, start = inspect.getsourcelines(fn)
        box, show = opened(f"gpt2viz/model/gpt2.py · {fn.__qualname__} (lines {start}–{start + len(lines) - 1})",
                           key=f"code-{c.id}-{fn.__qualname__}")
        if show:
            box.code("".join(lines), language="python", line_numbers=True)
    st.markdown("\n".join(reference_line(r) for r in c.references))


def reference_line(r) -> str:
    """One Markdown bullet: the reference's label, linked to its pinned permalink, and our own description."""
    return f"- {r.label}" if r.absent else f"- [{r.label}]({r.permalink}): {r.what}"


def sources(c: Component) -> None:
    st.subheader("Sources")
    st.markdown("\n".join(f"- {PAPERS[key]}" for key in ["gpt2"] + PAPERS_OF.get(c.id, [])))


def tensors_download(page: ComponentPage) -> None:
    """A download of the tensors the page shows, as safetensors. The file is written only when the
    button is clicked: given bytes, Streamlit would keep them per session and the browser would
    fetch them again on every rerun (48 MB for the logits of 256 tokens). The click fetches the
    trace again from the cache (or records these names anew), so no session pins a trace."""
    present = [n for n in page.trace.names if any(fnmatch(n, glob) for glob in page.names)]
    if not present:
        return
    sel, cache, models = page.sel, trace_cache(), model_cache()
    # the weights held weakly: Streamlit keeps this callable while the session lives (disconnected, a
    # while longer), and it must not keep a model the model cache evicted
    held, key, ids, mode, needs = weakref.ref(sel.weights), sel.weights.key, sel.ids, sel.mode, tuple(page.names)
    seed, said = sel.weights.seed, sel.weights.label
    label = page.export_label

    def data() -> bytes:  # asked as the page asked: the page's own trace, while it is cached
        weights = held() or weights_again(key, models)
        return get_trace(weights, ids, mode, seed, needs, cache=cache).to_bytes(present, weights=said)

    st.download_button(f"{label} (.safetensors, {len(present)} tensors)", data, file_name=f"{label}.safetensors",
                       mime="application/octet-stream", key=f"export-{label}", icon=":material/download:",
                       on_click="ignore")


# ---------------------------------------------------------------------------- helpers for pages
def axis_tokens(trace: Trace) -> tuple[list[str], list[str], int]:
    """(query tokens, key tokens, offset of the first query) of a trace: in decode the one new
    token queries all P + 1 keys; elsewhere the T tokens query themselves."""
    keys = list(trace.tokens[: trace.L])
    return keys[trace.P: trace.P + trace.T], keys, trace.P


def side_by_side(*figs, columns=None) -> None:
    """Figures in columns of equal width (`columns`, or new ones), left to right, their plots level: as many title
    lines each (`row_lines`), and none filling the projector's screen, which only the first of a row did (presented,
    What if's "After" bars ended 35 px above the "Before" bars beside them)."""
    lines = row_lines(figs, 1 / len(figs))
    for col, fig in zip(columns or st.columns(len(figs)), figs):
        with col:
            plot(fig, share=1 / len(figs), lines=lines, fill=False)


def source(sel: Selection, where: str = "") -> str:
    """Where a chart's numbers come from, short enough for a figure's corner: the weights, the text,
    the mode, and `where` in the model ("block 5 head 3"); kept in screenshots and exported pictures."""
    w = sel.weights
    weights = (f"random {w.model_name}, seed {w.seed}" if w.random else "demo model trained here" if w.demo
               else sel.config.name)
    text = sel.text.strip().replace("\n", " ")
    text = text if len(text) <= 24 else text[:23] + "…"
    return " · ".join(x for x in (weights, f"“{text}”", sel.mode.value, where) if x)


CAPTION_CHAR_PX = 6.6  # an 11 px caption's character, generously
CAPTION_LINE_PX = 14.3  # and its line (plotly's 1.3 font sizes): the strip above the title (MODEBAR_PX) holds two
CAPTION_LINES = 3  # at most: a third one makes the strip taller


def _caption_lines(caption: str, width_px: float | None, scale: float = 1.0) -> list[str]:
    """At most CAPTION_LINES lines, left of the toolbar's place (theme.MODEBAR_WIDTH_PX) in a chart
    width_px wide: where they do not fit, the text's quote goes first, then what does not fit."""
    if not width_px:
        return [caption]
    chars = max(20, int((width_px - theme.MODEBAR_WIDTH_PX - 12) / (CAPTION_CHAR_PX * scale)))
    lines = theme.title_lines(caption, chars)
    if len(lines) > CAPTION_LINES:
        lines = theme.title_lines(re.sub(r" · “[^”]*”", "", caption), chars)
    if len(lines) > CAPTION_LINES:
        lines = lines[:CAPTION_LINES - 1] + [lines[CAPTION_LINES - 1][: chars - 1] + "…"]
    return lines


def framed(fig, caption: str, dark: bool = False, font_scale: float = 1.0, width_px: float | None = None):
    """A copy of `fig` as `framed_spec` leaves its dict (the page's handout frames its charts so)."""
    return go.Figure(framed_spec(fig.to_dict(), caption, dark, font_scale, width_px), _validate=False)


def framed_spec(spec: dict, caption: str, dark: bool = False, font_scale: float = 1.0,
                width_px: float | None = None, lines: int = 0) -> dict:
    """`spec` (a figure's plotly JSON dict, changed in place and returned) in the app's look (light or dark),
    with `caption`, where its numbers come from, written in its top-left corner, beside the toolbar's place;
    `font_scale`: its type that much larger (presentation mode); `width_px`: the narrowest width it is drawn
    at, which its title is wrapped to; `lines`: the title lines beyond one each it makes room for at least (a
    row's charts: `row_lines`)."""
    # its title's type is font_scale times larger: as many characters on a line as in a chart that much narrower
    theme.themed_spec(spec, dark=dark, width_px=width_px / font_scale if width_px else None, lines=lines)
    if font_scale != 1:
        present.scaled_spec(spec, font_scale)
    layout = spec["layout"]
    margin = layout.setdefault("margin", {})
    # in the strip above the title that the toolbar shows in on hover only (plots.axes.MODEBAR_PX), at its
    # left, so that the toolbar (at its right) never covers it; a third line makes the strip taller
    caption_scale = present.caption_scale(font_scale)  # presented, no smaller than the page's body text
    lines = _caption_lines(caption, width_px, caption_scale)
    # the strip grown for a third line, or for two presented (larger); 8 px: the title's glyphs rise above its anchor
    extra = max(0, round(CAPTION_LINE_PX * caption_scale * len(lines)) + 8 - MODEBAR_PX)
    top = margin.get("t", 100) + extra  # px; 100 is plotly's default
    left = margin.get("l", 80)
    if extra:
        margin["t"] = top
        if "t" in ((layout.get("title") or {}).get("pad") or {}):
            layout["title"]["pad"]["t"] += extra
        if layout.get("height"):
            layout["height"] += extra
    layout.setdefault("annotations", []).append(dict(
        text=" <br>".join(escape(line) for line in lines), xref="paper", x=0, xanchor="left", xshift=4 - left,
        align="left", yref="paper", y=1, yanchor="top", yshift=top, showarrow=False,
        font=dict(size=round(11 * caption_scale), color="#808495")))
    return spec


class DrawnFigure(go.Figure):
    """A figure's finished JSON dict, handed to st.plotly_chart as it is. Given a dict, st.plotly_chart
    validates it whole into a new go.Figure; given a go.Figure, it copies it whole (`to_dict`). This one
    is neither built nor copied: its dict came from figures validated when they were built, and each
    chart was validated, copied and rebuilt twice more on its way (a fifth of the attention page's
    script time)."""

    def __init__(self, spec: dict):  # no go.Figure.__init__: nothing to validate again
        self._spec = spec

    def to_dict(self) -> dict:
        return self._spec


def wrap_width(sel: Selection, share: float) -> float:
    """The width (px) a chart's title is wrapped to, in `share` of the page: projected, the narrowest window is a
    projector's (its type FONT_SCALE larger); else a phone's, where columns stack."""
    return share * PROJECTOR_PAGE_PX if sel.present else min(share * NARROWEST_PAGE_PX, PHONE_PAGE_PX)


def row_lines(figs, share: float) -> int:
    """The title lines beyond one each that the most wrapped of `figs`, side by side in `share` of the page each,
    takes: each of them is drawn with room for that many (`plot`'s `lines`), so that their plots start level. Before,
    What if's "After knocking out …" took a second line that "Before: …" did not, and their bars sat a line apart."""
    sel = selection()
    width = wrap_width(sel, share) / (present.FONT_SCALE if sel.present else 1.0)
    return max((theme.added_lines(fig.layout.title.text or "", fig.layout.title.subtitle.text or "", width)
                for fig in figs), default=0)


def plot(fig, where: str = "", run: bool = True, share: float = 1.0, sizes_of: str | None = None,
         on_click=None, key: str | None = None, draft: bool = False, text: str | None = None, lines: int = 0,
         fill: bool | None = None):
    """A figure in the app's look (light or dark as the browser reports), drawn once per view, with
    where its numbers come from written in its top-right corner (`where`: the block, head…;
    `run=False`: a figure of the model alone names only it; `sizes_of`: a figure of a configuration's sizes
    alone, such as another size's parameter accounting, names that configuration and nothing of the run).
    `share`: the part of the page's width the chart gets (0.5 in one of two columns): its title is
    wrapped to fit that part of the narrowest page (NARROWEST_PAGE_PX), and a phone's (PHONE_PAGE_PX).
    The page's handout keeps it (ui/export.py); its camera button saves an SVG. It is the app's own box
    (plots/chart_box.py, ui/chart_element.py: Plotly's smaller bundle) unless Streamlit's element is
    needed. `on_click` (with a `key`):
    called when a click selects a point of the chart, before the next run; the chart's selection is then
    st.session_state[key].selection. `draft`: a chart shown while its values come in, which the finished
    one replaces: neither in the handout nor put in words. `text`: the text the chart's run read, where it is
    not the sidebar's (Compare and patch's text B). `lines`: room for that many title lines beyond one each at
    least (charts side by side: `row_lines`). `fill`: presented, whether it fills the first screen (None: where it
    is the page's first chart)."""
    sel = selection()
    caption = (f"{sizes_of}: from its sizes alone" if sizes_of
               else source(sel if text is None else replace(sel, text=text), where) if run else sel.weights.label)
    # projected, the first chart fills the first screen
    fill = sel.present and (export.charts_recorded() == 0 if fill is None else fill)
    if not draft:
        export.record(fig, caption)
    spec = fig.to_dict()  # what the chart draws: its words and numbers are read from it before it is framed
    ident = f"gpt2viz-chart-{export.charts_recorded() or export.slug(fig.layout.title.text or 'chart')}"
    said = None if draft else words.figure_html(spec, ident, folded=sel.present)
    if fill:  # drawn as tall as the screen leaves it: its rows' labels as many as that height has room for
        spec = fit_rows(go.Figure(spec, _validate=False)).to_dict()
    spec = framed_spec(spec, caption, dark=st.context.theme.type == "dark",
                       font_scale=present.FONT_SCALE if sel.present else 1.0, width_px=wrap_width(sel, share),
                       lines=lines)
    margin = spec["layout"].get("margin") or {}
    if fill:
        spec["layout"].pop("height", None)
    config = {**theme.CONFIG, "toImageButtonOptions": export.image_options(spec["layout"])}
    # the app's box, unless Streamlit's element is needed: a tab that loads Streamlit's Plotly (a chart that
    # answers clicks, the projector's full-screen one) draws the page's other charts with it too
    if (not fill and on_click is None and not export.streamlit_charts() and chart_element.available()
            and bundle.draws(spec)):
        st.html(chart_box.element_html(spec, config, labelled_by=None if said is None else ident))
    else:
        export.streamlit_charts(drawn=True)
        select = dict(on_select=on_click, selection_mode="points", key=key) if on_click else {}
        with present.screen(fill, margin.get("t", 100) + margin.get("b", 80)):
            st.plotly_chart(DrawnFigure(spec), theme=None, width="stretch",
                            height="stretch" if fill else "content", config=config, **select)
    if said is not None:
        st.html(said)

