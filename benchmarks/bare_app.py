"""Streamlit's own floor for a view: a bare app shaped like gpt2viz's frame, nothing of gpt2viz.

The same controls bound to the URL (weights, text, mode, block, head), a top navigation of two
pages and one small heatmap (12 × 12, plotly). `benchmarks/first_view.py --app bare` measures what
a new session's first view and a later view of it cost the server: what no page of ours can go under.
"""

import numpy as np
import plotly.graph_objects as go
import streamlit as st

st.set_page_config(layout="wide")


def controls() -> tuple[int, int]:
    sb = st.sidebar
    sb.radio("Weights", ["random", "demo"], key="weights", bind="query-params", horizontal=True)
    sb.text_area("Text", value="The quick brown fox", key="text", bind="query-params")
    sb.selectbox("Mode", ["full", "training", "prefill", "decode"], key="mode", bind="query-params")
    block = sb.slider("Block", 0, 11, key="block", bind="query-params")
    head = sb.slider("Head", 0, 11, key="head", bind="query-params")
    return block, head


def attention() -> None:
    block, head = st.session_state["view"]
    st.title("Attention")
    pattern = np.random.default_rng(block * 12 + head).random((12, 12))
    st.plotly_chart(go.Figure(go.Heatmap(z=np.tril(pattern))), key="pattern")


def about() -> None:
    st.title("About")


st.session_state["view"] = controls()
# About first: Streamlit gives the default page no path of its own
st.navigation([st.Page(about, url_path="about"), st.Page(attention, url_path="attention")], position="top").run()
