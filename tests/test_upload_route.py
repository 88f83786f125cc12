"""Streamlit's upload route serves only what the page offers, whichever command starts the app: with
model uploads off, a PUT larger than the lesson uploader's 1 MB is refused (413) before its body is
read, a session holds at most one such file, and every uploader's own limit holds on the server. And
a visitor of a server that is not local never reads a traceback.

Each test is an attack on a real server (Streamlit's protocol, as a hostile student's script would
send it): before, four PUTs of 700 MB to a class server with uploads off took it from 912 to 2,914 MiB,
and a 40 MiB lesson file parsed on every rerun added 1.3 GB."""

import asyncio
import json
import socket
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from st_protocol import Session  # noqa: E402
from streamlit_server import StreamlitServer  # noqa: E402
from test_uploads import memory_stats, serve  # noqa: E402, F401 (serve: a fixture)

PY = sys.executable
COMMANDS = {  # the ways docs/deploy.md and the README start a server
    "streamlit run app.py": [PY, "-m", "streamlit", "run", str(ROOT / "app.py")],
    "streamlit run serve.py": [PY, "-m", "streamlit", "run", str(ROOT / "serve.py")],
    "gpt2viz app": [PY, "-m", "gpt2viz", "app"],
}
MODEL_PUT = 700 * 2**20


@pytest.fixture
def start(serve, monkeypatch):  # noqa: F811 (the fixture imported above)
    """A server started by `command` (a key of COMMANDS; "" for `streamlit run script`) on `address`,
    neither uploads nor downloads set by the environment."""
    monkeypatch.delenv("GPT2VIZ_ALLOW_DOWNLOAD", raising=False)

    def go(command: str, address: str = "0.0.0.0", script: Path = ROOT / "app.py", **env) -> StreamlitServer:
        return serve(str(script), address, COMMANDS.get(command), **env)
    return go


def put_headers(s: Session, length: int, file_id: str = "f1") -> bytes:
    """A PUT's request line and headers as the browser's uploader sends them (its XSRF cookie and token)."""
    xsrf = s._xsrf() or ""
    return (f"PUT /_stcore/upload_file/{s.session_id}/{file_id} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Cookie: _streamlit_xsrf={xsrf}\r\nX-Xsrftoken: {xsrf}\r\n"
            "Content-Type: multipart/form-data; boundary=b\r\n"
            f"Content-Length: {length}\r\n\r\n").encode()


def answer_to_headers_alone(base: str, s: Session, length: int, wait: float = 15.0) -> str:
    """Send only the headers of a `length`-byte PUT: the status line the server answers with before
    any of the body (or "" if it waits for the body)."""
    port = int(base.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=wait) as sock:
        sock.sendall(put_headers(s, length))
        try:
            return sock.recv(200).decode(errors="replace").split("\r\n")[0]
        except TimeoutError:
            return ""


async def session(base: str, page: str = "", query: str = "model=tiny", run: bool = True) -> Session:
    s = Session(base)
    await s.open(page, query)
    if not s._xsrf():
        await asyncio.to_thread(s._get, base + "/_stcore/health", 30)
    if run:
        assert (await s.view(page, query)).ok
    return s


def uploaded_bytes(base: str) -> int:
    return memory_stats(base).get("UploadedFileManager", 0)


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_class_server_refuses_a_model_sized_put_before_reading_it(start, command):
    server = start(command)

    async def go():
        s = await session(server.base)  # a session id is known once a run has begun
        status = answer_to_headers_alone(server.base, s, MODEL_PUT)
        await s.close()
        return status
    status = asyncio.run(go())
    assert " 413" in status, status
    with urllib.request.urlopen(server.base + "/_stcore/health", timeout=30) as r:  # and it still serves
        assert r.status == 200


def test_through_the_class_servers_nginx_a_model_sized_put_is_refused_at_its_headers(monkeypatch):
    """nginx reads a request's body whole (to its temporary folder) before the app answers: with
    uploads off, `class-server` sets its body limit to the app's 1 MB."""
    import io

    from gpt2viz.server.class_server import ClassServer, free_port, nginx_path

    if nginx_path() is None:
        pytest.skip("no nginx")
    for name in ("GPT2VIZ_ALLOW_UPLOAD", "GPT2VIZ_ALLOW_DOWNLOAD"):
        monkeypatch.delenv(name, raising=False)
    server = ClassServer(1, free_port(), "127.0.0.1", log=io.StringIO())

    async def go():
        s = await session(server.base)
        status = answer_to_headers_alone(server.base, s, MODEL_PUT)
        await s.close()
        return status
    try:
        server.start(timeout=180)
        status = asyncio.run(go())
    finally:
        server.stop()
    assert " 413" in status, status


def test_one_session_holds_at_most_one_small_files_worth(start):
    """Five PUTs of 0.9 MB (each within the route's 1 MB) to one session with uploads off."""
    server = start("streamlit run app.py")

    async def go():
        s = await session(server.base)
        statuses = []
        for i in range(5):
            statuses.append(await s.upload(f"no-such-uploader-{i}", "f.bin", b"x" * 900_000))
        await s.close()
        return statuses
    statuses = asyncio.run(go())
    assert statuses == [204] * 5
    assert uploaded_bytes(server.base) <= 2**20


def test_many_sessions_together_hold_at_most_the_servers_received_files_cap():
    """A script opens many sessions and sends each a file within its session's 1 MB: Streamlit's own
    manager, capped as the app caps it, holds at most the server's cap over all sessions, drops the
    oldest first, and always keeps the newest."""
    from streamlit.runtime.memory_uploaded_file_manager import MemoryUploadedFileManager
    from streamlit.runtime.uploaded_file_manager import UploadedFileRec

    from gpt2viz.server.received import MIB, cap_session_files, received_files_mb

    manager = MemoryUploadedFileManager("/_stcore/upload_file")
    manager.add_file("early", UploadedFileRec("e", "f.bin", "application/octet-stream", b"x" * 900_000))
    cap_session_files(manager, MIB, received_files_mb(False, {"GPT2VIZ_RECEIVED_FILES_MB": "3"}) * MIB)
    held = []
    for i in range(8):
        manager.add_file(f"s{i}", UploadedFileRec(f"f{i}", "f.bin", "application/octet-stream", b"x" * 900_000))
        held.append(sorted((s, f) for s, files in manager.file_storage.items() for f in files))
    assert all(len(h) == 3 for h in held[2:]), held  # 3 x 0.9 MB fit in 3 MiB, a fourth does not
    assert held[-1] == [("s5", "f5"), ("s6", "f6"), ("s7", "f7")]  # the newest kept, the oldest dropped
    assert ("early", "e") not in held[2]  # a file from before the cap was installed goes first
    assert received_files_mb(False, {}) == 64 and received_files_mb(True, {}) == 1400
    assert received_files_mb(False, {"GPT2VIZ_RECEIVED_FILES_MB": "0"}) == 64  # nonsense: the default


def test_the_lesson_uploaders_1_mb_holds_on_a_server_with_model_uploads(start):
    """On a local server (model uploads on: the route takes 700 MB) a 3 MB lesson file is refused in
    one line, and its bytes leave the session; a good file is parsed once and kept, not its bytes."""
    server = start("streamlit run app.py", address="127.0.0.1")
    label = "Or your own (.json or .toml)"
    lesson = json.loads((ROOT / "lessons" / "attention-demo.json").read_text())

    async def go():
        s = await session(server.base, "lesson", "")
        first = await s.view("lesson", "")
        big = json.dumps(lesson | {"title": "x" * 3_000_000}).encode()
        assert await s.upload(first.uploaders[label], "big.json", big) == 204
        refused = await s.view("lesson", "")
        held_after_refusal = uploaded_bytes(server.base)
        assert await s.upload(first.uploaders[label], "good.json", json.dumps(lesson).encode()) == 204
        opened = await s.view("lesson", "")
        again = await s.view("lesson", "")  # a rerun: the parse is kept, the bytes are gone
        held_after_good = uploaded_bytes(server.base)
        await s.close()
        return refused, held_after_refusal, opened, again, held_after_good
    refused, held_after_refusal, opened, again, held_after_good = asyncio.run(go())
    assert refused.ok and any("takes files of up to 1 MB" in e for e in refused.errors), refused.errors
    assert held_after_refusal == 0
    for view in (opened, again):
        assert view.ok and not view.errors and any(lesson["title"] in t for t in view.texts)
    assert held_after_good == 0


# ---------------------------------------------------------------------------- tracebacks
FAILING = '''
import streamlit as st
from gpt2viz.ui.errors import hide_error_details, page_errors

hide_error_details()
where = st.query_params.get("where", "inside")
if where == "outside":  # an error the app's own guard does not see: Streamlit's box, then
    raise RuntimeError("/srv/secret/path.py exploded")
with page_errors():
    raise RuntimeError("/srv/secret/path.py exploded")
'''


@pytest.mark.parametrize("address, shown", [("0.0.0.0", False), ("127.0.0.1", True)])
def test_a_visitor_of_a_class_server_never_reads_a_traceback(start, tmp_path, address, shown):
    script = tmp_path / "failing.py"
    script.write_text(FAILING)
    server = start("", address=address, script=script, PYTHONPATH=str(ROOT))

    async def go():
        s = await session(server.base, run=False)
        inside = await s.view("", "where=inside")
        outside = await s.view("", "where=outside")
        await s.close()
        return inside, outside
    inside, outside = asyncio.run(go())
    time.sleep(0.5)
    log = server.log_tail(100_000)
    assert "/srv/secret/path.py exploded" in log  # the server's log keeps it, always
    for view in (inside, outside):
        seen = " ".join(view.exceptions + view.traces + view.texts)
        assert ("secret" in seen) is shown, seen
        if not shown:
            assert not any(view.traces)
    if not shown:
        assert any("could not be drawn" in e for e in inside.errors) and not inside.exceptions
