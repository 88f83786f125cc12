"""Exercises: predict a shape, compute a parameter count; checked on submit with the worked answer.
A teacher view turns the same set into a handout with or without the answer key."""

import streamlit as st

from gpt2viz import exercises as ex
from gpt2viz.ui.state import number

st.title("Exercises")
st.markdown("Questions generated from the catalogue, for every size and mode. Shapes use the reference layout "
            "(heads before positions). Type a shape as `[1, 12, 1, 64]` and a count as `4,722,432`.")
cols = st.columns(3)
seed = number(cols[0], "Set", 0, 10_000, 0, key="set", help="the same set number gives the same questions: share the link")
n = number(cols[1], "Questions", 1, 20, 6, key="questions")
teacher = cols[2].toggle("Teacher view", key="teacher", bind="query-params")
exercise_set = ex.exercise_set(seed, n)
if teacher:
    st.download_button("Answer key (Markdown)", ex.handout(exercise_set, answers=True, title=f"GPT-2 exercises, set {seed}: answer key"),
                       file_name=f"gpt2-exercises-{seed}-key.md", mime="text/markdown", icon=":material/download:")
    st.download_button("Worksheet without answers (Markdown)", ex.handout(exercise_set, answers=False, title=f"GPT-2 exercises, set {seed}"),
                       file_name=f"gpt2-exercises-{seed}.md", mime="text/markdown", icon=":material/download:")
    st.markdown(ex.handout(exercise_set, answers=True, title=f"Set {seed}: answer key"))
    st.stop()
for i, e in enumerate(exercise_set, 1):
    with st.form(f"exercise-{e.id}"):
        st.markdown(f"**{i}. {'Predict the shape' if e.kind == 'shape' else 'Count the parameters'}.** {e.question}")
        given = st.text_input("Your answer", key=f"answer-{e.id}", max_chars=200)
        if st.form_submit_button("Check"):
            ok, message = ex.check(e, given)
            (st.success if ok else st.error)(message)
            with st.expander("Worked answer", expanded=not ok):
                st.markdown(e.worked)
