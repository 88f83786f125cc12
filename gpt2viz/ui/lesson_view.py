"""A lesson in the app: opened from a signed link (`?lesson=<payload>.<tag>&stop=<i>`)
or, for this session only, from a file; its values pinned before the sidebar's controls are declared;
the bar at the top of each stop (its place, back and next, the lecturer's note).

A link's stop is the one value a student changes; every other value comes from the lesson: the URL's
other keys are dropped before any control reads them, and the controls the lesson does not leave
free are declared disabled (ui/state.py `locked`). A signed link's next and back are same-tab links
(each opens a fresh session, as a shared link does); a file's lesson lives in the session, so its
next and back switch pages within it.
"""

import hmac
import json
import logging
import os
import time
from dataclasses import dataclass
from html import escape

import streamlit as st

from ..analysis.claims import Measured, measure, path_share, prompt_logit_diff, share_floor
from ..model.demo_model import DEMO_PATH, demo_vocabulary
from ..model.modes import Mode
from ..model.tokenizer import TextError, encode, readable
from ..server.guesses import GuessLimit, guesses_allowed
from ..server.trace_cache import view_asked
from ..spec.pages import BY_URL, DEFAULT
from ..spec.serving import MODEL_DIRS, model_dirs
from ..teaching import lessons as lf
from ..teaching.claim_text import claim_reading
from ..teaching.lesson_text import lesson_refused, missing_weights, password_wait, stop_refused
from ..teaching.lesson_text import place as place_text
from . import present, visitor
from .cache import DRAWING, cached_checkpoints, get_trace, trace_cache
from .state import LESSON_VIEW, LOCKED, Selection, add_to_url, carry_view, hold_controls, keep_only_url, sources_enabled
from .text import code_span, plain

STOP_NOTE = "_lesson_stop_note"  # a link's stop the lesson lacks, said once on the stop's page
LINK_KEYS = ("lesson", "stop", "present")  # presenting is the viewer's choice, not the lesson's
LOCAL = "_lesson_local"  # session key: a lesson opened from a file here (not signed)
AT = "_lesson_at"  # session key: (lesson, stop) whose values were last pinned
LEFT = "_lesson_left"  # session key: the view of the stop just left by the navigation, for the URL to carry


@dataclass(frozen=True)
class OpenLesson:
    lesson: lf.Lesson
    i: int  # the stop shown
    token: str | None  # the link's `lesson` value; None for a file's lesson opened in this session

    @property
    def stop(self) -> lf.Stop:
        return self.lesson.stops[self.i]

    @property
    def ident(self) -> str:
        return lf.digest(self.token) if self.token else "local:" + lf.digest(repr(self.lesson))


log = logging.getLogger(__name__)
_logged: set[str] = set()  # key problems already written to the server's log


def key_problem() -> str | None:
    """What is wrong with this server's lesson key, in the operator's words; None when it is usable."""
    try:
        key = lf.server_key(os.environ)
    except lf.LessonError as e:
        return str(e)
    return None if key else f"{lf.KEY_ENV} is not set"


def server_key() -> bytes | None:
    """GPT2VIZ_LESSON_KEY, or None when it is missing or too short to trust; the problem goes to the
    server's log (once), never to the student who opens a link."""
    problem = key_problem()
    if problem is None:
        return lf.server_key(os.environ)
    if problem not in _logged:
        _logged.add(problem)
        log.warning("lesson links can be neither signed nor checked: %s", problem)
    return None


PASSWORD_ENV = "GPT2VIZ_TEACHER_PASSWORD"  # the lecturer's password: signing links, running the class vote
LECTURER = "_lecturer"  # the session's flag once the lecturer password was given


def is_lecturer() -> bool:
    return bool(st.session_state.get(LECTURER))


def lecturer_form(key: str, button: str) -> None:
    """The lecturer password in a form; right, it makes this session the lecturer's (a rerun). Wrong
    guesses are counted per session and per address (server/guesses.py), one a second per session."""
    password = os.environ.get(PASSWORD_ENV, "")
    with st.form(key):
        given = st.text_input("Lecturer password", type="password", max_chars=200, key=f"{key}_password")
        if st.form_submit_button(button, icon=":material/lock_open:"):
            who = {"session": visitor.session_id(), "address": visitor.visitor_address()}  # looked up at the call
            wait = password_guesses().wait(**who)
            if wait:
                st.error(password_wait(wait), icon=":material/lock:")
            elif password and hmac.compare_digest(given.encode(), password.encode()):
                st.session_state[LECTURER] = True
                st.rerun()
            else:
                password_guesses().failed(**who)
                with DRAWING.aside(rejoin=True):  # others' pages are drawn meanwhile
                    time.sleep(1)  # a guess a second, per session
                st.error("Wrong password.", icon=":material/lock:")


@st.cache_resource
def password_guesses() -> GuessLimit:
    """Wrong lecturer passwords, counted per session and per address (server/guesses.py)."""
    return GuessLimit(guesses_allowed())


def _is_stop(raw, n: int) -> bool:
    try:
        return 0 <= int(raw) < n
    except (TypeError, ValueError):
        return False


def _stop_index(raw, n: int) -> int:
    """The URL's stop, from 0; a value that is not one of the lesson's stops is stop 0."""
    return int(raw) if _is_stop(raw, n) else 0


def open_lesson() -> OpenLesson | None:
    """The lesson of this URL (call from app.py before the controls), its values pinned; None without one.
    A link whose signature does not match, or that expired, is said in one line, and nothing of it is
    used: the app shows its own default view."""
    token = st.query_params.get("lesson")
    if token is not None:
        try:
            lesson = lf.verify(token, server_key())
        except lf.LessonError as e:
            st.error(str(e), icon=":material/link_off:")
            token, lesson = None, None
    elif st.session_state.get(LOCAL) is not None and "stop" in st.query_params:
        lesson = st.session_state[LOCAL]
    else:
        lesson = None
    missing = lesson is not None and _missing_weights(lesson.weights)
    if missing and token is not None:
        unavailable(lesson)  # a student's link: the lesson's words, no page of other weights
    if missing:
        st.error(lesson_refused(*missing), icon=":material/error:")
        lesson = None
    if lesson is None:
        st.session_state.pop(LOCKED, None)  # out of a lesson: every control is the reader's again
        if st.session_state.pop(AT, None) is not None:  # left it within this session (the navigation)
            st.session_state[LEFT] = st.session_state.get(LESSON_VIEW)
        st.session_state.pop(LESSON_VIEW, None)
        return None
    asked, n = st.query_params.get("stop"), len(lesson.stops)
    opened = OpenLesson(lesson, _stop_index(asked, n), token)
    if asked is not None and not _is_stop(asked, n):  # said by the stop bar, after a switch to the stop's page
        st.session_state[STOP_NOTE] = stop_refused(code_span(repr(asked[:24])), n)
    _pin(opened)
    return opened


def unavailable(lesson: lf.Lesson) -> None:
    """A signed lesson whose weights this server lacks: one line saying what its numbers need, then its
    title, notes and claims as text (never as markup), and nothing else: no page of other weights."""
    st.html("<style>[data-testid='stSidebar'], [data-testid='stSidebarCollapsedControl'], "
            "[data-testid='stExpandSidebarButton'] {display: none}</style>")  # no controls: nothing to set here
    st.warning(f"This lesson's numbers need {lf.weights_name(lesson.weights)} on the lecturer's server, which "
               "this server does not have: below are its notes without them.", icon=":material/cloud_off:")
    st.header(plain(lesson.title), anchor=False)
    for i, s in enumerate(lesson.stops, 1):
        st.markdown(f"**Stop {i}: {BY_URL[s.page].title}**" + (f"  \n{plain(s.note)}" if s.note else ""))
        for c in s.claims:
            st.caption(f"Published: {plain(c['text'])} ({plain(c['citation'])}); not measured here.")
        if s.question:
            st.caption(f"Question: {plain(s.question['text'])}")
    st.stop()


def _missing_weights(weights: dict) -> tuple[str, str | None] | None:
    """What of the lesson's weights this server lacks (a source, a checkpoint), and the checkpoint to
    download where that is what is missing; None when nothing is."""
    if weights["source"] == "folder" and weights["name"] not in model_dirs():  # by name: never a path
        return missing_weights("folder", name=weights["name"], model_dirs_env=MODEL_DIRS), None
    if weights["source"] not in sources_enabled():
        return missing_weights(weights["source"]), None
    if weights["source"] == "hf-cache" and weights["checkpoint"] not in [c.name for c in cached_checkpoints()]:
        return missing_weights("hf-cache", checkpoint=weights["checkpoint"]), weights["checkpoint"]
    return None


def _pin(opened: OpenLesson) -> None:
    """Stop i's values into the session before the controls are declared: a control left free once per
    stop (it is the student's after that), a locked one on every run, whatever the URL of this run
    says (a history navigation would otherwise seed it from the URL); which ones are locked, every run."""
    lesson, i = opened.lesson, opened.i
    pins, locked = lesson.pins(i), lesson.locked(i)
    first = st.session_state.get(AT) != (opened.ident, i)
    if first and opened.token:
        keep_only_url(LINK_KEYS)
    for key, value in pins.items():
        if first or key in locked and st.session_state.get(key) != value:
            st.session_state[key] = value
    hold_controls({key: pins[key] for key in locked})
    st.session_state[AT] = (opened.ident, i)
    st.session_state[LOCKED] = locked


def _stop_href(opened: OpenLesson, i: int, presenting: bool) -> str:
    """The address of signed stop i, presenting if this view is (the viewer's choice survives next and back)."""
    return lf.href(opened.lesson.stops[i].page, opened.token, i, DEFAULT) + (f"&{present.KEY}=true" if presenting
                                                                             else "")


def _stop_link(opened: OpenLesson, presenting: bool, container=st):
    """draw(css_class, label, i): a link to stop i. A signed lesson's is a same-tab link (a fresh session,
    as a shared link is); a file's lesson lives in this session, so its links switch pages within it
    (the presentation toggle keeps its value there)."""
    def draw(cls: str, label: str, i: int) -> None:
        if opened.token:
            container.markdown(f'<a href="{escape(_stop_href(opened, i, presenting))}" target="_self"'
                               + (f' class="{cls}"' if cls else "") + f">{escape(label)}</a>", unsafe_allow_html=True)
        else:
            container.page_link(BY_URL[opened.lesson.stops[i].page].file, label=label, query_params={"stop": str(i)})
    return draw


def place(opened: OpenLesson) -> str:
    """Where the class is: "stop 3 of 6 · Output"."""
    return place_text(opened.i, len(opened.lesson.stops), BY_URL[opened.stop.page].title)


def stop_bar(opened: OpenLesson, url: str, presenting: bool = False) -> None:
    """At the top of the page (from app.py, after the navigation): the lesson's title, the stop's place,
    back and next, and the lecturer's note; presenting, the presentation bar holds the place, a large
    back and next, and the note stands under it as a caption. On another page than the stop's, go to
    the stop's."""
    stop, n = opened.stop, len(opened.lesson.stops)
    if (url or DEFAULT) != stop.page:
        # (the bound presentation toggle keeps its own value and URL key: Streamlit refuses it here)
        st.switch_page(BY_URL[stop.page].file,
                       query_params=({"lesson": opened.token} if opened.token else {}) | {"stop": str(opened.i)})
    if note := st.session_state.pop(STOP_NOTE, None):
        st.warning(note, icon=":material/edit:")
    if presenting:
        present.chrome(("", opened.i + 1) if opened.i + 1 < n else None, back=opened.i - 1 if opened.i else None,
                       place=place(opened), note=carry_view(stop.note), link=_stop_link(opened, True))
    else:
        left, back, nxt = st.columns([6, 1, 1], vertical_alignment="center")
        left.markdown(f":material/school: **{plain(opened.lesson.title)}** · {place(opened)}"
                      + ("" if opened.token else " · opened from a file, in this session only"))
        if opened.i > 0:
            _stop_link(opened, False, back)("", "← back", opened.i - 1)
        if opened.i + 1 < n:
            _stop_link(opened, False, nxt)("", "next →", opened.i + 1)
        if stop.note:
            st.info(carry_view(stop.note), icon=":material/record_voice_over:")
    locked = sorted(opened.lesson.locked(opened.i))
    if locked:
        st.sidebar.caption(":material/lock: The lesson sets " + ", ".join(locked) + ".")


# ---------------------------------------------------------------------------- links out of a lesson
def view_params(opened: OpenLesson, sel: Selection) -> dict[str, str]:
    """The URL values of the view a stop shows (the lesson's weights and texts, the stop's mode, block
    and head as they now are), and the way back to the stop: what a link out of the lesson carries."""
    out = {"weights": sel.source, "text": sel.text, "mode": sel.mode.value, "block": str(sel.block),
           "head": str(sel.head)}
    if sel.weights.random:
        out |= {"model": sel.weights.model_name, "seed": str(sel.weights.seed)}
    if opened.lesson.text_b is not None:
        out["text_b"] = st.session_state.get("text_b", opened.lesson.text_b)
    out |= {present.KEY: "true"} if sel.present else {}
    return out | ({"from_lesson": opened.token, "from_stop": str(opened.i)} if opened.token else {})


def keep_view(opened: OpenLesson | None, sel: Selection) -> None:
    """After the controls (from app.py): at a stop, the view its links carry (ui/state.py link_params);
    on the page a student reached from a stop by the navigation, that view into the URL, which
    Streamlit's navigation left bare (the pinned values never were in it)."""
    if opened is not None:
        st.session_state[LESSON_VIEW] = view_params(opened, sel)
        return
    left = st.session_state.pop(LEFT, None)
    if left:
        add_to_url(left)


def back_offer() -> None:
    """On a page reached by a link out of a signed lesson: the way back to the stop it left."""
    token, raw = st.query_params.get("from_lesson"), st.query_params.get("from_stop")
    if token is None:
        return
    try:
        lesson = lf.verify(token, server_key())
    except lf.LessonError:
        return  # not a lesson this server signed, or expired: no way back to offer
    i = _stop_index(raw, len(lesson.stops))
    back = escape(lf.href(lesson.stops[i].page, token, i, DEFAULT))
    st.caption(f':material/school: Outside the lesson **{plain(lesson.title)}** · '
               f'<a href="{back}" target="_self">← back to the lesson, stop {i + 1}</a>', unsafe_allow_html=True)


# ---------------------------------------------------------------------------- the class's runs, once
def stop_runs(lesson: lf.Lesson, n_positions: int) -> list[tuple[tuple[int, ...], Mode]]:
    """The distinct (tokens, mode) runs of a lesson's stops: the text in each stop's mode, and text B in
    full mode where a stop compares or knocks out (the pages that run it)."""
    runs = []
    for s in lesson.stops:
        texts = [(lesson.text, Mode(s.mode))]
        if s.page in ("whatif", "patch"):
            texts = [(lesson.text, Mode.FULL)] + ([(lesson.text_b, Mode.FULL)] if s.page == "patch" and
                                                   lesson.text_b else [])
        for text, mode in texts:
            try:
                run = (tuple(encode(text)[:n_positions]), mode)
            except TextError:
                continue
            if run not in runs and (mode is not Mode.TRAINING or len(run[0]) > 1):
                runs.append(run)
    return runs


@st.cache_resource(max_entries=32, show_spinner="Preparing this lesson's stops for the class…")
def _warm(ident: str, weights_key, _sel: Selection, _lesson: lf.Lesson) -> int:
    runs = stop_runs(_lesson, _sel.config.n_positions)
    for ids, mode in runs:
        with view_asked():  # each stop's run waits in line from now, not all from the lecturer's view
            get_trace(_sel.weights, ids, mode, _sel.weights.seed, cache=trace_cache())
    return len(runs)


def warm(opened: OpenLesson, sel: Selection) -> None:
    """The first time a lesson is opened on this server, compute every stop's run once, so that the
    class following it is served from the shared trace cache (on the lesson's weights only)."""
    if sel.source == opened.lesson.weights["source"] and sel.weights.built:
        _warm(opened.ident, sel.weights.key, sel, opened.lesson)


# ---------------------------------------------------------------------------- published claims, measured here
@st.cache_resource(max_entries=64, show_spinner="Measuring the published claim on these weights…")
def _measured(weights_key, claim_json: str, floor: float, _sel: Selection) -> Measured | str:
    """A claim measured on the weights in view, once per weights and claim on this server; or why it
    cannot be (the weights lack a head it names). `floor`: the lesson's bar for a share's denominator."""
    c = json.loads(claim_json)
    if c["measure"] == "path_share":
        try:
            return path_share(_sel.weights.model, c["sender"], c["receiver"], c["answer"], c["on_text"],
                              c["threshold"], c["bound"] == "at most", c["ablation"])
        except ValueError as e:
            return str(e)
    vocabulary = demo_vocabulary() if c["tokens"] == "demo" and DEMO_PATH.is_file() else None
    try:
        return measure(_sel.weights.model, c["measure"], c["heads"], c["threshold"], vocabulary, c["prompts"],
                       c["seed"], floor)
    except ValueError as e:
        return str(e)


def check_claims(opened: OpenLesson, sel: Selection) -> None:
    """Under the stop's note: each published claim beside its measurement on the weights in view."""
    floor = share_floor(c for s in opened.lesson.stops for c in s.claims)
    for c in opened.stop.claims:
        m = _measured(sel.weights.key, json.dumps(c, sort_keys=True), floor, sel)
        ok = not isinstance(m, str) and m.agrees
        prompt = prompt_logit_diff(sel.weights.model, sel.text) \
            if c["measure"] == "logit_diff" and not isinstance(m, str) else None
        named = None if prompt is None else (readable(prompt[0]), readable(prompt[1]), prompt[2])
        (st.success if ok else st.warning)(claim_reading(c, m, named), icon=":material/fact_check:")


SEEN = "_lesson_page_values"  # session key: {page: its own controls as the lecturer last left them}


def remember(url: str) -> None:
    """The page's own controls (lessons.PAGE_VALUES) as this run left them, for the lesson builder: a stop
    added afterwards keeps the view the lecturer set on the page."""
    kinds = lf.PAGE_VALUES.get(url)
    if not kinds:
        return
    seen = {k: _as(kinds[k], st.session_state[k]) for k in kinds if st.session_state.get(k) is not None}
    st.session_state.setdefault(SEEN, {})[url] = {k: v for k, v in seen.items() if v is not None}


def _as(kind, value):
    """A widget's value as a lesson file says it (None: not one a stop can hold)."""
    if isinstance(kind, tuple) or kind is str:
        return value if isinstance(value, str) and value else None
    if kind is bool:
        return bool(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if kind is float else int(value)


def seen_values(url: str) -> dict:
    """The page's own controls as the lecturer last left them on it in this session ({} if never seen)."""
    return dict(st.session_state.get(SEEN, {}).get(url, {}))
