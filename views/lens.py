"""Logit lens and residual decomposition: what the stream predicts at every depth, and what it is made of."""

import streamlit as st

from gpt2viz import plots
from gpt2viz.analysis.lens import decompose, lens_grid, lens_window, logit_lens
from gpt2viz.model.tokenizer import readable_tokens
from gpt2viz.spec.schema import Mode
from gpt2viz.teaching import page_text
from gpt2viz.ui import code_panel, present
from gpt2viz.ui.anatomy import axis_tokens, page_question, plot, random_note, selection, selection_trace
from gpt2viz.ui.classroom import lens_rows, part_norms
from gpt2viz.ui.layout import wide_table
from gpt2viz.ui.overview import say_tie
from gpt2viz.ui.state import locked
from gpt2viz.ui.text import code_span

sel = selection()
st.title("Logit lens and residual decomposition")
page_question("lens")
with present.folded(sel.present):  # projected, the first chart starts in the first screen
    st.markdown(
        "**Logit lens.** Read the next-token prediction from the residual stream at every depth as if the model "
        "stopped there: apply the final LayerNorm, with its mean and variance **recomputed from the stream at that "
        "depth** (its gain and bias are the final ones), then multiply by the transpose of the token table, W_Eᵀ "
        "(GPT-2's unembedding is tied to its token embedding). At the last depth this is exactly the model's "
        "output.")
trace = selection_trace(sel, needs=["blocks.*.resid_*", "blocks.*.attn.out", "blocks.*.mlp.out", "logits"])
if trace is None:
    st.stop()
random_note(sel)
q, _, offset = axis_tokens(trace)
i = int(st.slider("Position", 0, trace.T - 1, trace.T - 1, key="lens_pos", bind="query-params",
                  disabled=locked("lens_pos"),
                  help="the position whose prediction the table reads; the chart shows the positions up to it")) \
    if trace.T > 1 else 0
first, last = lens_window(i, trace.T)
grid = trace.memo(("logit lens grid", first, last), lambda: lens_grid(sel.weights.model, trace, first, last))
plot(plots.lens_heatmap(grid.top_probs, [readable_tokens(row) for row in grid.top_ids.tolist()], grid.final_ranks,
                        grid.labels, q[first:last + 1], "The top next token at every depth · position"
                        + (f"s {offset + first}–{offset + last}" if last > first else f" {offset + first}"),
                        offset=offset + first, chosen=i - first))
st.caption("Each cell: the most likely next token read at that depth and position, and its probability. Down a "
           "column the prediction forms; the last row is the model's output. Hover for the rank, at that depth, of "
           "the token the model finally predicts there.")
st.markdown(f"**Position {offset + i}, {code_span(q[i])}**: the lens at every depth.")
if trace.mode is not Mode.PREFILL or i == trace.T - 1:  # prefill keeps the last position's logits alone
    say_tie(trace.at("logits", i if trace.mode is not Mode.PREFILL else -1)[0])
rows = trace.memo(("logit lens", i), lambda: lens_rows(logit_lens(sel.weights.model, trace, position=i)))
wide_table(rows, height="content")
n_layer = sel.config.n_layer
# it opens on the stream after the last block, every block's part in it (block 0's input is the embedding alone)
depth = int(st.slider("Taken apart", 0, n_layer, n_layer, key="lens_depth", bind="query-params",
                      disabled=locked("lens_depth"), format="%d",
                      help=f"the stream entering block n; {n_layer}: the output of the last block, "
                           "which the final LayerNorm reads"))
where = f"block {depth} input" if depth < n_layer else "after the last block"
st.subheader(f"The stream {'entering block ' + str(depth) if depth < n_layer else 'after the last block'}, "
             "taken apart")
st.latex(r"x_n = x_0 + \sum_{m<n} \left(\Delta_\text{attn}^{(m)} + \Delta_\text{mlp}^{(m)}\right)")
d = decompose(trace, depth, positions=slice(i, i + 1))  # the position charted alone: [n_parts, 1, d]
plot(plots.depth_bars(part_norms(d, 0), d.labels, f"‖part‖ at position {offset + i} · {where}", "L2 norm"))
st.markdown(page_text.lens_residual_sentence(len(d.labels), d.max_abs_error, offset + i))
code_panel.section("lens", sel, (("lens_pos", i),))
