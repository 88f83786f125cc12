"""The MLP: expand to 4d, GELU, project back to d."""

import streamlit as st

from gpt2viz import plots
from gpt2viz.ui import anatomy
from gpt2viz.ui.anatomy import axis_tokens, plot
from gpt2viz.ui.links import draw_diagram

SHOWS = ("blocks.{b}.mlp.pre", "blocks.{b}.mlp.post", "blocks.{b}.mlp.out")

page = anatomy.header("block.mlp", SHOWS)
draw_diagram("mlp", page.sel, "mlp", page.diagram)
trace, b = page.trace, page.sel.block
q, _, offset = axis_tokens(trace)
plot(plots.gelu_curve(trace.get("mlp.pre", b), f"GELU with block {b}'s pre-activations on it"))
cols = st.columns(2)
with cols[0]:
    plot(plots.top_neurons(trace.get("mlp.post", b)[0], q, k=10, title=f"Most active neurons · block {b}",
                           offset=offset), share=0.5)
with cols[1]:
    plot(plots.histogram(trace.get("mlp.out", b), f"Values of Δmlp · block {b}", "value"), share=0.5)
anatomy.footer(page)
