"""The Exercises page's live checks: questions on the student's own run (gpt2viz/teaching/live_checks.py),
graded against it; grades kept for the session, beside the exercises' score. As the exercises: a
wrong answer gets a hint and one more try, then where to look and "ask your lecturer"; the worked
answer (which holds the answer) only after a right one."""

import hashlib

import streamlit as st

from ..analysis.whatif import Target
from ..model import ranking
from ..model.tokenizer import readable
from ..teaching.live_checks import (
    LiveAttempt,
    LiveCheck,
    attempt,
    checks,
    grade,
    grade_knockout,
    knockout_check,
    writer_check,
)
from .attribution_view import attribution, full_trace
from .state import Selection, not_built
from .whatif_view import clean_trace, knocked_out


def run_key(sel: Selection) -> str:
    """What identifies the run the checks are about: weights, text and the block and head asked about."""
    what = repr((sel.weights.key, sel.ids, sel.block, sel.head)).encode()
    return hashlib.sha256(what).hexdigest()[:12]


def live_checks(sel: Selection) -> None:
    st.header("Live checks on your text")
    st.markdown(f"These questions are about the text in the sidebar, on these weights, in block {sel.block} "
                f"(head {sel.head} for the knock-out): look at the pages, then answer. Change the text or the "
                "block and the questions change with it.")
    if sel.text_error:
        st.info(sel.text_error, icon=":material/edit:")
        return
    if not sel.weights.built:
        st.info(not_built(sel), icon=":material/memory:")
        return
    with st.spinner("Running your text once in full (the checks are graded against this run)…"):
        clean = clean_trace(sel)
    key = run_key(sel)
    asked = checks(sel.ids, clean.at("logits", -1)[0], clean.get("attn.pattern", sel.block)[0], sel.block, key,
                   random=sel.weights.random)
    top = ranking.top(clean.at("logits", -1)[0])
    asked.append(knockout_check(top, sel.block, sel.head, key))
    attributed = full_trace(sel)
    a = attribution(sel, attributed, top, None, attributed.T - 1)
    asked.append(writer_check(a.heads(), readable(top).replace("␣", " "), key, random=sel.weights.random))
    grades = st.session_state.setdefault("live_attempts", {})  # check id -> LiveAttempt
    score = st.empty()
    for i, check in enumerate(asked, 1):
        _one(sel, check, i, grades)
    mine = [grades[c.id].ok for c in asked if c.id in grades and grades[c.id].closed]
    score.markdown(f"**Live checks: {sum(mine)} of {len(asked)}** right · {len(mine)} answered")


def _one(sel: Selection, check: LiveCheck, i: int, grades: dict) -> None:
    with st.form(f"live-{check.id}"):
        st.markdown(f"**{i}.** {check.question}")
        before = grades.get(check.id, LiveAttempt())
        given = st.text_input("Your answer", key=f"live-answer-{check.id}", max_chars=80, placeholder=check.hint,
                              disabled=before.closed)
        if st.form_submit_button("Check", disabled=before.closed) and not before.closed:
            if check.kind == "knock-out":  # its run is made only when a student answers
                with st.spinner(f"Knocking out head {sel.head} of block {sel.block}…"):
                    knocked = knocked_out(sel, Target(sel.block, "head", sel.head), "zero", clean_trace(sel))
                result, worked = grade_knockout(check, given, ranking.top(knocked.probs.log()))
            else:
                result, worked = grade(check, given), check.worked
            if result.ok is None:
                st.warning(result.message, icon=":material/edit:")  # not graded: nothing revealed
            else:
                grades[check.id] = attempt(check, before, result, worked, given)
        if check.id in grades:
            after = grades[check.id]
            (st.success if after.ok else st.error)(after.message)
            if after.ok:
                st.markdown(after.worked)
