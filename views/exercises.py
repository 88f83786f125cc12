"""Exercises: predict a shape, compute a parameter count; a wrong answer gets a hint and a second try;
after a right answer its working, after a second wrong one the method without its numbers and "ask
your lecturer": the answer is never shown to a student who did not give it, so a new tab (a fresh
attempt) has nothing to copy. Every answer keeps its feedback, with a running score; an answered
exercise's mark is final. The answer key is for the
operator: shown only when the server was started with GPT2VIZ_TEACHER=1, never by a control or a link
a student could use."""

import os

import streamlit as st

from gpt2viz.teaching import exercises as ex
from gpt2viz.ui.anatomy import selection
from gpt2viz.ui.live_view import live_checks
from gpt2viz.ui.state import number
from gpt2viz.ui.text import plain

TEACHER_ENV = "GPT2VIZ_TEACHER"

st.title("Exercises")
FORMATS = "Type a shape as `[1, 12, 1, 64]` and a count in full, every digit, as `4,722,432`."

st.markdown(f"Questions on {', '.join(ex.MODELS[:-1])} and {ex.MODELS[-1]}, in every mode. {ex.CONVENTIONS} "
            + FORMATS)
cols = st.columns(3)
seed = number(cols[0], "Set", 0, 10_000, 0, key="set",
              help="the same set number gives the same questions: share the link")
n = number(cols[1], "Questions", 1, 20, 6, key="questions")
exercise_set = ex.exercise_set(seed, n)
worksheet = ex.handout(exercise_set, answers=False, title=f"GPT-2 exercises, set {seed}")
cols[2].download_button("Worksheet (Markdown)", worksheet, file_name=f"gpt2-exercises-{seed}.md", mime="text/markdown",
                        icon=":material/download:")
if os.environ.get(TEACHER_ENV) == "1":
    with st.expander("Teacher: answer key", icon=":material/key:"):
        key = ex.handout(exercise_set, answers=True, title=f"GPT-2 exercises, set {seed}: answer key")
        st.download_button("Answer key (Markdown)", key, file_name=f"gpt2-exercises-{seed}-key.md",
                           mime="text/markdown", icon=":material/download:")
        st.markdown(key)

results = st.session_state.setdefault("exercise_attempts", {})  # exercise id -> ex.Attempt
score = st.empty()
for i, e in enumerate(exercise_set, 1):
    with st.form(f"exercise-{e.id}"):
        st.markdown(f"**{i}. {'Predict the shape' if e.kind == 'shape' else 'Count the parameters'}.** {e.question}")
        done = results.get(e.id, ex.Attempt()).closed  # its mark is final: no box to answer again
        given = st.text_input("Your answer", key=f"answer-{e.id}", max_chars=200, disabled=done)
        if st.form_submit_button("Check", disabled=done) and not done:
            try:
                results[e.id] = ex.answer(e, results.get(e.id, ex.Attempt()), given)
            except ex.Unreadable as unreadable:  # not an answer: ask again, mark and reveal nothing
                said = plain(str(unreadable))
                st.warning(f"{said[0].upper()}{said[1:]}. {FORMATS}", icon=":material/edit:")
        attempt = results.get(e.id)
        if attempt is not None:
            (st.success if attempt.correct else st.error)(attempt.message)
            if attempt.correct:
                with st.expander("Worked answer"):
                    st.markdown(e.worked)
            elif attempt.closed:  # out of tries: how to work it out, never the answer
                with st.expander("How to work it out", expanded=True):
                    st.markdown(e.method)
closed = [results[e.id].correct for e in exercise_set if e.id in results and results[e.id].closed]
score.markdown(f"**Score: {sum(closed)} of {len(exercise_set)}** correct · {len(closed)} answered")

live_checks(selection())
