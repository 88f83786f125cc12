"""Uploads on a shared server: offered on loopback or when the operator says; on disk,
not in the session, once received; one parse at a time; counted against their own allowance, and
refused in one line, leaving nothing behind, when they do not fit."""

import asyncio
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from streamlit import config as st_config
from streamlit.testing.v1 import AppTest

from gpt2viz.model.weights import load_safetensors, random_model, save_safetensors
from gpt2viz.server.uploads import UploadError, Uploads, model_bytes, uploads_allowed
from gpt2viz.spec.config import get_config

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from st_protocol import Session  # noqa: E402
from streamlit_server import StreamlitServer  # noqa: E402

APP = str(ROOT / "app.py")


@pytest.fixture(scope="module")
def tiny_file(tmp_path_factory) -> bytes:
    path = tmp_path_factory.mktemp("upload") / "model.safetensors"
    save_safetensors(random_model(get_config("tiny"), seed=5), path)
    return path.read_bytes()


def build(path):
    return load_safetensors(path).model


# ---------------------------------------------------------------------------- where uploads are offered
@pytest.mark.parametrize("address, setting, allowed", [
    ("localhost", None, True), ("127.0.0.1", None, True), ("::1", None, True), (None, None, False),
    ("0.0.0.0", None, False), ("192.168.1.20", None, False), ("0.0.0.0", "1", True), ("127.0.0.1", "0", False),
    ("0.0.0.0", "0", False), ("0.0.0.0", "yes", False),
])
def test_uploads_are_offered_on_loopback_or_when_the_operator_says(address, setting, allowed):
    env = {} if setting is None else {"GPT2VIZ_ALLOW_UPLOAD": setting}
    assert uploads_allowed(address, env) is allowed


@pytest.fixture
def server_address():
    """Set Streamlit's server.address for AppTest (which runs the app in this process)."""
    before = st_config.get_option("server.address")
    yield lambda address: st_config.set_option("server.address", address)
    st_config.set_option("server.address", before)


@pytest.mark.parametrize("address, setting, offered", [
    ("localhost", None, True), ("0.0.0.0", None, False), ("0.0.0.0", "1", True), ("localhost", "0", False),
])
def test_the_sidebar_offers_upload_only_where_allowed_and_says_why_not(address, setting, offered, server_address,
                                                                       monkeypatch):
    server_address(address)
    if setting is None:
        monkeypatch.delenv("GPT2VIZ_ALLOW_UPLOAD", raising=False)
    else:
        monkeypatch.setenv("GPT2VIZ_ALLOW_UPLOAD", setting)
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["weights"] = "hf-cache"
    at.run()
    assert not at.exception
    assert ("upload" in at.sidebar.radio(key="weights").options) is offered
    note = [c.value for c in at.sidebar.caption if c.value.startswith("Uploads are off on this server")]
    assert len(note) == (0 if offered else 1)
    if not offered:
        assert "GPT2VIZ_ALLOW_UPLOAD=1" in note[0] and "python -m gpt2viz download gpt2" in note[0]


# ---------------------------------------------------------------------------- the store
def test_identical_uploads_are_one_file_and_one_model_gone_with_the_last_session(tmp_path, tiny_file):
    store = Uploads(tmp_path / "up")
    a, b = store.receive(tiny_file, "a.safetensors", "s1"), store.receive(tiny_file, "b.safetensors", "s2")
    assert a.digest == b.digest and store.files() == [tmp_path / "up" / a.digest / "model.safetensors"]
    built = []
    model_a, _ = store.model(a, lambda p: built.append(p) or build(p))
    model_b, _ = store.model(b, build)
    assert model_a is model_b and len(built) == 1 and store.models_bytes() == model_bytes(store.path(a.digest))
    a.release()
    assert store.files() and store.models_bytes() > 0
    b.release()
    assert store.files() == [] and store.models_bytes() == 0 and store.disk_used() == 0


def test_a_session_that_ended_releases_its_file(tmp_path, tiny_file):
    store = Uploads(tmp_path / "up")
    held = store.receive(tiny_file, "m.safetensors", "gone")
    kept = store.receive(tiny_file, "m.safetensors", "here")
    assert store.sweep(lambda session: session == "here") == 1 and held.released and not kept.released
    del kept  # the session's state collected: its ticket's finalizer releases the file
    assert store.files() == []


def test_an_upload_that_does_not_fit_is_refused_before_it_is_parsed(tmp_path, tiny_file):
    need = 4 * sum(p.numel() for p in random_model(get_config("tiny")).parameters())
    store = Uploads(tmp_path / "up", budget=need - 1)
    held = store.receive(tiny_file, "m.safetensors", "s1")
    built = []
    with pytest.raises(UploadError) as refused:
        store.model(held, built.append)
    assert built == [] and "\n" not in str(refused.value) and "more than the" in str(refused.value)
    held.release()
    assert store.files() == [] and store.models_bytes() == 0


def test_models_in_use_are_never_unloaded_idle_ones_are_and_rebuilt(tmp_path, tiny_file):
    now = [0.0]
    need = model_bytes_of(tiny_file, tmp_path)
    store = Uploads(tmp_path / "up", budget=need + need // 2, idle_seconds=600, clock=lambda: now[0])
    other = save_other(tmp_path)
    a = store.receive(tiny_file, "a.safetensors", "s1")
    b = store.receive(other, "b.safetensors", "s2")
    store.model(a, build)
    now[0] = 60.0  # a's model is in use (a minute ago): b must wait
    with pytest.raises(UploadError, match="other students are using take"):
        store.model(b, build)
    now[0] = 700.0  # a idle for more than 10 minutes: unloaded to make room, and a's owner told later
    _, rebuilt_b = store.model(b, build)
    assert not rebuilt_b and store.unloaded.keys() == {a.digest}
    now[0] = 1400.0
    _, rebuilt_a = store.model(a, build)
    assert rebuilt_a and store.unloaded.keys() == {b.digest}


def model_bytes_of(data: bytes, tmp_path) -> int:
    path = tmp_path / "measure.safetensors"
    path.write_bytes(data)
    return model_bytes(path)


def save_other(tmp_path) -> bytes:
    path = tmp_path / "other.safetensors"
    save_safetensors(random_model(get_config("tiny"), seed=6), path)
    return path.read_bytes()


def test_one_upload_is_parsed_at_a_time_the_others_wait_with_a_message(tmp_path, tiny_file):
    store = Uploads(tmp_path / "up")
    files = [tiny_file, save_other(tmp_path)]
    held = [store.receive(data, "m.safetensors", f"s{i}") for i, data in enumerate(files)]
    parsing, most, waited = [0], [0], []
    lock = threading.Lock()

    def slow_build(path):
        with lock:
            parsing[0] += 1
            most[0] = max(most[0], parsing[0])
        time.sleep(0.3)
        with lock:
            parsing[0] -= 1
        return build(path)

    threads = [threading.Thread(target=store.model, args=(h, slow_build, lambda i=i: waited.append(i)))
               for i, h in enumerate(held)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most[0] == 1 and len(waited) == 1 and store.models_bytes() == 2 * model_bytes(store.path(held[0].digest))


def test_a_file_that_is_not_safetensors_is_refused_in_one_line_naming_it(tmp_path):
    store = Uploads(tmp_path / "up")
    held = store.receive(b"PK\x03\x04 a zip, as torch.save writes", "weights.safetensors", "s1")
    with pytest.raises(ValueError) as refused:
        store.model(held, build)
    message = str(refused.value)
    assert message.startswith("model.safetensors is a PyTorch pickle checkpoint") and "\n" not in message
    held.release()
    assert store.files() == [] and list((tmp_path / "up").iterdir()) == []


def test_a_full_upload_folder_refuses_and_writes_nothing(tmp_path, tiny_file):
    store = Uploads(tmp_path / "up", disk=len(tiny_file) - 1)
    with pytest.raises(UploadError, match="upload folder is full"):
        store.receive(tiny_file, "m.safetensors", "s1")
    assert store.files() == [] and store.disk_used() == 0


# ---------------------------------------------------------------------------- a real server
@pytest.fixture
def serve(tmp_path, monkeypatch):
    """Start app.py on loopback (uploads offered) with its temporary files in tmp_path/tmp; or `script`,
    on `address`, by `command` (StreamlitServer's)."""
    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    monkeypatch.setenv("STREAMLIT_SERVER_ENABLE_EXPENSIVE_MEMORY_STATS", "true")
    monkeypatch.delenv("GPT2VIZ_ALLOW_UPLOAD", raising=False)
    servers = []

    def start(script: str = APP, address: str = "127.0.0.1", command: list[str] | None = None, **env):
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        server = StreamlitServer(script, ROOT, address=address, command=command)
        servers.append(server)
        server.wait_healthy(180)
        return server
    yield start
    for server in servers:
        server.stop()


def upload_folder(tmp_path) -> list[Path]:
    """Everything in the server's upload folder, folders included."""
    return [p for d in (tmp_path / "tmp").glob("gpt2viz-uploads-*") for p in d.rglob("*")]


def memory_stats(base: str) -> dict[str, int]:
    """Streamlit's cache_memory_bytes by cache type, summed (session state, uploaded files…)."""
    with urllib.request.urlopen(base + "/_stcore/metrics?families=cache_memory_bytes", timeout=30) as r:
        text = r.read().decode()
    totals: dict[str, int] = {}
    for line in text.splitlines():
        if line.startswith("cache_memory_bytes{"):
            kind = line.split('cache_type="')[1].split('"')[0]
            totals[kind] = totals.get(kind, 0) + int(float(line.rsplit(" ", 1)[1]))
    return totals


async def upload_and_view(base: str, data: bytes, query: str = "weights=upload&model=tiny"):
    s = Session(base)
    await s.open("", query)
    first = await s.view("", query)
    status = await s.upload(first.uploaders["model.safetensors"], "model.safetensors", data)
    loaded = await s.view("", query)
    again = await s.view("", query)  # a later run: the uploader still shows the file
    return s, status, loaded, again


def test_an_uploaded_file_is_used_from_disk_and_its_bytes_leave_the_session(serve, tmp_path, tiny_file):
    """Streamlit sizes each session's state (pympler, the model's tensors included): the uploading
    session's state is the size of one on random tiny weights, not that plus the file."""
    server = serve()

    async def go():
        s, status, loaded, again = await upload_and_view(server.base, tiny_file)
        alone = memory_stats(server.base)
        other = Session(server.base)
        await other.open("", "model=tiny")
        assert (await other.view("", "model=tiny")).ok
        time.sleep(5.5)  # Streamlit keeps these figures for 5 s
        both = memory_stats(server.base)
        await s.close()
        await other.close()
        return status, loaded, again, alone, both
    status, loaded, again, alone, both = asyncio.run(go())
    assert status == 204 and loaded.ok and again.ok and not loaded.errors
    for view in (loaded, again):
        assert any("tiny from an upload" in c for c in view.captions), view.captions
    folder, stored = upload_folder(tmp_path)
    assert folder.is_dir() and stored.name == "model.safetensors" and stored.stat().st_size == len(tiny_file)
    assert "UploadedFileManager" not in alone  # Streamlit's copy is gone
    uploading, random_tiny = alone["st_session_state"], both["st_session_state"] - alone["st_session_state"]
    assert uploading < random_tiny + len(tiny_file) // 4, (uploading, random_tiny)


def test_a_refused_upload_says_why_in_one_line_and_leaves_nothing_behind(serve, tmp_path, tiny_file):
    server = serve(GPT2VIZ_UPLOAD_BUDGET_MB="1")

    async def go():
        s, status, loaded, again = await upload_and_view(server.base, tiny_file)
        stats = memory_stats(server.base)
        await s.close()
        return status, loaded, again, stats
    status, loaded, again, stats = asyncio.run(go())
    assert status == 204 and loaded.ok and again.ok
    for view in (loaded, again):  # said again while the uploader shows the file
        assert len(view.errors) == 1 and "\n" not in view.errors[0], view.errors
        assert "more than the 1 MiB this server allows uploaded models" in view.errors[0]
        assert any("Using random gpt2 weights" in c for c in view.captions)
    assert upload_folder(tmp_path) == []
    assert "UploadedFileManager" not in stats


def test_an_upload_with_fewer_token_rows_than_gpt2_s_vocabulary_is_refused_as_a_folder_would_be(serve, tmp_path):
    """A 16-token model was taken, then 7 of 8 pages could not be drawn: GPT-2's tokenizer gives ids
    up to 50,256. The upload path now reads the file as the folder path does, and refuses it."""
    from gpt2viz.spec.config import GPT2Config

    path = tmp_path / "small.safetensors"
    save_safetensors(random_model(GPT2Config("small", n_layer=1, n_head=2, n_embd=8, vocab_size=16, n_positions=32),
                                  seed=1), path)
    server = serve()

    async def go():
        s, status, loaded, again = await upload_and_view(server.base, path.read_bytes())
        await s.close()
        return status, loaded, again
    status, loaded, again = asyncio.run(go())
    assert status == 204 and loaded.ok and again.ok
    for view in (loaded, again):
        assert len(view.errors) == 1 and "\n" not in view.errors[0], view.errors
        assert "the model has 16 token rows but its vocabulary" in view.errors[0] and "50,256" in view.errors[0]
        assert not any("from an upload" in c for c in view.captions)
    assert upload_folder(tmp_path) == []


def test_removing_the_file_from_the_uploader_deletes_it_from_disk(serve, tmp_path, tiny_file):
    server = serve()

    async def go():
        s, _, loaded, _ = await upload_and_view(server.base, tiny_file)
        assert len(upload_folder(tmp_path)) == 2  # its folder and the file
        for state in s.widget_states.values():  # the browser's ✕: the uploader's state without the file
            state.file_uploader_state_value.ClearField("uploaded_file_info")
        removed = await s.view("", "weights=upload&model=tiny")
        await s.close()
        return loaded, removed
    loaded, removed = asyncio.run(go())
    assert removed.ok and not any("tiny from an upload" in c for c in removed.captions)
    assert upload_folder(tmp_path) == []


# ---------------------------------------------------------------------------- the proxy's bound
def test_the_nginx_template_lets_two_uploads_arrive_at_once_and_refuses_a_third():
    """deploy/nginx.conf.template: limit_conn on /_stcore/upload_file, one counter for the server."""
    import http.server
    import os
    import socket

    from nginx_proxy import NGINX, Proxy

    if not os.access(NGINX, os.X_OK):
        pytest.skip(f"no nginx at {NGINX}")

    class Ok(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # the proxy's start-up check asks for /_stcore/health
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args):
            pass

    upstream = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Ok)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    held = []
    try:
        with Proxy([f"127.0.0.1:{upstream.server_address[1]}"]) as proxy:
            def start_put(n: int) -> socket.socket:  # headers and the first bytes of a 100 MB body
                s = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
                s.sendall(f"PUT /_stcore/upload_file/session/file{n} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                          f"Content-Length: {100 * 2**20}\r\n\r\n".encode() + b"x" * 65536)
                return s
            held = [start_put(1), start_put(2)]
            time.sleep(0.5)
            third = start_put(3)
            answer = third.recv(200).decode(errors="replace")
            third.close()
            assert answer.startswith("HTTP/1.1 503"), answer
            with urllib.request.urlopen(proxy.base + "/_stcore/health", timeout=10) as r:  # other paths pass
                assert r.status == 200
    finally:
        for s in held:
            s.close()
        upstream.shutdown()


# ---------------------------------------------------------------------------- serve.py's gate
def test_the_upload_gate_lets_two_uploads_in_at_once_and_the_others_wait_their_turn():
    from gpt2viz.server.upload_gate import UploadGate

    inside, most, released = [0], [0], asyncio.Event()

    async def streamlit(scope, receive, send):  # stands for Streamlit: an upload takes until `released`
        inside[0] += 1
        most[0] = max(most[0], inside[0])
        if scope["method"] == "PUT":
            await released.wait()
        inside[0] -= 1

    gate = UploadGate(streamlit, at_once=2)

    async def go():
        put = {"type": "http", "method": "PUT", "path": "/_stcore/upload_file/s/f"}
        uploads = [asyncio.create_task(gate(dict(put), None, None)) for _ in range(5)]
        await asyncio.sleep(0.05)
        waiting = sum(not t.done() for t in uploads) - gate.passing
        other = {"type": "http", "method": "GET", "path": "/_stcore/health"}
        await asyncio.wait_for(gate(other, None, None), 1)  # other requests pass the gate by
        passing = gate.passing
        released.set()
        await asyncio.wait_for(asyncio.gather(*uploads), 5)
        return passing, waiting
    passing, waiting = asyncio.run(go())
    assert passing == 2 and waiting == 3 and most[0] == 3  # 2 uploads and the health check
    assert gate.passing == 0 and inside[0] == 0


def test_serve_py_serves_the_app_and_its_uploads(serve, tmp_path, tiny_file):
    server = serve(str(ROOT / "serve.py"))

    async def go():
        s, status, loaded, again = await upload_and_view(server.base, tiny_file)
        attention = await s.view("attention", "weights=upload&model=tiny")
        await s.close()
        return status, loaded, attention
    status, loaded, attention = asyncio.run(go())
    assert status == 204 and loaded.ok and any("tiny from an upload" in c for c in loaded.captions)
    assert attention.ok and attention.h1 == "Causal self-attention"
