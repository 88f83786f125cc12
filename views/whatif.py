"""What if: knock out a head, a block's attention, its MLP or one neuron, and watch the prediction move."""

import streamlit as st

from gpt2viz.ui import code_panel, present, story
from gpt2viz.ui import whatif_view as wv
from gpt2viz.ui.anatomy import page_question, selection
from gpt2viz.ui.caps import capped
from gpt2viz.ui.working import progress_in

sel = selection()
st.title("What if: knock a part out")
page_question("whatif")
progress = st.container()  # the runs' progress, on the first screen (a long text takes seconds)
with present.folded(sel.present):  # projected, the first chart starts in the first screen
    st.markdown("Replace one part's output by zero, or by its average over the text, run the rest of the model "
                "on as usual, and compare the prediction with the untouched run. A part whose removal changes the "
                "prediction was doing something for it.")
    story.offer(sel, "whatif", says=wv.demo_knockouts())
wv.stop_without_text(sel)
sel = capped(sel, "whatif")
target, method = wv.target_controls(sel)
st.caption(wv.what_is_replaced(target, method, len(sel.ids)) + " Runs the whole text (full mode).")
with progress_in(progress):
    clean = wv.clean_trace(sel)
    knocked = wv.knocked_out(sel, target, method, clean)
wv.before_after(sel, clean, knocked, target, method)
st.subheader("Which later tensors changed most")
wv.changed_table(knocked)
st.subheader("Every part, one at a time")
wv.sweep_section(sel, clean, method)
code_panel.section("whatif", sel, (("part", target.part), ("method", method), ("neuron", target.index)))
