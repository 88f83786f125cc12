"""The Lessons page's "Download as a website": the lesson's static site (gpt2viz/lesson_site.py) as a
zip, written when clicked, under a spinner, then offered as a file.

Writing it runs every stop of the lesson in a process of its own (about half a minute for the shipped
demo lesson on two cores): on a shared server only a lecturer who gave the password, or the operator
on their own machine, may start it, and one site is written at a time on the whole server."""

import threading

import streamlit as st

from ..lesson_site import zipped
from ..teaching import lessons as lf
from .export import slug
from .visitor import is_local

_BUILT = "_site_zip"  # session key: (the lesson's digest, the zip's bytes)
HELP = ("A folder of plain HTML pages, one per stop, with every chart interactive: it opens offline from the "
        "disk, or from any static web host (docs/deploy.md). Written when you click: about a minute.")


@st.cache_resource
def _one_at_a_time() -> threading.Lock:
    return threading.Lock()


def site_download(lesson: lf.Lesson, key: str, lecturer: bool) -> None:
    """The button, and once the site is written, the file to save."""
    ident = lf.digest(repr(lesson))
    allowed = lecturer or is_local()
    missing = lf.missing_weights(lesson.weights)  # its site would name weights its pages were not drawn on
    if st.button("Download as a website", key=f"site-{key}", icon=":material/language:", help=HELP,
                 disabled=not allowed or bool(missing)):
        lock = _one_at_a_time()
        if not lock.acquire(blocking=False):
            st.warning("Another lesson's website is being written on this server: try again in a minute.",
                       icon=":material/hourglass_top:")
        else:
            try:
                with st.spinner("Drawing every stop of the lesson, as the app shows it…"):
                    st.session_state[_BUILT] = (ident, zipped(lesson))
            except (RuntimeError, OSError) as e:
                st.error(f"The website could not be written: {e}", icon=":material/error:")
            finally:
                lock.release()
    if missing:
        st.caption(f":material/cloud_off: This lesson's numbers need {missing}, which this machine does not have: "
                   "its website is not written.")
    elif not allowed:
        st.caption("On a shared server the lecturer's password (below) unlocks this; or write it on your own "
                   "machine: `python -m gpt2viz lesson export FILE --out DIR`.")
    built = st.session_state.get(_BUILT)
    if built is not None and built[0] == ident:
        st.download_button(f"Save the website ({len(built[1]) / 1e6:.1f} MB, .zip)", built[1],
                           file_name=f"{slug(lesson.title) or 'lesson'}-site.zip", mime="application/zip",
                           key=f"site-save-{key}", icon=":material/download:", on_click="ignore")
