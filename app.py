"""gpt2viz: the frame. Page config, the shared controls (bound to the URL), then the pages."""

import streamlit as st

from gpt2viz.ui.pages import pages
from gpt2viz.ui.state import controls, sidebar_footer

st.set_page_config(page_icon="🔬", layout="wide")  # each st.Page gives the tab its own title
st.session_state["view"] = controls()
page = st.navigation(pages(), expanded=True)
sidebar_footer()
page.run()
