"""Which path carries it: path patching, a head's (or an MLP's) output removed from one later part's input."""

import streamlit as st

from gpt2viz.ui import paths_view as pv
from gpt2viz.ui import present
from gpt2viz.ui.anatomy import page_question, selection, text_or_stop
from gpt2viz.ui.caps import capped

sel = selection()
st.title("Which path carries it")
page_question("paths")
with present.folded(sel.present):  # projected, the first chart starts in the first screen
    st.markdown("What if knocks a part out everywhere: its **total effect**. Who wrote the answer reads what it "
                "writes straight into the answer: its **direct effect**. Between them: *through which later part* "
                "does its effect travel? **Path patching** removes the sender's output from the input of *one "
                "receiver only* (a later head's query, key or value input, an MLP, or the final stream: the direct "
                "path), runs the rest again, and does that for every receiver in turn.")
    pv.notes(sel)
text_or_stop(sel)
sel = capped(sel, "paths")
sender, method = pv.sender_controls(sel)
if not sel.present:
    st.caption("The sidebar's block and head choose the sender. Runs the whole text (full mode), whatever the "
               "sidebar's mode.")
trace = pv.clean_trace(sel)
answer, versus, position = pv.answer(sel, trace)
p = pv.paths(sel, trace, sender, answer, versus, position, method)
if p is None:
    st.stop()
pv.chart(sel, p)
st.markdown(pv.sentence(p))
pv.table(p)
