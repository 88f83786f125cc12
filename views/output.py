"""Output: the final LayerNorm, logits against the tied token table, next-token probabilities."""

import streamlit as st
import torch

from gpt2viz import plots
from gpt2viz.model import ranking
from gpt2viz.model.generation import distribution
from gpt2viz.model.tokenizer import readable
from gpt2viz.teaching import notices
from gpt2viz.ui import anatomy
from gpt2viz.ui.anatomy import plot
from gpt2viz.ui.links import demo_beside
from gpt2viz.ui.overview import top_next_tokens
from gpt2viz.ui.state import nucleus, number

SHOWS = ("ln_f.out", "logits", "loss.per_token", "loss")

page = anatomy.header("unembed", SHOWS)
sel, trace = page.sel, page.trace
probs, tokens = top_next_tokens(trace, k=10)
plot(plots.topk_tokens(probs, tokens, f"Next token after {trace.tokens[-1]!r} (top 10)"))
anatomy.notice(notices.output_notice(probs[0], tokens[0], sel.config.vocab_size, notices.weights_kind(sel.weights),
                                     ranking.tied_at_top(trace.at("logits", -1)[0])))
demo_beside("output", sel)
model = sel.weights.model
w_u = (model.wte.weight.T if sel.config.tied else model.lm_head.weight.T).detach()  # [d, V]
top2 = ranking.ranked(trace.at("logits", -1)[0], 2).tolist()
anatomy.worked(notices.output_worked(trace.at("logits", -1)[0].double(), trace["ln_f.out"][0, -1], w_u,
                                  {i: readable(i) for i in top2}))
if "loss" in trace:
    st.metric("Mean next-token loss", f"{float(trace['loss']):.4f}")
    plot(plots.loss_per_token(trace["loss.per_token"][0], list(trace.tokens), "Loss at each position"))
plot(plots.histogram(trace.at("logits", -1)[0], "Logits of the last position", "logit"))
st.subheader("Temperature, top-k and top-p: the same logits, another distribution")
st.markdown("Sampling divides the logits by a **temperature** before the softmax: below 1 the top tokens take "
            "more of the probability (0 keeps only the top one: greedy), above 1 it spreads out. **Top-k** then "
            "keeps the k most likely tokens and renormalises them to add to 1; **top-p** (nucleus) keeps the "
            "fewest most likely tokens whose probabilities add up to p. Try them on this text:")
cols = st.columns(3)
temperature = number(cols[0], "Temperature", 0.0, 5.0, 1.0, key="temp", step=0.1)
top_k = number(cols[1], "Top-k (0 = all)", 0, sel.config.vocab_size, 0, key="topk") or None
top_p = nucleus(cols[2])
logits = trace.at("logits", -1)[0].double()  # [V]: float64, so that the printed digits are the distribution's
before, after = torch.softmax(logits, -1), distribution(logits, temperature, top_k, top_p)  # [V] each
shown = ranking.ranked(logits, 10)  # the same ten tokens in both charts: the ten first at temperature 1
labels = [readable(int(i)) for i in shown]
anatomy.side_by_side(
    plots.topk_tokens(before[shown].tolist(), labels, "softmax(logits): temperature 1, every token"),
    plots.topk_tokens(after[shown].tolist(), labels,
                      f"temperature {temperature:g}" + (f", top-{top_k}" if top_k else "")
                      + (f", top-p {top_p:g}" if top_p else "") + ("" if top_k or top_p else ", every token")))
anatomy.notice(notices.temperature_notice(before, after, temperature, top_k, top_p))
anatomy.footer(page)
