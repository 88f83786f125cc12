"""How to read the pages: every symbol, its name and what it stands for."""

import streamlit as st

from gpt2viz.glossary import SYMBOLS

st.title("Glossary")
st.markdown("The symbols every page and every shape uses. Shapes keep the reference implementations' layout: "
            "heads before positions, so per-head tensors are [B, nh, T, dh].")
st.dataframe([{"symbol": s, "name": n, "meaning": m} for s, n, m in SYMBOLS], hide_index=True, width="stretch",
             height=880)
