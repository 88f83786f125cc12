"""The class vote at a lesson stop with a question (teaching/lessons.py `question`): students answer from
their own devices, the lecturer opens and closes rounds, sees the spread and reveals the answer.

A student's view shows the question, their own answer and, after the reveal, the right one; never the
others' answers. The lecturer's view (after the lecturer password, as for signing) shows the count and
the spread, updating on a period, and the buttons. Both follow the round's state from the database
(server/votes.py) within STUDENT_POLL_S; a database that cannot be reached leaves the lesson as it is,
with one line where the vote would be.
"""

import os
import time
from collections import deque

import streamlit as st

from ..plots.theme import CONFIG, themed
from ..plots.votes import choice_spread, number_spread
from ..server import voter as voter_cookie
from ..server import votes
from ..server.voter import COOKIE, check
from ..server.votes import Refused, Store, Unavailable
from ..teaching.votes_text import answer_line, answers_line, my_vote_line, rounds_line, spread_line
from . import export
from .lesson_view import PASSWORD_ENV, OpenLesson, is_lecturer, lecturer_form, server_key
from .state import STATIC
from .text import plain
from .words import in_words

STUDENT_POLL_S = 2.0  # a student's view follows the lecturer's open, close and reveal within this
LECTURER_POLL_S = 1.0  # the lecturer's count and spread
RETRY_S = 10.0  # a database that failed is not asked again for this long (a student's poll must not wait on it)
VOTES_PER_SECOND = 3  # one browser's votes, at most, in any second
_failed: list[float] = [-RETRY_S]


@st.cache_resource
def _store(where: str) -> Store:
    return Store(where)


def store() -> Store:
    """The class's database, or Unavailable (for RETRY_S after a failure, without asking it again)."""
    if time.monotonic() - _failed[0] < RETRY_S:
        raise Unavailable("the class vote's database could not be reached a moment ago")
    try:
        return _store(votes.where_from_env())
    except Unavailable:
        _failed[0] = time.monotonic()
        raise


@st.cache_resource
def _recent_votes() -> dict[str, deque]:
    return {}


def _too_fast(voter: str) -> bool:
    """Whether this browser has voted VOTES_PER_SECOND times in the last second (in this process)."""
    now, seen = time.monotonic(), _recent_votes().setdefault(voter, deque(maxlen=VOTES_PER_SECOND))
    if len(seen) == VOTES_PER_SECOND and now - seen[0] < 1.0:
        return True
    seen.append(now)
    return False


def voter() -> str | None:
    """This browser's signed id (server/voter.py), or None."""
    try:
        value = st.context.cookies.get(COOKIE)
    except Exception:  # noqa: BLE001 - no request context (a bare run)
        return None
    return check(value, server_key())


def _round(opened: OpenLesson):
    return store().current(opened.ident, opened.i)


def charts_shown(opened: OpenLesson | None) -> bool:
    """Whether the stop's page draws: not while its question waits to be revealed (`reveal: after`)."""
    q = opened.stop.question if opened else None
    if not q or q.get("reveal") != "after" or not opened.token:
        return True
    try:
        r = _round(opened)
    except Unavailable:
        return True  # no vote to wait for: the lesson still shows
    return r is not None and r.state == "revealed"


def question_box(opened: OpenLesson | None) -> None:
    """At a stop with a question (from app.py, under the stop bar): the question, then the student's
    answer or the lecturer's round, each following the round on its period."""
    q = opened.stop.question if opened else None
    if not q or st.session_state.get(STATIC):
        return
    with st.container(border=True, key="class-vote"):
        st.markdown(":material/how_to_vote: **Question:** " + plain(q["text"]))
        if not opened.token:
            st.caption("The class votes on a signed link (a lesson opened from a file is yours alone): "
                       "sign it below on the Lessons page.")
            return
        try:
            store()
        except Unavailable as e:
            st.caption(f":material/cloud_off: The class vote is unavailable right now ({e}).")
            return
        if is_lecturer():
            _lecturer_panel(opened, charts_shown(opened))
        else:
            _student_panel(opened, charts_shown(opened))
            _unlock()
    if not charts_shown(opened):
        st.info("The charts of this stop appear when your lecturer reveals the answer: predict first.",
                icon=":material/visibility_off:")


def _follow(opened: OpenLesson, shown: bool) -> None:
    """A full rerun when the reveal changes what the page draws (its charts hidden until then)."""
    if charts_shown(opened) != shown:
        st.rerun(scope="app")


@st.fragment(run_every=STUDENT_POLL_S)
def _student_panel(opened: OpenLesson, shown: bool) -> None:
    q, me = opened.stop.question, voter()
    try:
        r = _round(opened)
        _follow(opened, shown)
        if r is None:
            st.caption("Your lecturer has not opened the vote on this question yet.")
            return
        if me is None and not voter_cookie.INSTALLED:
            st.caption("This server takes no votes: it was started without the class vote's browser ids "
                       "(`streamlit run serve.py`, `python -m gpt2viz app` or the class server give them). "
                       "Tell your lecturer.")
            return
        if me is None:
            st.caption("This browser has no class-vote id yet: reload the page (cookies must be allowed).")
            return
        mine = store().my_vote(opened.ident, opened.i, r.number, me)
        if r.state == "open":
            with st.form(f"vote-{opened.i}-{r.number}", border=False):
                if "choices" in q:
                    pick = st.radio("Your answer", range(len(q["choices"])), format_func=lambda j: q["choices"][j],
                                    index=None if mine is None else int(mine), key=f"pick-{opened.i}-{r.number}")
                else:
                    pick = st.number_input("Your answer", value=mine, min_value=-votes.MAX_ANSWER,
                                           max_value=votes.MAX_ANSWER, key=f"pick-{opened.i}-{r.number}")
                sent = st.form_submit_button("Send my answer", icon=":material/send:")
            if sent:
                if pick is None:
                    st.warning("Choose an answer first.")
                elif _too_fast(me):
                    st.warning("Slow down: one answer at a time.")
                else:
                    mine = store().vote(opened.ident, opened.i, r.number, me, pick)
        st.markdown(plain(my_vote_line(q, mine, r.state)))
        if r.state == "revealed":
            st.markdown("**" + plain(answer_line(q)) + "**")
    except (Refused, Unavailable) as e:
        st.caption(str(e))


@st.fragment(run_every=LECTURER_POLL_S)
def _lecturer_panel(opened: OpenLesson, shown: bool) -> None:
    q, lesson, i = opened.stop.question, opened.ident, opened.i
    try:
        s = store()
        r = s.current(lesson, i)
        state = r.state if r else None
        if not voter_cookie.INSTALLED:
            st.warning("This server gives browsers no class-vote id, so no student can vote: start it with "
                       "`streamlit run serve.py`, `python -m gpt2viz app` or the class server (docs/deploy.md).",
                       icon=":material/how_to_vote:")
        cols = st.columns(3)
        if state != "open" and cols[0].button("Open the vote" if r is None else "Vote again", key=f"open-{i}",
                                               icon=":material/how_to_vote:"):
            s.open_round(lesson, i, q)
            st.rerun(scope="app")
        if state == "open" and cols[1].button("Close the vote", key=f"close-{i}", icon=":material/block:"):
            s.set_state(lesson, i, "closed")
            st.rerun(scope="fragment")
        if state in ("open", "closed") and cols[2].button("Reveal the answer", key=f"reveal-{i}",
                                                          icon=":material/visibility:"):
            s.set_state(lesson, i, "revealed")
            st.rerun(scope="app")
        _follow(opened, shown)
        if r is None:
            st.caption("No vote yet: open one, and every student's view shows the question's answer box.")
            return
        rounds = s.summaries(lesson, i)[-2:]
        revealed = r.state == "revealed"
        st.markdown(plain(answers_line(rounds[-1].voters, r.state)))
        if "choices" in q:
            fig = choice_spread(q["choices"], [x.counts() or [] for x in rounds], q["answer"] if revealed else None)
        else:
            fig = number_spread([list(x.answers) for x in rounds], q["number"] if revealed else None)
        export.streamlit_charts(drawn=True)  # the page's charts with it too: one Plotly a tab (ui/anatomy.plot)
        st.plotly_chart(themed(fig, dark=st.context.theme.type == "dark"), theme=None, config=CONFIG,
                        key=f"spread-{i}-{r.number}-{r.state}")
        in_words(fig.to_dict(), f"gpt2viz-vote-{i}")
        st.caption(plain(spread_line(q, list(rounds[-1].answers), revealed)))
        if revealed and len(rounds) == 2:
            st.caption(plain(rounds_line(*[(x.right() or 0, x.voters) for x in rounds])))
    except (Refused, Unavailable) as e:
        st.caption(str(e))


def _unlock() -> None:
    """The lecturer password, folded: it turns this view into the lecturer's."""
    if os.environ.get(PASSWORD_ENV):
        with st.expander("Lecturer: run the class vote"):
            lecturer_form("vote-lecturer", "Unlock")
