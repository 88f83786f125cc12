"""What a visitor reads when a page cannot be drawn: one line, never a traceback, unless the server
is its developer's own.

A traceback names the server's files and code; on a server that is not local (server.address, the
rule of uploads: spec/serving.py) the visitor reads one line and the server's log keeps the
traceback. A local server shows it, as Streamlit does, unless its `client.showErrorDetails` says
otherwise (the class server's loopback processes pass "none"). Refusals (a run, or a model, that
does not fit the budget) are said in their own line wherever the server runs.
"""

import contextlib
import logging

import streamlit as st
from streamlit import config, runtime
from streamlit.runtime import Runtime

from ..server.model_cache import ModelTooLarge
from ..server.trace_cache import RunTooLarge
from ..spec.serving import is_local

log = logging.getLogger("gpt2viz.pages")
SHOWN = ("full", "stacktrace", True, "true", "True", False, "false", "False")  # values that show a traceback
FAILED = ("This page could not be drawn: something went wrong on the server, and its log says what. "
          "Another text, mode or page may work.")


def serving() -> bool:
    """Whether the app runs in a Streamlit server (AppTest runs it under a mock runtime: there, errors
    reach the test as they are, and the process's settings stay as the tests set them)."""
    return runtime.exists() and type(runtime.get_instance()) is Runtime


def shows_tracebacks() -> bool:
    return not serving() or is_local(config.get_option("server.address")) and \
        config.get_option("client.showErrorDetails") in SHOWN


def hide_error_details() -> None:
    """On a server that is not local, Streamlit's own error box (an error outside `page_errors`) says
    nothing of the error either."""
    if serving() and not is_local(config.get_option("server.address")) and \
            config.get_option("client.showErrorDetails") != "none":
        config.set_option("client.showErrorDetails", "none")


@contextlib.contextmanager
def page_errors():
    """Around a script run: a refusal in its line; any other error logged, and said in one line where
    tracebacks are not shown (Streamlit's stop and rerun are not errors: they pass)."""
    try:
        yield
    except (RunTooLarge, ModelTooLarge) as e:
        st.warning(str(e), icon=":material/memory:")
    except Exception:
        if shows_tracebacks():
            raise
        log.exception("a page failed")
        st.error(FAILED, icon=":material/error:")
