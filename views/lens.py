"""Logit lens and residual decomposition: what the stream predicts at every depth, and what it is made of."""

import streamlit as st

from gpt2viz import plots
from gpt2viz.lens import decompose, logit_lens
from gpt2viz.ui.anatomy import plot, random_note, selection, selection_trace
from gpt2viz.ui.classroom import lens_rows, part_norms
from gpt2viz.ui.layout import wide_table
from gpt2viz.ui.text import code_span

sel = selection()
st.title("Logit lens and residual decomposition")
st.markdown(
    "**Logit lens.** Read the next-token prediction from the residual stream at every depth as if the model "
    "stopped there: apply the final LayerNorm, with its mean and variance **recomputed from the stream at that "
    "depth** (its gain and bias are the final ones), then multiply by the token table. At the last depth this "
    "is exactly the model's output.")
trace = selection_trace(sel, needs=["blocks.*.resid_*", "blocks.*.attn.out", "blocks.*.mlp.out", "logits"])
if trace is None:
    st.stop()
random_note(sel)
st.caption(f"Position: the last one, {code_span(trace.tokens[-1])}.")
rows = trace.memo("logit lens", lambda: lens_rows(logit_lens(sel.weights.model, trace)))
wide_table(rows, height="content")
st.subheader(f"The stream entering block {sel.block}, taken apart")
st.latex(r"x_b = x_0 + \sum_{i<b} \left(\Delta_\text{attn}^{(i)} + \Delta_\text{mlp}^{(i)}\right)")
d = decompose(trace, sel.block)
plot(plots.depth_bars(part_norms(d), d.labels, f"‖part‖ at the last position · block {sel.block} input", "L2 norm"))
st.markdown(f"Sum of the {len(d.labels)} parts minus the recorded stream: largest difference "
            f"**{d.max_abs_error:.2e}** (float32 rounding).")
