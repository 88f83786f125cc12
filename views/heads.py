"""Head finder: every head of the model scored on this text (full mode), mapped, ranked and opened."""

import streamlit as st

from gpt2viz.ui import code_panel, present
from gpt2viz.ui import heads_view as hv
from gpt2viz.ui.anatomy import page_question, random_note, selection
from gpt2viz.ui.caps import capped

sel = selection()
st.title("Head finder")
page_question("heads")
with present.folded(sel.present):  # projected, the first chart starts in the first screen
    st.markdown("Every head of every block, scored on this text from its attention pattern: each score is an "
                "average over the text's positions of one thing a head can do. Look for the heads that stand out, "
                "then open them on the Attention page to see the stripe behind the number.")
sel = capped(sel, "heads")
rows, patterns = hv.scores(sel)
if not sel.present:
    hv.repeat_offer(sel)
st.subheader("Every head, one map per score")
hv.maps(sel, rows, patterns)
if sel.present:
    hv.repeat_offer(sel)
st.subheader("Two scores at once")
hv.scatter(sel, rows)
st.subheader("Open a head")
hv.open_head(sel, rows)
random_note(sel)  # what the weights in use are (at length for the demo model), after the picture
code_panel.section("heads", sel)
