"""benchmarks/st_protocol.py against a small Streamlit app started here: a real script_finished,
an exception when a page raises, page links by hash, a page that does not exist, a lost server."""

import asyncio
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from st_protocol import Disconnected, Session
from streamlit_server import StreamlitServer

APP = '''
import streamlit as st

def home():
    st.title("Home of " + st.query_params.get("name", "nobody"))
    st.text_area("Text", "default text", key="text", bind="query-params")

def fails():
    st.title("About to fail")
    raise ValueError("raised on purpose")

page = st.navigation([st.Page(home, title="Home", url_path="home", default=True),
                      st.Page(fails, title="Fails", url_path="fails")])
page.run()
'''


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("st_protocol")
    (folder / "app.py").write_text(APP)
    return folder


@pytest.fixture(scope="module")
def server(folder):
    with StreamlitServer("app.py", folder) as srv:
        srv.wait_healthy(timeout=60)
        yield srv


def views(server, *asks):
    """Open one session at the first ask's page and view every (page, query) in turn."""
    async def go():
        session = Session(server.base)
        await session.open(*asks[0])
        try:
            return session, [await session.view(page, query, timeout=30) for page, query in asks]
        finally:
            await session.close()
    return asyncio.run(go())


def test_a_view_ends_with_script_finished_and_carries_the_query_string(server):
    session, (home,) = views(server, ("", "name=Ada&text=typed%20by%20Ada"))
    assert home.ok and home.error is None and home.seconds > 0
    assert home.h1 == "Home of Ada" and home.boxes == {"Text": "typed by Ada"}
    assert session.session_id and set(session.page_hashes) == {"", "fails"}


def test_an_exception_on_the_page_is_counted(server):
    _, (home, fails, again) = views(server, ("", "name=Ada"), ("fails", "name=Ada"), ("", "name=Bo"))
    assert home.ok and not home.exceptions
    assert not fails.ok and fails.error is None  # the script ran to its end: Streamlit shows the exception
    assert len(fails.exceptions) == 1 and fails.exceptions[0].startswith("ValueError")
    assert fails.h1 == "About to fail"  # reached by its page hash, within the session
    assert again.ok and again.h1 == "Home of Bo"


def test_a_page_that_does_not_exist_is_an_error(server):
    _, (missing,) = views(server, ("no-such-page", ""))
    assert missing.error is not None and "page not found" in missing.error


def test_a_server_gone_is_disconnected(folder):
    async def go():
        with StreamlitServer("app.py", folder) as other:
            other.wait_healthy(timeout=60)
            session = Session(other.base)
            await session.open("", "")
            assert (await session.view("", "")).ok
            other.stop()
            with pytest.raises(Disconnected):
                await session.view("", "", timeout=30)
            with pytest.raises(Disconnected):
                await session.reopen(timeout=5)
    asyncio.run(go())

