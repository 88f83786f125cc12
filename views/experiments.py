"""Experiments with one knob: predict what a change does, then see it measured on your text and weights."""

import streamlit as st

from gpt2viz.ui import experiments_view as xv
from gpt2viz.ui import present
from gpt2viz.ui.anatomy import random_note, selection

sel = selection()
st.title("Experiments: predict, then see")
with present.folded(sel.present):  # projected, the experiment and its question come first
    st.markdown("Each experiment changes **one thing** in GPT-2's computation on the sidebar's text and weights "
                "and runs the model with and without it. The change is made to one value as the model computes it "
                "(the scores, the pattern, the position embeddings); the weights are never edited. Predict first: "
                "the answer appears once you have chosen.")
experiment = xv.pick()
predicted = xv.ask(experiment, sel)
if xv.runnable(experiment, sel):
    random_note(sel)
    if predicted is None:
        st.caption("Choose a prediction to see what the run measures.")
    else:
        xv.answer(experiment, sel, predicted)
