"""The Transformer block: two residual updates, x' = x + attn(LN1(x)), then x' + mlp(LN2(x'))."""

import streamlit as st

from gpt2viz import plots
from gpt2viz.ui.anatomy import axis_tokens, component_page, export, plot, selection
from gpt2viz.ui.overview import residual_norm_series


def states(sel, trace):
    b = sel.block
    q, _, offset = axis_tokens(trace)
    labels, norms = residual_norm_series(trace)
    plot(plots.residual_norms(norms, labels, q, "‖residual stream‖ through the blocks", offset=offset))
    cols = st.columns(2)
    with cols[0]:
        plot(plots.position_norms(trace.get("attn.out", b)[0], q, f"‖Δattn‖ added by block {b}", offset=offset))
    with cols[1]:
        plot(plots.position_norms(trace.get("mlp.out", b)[0], q, f"‖Δmlp‖ added by block {b}", offset=offset))
    names = [f"blocks.{b}.{s}" for s in ("resid_pre", "attn.out", "resid_mid", "mlp.out", "resid_post")]
    export(sel, trace, names, f"block{b}-residual")


sel = selection()
component_page("block", sel, states, needs=["blocks.*.resid_pre", "blocks.*.resid_mid", "blocks.*.resid_post", f"blocks.{sel.block}.attn.out",
                                               f"blocks.{sel.block}.mlp.out"])
