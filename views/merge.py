"""Merge and project: heads side by side, then W_O back into the residual stream."""

import streamlit as st

from gpt2viz import plots, vector_plots
from gpt2viz.ui.anatomy import axis_tokens, component_page, export, plot, view_state


def states(view, trace):
    b = view.block
    q, _, offset = axis_tokens(trace)
    if trace.T == 1:  # decode: the new token's heads becoming one vector, then Δattn
        z = trace.get("attn.z", b)[0, :, 0]  # [nh, dh]
        plot(vector_plots.heads_merged(z, trace.get("attn.merged", b)[0, 0],
                                       f"Block {b}, the new token {q[0]!r}: z (H) of every head → merge(H)"))
        plot(vector_plots.stacked_vectors([("merge(H)", trace.get("attn.merged", b)[0, 0]),
                                           ("Δattn = merge(H) W_O + b_O", trace.get("attn.out", b)[0, 0])],
                                          f"Block {b}: the projection W_O"))
    else:
        cols = st.columns(2)
        with cols[0]:
            plot(plots.position_norms(trace.get("attn.merged", b)[0], q, f"‖merged heads‖ · block {b}",
                                      offset=offset))
        with cols[1]:
            plot(plots.position_norms(trace.get("attn.out", b)[0], q, f"‖Δattn‖ · block {b}", offset=offset))
    plot(plots.histogram(trace.get("attn.out", b), f"Values of Δattn · block {b}", "value"))
    export(view, trace, [f"blocks.{b}.attn.{s}" for s in ("z", "merged", "out")], f"block{b}-merge")


view = view_state()
component_page("block.attn.merge", view, states, needs=[f"blocks.{view.block}.attn.*"])
