"""Whether this visitor is the server's own operator (a local server) or one of a class.

A server listening on loopback looks local, but behind a proxy (deploy/nginx.conf.template, the
class server) every visitor comes from the network: the template sets PROXIED_HEADER on every
request it passes, and a session whose request carries it never counts as local, whatever
server.address says. A visitor who forges the header only takes features away from itself.
"""

import streamlit as st

from ..spec.serving import LOOPBACK, PROXIED_HEADER


def proxied() -> bool:
    try:
        return st.context.headers.get(PROXIED_HEADER) is not None
    except Exception:  # outside a session (a test's bare call): no request, nothing proxied
        return False


def server_address() -> str | None:
    """server.address as the serving rules read it: None (not loopback) for a proxied visitor."""
    return None if proxied() else st.get_option("server.address")


def visitor_address() -> str:
    """Where this visitor's request came from, for the server's log: behind the proxy, the address the
    proxy appended last to X-Forwarded-For (what came before it, the visitor may have written)."""
    try:
        if proxied():
            return st.context.headers.get("X-Forwarded-For", "?").split(",")[-1].strip()
        return st.context.ip_address or "?"
    except Exception:
        return "?"


def is_local() -> bool:
    """The operator on their own machine: uploads, downloads and uncapped pages are theirs."""
    return server_address() in LOOPBACK


def session_id() -> str:
    """This browser tab's session: a random id kept in its state (made on first use)."""
    import uuid

    return st.session_state.setdefault("_visitor_session", uuid.uuid4().hex)
