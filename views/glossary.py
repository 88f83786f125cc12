"""How to read the pages: every term a page uses, each under a heading other pages link to
(/glossary#induction-head) and linked to the page that shows it; every symbol; the names readers
bring from nanoGPT and TransformerLens."""

import streamlit as st

from gpt2viz.glossary import ALIASES, ENTRIES, GROUPS, SYMBOLS
from gpt2viz.ui.links import anchor

st.title("Glossary")
st.markdown("Every term the pages use, in our words, with the page that shows it; then every symbol, and the "
            "names you may know from nanoGPT or TransformerLens.")
for group in GROUPS:
    st.subheader(group, anchor=False)
    st.markdown("\n\n".join(f"##### {e.term}\n{e.text} {anchor('Where it shows →', e.page)}"
                            for e in ENTRIES if e.group == group), unsafe_allow_html=True)
st.subheader("Symbols", anchor="symbols")
st.markdown("The symbols every page and every shape uses, one meaning each. Shapes keep the reference "
            "implementations' layout: heads before positions, so per-head tensors are [B, nh, T, dh].")
st.dataframe([{"symbol": s, "name": n, "meaning": m} for s, n, m in SYMBOLS], hide_index=True, width="stretch",
             height=35 * len(SYMBOLS) + 40)
st.subheader("If you come from nanoGPT or TransformerLens", anchor="other-names")
st.markdown("The same things under their names. Tensor names here are written blocks.n.…, n the block.")
st.dataframe([{"from": f, "there": there, "here": here, "what differs": diff} for f, there, here, diff in ALIASES],
             hide_index=True, width="stretch", height=35 * len(ALIASES) + 40)
