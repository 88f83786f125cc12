"""The Transformer block: two residual updates, x' = x + attn(LN1(x)), then x' + mlp(LN2(x'))."""

import streamlit as st

from gpt2viz import plots
from gpt2viz.ui import anatomy
from gpt2viz.ui.anatomy import axis_tokens, plot
from gpt2viz.ui.overview import residual_norm_series

SHOWS = ("blocks.*.resid_pre", "blocks.*.resid_mid", "blocks.*.resid_post", "blocks.{b}.attn.out",
         "blocks.{b}.mlp.out")

page = anatomy.header("block", SHOWS)
trace, b = page.trace, page.sel.block
q, _, offset = axis_tokens(trace)
labels, norms = residual_norm_series(trace)
cols = st.columns(2)
with cols[0]:
    plot(plots.position_norms(trace.get("attn.out", b)[0], q, f"‖Δattn‖ added by block {b}", offset=offset))
with cols[1]:
    plot(plots.position_norms(trace.get("mlp.out", b)[0], q, f"‖Δmlp‖ added by block {b}", offset=offset))
plot(plots.residual_norms(norms, labels, q, "‖residual stream‖ through the blocks", offset=offset))
anatomy.footer(page)
