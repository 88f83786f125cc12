"""Overview: the model as a clickable diagram with shapes and counts; the prediction at the end."""

import streamlit as st

from gpt2viz import plots
from gpt2viz.ui.anatomy import axis_tokens, component_page, plot, view_state
from gpt2viz.ui.links import draw_diagram
from gpt2viz.ui.overview import residual_norm_series, top_next_tokens

view = view_state()


def states(view, trace):
    labels, norms = residual_norm_series(trace)
    q, _, offset = axis_tokens(trace)
    plot(plots.residual_norms(norms, labels, q, "Residual stream norm through the blocks", offset=offset))
    probs, tokens = top_next_tokens(trace, k=10)
    plot(plots.topk_tokens(probs, tokens, f"Next token after {trace.tokens[-1]!r}"))


def diagram(view):
    st.markdown("Type a text in the sidebar; every page shows what GPT-2 computes on it. "
                "Click a part of the model to open it; the shapes are this text's, in this mode.")
    draw_diagram("overview", view, current="overview")


component_page("model", view, states, needs=["blocks.*.resid_pre", "blocks.*.resid_mid", "blocks.*.resid_post", "logits"],
               lead=diagram)
