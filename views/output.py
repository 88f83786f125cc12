"""Output: the final LayerNorm, logits against the tied token table, next-token probabilities."""

import streamlit as st

from gpt2viz import lesson, plots
from gpt2viz.ui import anatomy
from gpt2viz.ui.anatomy import plot
from gpt2viz.ui.overview import top_next_tokens

SHOWS = ("ln_f.out", "logits", "loss.per_token", "loss")

page = anatomy.header("unembed", SHOWS)
sel, trace = page.sel, page.trace
probs, tokens = top_next_tokens(trace, k=10)
plot(plots.topk_tokens(probs, tokens, f"Next token after {trace.tokens[-1]!r} (top 10)"))
anatomy.notice(lesson.output_notice(probs[0], tokens[0], sel.config.vocab_size, lesson.weights_kind(sel.weights)))
if "loss" in trace:
    st.metric("Mean next-token loss", f"{float(trace['loss']):.4f}")
    plot(plots.loss_per_token(trace["loss.per_token"][0], list(trace.tokens), "Loss at each position"))
plot(plots.histogram(trace["logits"][0, -1], "Logits of the last position", "logit"))
anatomy.footer(page)
