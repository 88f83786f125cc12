"""The Transformer block: two residual updates, x' = x + attn(LN1(x)), then x' + mlp(LN2(x'))."""

import streamlit as st

from gpt2viz import plots, vector_plots
from gpt2viz.ui.anatomy import axis_tokens, component_page, export, plot, view_state
from gpt2viz.ui.links import draw_diagram
from gpt2viz.ui.overview import residual_norm_series

STREAM = [("xₙ (resid_pre)", "resid_pre"), ("+ Δattn (attn.out)", "attn.out"), ("= x′ₙ (resid_mid)", "resid_mid"),
          ("+ Δmlp (mlp.out)", "mlp.out"), ("= xₙ₊₁ (resid_post)", "resid_post")]


def states(view, trace):
    b = view.block
    q, _, offset = axis_tokens(trace)
    labels, norms = residual_norm_series(trace)
    plot(plots.residual_norms(norms, labels, q, "‖residual stream‖ through the blocks", offset=offset))
    if trace.T == 1:  # decode: the one position's stream and the two updates added to it
        plot(vector_plots.stacked_vectors([(label, trace.get(short, b)[0, 0]) for label, short in STREAM],
                                          f"Block {b} on the new token {q[0]!r}: the stream and its two updates"))
    else:
        cols = st.columns(2)
        with cols[0]:
            plot(plots.position_norms(trace.get("attn.out", b)[0], q, f"‖Δattn‖ added by block {b}", offset=offset))
        with cols[1]:
            plot(plots.position_norms(trace.get("mlp.out", b)[0], q, f"‖Δmlp‖ added by block {b}", offset=offset))
    names = [f"blocks.{b}.{s}" for s in ("resid_pre", "attn.out", "resid_mid", "mlp.out", "resid_post")]
    export(view, trace, names, f"block{b}-residual")


view = view_state()
b = view.block
component_page("block", view, states, lead=lambda v: draw_diagram("block", v, current="block"),
               needs=["blocks.*.resid_pre", "blocks.*.resid_mid", "blocks.*.resid_post", f"blocks.{b}.attn.out",
                      f"blocks.{b}.mlp.out"])
