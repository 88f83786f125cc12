"""gpt2viz: the frame. Page config, the shared controls (bound to the URL), then the pages."""

from pathlib import Path

import streamlit as st

from gpt2viz.ui.links import tour_next
from gpt2viz.ui.pages import pages
from gpt2viz.ui.state import controls, sidebar_footer

# each st.Page gives the tab its own title. The icon is a file, not an emoji: Streamlit checks an
# emoji with a regular expression whose compilation took 0.5 s of the first run.
st.set_page_config(page_icon=Path(__file__).parent / "assets" / "favicon.svg", layout="wide")
st.session_state["view"] = controls()
page = st.navigation(pages(), expanded=True)
sidebar_footer()
tour_next(page.url_path)
page.run()
