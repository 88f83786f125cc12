"""Start here: the guided tour, pages in order with one sentence each; every link keeps the view."""

import streamlit as st

from gpt2viz.model.demo_model import DEMO_PATH
from gpt2viz.spec.pages import BY_URL
from gpt2viz.teaching.tour import TOUR
from gpt2viz.ui.anatomy import selection
from gpt2viz.ui.links import anchor

# where values matter, random weights show none: the hint to the demo model, only on random weights
# (as each stop's own link to it, ui/links.py tour_next)
hint = selection().weights.random and DEMO_PATH.is_file()

st.title("Start here")
st.markdown("A path through GPT-2 for a class: open the pages in this order. Type your own text in the sidebar "
            "first; every page then shows what the model computes on it, and every link here keeps it (and the "
            "mode, block and head). Each page also links to the next stop at its top.")
for part in dict.fromkeys(s.part for s in TOUR):
    st.header(part, anchor=False)
    st.markdown("\n".join(f"{i}. {anchor(BY_URL[s.url].title, s.url)}: {s.sentence}"
                          + (" *(values: pick the demo model, or follow the stop's link)*" if s.demo and hint
                             else "")
                          for i, s in enumerate(TOUR, 1) if s.part == part), unsafe_allow_html=True)
st.caption("Along the first part, each stop's top line adds the parameters of the parts it shows, up to the "
           "model's total: the tally a class can follow to see where the parameters live.")
first = TOUR[0].url
st.markdown(f"**{anchor(f'Begin: {BY_URL[first].title} →', first)}**", unsafe_allow_html=True)
