"""Lessons: open a lesson file (one shipped in lessons/, or the lecturer's own), build one from the
sidebar's weights and text and a sequence of stops, and sign its link once the lecturer's password is
given (gpt2viz/teaching/lessons.py says what a lesson and its link are)."""

import json
import os
import time
from dataclasses import replace
from pathlib import Path
from urllib.parse import urlsplit

import streamlit as st

from gpt2viz.server.received import LESSON_UPLOAD_MB
from gpt2viz.spec.pages import BY_URL, DEFAULT
from gpt2viz.teaching import lesson_text
from gpt2viz.teaching import lessons as lf
from gpt2viz.ui.anatomy import selection
from gpt2viz.ui.lesson_draft import keep as keep_draft
from gpt2viz.ui.lesson_draft import restore as restore_draft
from gpt2viz.ui.lesson_view import (
    LOCAL,
    PASSWORD_ENV,
    is_lecturer,
    key_problem,
    lecturer_form,
    seen_values,
    server_key,
)
from gpt2viz.ui.site_download import site_download
from gpt2viz.ui.text import plain
from gpt2viz.ui.upload import read_once

SHIPPED = Path(__file__).resolve().parents[1] / "lessons"
DRAFT = "_lesson_draft_stops"
LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")  # a link to them opens the student's own computer
QR_PRESENTED_PX = 560

sel = selection()
# this page's names outlive its run (Streamlit keeps the "Add stop" callback, and with it this module's
# names, until the session's next run): the weights' size and seed, never the model
random_weights = {"source": "random", "model": sel.weights.model_name, "seed": sel.weights.seed}
sel = replace(sel, weights=None)
st.title("Lessons")
st.markdown("A lesson is a path through the app for a class: the weights, one or two texts, and stops, each a "
            "page with its view and your note or question. Students open one link, land on stop 1, and step "
            "with **next** and **back**; the controls you pin are shown but locked. "
            + lesson_text.shipped_lessons(len([*SHIPPED.glob("*.json"), *SHIPPED.glob("*.toml")])))


def summary(lesson: lf.Lesson) -> None:
    st.markdown(f"**{plain(lesson.title)}** · {lesson.weights['source']} weights · {len(lesson.stops)} stops · "
                f"students may change: {', '.join(lesson.free) or 'nothing but the stop'}")
    st.dataframe([{"stop": i, "page": BY_URL[s.page].title, "mode": s.mode, "block": s.block, "head": s.head,
                   "note": s.note} for i, s in enumerate(lesson.stops, 1)], hide_index=True, width="stretch")


def open_here(lesson: lf.Lesson, key: str) -> None:
    """Step through it in this session (no signature needed, no link to share)."""
    if st.button("Open it here", key=key, icon=":material/play_arrow:"):
        st.session_state[LOCAL] = lesson
        st.switch_page(BY_URL[lesson.stops[0].page].file, query_params={"stop": "0"})


# ---------------------------------------------------------------------------- open a file
st.header("Open a lesson file")
shipped = {lf.load(p).title: p for p in sorted(SHIPPED.glob("*.json"))}
left, right = st.columns(2)
pick = left.selectbox("Shipped with the app", list(shipped), index=None, placeholder="Choose a lesson",
                      key="lesson_shipped")
upload = right.file_uploader("Or your own (.json or .toml)", type=["json", "toml"], key="lesson_upload",
                             max_upload_size=LESSON_UPLOAD_MB)
opened = None
try:  # the file's own 1 MB held on the server too, parsed once (not on every rerun)
    opened = read_once(upload, "lesson_upload", LESSON_UPLOAD_MB, lf.loads_bytes)
    if opened is None and pick is not None:
        opened = lf.load(shipped[pick])
except ValueError as e:  # a LessonError, or a file over the uploader's limit
    st.error(str(e), icon=":material/error:")
if opened is not None:
    summary(opened)
    left, right = st.columns(2)
    with left:
        open_here(opened, "open_file")
    with right:
        site_download(opened, "open_file", is_lecturer())


# ---------------------------------------------------------------------------- build one
st.header("Build a lesson")
st.markdown("The lesson takes the sidebar's weights and text. For each stop, set the view in the sidebar "
            "(mode, block, head), choose the page, write a note or a question, and add it.")
WEIGHTS = {"random": lambda: random_weights,
           "demo": lambda: {"source": "demo"},
           "hf-cache": lambda: {"source": "hf-cache", "checkpoint": st.session_state.get("checkpoint", "")}}
restore_draft()  # what the builder held when the lecturer left it, or what this page's address holds
stops = st.session_state.setdefault(DRAFT, [])
title = st.text_input("Title", max_chars=lf.MAX_TITLE, key="lesson_title", placeholder="Attention, step by step")
text_b = st.text_input("Text B, for Compare and patch (optional)", max_chars=lf.MAX_TEXT, key="lesson_text_b")
cols = st.columns([2, 5])  # wide enough for a page title at 800 px; the button below them
page = cols[0].selectbox("Page", lf.PAGES, format_func=lambda u: BY_URL[u].title, key="lesson_page",
                         index=lf.PAGES.index("attention"))
cols[1].text_input("Note or question for this stop", max_chars=lf.MAX_NOTE, key="lesson_note")
with st.expander("A question the class votes on at this stop (optional)", icon=":material/how_to_vote:"):
    st.text_input("Question", max_chars=lf.MAX_QUESTION, key="lesson_q_text",
                  placeholder="Which earlier token will the second 'play' attend to?")
    st.text_area(f"Choices, one a line ({lf.MIN_CHOICES} to {lf.MAX_CHOICES}); none for a number answer",
                 max_chars=lf.MAX_CHOICES * (lf.MAX_CHOICE + 1), key="lesson_q_choices", height=120)
    st.text_input("The answer: the right choice's line (1, 2, ...), or the number", max_chars=24, key="lesson_q_answer")
    st.text_input("A number answer's tolerance: how far from it still counts as right (0 if empty)", max_chars=24,
                  key="lesson_q_tolerance")
    st.selectbox("The stop's charts", lf.REVEALS, key="lesson_q_reveal")
if page in lf.PAGE_VALUES:
    seen = seen_values(page)
    st.caption(f"{BY_URL[page].title}'s own controls as you left them on it: "
               + (f"`{json.dumps(seen, ensure_ascii=False)}`, kept with the stop unless you type others below"
                  if seen else "not seen yet in this session (open the page and set them, or type them below)"))
    st.text_input("The page's own controls (JSON, optional)", key="lesson_values", max_chars=300,
                  placeholder=json.dumps({k: v[0] if isinstance(v, tuple) else " after" if v is str else 0 for k, v in
                                          list(lf.PAGE_VALUES[page].items())[:2]}),
                  help=f"{BY_URL[page].title}: " + ", ".join(lf.PAGE_VALUES[page]))


def add_stop() -> None:
    """Before the next run (a callback): the stop as the widgets now say, with the note typed just before
    the click, joins the list; the note box empties for the next one."""
    ss = st.session_state
    stop = {"page": ss["lesson_page"], "mode": ss.get("mode", "full"), "block": int(ss.get("block", 0)),
            "head": int(ss.get("head", 0))} | ({"note": ss["lesson_note"]} if ss.get("lesson_note") else {})
    raw = ss.get("lesson_values", "").strip() if stop["page"] in lf.PAGE_VALUES else ""
    if not raw and (seen := seen_values(stop["page"])):  # the page's controls as the lecturer left them
        stop["values"] = seen
    if raw:
        try:
            stop["values"] = json.loads(raw)
        except json.JSONDecodeError:
            stop["values"] = raw  # the lesson's check then names the field: stops[i].values
    if ss.get("lesson_q_text", "").strip():
        stop["question"] = lf.question_from_builder(ss["lesson_q_text"], ss.get("lesson_q_choices", ""),
                                                    ss.get("lesson_q_answer", ""), ss.get("lesson_q_tolerance", ""),
                                                    ss.get("lesson_q_reveal", lf.REVEALS[0]))
    stops.append(stop)
    ss["lesson_note"] = ss["lesson_values"] = ""
    for key in ("lesson_q_text", "lesson_q_choices", "lesson_q_answer", "lesson_q_tolerance"):
        ss[key] = ""
    ss["lesson_q_reveal"] = lf.REVEALS[0]


st.button(f"Add stop {len(stops) + 1}", icon=":material/add:", key="lesson_add",
          disabled=len(stops) >= lf.MAX_STOPS, on_click=add_stop)
st.caption(f"Stop {len(stops) + 1} would be {BY_URL[page].title} in {sel.mode.value} mode, block {sel.block}, "
           f"head {sel.head}.")
# the sidebar's controls and the page values the stops set (a student may move the lens's position)
set_here = (k for s in stops if isinstance(s.get("values"), dict) for k in s["values"])
freeable = list(dict.fromkeys([*lf.CONTROLS, *set_here]))
free = st.multiselect("Students may change", freeable, key="lesson_free",
                      help="every other control the lesson sets is shown but locked")
keep_draft(stops)
built = None
if stops:
    # the page's own controls as one column, as the file writes them
    st.dataframe([{k: json.dumps(v, ensure_ascii=False) if k == "values" else v for k, v in s.items()} for s in stops],
                 width="stretch")
    if st.button("Remove the last stop", icon=":material/undo:"):
        stops.pop()
        st.rerun()
    draft = {"title": title or "Untitled lesson", "text": sel.text, "stops": stops} | (
        {"text_b": text_b} if text_b else {}) | ({"free": free} if free else {})
    if sel.source not in WEIGHTS:
        st.error("weights: a lesson's weights are random, the demo model or a Hugging Face cache checkpoint, "
                 "not a file of this session.", icon=":material/error:")
    else:
        try:
            built = lf.parse(draft | {"weights": WEIGHTS[sel.source]()})
        except lf.LessonError as e:
            st.error(str(e), icon=":material/error:")
if built is not None:
    text = json.dumps(built.as_dict(), indent=1, ensure_ascii=False)
    left, middle, right = st.columns(3)
    left.download_button("The lesson as a file (JSON)", text, file_name="lesson.json", mime="application/json",
                         icon=":material/download:")
    with middle:
        open_here(built, "open_built")
    with right:
        site_download(built, "open_built", is_lecturer())


# ---------------------------------------------------------------------------- sign
st.header("Share it: a signed link")
st.caption(":material/visibility: A link carries its lesson in the open: its texts and notes are readable by anyone "
           "who has the link (the signature stops changes, not reading). Put nothing private in a note.")
key, problem = server_key(), key_problem()
if key is None and problem != f"{lf.KEY_ENV} is not set":
    st.error(problem, icon=":material/key_off:")
password = os.environ.get(PASSWORD_ENV, "")
if key is None:
    st.info(f"This server has no usable lesson key, so it can neither sign links nor check them (a student who "
            f"opens one reads only that): start it with `{lf.KEY_ENV}` set to at least {lf.MIN_KEY_CHARS} characters "
            "(for example `openssl rand -hex 32`; every replica the same key). Lessons still open here from files, "
            "for this session.", icon=":material/key_off:")
elif not password:
    st.info(f"Signing here needs a lecturer password: set `{PASSWORD_ENV}` on the server. Or sign on the "
            "server: `python -m gpt2viz lesson link FILE`.", icon=":material/lock:")
elif not is_lecturer():
    lecturer_form("lecturer", "Unlock signing")
else:
    choices = {"the lesson opened above": opened, "the lesson built above": built}
    choices = {k: v for k, v in choices.items() if v is not None}
    if not choices:
        st.caption("Open or build a lesson above to sign its link.")
    else:
        reached = urlsplit(st.context.url or "")
        base = st.text_input("The address students open", value=f"{reached.scheme}://{reached.netloc}"
                             if reached.netloc else "", key="lesson_base", max_chars=200,
                             help="the start of the link, as the students' browsers reach this server (the "
                                  "command line's --base); by default the address this browser reached it at")
        if urlsplit(base if "//" in base else "//" + base).hostname in LOCAL_HOSTS:
            st.warning(f"{base or 'This address'} names this computer itself: students cannot open a link to it "
                       "from theirs. Type the address they reach this server at (its name or IP address on "
                       "the network).", icon=":material/wifi_off:")
        cols = st.columns([3, 2, 2], vertical_alignment="bottom")
        which = cols[0].radio("Sign", list(choices), horizontal=True, key="lesson_sign_which")
        hours = cols[1].number_input("Expires after (hours; 0: never)", 0.0, 24.0 * 365, 0.0, step=1.0,
                                     key="lesson_hours")
        if cols[2].button("Sign the link", icon=":material/link:", type="primary", key="lesson_sign"):
            lesson = choices[which]
            try:
                token = lf.sign(lesson, key, int(time.time() + hours * 3600) if hours else None)
            except lf.LessonError as e:
                st.error(str(e), icon=":material/error:")
            else:
                path = lf.href(lesson.stops[0].page, token, 0, DEFAULT)
                link = base.strip().rstrip("/") + path
                st.code(link, language=None, wrap_lines=True)
                # projected, as large as the first screen allows: a phone at the back of the room reads it
                st.image(lf.qr_svg(link), caption="The same link as a QR code, for the projector",
                         width=QR_PRESENTED_PX if sel.present else 280)
                until = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(lf.verify(token, key).expires or 0))
                st.caption(lesson_text.link_length(len(link), until if hours else None))
                st.markdown(f'<a href="{path}" target="_self">Open stop 1 →</a>', unsafe_allow_html=True)
