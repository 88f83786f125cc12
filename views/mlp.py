"""The MLP: expand to 4d, GELU, project back to d."""

import streamlit as st

from gpt2viz import plots
from gpt2viz.teaching import notices
from gpt2viz.ui import anatomy
from gpt2viz.ui.anatomy import axis_tokens, plot
from gpt2viz.ui.links import demo_beside, draw_diagram

SHOWS = ("blocks.{b}.mlp.pre", "blocks.{b}.mlp.post", "blocks.{b}.mlp.out")

page = anatomy.header("block.mlp", SHOWS)
sel, trace, b = page.sel, page.trace, page.sel.block
q, _, offset = axis_tokens(trace)
plot(plots.gelu_curve(trace.get("mlp.pre", b), f"GELU with block {b}'s pre-activations on it",
                      exact=sel.config.exact_gelu), f"block {b}")
pre, post = trace.get("mlp.pre", b)[0], trace.get("mlp.post", b)[0]  # [T, 4d] each
anatomy.notice(notices.mlp_notice(pre, post, notices.weights_kind(sel.weights)))
demo_beside("mlp", sel)
w_proj = sel.weights.model.h[b].mlp.c_proj.weight.detach()  # [4d, d]
anatomy.worked(notices.mlp_worked(pre, post, w_proj, notices.top_neuron(post)))
st.markdown(notices.mlp_intuition(sel.config.n_embd, sel.config.d_mlp))
draw_diagram("mlp", sel, "mlp")
cols = st.columns(2)
with cols[0]:
    plot(plots.top_neurons(trace.get("mlp.post", b)[0], q, k=10, title=f"Most active neurons · block {b}",
                           offset=offset), f"block {b}", share=0.5)
with cols[1]:
    plot(plots.histogram(trace.get("mlp.out", b), f"Values of Δmlp · block {b}", "value"), f"block {b}", share=0.5)
anatomy.footer(page)
