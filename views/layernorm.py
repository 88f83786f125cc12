"""LayerNorm: each position's vector centred by μ, scaled by 1/√(σ²+ε), then gain and bias. One
page for the three kinds: ln_1 and ln_2 of the selected block, and the final ln_f."""

import streamlit as st

from gpt2viz import plots
from gpt2viz.teaching import notices
from gpt2viz.ui import anatomy
from gpt2viz.ui.anatomy import axis_tokens, plot, selection
from gpt2viz.ui.links import demo_beside
from gpt2viz.ui.state import locked

# the checkpoint's names (shown as they go into the URL): component, recorded prefix, the stream it reads
LAYERNORMS = {"ln_1": ("block.ln1", "blocks.{b}.ln1.", "blocks.{b}.resid_pre"),
              "ln_2": ("block.ln2", "blocks.{b}.ln2.", "blocks.{b}.resid_mid"),
              "ln_f": ("ln_f", "ln_f.", "blocks.{last}.resid_post")}

which = st.segmented_control("Which LayerNorm", list(LAYERNORMS), default="ln_1", key="ln", bind="query-params",
                             disabled=locked("ln"),
                             help="ln_1 before attention and ln_2 before the MLP, in the selected block; "
                                  "ln_f after the last block") or "ln_1"
cid, prefix, source = LAYERNORMS[which]
source = source.replace("{last}", str(selection().config.n_layer - 1))
last_block = selection().config.n_layer - 1
ends = ("blocks.0.resid_pre", f"blocks.{last_block}.resid_post")  # the stream's size into and out of the blocks
page = anatomy.header(cid, (source, *(prefix + s for s in ("mean", "var", "normalized", "out")), *ends))
sel, trace = page.sel, page.trace
prefix, source = prefix.format(b=sel.block), source.format(b=sel.block)
q, _, offset = axis_tokens(trace)
x = trace[source][0]  # [T, d]: the stream this LayerNorm reads
# the page's answer to its question, with this run's stream, then the picture (its position slider under it)
norms = [trace[name][0].norm(dim=-1) for name in ends]  # [T] each: the positions this run computed (decode: 1)
st.markdown(notices.layernorm_why(*(float(n.mean()) for n in norms), sel.config.n_embd, len(norms[0])))
chart = st.container()
i = int(st.slider("Position", 0, trace.T - 1, trace.T - 1, key="ln_pos", bind="query-params",
                  disabled=locked("ln_pos"))) if trace.T > 1 else 0
with chart:
    plot(plots.layernorm_stages(x[i], trace[prefix + "normalized"][0, i], trace[prefix + "out"][0, i],
                                sel.config.layer_norm_epsilon,
                                f"One position through {which}: {q[i]!r} (position {offset + i})"),
         f"{which} · position {offset + i}")
anatomy.notice(notices.layernorm_notice(x[i], trace[prefix + "normalized"][0, i], trace[prefix + "out"][0, i],
                                        sel.config.layer_norm_epsilon))
demo_beside("layernorm", sel)
if sel.weights.random:
    st.caption("GPT-2 starts every LayerNorm with gain g = 1 and bias b = 0, and these weights are fresh: out "
               "equals the scaled vector, which is why the last two rows above, and the two histograms below, "
               "are identical. Training moves g and b.")
module = sel.weights.model.ln_f if which == "ln_f" else getattr(sel.weights.model.h[sel.block], which)
anatomy.worked(notices.layernorm_worked(x[i], trace[prefix + "normalized"][0, i], trace[prefix + "out"][0, i],
                                     module.weight.detach(), None if module.bias is None else module.bias.detach(),
                                     sel.config.layer_norm_epsilon, offset + i))
if trace.T > 1:  # one bar per position says nothing when decode computes a single position
    cols = st.columns(2)
    with cols[0]:
        plot(plots.position_values(trace[prefix + "mean"][0, :, 0], q, "μ per position", "mean μ", offset=offset),
             share=0.5)
    with cols[1]:
        plot(plots.position_values(trace[prefix + "var"][0, :, 0], q, "σ² per position", "variance σ²",
                                   offset=offset), share=0.5)
cols = st.columns(2)
with cols[0]:
    plot(plots.histogram(trace[prefix + "normalized"], "normalized (x − μ)/√(σ² + ε)", "value"), share=0.5)
with cols[1]:
    plot(plots.histogram(trace[prefix + "out"], "out = normalized · g + b", "value"), share=0.5)
anatomy.footer(page)
