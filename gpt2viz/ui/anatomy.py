"""The anatomy every component page shares (DESIGN.md, "Page anatomy"): breadcrumb and children,
title and badge, description, equation, shapes per mode, parameters, explanation, intermediate
states, code, sources. Pages call `component_page` with the sections only they have."""

import inspect
from collections.abc import Callable

import streamlit as st

from .. import model as gpt2_model
from .. import plot_theme
from ..components import Component, ComponentTree, component_tree
from ..schema import Mode, concrete, text_dims
from ..trace import Trace
from .cache import full_trace_bytes, get_trace, records_everything, trace_cache
from .pages import PageRow, home, href
from .state import MODE_LABELS, Selection

# this project's own code that computes each component
OUR_CODE = {"embed": [gpt2_model.GPT2.forward], "embed.tok": [gpt2_model.GPT2.forward],
            "embed.pos": [gpt2_model.GPT2.forward], "block": [gpt2_model.Block.forward],
            "block.ln1": [gpt2_model.LayerNorm.forward], "block.ln2": [gpt2_model.LayerNorm.forward],
            "ln_f": [gpt2_model.LayerNorm.forward], "block.attn": [gpt2_model.Attention.forward],
            "block.attn.qkv": [gpt2_model.Conv1D.forward, gpt2_model.Attention.split_heads],
            "block.attn.heads": [gpt2_model.Attention.forward, gpt2_model.causal_mask],
            "block.attn.merge": [gpt2_model.Attention.forward], "block.mlp": [gpt2_model.MLP.forward],
            "block.mlp.fc": [gpt2_model.Conv1D.forward], "block.mlp.gelu": [gpt2_model.gelu_new],
            "block.mlp.proj": [gpt2_model.Conv1D.forward], "unembed": [gpt2_model.GPT2.forward],
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


def run_values(sel: Selection, mode: Mode) -> dict[str, int]:
    """B, T, P, L (and model symbols) of this text in `mode`."""
    n = max(len(sel.ids), 2 if mode is Mode.TRAINING else 1)
    return text_dims(sel.config, n, mode)


def selection_trace(sel: Selection, needs: list[str] | None = None) -> Trace | None:
    """The cached trace of this view; None, with a clear message, when there is nothing to run.
    `needs`: the names (globs) the page shows, recorded alone when a full trace would not fit."""
    if sel.text_error:
        st.warning(sel.text_error, icon=":material/edit:")
        return None
    if sel.cut:
        st.info(f"The text was cut to the model's context of {sel.config.n_positions:,} tokens: "
                f"{sel.cut:,} tokens at the end are not shown.", icon=":material/content_cut:")
    if needs is not None and not records_everything(sel.weights, len(sel.ids), sel.mode):
        full = full_trace_bytes(sel.weights, len(sel.ids), sel.mode)
        st.caption(f":material/memory: Recording only what this page shows: every tensor of this run would take "
                   f"{full / 2**30:.1f} GiB.")
    seed = sel.weights.seed
    with st.spinner(f"Running {sel.config.name} on {len(sel.ids):,} tokens ({sel.mode.value})…"):
        return get_trace(sel.weights, sel.ids, sel.mode, seed, None if needs is None else tuple(needs))


def random_note(sel: Selection) -> None:
    if sel.weights.random:
        st.caption(":material/casino: Random, untrained weights: shapes and counts are GPT-2's exactly; "
                   "the values only show what the computation does, not what trained GPT-2 would compute.")


# ---------------------------------------------------------------------------- sections
def header(c: Component, cat: ComponentTree) -> None:
    crumbs = cat.ancestors(c.id)
    st.caption(" › ".join(a.title for a in crumbs))
    st.title(c.title)
    st.badge("learned" if c.learned else "parameter-free", color="blue" if c.learned else "gray")
    st.markdown(c.description)
    st.latex(c.equation)
    if c.children:
        st.markdown("**Open inside:** " + " · ".join(f"[{ch.title}]({href(page_of(cat, ch.id).url)})" for ch in c.children))


def shapes(c: Component, sel: Selection) -> None:
    st.subheader("Shapes in each mode")
    labels = [MODE_LABELS[m] for m in Mode]
    tabs = st.tabs(labels, default=MODE_LABELS[sel.mode])
    for tab, mode in zip(tabs, Mode):
        with tab:
            values = run_values(sel, mode)
            rows = [{"": s.role, "tensor": s.name.short, "symbolic": s.symbolic,
                     "this text": str(concrete(s.axes, values)), "dtype": s.dtype}
                    for s in c.shapes.get(mode.value, ())]
            decode_note = " (L = P + 1: the new token reads every cached key and its own)"
            st.caption(f"B = {values['B']}, T = {values['T']}, P = {values['P']}, L = {values['L']}"
                       + (decode_note if mode is Mode.DECODE else ""))
            if rows:
                st.table(rows)
            else:
                st.caption("No tensors of this component are recorded in this mode.")


def parameters(c: Component, sel: Selection) -> None:
    st.subheader("Parameters")
    if not c.per_instance:
        st.markdown(c.weights_note or "This component owns no weights.")
        return
    rows = [{"component": r.name, "formula": r.symbolic, "calculation": r.calculation,
             "parameters": f"{r.parameters:,}", "checkpoint tensors": ", ".join(r.tensors)} for r in c.rows]
    st.table(rows)
    if c.instances > 1:
        st.markdown(f"**{c.per_instance:,}** per block × {c.instances} blocks = **{c.total:,}** parameters")
    else:
        st.markdown(f"**{c.total:,}** parameters")
    if c.weights_note:
        st.caption(c.weights_note)


def code(c: Component) -> None:
    st.subheader("Code")
    for fn in OUR_CODE.get(c.id, []):
        lines, start = inspect.getsourcelines(fn)
        with st.expander(f"gpt2viz/model.py · {fn.__qualname__} (lines {start}–{start + len(lines) - 1})"):
            st.code("".join(lines), language="python", line_numbers=True)
    st.markdown("\n".join(reference_line(r) for r in c.references))


def reference_line(r) -> str:
    """One Markdown bullet: the reference's label, linked to its pinned permalink, and our own description."""
    return f"- {r.label}" if r.absent else f"- [{r.label}]({r.permalink}): {r.what}"


def sources(c: Component) -> None:
    st.subheader("Sources")
    st.markdown("\n".join(f"- {PAPERS[key]}" for key in ["gpt2"] + PAPERS_OF.get(c.id, [])))


def export(sel: Selection, trace: Trace, names: list[str], label: str) -> None:
    """A download of the tensors behind this sel, as safetensors. The file is written only when
    the button is clicked: given bytes, Streamlit would keep them per session and the browser would
    fetch them again on every rerun (48 MB for the logits of 256 tokens). The click fetches the
    trace again from the cache (or records these names anew), so no session pins a trace."""
    present = [n for n in names if n in trace]
    if not present:
        return
    weights, ids, mode, cache = sel.weights, sel.ids, sel.mode, trace_cache()

    def data() -> bytes:
        return get_trace(weights, ids, mode, weights.seed, tuple(present), cache=cache).to_bytes(present)

    st.download_button(f"{label} (.safetensors, {len(present)} tensors)", data, file_name=f"{label}.safetensors",
                       mime="application/octet-stream", key=f"export-{label}", icon=":material/download:",
                       on_click="ignore")


def component_page(cid: str, sel: Selection, states: Callable[[Selection, Trace], None] | None = None,
                   needs: list[str] | None = None, children: bool = False,
                   lead: Callable[[Selection], None] | None = None) -> None:
    """Render the page of component `cid`; `states` draws its intermediate states from the trace,
    which holds at least the names `needs` lists; `lead` draws what the page puts first after the header."""
    cat = cat_of(sel)
    c = cat[cid]
    header(c, cat)
    if lead is not None:
        lead(sel)
    shapes(c, sel)
    parameters(c, sel)
    st.subheader("What it does")
    st.markdown(c.explanation)
    if states is not None:
        st.subheader(f"Intermediate states · {MODE_LABELS[sel.mode]}")
        random_note(sel)
        trace = selection_trace(sel, needs)
        if trace is not None:
            states(sel, trace)
    if children:
        child_summaries(cid, sel)
    code(c)
    sources(c)


# ---------------------------------------------------------------------------- helpers for pages
def selection() -> Selection:
    return st.session_state["selection"]


def axis_tokens(trace: Trace) -> tuple[list[str], list[str], int]:
    """(query tokens, key tokens, offset of the first query) of a trace: in decode the one new
    token queries all P + 1 keys; elsewhere the T tokens query themselves."""
    keys = list(trace.tokens[: trace.L])
    return keys[trace.P: trace.P + trace.T], keys, trace.P


def child_summaries(cid: str, sel: Selection) -> None:
    """The parts inside: equation, parameters and explanation of each child."""
    cat = cat_of(sel)
    st.subheader("Inside")
    for ch in cat[cid].children:
        per = f"{ch.per_instance:,} parameters" + (" per block" if ch.instances > 1 else "")
        with st.expander(f"{ch.title} — {per if ch.per_instance else 'parameter-free'}"):
            st.markdown(ch.description)
            st.latex(ch.equation)
            parameters(ch, sel)
            st.markdown(ch.explanation)


def plot(fig) -> None:
    """A figure in the app's look (light or dark as the browser reports), drawn once per sel."""
    fig = plot_theme.themed(fig, dark=st.context.theme.type == "dark")
    st.plotly_chart(fig, theme=None, width="stretch", config={"displaylogo": False})
