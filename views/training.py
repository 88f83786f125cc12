"""Training internals: dropout that fired, the loss at every position, gradients per component."""

import streamlit as st

from gpt2viz import plots
from gpt2viz.ui.anatomy import page_question, plot, random_note, selection, text_notes
from gpt2viz.ui.cache import get_training_summary, trace_cache, training_summary_bytes
from gpt2viz.ui.caps import capped
from gpt2viz.ui.classroom import GRAD_PARTS
from gpt2viz.ui.state import locked
from gpt2viz.ui.working import working

sel = selection()
cfg = sel.config
st.title("Training internals")
page_question("training")
if sel.text_error or len(sel.ids) < 2:
    st.warning(sel.text_error or "Training needs at least 2 tokens.", icon=":material/edit:")
    st.stop()
text_notes(sel)
# a model trained with p = 0 (nanoGPT's fine-tuning default) has no dropout to switch on
dropout = st.toggle("Dropout on", value=True, key="dropout", bind="query-params",
                    disabled=locked("dropout") or cfg.dropout == 0,
                    help="off: the training loss equals the evaluation loss on the same text") and cfg.dropout > 0
sel = capped(sel, "training", shortest=2,
             fits=lambda n: training_summary_bytes(sel.weights, n, dropout) <= trace_cache().budget)
with working(f"Training {sel.config.name} on {len(sel.ids):,} tokens: forward, loss, backward…") as progress:
    summary = get_training_summary(sel.weights, sel.ids, sel.weights.seed, dropout, progress=progress)
random_note(sel)
cols = st.columns(3)
for col, (label, value) in zip(cols, summary.loss.items()):
    col.metric(label, value)
plot(plots.loss_per_token(summary.loss_per_token, list(summary.tokens),
                          "Loss at each position: which tokens surprised the model"))
st.markdown(
    "Training reads the **whole text at once**: every position predicts the next token in the same forward "
    "pass, because the causal mask already hides the future from each position, so one pass gives T − 1 "
    "predictions and one loss. Generation cannot do that: the next token does not exist until it is chosen, "
    "so **decode** reads one token at a time and keeps the cache. Training also "
    + (f"switches dropout on (p = {cfg.dropout})" if dropout else
       f"switches dropout on (p = {cfg.dropout}; off here, by the toggle)" if cfg.dropout > 0 else
       "would switch dropout on (this model has none)")
    + " and runs backward to get a gradient for every weight.")
st.subheader("Dropout that fired")
if dropout:
    st.dataframe(summary.dropout, hide_index=True, width="stretch", height=260)
elif cfg.dropout == 0:
    st.caption("This model was trained without dropout (p = 0): no value is dropped, so this loss is the "
               "evaluation loss of the text.")
else:
    st.caption("Dropout is off: no value was dropped, so this loss is the evaluation loss of the text.")
st.subheader("Gradients")
plot(plots.matrix_heatmap(summary.weight_grad_norms, [label for _, label in GRAD_PARTS],
                          [str(i) for i in range(cfg.n_layer)],
                          "‖∂loss/∂W‖ per component and block (a LayerNorm's gain g; no bias)", "norm"))
plot(plots.depth_bars(summary.stream_grad_norms, [f"block {i} in" for i in range(cfg.n_layer)],
                      "‖∂loss/∂xₙ‖: the gradient reaching each block's input", "norm"))
