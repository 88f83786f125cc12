"""LayerNorm: each position's vector centred by μ, scaled by 1/√(σ²+ε), then gain and bias."""

import streamlit as st

from gpt2viz import plots
from gpt2viz.ui.anatomy import axis_tokens, component_page, export, plot, selection


def states(sel, trace):
    b = sel.block
    q, _, offset = axis_tokens(trace)
    st.caption("LayerNorm 2 and the final LayerNorm compute the same function with their own g and b.")
    which = st.radio("LayerNorm", ["ln1", "ln2", "ln_f"], horizontal=True,
                     format_func={"ln1": f"ln_1 of block {b}", "ln2": f"ln_2 of block {b}", "ln_f": "final ln_f"}.get)
    prefix = "ln_f." if which == "ln_f" else f"blocks.{b}.{which}."
    cols = st.columns(2)
    with cols[0]:
        plot(plots.position_values(trace[prefix + "mean"][0, :, 0], q, "μ per position", "mean μ", offset=offset))
    with cols[1]:
        plot(plots.position_values(trace[prefix + "var"][0, :, 0], q, "σ² per position", "variance σ²", offset=offset))
    cols = st.columns(2)
    with cols[0]:
        plot(plots.histogram(trace[prefix + "normalized"], "normalized (x − μ)/√(σ² + ε)", "value"))
    with cols[1]:
        plot(plots.histogram(trace[prefix + "out"], "out = normalized · g + b", "value"))
    export(sel, trace, [prefix + s for s in ("mean", "var", "normalized", "out")], prefix.rstrip(".").replace(".", "-"))


sel = selection()
component_page("block.ln1", sel, states, needs=[f"blocks.{sel.block}.ln*", "ln_f.*"])
