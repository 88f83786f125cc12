"""Attention: Q, K, V per head, the scores, the causal mask, the softmax pattern, per-head outputs."""

import streamlit as st

from gpt2viz import plots
from gpt2viz.model.gpt2 import causal_mask
from gpt2viz.teaching import notices, page_text
from gpt2viz.teaching.prompts import induction_cells
from gpt2viz.ui import anatomy, dot_view, story
from gpt2viz.ui.anatomy import axis_tokens, plot
from gpt2viz.ui.links import demo_beside, draw_diagram

# k_cache: the keys "one score taken apart" reads in prefill and decode (decode stores its scores, not
# their sources); a name a mode does not record asks for nothing there
SHOWS = tuple(f"blocks.{{b}}.attn.{s}" for s in ("q", "k", "v", "k_cache", "scores", "pattern", "z"))
GRID_QUERIES = 16  # the grid draws nh maps: keep it to the last queries on long texts

page = anatomy.header("block.attn", SHOWS)
sel, trace = page.sel, page.trace
b, h = sel.block, sel.head
q, k, offset = axis_tokens(trace)
T, L = trace.T, trace.L
if trace.P:
    st.markdown(page_text.decode_reads(trace.P))
# one head's scores and pattern, and the grid's rows of every head: derived alone from q and k
scores, pattern = trace.get("attn.scores", b, head=h)[0], trace.get("attn.pattern", b, head=h)[0]  # [T, L]
z = trace.get("attn.z", b)[0, h]  # [T, dh]
# on the demo model, outline where an induction head looks: the word after each earlier occurrence
marks = induction_cells(sel.ids) if sel.weights.demo else ()
clickable = T * L <= plots.attention.CLICK_CELLS  # one marker a cell: bounded
plot(plots.attention_maps(scores, pattern, z.norm(dim=-1), q, k, f"Attention · block {b} head {h}",
                          query_offset=offset, mask=causal_mask(T, L), marks=marks, clickable=clickable,
                          marks_note="outlined: where an induction head looks (the word after the earlier occurrence)"),
     f"block {b} head {h}", on_click=dot_view.on_click(T, L) if clickable else None, key=dot_view.MAP_KEY)
dot_view.click_note(clickable)
dot_view.caveat(sel)
cfg = sel.config
anatomy.notice(notices.attention_notice(pattern, trace.token_ids, offset, notices.weights_kind(sel.weights), b, h,
                                        gpt2_small=(cfg.n_layer, cfg.n_head, cfg.n_embd) == (12, 12, 768)))
demo_beside("attention", sel)
if not trace.P:  # decode holds the cached values in its cache, not in the trace
    anatomy.worked(notices.attention_worked(scores[-1], pattern[-1], trace.get("attn.v", b)[0, h], z[-1], k))
if sel.weights.demo:
    story.heads_pointer(sel)
st.markdown(notices.attention_intuition(sel.config.n_head, sel.config.n_embd // sel.config.n_head))
draw_diagram("attention", sel, "attention")
n = min(T, GRID_QUERIES)
last = trace.get("attn.pattern", b, queries=slice(T - n, T))[0]  # [nh, n, L]
plot(plots.heads_grid(last, q[-n:], k, f"Every head of block {b}"
                      + (f" (the last {n} queries)" if n < T else ""), query_offset=offset + T - n), f"block {b}")
dot_view.section(sel, trace, q, k, offset)  # one score taken apart, after the head and its block are seen
anatomy.footer(page)
