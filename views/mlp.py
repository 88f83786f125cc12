"""The MLP: expand to 4d, GELU, project back to d."""

import streamlit as st

from gpt2viz import plots
from gpt2viz.ui.anatomy import axis_tokens, component_page, export, plot, view_state
from gpt2viz.ui.links import draw_diagram


def states(view, trace):
    b = view.block
    q, _, offset = axis_tokens(trace)
    plot(plots.gelu_curve(trace.get("mlp.pre", b), f"GELU with block {b}'s pre-activations on it"))
    cols = st.columns(2)
    with cols[0]:
        plot(plots.top_neurons(trace.get("mlp.post", b)[0], q, k=10, title=f"Most active neurons · block {b}",
                               offset=offset))
    with cols[1]:
        plot(plots.histogram(trace.get("mlp.out", b), f"Values of Δmlp · block {b}", "value"))
    export(view, trace, [f"blocks.{b}.mlp.{s}" for s in ("pre", "post", "out")], f"block{b}-mlp")


view = view_state()
component_page("block.mlp", view, states, needs=[f"blocks.{view.block}.mlp.*"], children=True,
               lead=lambda v: draw_diagram("mlp", v, current="mlp"))
