"""LayerNorm: each position's vector centred by μ, scaled by 1/√(σ²+ε), then gain and bias."""

import streamlit as st

from gpt2viz import plots, vector_plots
from gpt2viz.ui.anatomy import axis_tokens, component_page, export, plot, view_state

INPUT = {"ln1": "resid_pre", "ln2": "resid_mid", "ln_f": "resid_post"}  # the stream each LayerNorm reads


def states(view, trace):
    b = view.block
    q, _, offset = axis_tokens(trace)
    st.caption("LayerNorm 2 and the final LayerNorm compute the same function with their own g and b.")
    which = st.radio("LayerNorm", ["ln1", "ln2", "ln_f"], horizontal=True,
                     format_func={"ln1": f"ln_1 of block {b}", "ln2": f"ln_2 of block {b}", "ln_f": "final ln_f"}.get)
    prefix = "ln_f." if which == "ln_f" else f"blocks.{b}.{which}."
    source = trace.get(INPUT[which], view.config.n_layer - 1 if which == "ln_f" else b)[0]  # [T, d]
    T = source.shape[0]
    i = int(st.slider("Position", 0, T - 1, T - 1, key="ln_pos", bind="query-params")) if T > 1 else 0
    plot(vector_plots.layernorm_stages(source[i], trace[prefix + "normalized"][0, i], trace[prefix + "out"][0, i],
                                       view.config.layer_norm_epsilon,
                                       f"One position through {which}: {q[i]!r} (position {offset + i})"))
    if view.weights.random:
        st.caption("GPT-2 starts every LayerNorm with gain g = 1 and bias b = 0, and these weights are fresh: "
                   "out equals the scaled vector, which is why the last two rows above, and the two histograms "
                   "below, are identical. Training moves g and b.")
    if T > 1:  # one bar per position says nothing when decode computes a single position
        cols = st.columns(2)
        with cols[0]:
            plot(plots.position_values(trace[prefix + "mean"][0, :, 0], q, "μ per position", "mean μ", offset=offset))
        with cols[1]:
            plot(plots.position_values(trace[prefix + "var"][0, :, 0], q, "σ² per position", "variance σ²",
                                       offset=offset))
    cols = st.columns(2)
    with cols[0]:
        plot(plots.histogram(trace[prefix + "normalized"], "normalized (x − μ)/√(σ² + ε)", "value"))
    with cols[1]:
        plot(plots.histogram(trace[prefix + "out"], "out = normalized · g + b", "value"))
    export(view, trace, [prefix + s for s in ("mean", "var", "normalized", "out")],
           prefix.rstrip(".").replace(".", "-"))


view = view_state()
last = view.config.n_layer - 1
component_page("block.ln1", view, states, needs=[f"blocks.{view.block}.ln*", "ln_f.*", f"blocks.{view.block}.resid_*",
                                                 f"blocks.{last}.resid_post"])
