"""How to read the pages: the ideas a student meets, each linked to the page that shows it, then
every symbol, its name and what it stands for."""

import streamlit as st

from gpt2viz.glossary import IDEAS, SYMBOLS
from gpt2viz.ui.links import anchor

st.title("Glossary")
st.subheader("Ideas")
st.markdown("\n".join(f"- **{name}.** {text} {anchor('Where it shows →', url)}" for name, text, url in IDEAS),
            unsafe_allow_html=True)
st.subheader("Symbols")
st.markdown("The symbols every page and every shape uses. Shapes keep the reference implementations' layout: "
            "heads before positions, so per-head tensors are [B, nh, T, dh].")
# a table whose cells wrap: the meanings are sentences, cut at the column's edge in a grid
st.table([{"symbol": s, "name": n, "meaning": m} for s, n, m in SYMBOLS], border="horizontal", hide_index=True)
