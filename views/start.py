"""Start here: the guided tour, pages in order with one sentence each; every link keeps the view."""

import streamlit as st

from gpt2viz.tour import TOUR
from gpt2viz.ui.links import anchor
from gpt2viz.ui.pages import BY_URL

st.title("Start here")
st.markdown("A path through GPT-2 for a class: open the pages in this order. Type your own text in the sidebar "
            "first; every page then shows what the model computes on it, and every link here keeps it (and the "
            "mode, block and head). Each page also links to the next stop at its top.")
stops = [f"{i}. {anchor(BY_URL[url].title, url)}: {sentence}" for i, (url, sentence) in enumerate(TOUR, 1)]
st.markdown("\n".join(stops), unsafe_allow_html=True)
first = TOUR[0][0]
st.markdown(f"**{anchor(f'Begin: {BY_URL[first].title} →', first)}**", unsafe_allow_html=True)
