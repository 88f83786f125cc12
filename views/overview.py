"""Overview: the model as a clickable diagram with shapes and counts; the prediction at the end."""

import streamlit as st

from gpt2viz import plots
from gpt2viz.ui.anatomy import axis_tokens, cat_of, component_page, page_of, plot, run_values, selection
from gpt2viz.ui.overview import diagram_rows, residual_norm_series, top_next_tokens

sel = selection()


def states(sel, trace):
    labels, norms = residual_norm_series(trace)
    q, _, offset = axis_tokens(trace)
    plot(plots.residual_norms(norms, labels, q, "Residual stream norm through the blocks", offset=offset))
    probs, tokens = top_next_tokens(trace, k=10)
    plot(plots.topk_tokens(probs, tokens, f"Next token after {trace.tokens[-1]!r}"))


def diagram(sel):
    st.markdown("Type a text in the sidebar; every page shows what GPT-2 computes on it. "
                "Click a part of the model to open it; the shapes are this text's, in this mode.")
    cat = cat_of(sel)
    for row in diagram_rows(cat, run_values(sel, sel.mode), sel.mode.value):
        cols = st.columns([3, 3, 2])
        cols[0].page_link(page_of(cat, row["id"]).file, label=row["title"], icon=":material/arrow_right:")
        cols[1].markdown(f"`{row['shape']}`")
        cols[2].markdown(row["params"])


component_page("model", sel, states, needs=["blocks.*.resid_pre", "blocks.*.resid_mid", "blocks.*.resid_post", "logits"],
               lead=diagram)
