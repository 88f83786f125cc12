"""LayerNorm: each position's vector centred by μ, scaled by 1/√(σ²+ε), then gain and bias. One
page for the three kinds: ln_1 and ln_2 of the selected block, and the final ln_f."""

import streamlit as st

from gpt2viz import plots
from gpt2viz.ui import anatomy
from gpt2viz.ui.anatomy import axis_tokens, plot

# the checkpoint's names (shown as they go into the URL): component, recorded prefix
LAYERNORMS = {"ln_1": ("block.ln1", "blocks.{b}.ln1."), "ln_2": ("block.ln2", "blocks.{b}.ln2."),
              "ln_f": ("ln_f", "ln_f.")}

which = st.segmented_control("Which LayerNorm", list(LAYERNORMS), default="ln_1", key="ln", bind="query-params",
                             help="ln_1 before attention and ln_2 before the MLP, in the selected block; "
                                  "ln_f after the last block") or "ln_1"
cid, prefix = LAYERNORMS[which]
page = anatomy.header(cid, tuple(prefix + s for s in ("mean", "var", "normalized", "out")))
trace = page.trace
prefix = prefix.format(b=page.sel.block)
q, _, offset = axis_tokens(trace)
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
anatomy.footer(page)
