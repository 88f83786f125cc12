"""Overview: the prediction at the end and the residual stream on the way; the parts of the model,
each a link to its page, with this text's shapes and the parameter counts."""

import streamlit as st

from gpt2viz import plots
from gpt2viz.ui import anatomy
from gpt2viz.ui.anatomy import axis_tokens, cat_of, component_link, plot, run_values
from gpt2viz.ui.overview import diagram_rows, residual_norm_series, top_next_tokens

SHOWS = ("blocks.*.resid_pre", "blocks.*.resid_mid", "blocks.*.resid_post", "logits")

page = anatomy.header("model", SHOWS)
sel, trace = page.sel, page.trace
probs, tokens = top_next_tokens(trace, k=10)
labels, norms = residual_norm_series(trace)
q, _, offset = axis_tokens(trace)
plot(plots.topk_tokens(probs, tokens, f"Next token after {trace.tokens[-1]!r}"))
plot(plots.residual_norms(norms, labels, q, "Residual stream norm through the blocks", offset=offset))
st.subheader("The parts")
st.markdown("Type a text in the sidebar; every page shows what GPT-2 computes on it. "
            "Open a part of the model; the shapes are this text's, in this mode.")
cat = cat_of(sel)
for row in diagram_rows(cat, run_values(sel, sel.mode), sel.mode.value):
    cols = st.columns([3, 3, 2])
    component_link(cat, row["id"], row["title"], ":material/arrow_right:", cols[0])
    cols[1].markdown(f"`{row['shape']}`")
    cols[2].markdown(row["params"])
anatomy.footer(page)
