"""Modes and KV cache: one text in four modes, shapes side by side, the cache and what it costs."""

import streamlit as st

from gpt2viz import plots
from gpt2viz.spec import costs
from gpt2viz.teaching import page_text
from gpt2viz.teaching.page_text import why_decode_is_cheap, why_decode_waits_on_memory
from gpt2viz.ui import present
from gpt2viz.ui.anatomy import page_question, plot, random_note, selection, text_or_stop
from gpt2viz.ui.layout import wide_table
from gpt2viz.ui.modes_view import mode_shapes_table, mode_summary

sel = selection()
cfg = sel.config
st.title("Modes and KV cache")
page_question("modes")
with present.folded(sel.present):  # projected, the first chart starts in the first screen
    st.markdown(
        "The same weights run in four ways. **Full sequence** reads all T tokens at once. **Training** does the "
        "same with dropout on, scores every position against the next token, and runs backward. **Prefill** "
        "reads a prompt once and keeps every layer's keys and values (the KV cache). **Decode** then feeds one "
        "new token, which reads the P cached positions and its own: L = P + 1 keys, so no earlier work is redone.")
text_or_stop(sel)
n = len(sel.ids)
P = n - 1


def cache_charts() -> None:
    plot(plots.kv_cache_diagram(P, 1, cfg.n_layer, page_text.decode_step_title(P)))
    L_steps, bytes_steps = costs.kv_cache_series(cfg, range(1, n + 1))  # step 1 reads 1 key
    plot(plots.cache_growth(L_steps, bytes_steps, "Decoding this text token by token: L and cache size per step"))


if sel.present:  # projected, the cache's pictures first; the arithmetic under them
    cache_charts()

st.subheader("Why a decode step is cheap")
st.markdown(why_decode_is_cheap(cfg, len(sel.ids)))
st.markdown(why_decode_waits_on_memory(cfg, max(len(sel.ids), 2)))
st.subheader("This text in each mode")
wide_table(mode_summary(sel))
st.subheader("Shapes side by side (block 0 shown; every block is the same)")
wide_table(mode_shapes_table(sel), height=480)

st.subheader("The KV cache")
st.latex(r"\text{bytes} = 2 \cdot n_\text{layer} \cdot B \cdot n_h \cdot L \cdot d_h \cdot \text{bytes per value}")
for dtype in ("fp32", "fp16"):
    c = costs.kv_cache_bytes(cfg, 1, n, dtype)
    st.markdown(page_text.kv_cache_line(c.name, n, c.calculation, c.value, costs.human_bytes(c.value)))
full = costs.kv_cache_bytes(cfg, 1, cfg.n_positions, "fp32")
st.markdown(page_text.kv_cache_line(full.name, cfg.n_positions, full.calculation, full.value,
                                    costs.human_bytes(full.value), full_context=True))
if not sel.present:
    cache_charts()
random_note(sel)
