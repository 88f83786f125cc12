"""benchmarks/st_protocol.py against a small Streamlit app started here: a real script_finished,
an exception when a page raises, page links by hash, a page that does not exist, a lost server;
and deploy/nginx.conf.template in front of two of them: affinity, and a session that comes back
with its view on the other replica when its own is killed."""

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from nginx_proxy import NGINX, Proxy  # noqa: E402
from st_protocol import Disconnected, Session  # noqa: E402
from streamlit_server import StreamlitServer  # noqa: E402

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



def require_nginx() -> None:
    """Skip without Debian's nginx, except where GPT2VIZ_REQUIRE_NGINX=1 (CI): fail."""
    if not os.access(NGINX, os.X_OK):
        if os.environ.get("GPT2VIZ_REQUIRE_NGINX") == "1":
            pytest.fail(f"no nginx at {NGINX}, and GPT2VIZ_REQUIRE_NGINX=1")
        pytest.skip(f"no nginx at {NGINX}")


def test_through_nginx_sessions_stick_to_a_replica_and_come_back_on_the_other(folder):
    require_nginx()
    with StreamlitServer("app.py", folder) as a, StreamlitServer("app.py", folder) as b:
        a.wait_healthy(timeout=60)
        b.wait_healthy(timeout=60)
        servers = {f"127.0.0.1:{s.port}": s for s in (a, b)}
        with Proxy(list(servers)) as proxy:
            async def go():
                sessions = [Session(proxy.base) for _ in range(4)]
                for i, s in enumerate(sessions):
                    await s.open("", f"name=S{i}")
                    first = await s.view("", f"name=S{i}", timeout=30)
                    again = await s.view("", f"name=S{i}", timeout=30)
                    assert first.ok and again.ok and again.h1 == f"Home of S{i}"
                    assert s.replica in servers and s.cookies  # nginx's affinity cookie
                homes = [s.replica for s in sessions]
                victim = homes[0]
                os.killpg(servers[victim].proc.pid, signal.SIGKILL)
                servers[victim].proc.wait(timeout=10)
                for i, s in enumerate(sessions):
                    if homes[i] == victim:
                        with pytest.raises(Disconnected):
                            await s.view("", f"name=S{i}", timeout=30)
                        await s.reopen(timeout=10)
                    back = await s.view("", f"name=S{i}", timeout=30)
                    assert back.ok and back.h1 == f"Home of S{i}" and s.replica != victim
                    await s.close()
            asyncio.run(go())
