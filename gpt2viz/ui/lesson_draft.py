"""The Lessons page's builder, kept while the lecturer leaves it to set a stop's view and comes back, and
across a reload: Streamlit forgets a page's widgets when another page runs, so the builder's fields are
kept in the session, and with its stops in the page's address (`draft`: teaching/lessons.py draft_token),
so a reload, or the address opened in another browser, gives the same builder back."""

import streamlit as st

from ..teaching import lessons as lf

KEY = "draft"  # the URL key
KEPT = "_lesson_builder"  # session key: the builder's fields as last drawn ({"title": ..., "stops": [...]})
STOPS = "_lesson_draft_stops"  # session key: the stops added so far (views/lesson.py DRAFT)
# the builder's fields by their draft names, and their widgets' keys
WIDGETS = {"title": "lesson_title", "text_b": "lesson_text_b", "page": "lesson_page", "note": "lesson_note",
           "values": "lesson_values", "free": "lesson_free", "q_text": "lesson_q_text",
           "q_choices": "lesson_q_choices", "q_answer": "lesson_q_answer", "q_tolerance": "lesson_q_tolerance",
           "q_reveal": "lesson_q_reveal"}


def _from_address() -> dict | None:
    """The builder the address holds, its stops into the session; None without one. A value too long or
    not a draft is said in one line and left."""
    token = st.query_params.get(KEY)
    if not token:
        return None
    try:
        fields, stops, dropped = lf.read_draft(token)
    except lf.LessonError as e:
        st.warning(f"The lesson draft in this address was not restored: {e}.", icon=":material/link_off:")
        return None
    if dropped:
        st.caption(f"{dropped} of the draft's stops in this address were not a lesson's stops and are left out.")
    if not st.session_state.get(STOPS):
        st.session_state[STOPS] = stops
    return fields


def restore() -> None:
    """Before the builder's widgets: the values it held when the lecturer left it (this session's), or in
    a fresh session, the address's; a field the lecturer has typed since is theirs."""
    ss = st.session_state
    kept = ss.get(KEPT)
    if kept is None:
        kept = _from_address()
        if kept is None:
            return
        ss[KEPT] = kept
    freeable = {*lf.CONTROLS, *(k for s in ss.get(STOPS, []) if isinstance(s.get("values"), dict) for k in s["values"])}
    for name, key in WIDGETS.items():
        value = kept.get(name)
        if key in ss or value is None or name == "page" and value not in lf.PAGES or \
                name == "q_reveal" and value not in lf.REVEALS:
            continue
        ss[key] = [f for f in value if f in freeable] if name == "free" else value


def keep(stops: list[dict]) -> None:
    """After the builder's widgets: its fields into the session and, with its stops, into the address
    (left out of it, in one line, when longer than a link may be)."""
    ss = st.session_state
    fields = {name: ss.get(key) for name, key in WIDGETS.items()
              if ss.get(key) not in (None, "", [], lf.REVEALS[0])}  # a default says nothing
    ss[KEPT] = fields
    draft = fields | ({"stops": stops} if stops else {})
    if draft.keys() <= {"page"}:  # nothing typed or added yet
        if KEY in st.query_params:
            del st.query_params[KEY]
        return
    try:
        token = lf.draft_token(draft)
    except lf.LessonError as e:
        st.caption(f":material/link_off: Not kept in this page's address ({e}): a reload would lose it; save the "
                   "lesson as a file.")
        if KEY in st.query_params:
            del st.query_params[KEY]
        return
    if st.query_params.get(KEY) != token:
        st.query_params[KEY] = token
