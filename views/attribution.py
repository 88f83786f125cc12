"""Who wrote the answer: direct logit attribution, every head's, MLP's and bias's share of one logit."""

import streamlit as st

from gpt2viz.ui import attribution_view as av
from gpt2viz.ui import code_panel, present, story
from gpt2viz.ui.anatomy import page_question, random_note, selection, text_or_stop
from gpt2viz.ui.caps import capped

sel = selection()
st.title("Who wrote the answer")
page_question("attribution")
with present.folded(sel.present):  # projected, the first chart starts in the first screen
    st.markdown("The final stream at a position is a sum: the embedding, plus what every head, every attention bias "
                "and every MLP added to it. Hold the final LayerNorm's scale at this run's value and the answer's "
                "logit splits the same way, exactly, into one share per part: **direct logit attribution**. Against "
                "a second token, the **logit difference** splits likewise.")
    story.offer(sel, "attribution", says="the model copies after from the first time round. Which heads write its "
                "logit, and does knocking them out tell the same story?")
text_or_stop(sel)
sel = capped(sel, "attribution")
if not sel.present:
    st.caption("Runs the text in full mode (no dropout), whatever the sidebar's mode.")
trace = av.full_trace(sel)
answer, versus, position, error = av.controls(sel, trace)
if error or not sel.present:  # the tokens it may take, beside the boxes
    av.likeliest(sel, trace, position)
if error:
    st.warning(error, icon=":material/edit:")
    st.stop()
a = av.attribution(sel, trace, answer, versus, position)
if sel.present:  # projected, the charts in the first screen, then the numbers they add up to
    av.charts(sel, a)
    av.likeliest(sel, trace, position)
av.totals(a)
st.markdown(av.named(a, sel.weights.random))
random_note(sel)
if not sel.present:
    av.charts(sel, a)
st.markdown(av.DIRECT_ONLY)
av.beside_knockouts(sel, trace, a)
code_panel.section("attribution", sel, (("answer", a.answer), ("versus", a.versus), ("position", a.position)))
