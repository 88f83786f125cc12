"""Compare and patch: two texts side by side, and activation patching from text A into text B."""

import streamlit as st

from gpt2viz.teaching import whatif_text
from gpt2viz.ui import code_panel, present, story
from gpt2viz.ui import whatif_view as wv
from gpt2viz.ui.anatomy import page_question, selection, token_notes
from gpt2viz.ui.working import progress_in

sel = selection()
st.title("Compare and patch")
page_question("patch")
progress = st.container()  # the runs' progress, on the first screen (a long text takes seconds)
with present.folded(sel.present):  # projected, the first chart starts in the first screen
    st.markdown("Text A is the sidebar's text; text B is below. Run both, compare what the chosen head attends "
                "to and what each predicts, then move one piece of A's computation into B's run at a time "
                "(**activation patching**) to find where the difference between their answers is carried.")
    story.offer(sel, "patch")
text_b = wv.text_b_box(sel)
ids_b, cut_b, error_b = wv.ids_of(text_b, sel.config.n_positions)
wv.stop_without_text(sel, error_b)
token_notes(ids_b, cut_b, sel.config.n_positions, "Text B")
with progress_in(progress):
    a, b = wv.clean_trace(sel), wv.clean_trace(sel, ids_b)
wv.side_by_side(sel, a, b, text_b)
st.subheader("Activation patching: A into B")
st.caption("With trained weights, try A = a few words followed by the first of them again, and B = A with its "
           "**last** word changed to one that occurs nowhere earlier in the text. A can then copy: an induction "
           "head at its last word attends to the word that *followed* the earlier occurrence of that word, and "
           "copies it. B has nothing to copy, so A and B predict different tokens, and the restored fraction "
           "shows which heads carry the copy. If A and B predict the same token (B changed a word the copy at the "
           "end does not use), their margins barely differ and the fractions are noise.")
if len(sel.ids) != len(ids_b):
    st.warning(whatif_text.lengths_differ(len(sel.ids), len(ids_b)), icon=":material/straighten:")
    st.stop()
answers = wv.patching_section(sel, a, b)
code_panel.section("patch", sel, (("text_b", text_b), ("ids_b", ids_b), ("answers", answers)))
