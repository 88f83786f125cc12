"""One command starts a class server on every core, N app processes behind nginx,
and stops all it started; without nginx it refuses in one line. One host among several
(a backend host without nginx, a front host with other hosts' processes as upstreams)."""

import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from gpt2viz.server.class_server import healthy, nginx_path, replica_env

ROOT = Path(__file__).resolve().parents[1]


def test_processes_share_a_secret_split_the_budget_and_turn_off_uploads():
    env = replica_env(4, {"GPT2VIZ_TRACE_BUDGET_MB": "4096"})
    # half the budget for the runs the processes share (counted once), the rest split four ways
    assert (env["GPT2VIZ_SHARED_RUNS_MB"], env["GPT2VIZ_TRACE_BUDGET_MB"]) == ("2048", "512")
    # each keeps mapped at most the folder over five: a fifth of it no process holds, where new runs find room
    assert env["GPT2VIZ_SHARED_RUNS_KEEP_MB"] == "409"
    assert len(env["STREAMLIT_SERVER_COOKIE_SECRET"]) == 64
    assert (env["GPT2VIZ_ALLOW_UPLOAD"], env["GPT2VIZ_ALLOW_DOWNLOAD"], env["GPT2VIZ_THREADS"]) == ("0", "0", "1")
    assert env["STREAMLIT_CLIENT_SHOW_ERROR_DETAILS"] == "none"  # its loopback processes look local
    assert env["GPT2VIZ_RANDOM_MODELS"] == "gpt2,tiny"  # a link to gpt2-xl builds nothing through it
    assert env["MALLOC_ARENA_MAX"] == "1"  # every script thread in the heap the last run freed
    asked = replica_env(2, {"GPT2VIZ_ALLOW_UPLOAD": "1", "STREAMLIT_SERVER_COOKIE_SECRET": "s", "GPT2VIZ_THREADS": "2"})
    assert (asked["GPT2VIZ_ALLOW_UPLOAD"], asked["STREAMLIT_SERVER_COOKIE_SECRET"], asked["GPT2VIZ_THREADS"]) == \
        ("1", "s", "2")
    assert asked["GPT2VIZ_TRACE_BUDGET_MB"] == "512"  # the default 2,048: 1,024 shared, the rest split in two
    own = replica_env(2, {"GPT2VIZ_SHARED_RUNS_MB": "0"})  # the operator turns sharing off
    assert (own["GPT2VIZ_SHARED_RUNS_MB"], own["GPT2VIZ_TRACE_BUDGET_MB"]) == ("0", "1024")
    alone = replica_env(1, {})  # one process has no one to share with
    assert (alone["GPT2VIZ_SHARED_RUNS_MB"], alone["GPT2VIZ_TRACE_BUDGET_MB"]) == ("0", "2048")


def cli(*args, env=None, **kw):
    env = {**os.environ, "GPT2VIZ_REPLICA_HEADER": "1"} if env is None else env  # which replica answered
    return subprocess.Popen([sys.executable, "-m", "gpt2viz", "class-server", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True, **kw)


def test_without_nginx_it_refuses_in_one_line(tmp_path):
    env = {**os.environ, "PATH": str(tmp_path)}  # no nginx on PATH
    if os.access("/usr/sbin/nginx", os.X_OK):
        pytest.skip("nginx is installed at /usr/sbin/nginx, which the command finds without PATH")
    out, err = cli("--processes", "2", env=env).communicate(timeout=60)
    assert err.strip().count("\n") == 0 and "nginx is not installed" in err


@pytest.mark.parametrize("args,says", [(["--processes", "0"], "at least 1"), (["--port", "70000"], "between 1")])
def test_bad_numbers_exit_2_with_one_line(args, says):
    p = cli(*args)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 2 and says in err and err.strip().count("\n") == 0


def children(pid: int) -> list[int]:
    """Every process in the process groups the command started (its own and its children's)."""
    out = subprocess.run(["ps", "-eo", "pid,ppid,pgid"], capture_output=True, text=True).stdout.split("\n")[1:]
    rows = [tuple(map(int, r.split())) for r in out if r.strip()]
    kids = {p for p, pp, _ in rows if pp == pid}
    return [p for p, pp, g in rows if p in kids or g in kids]


def stop_all(p: subprocess.Popen | None) -> None:
    """A class server stopped with what it started: its nginx and app processes run in sessions of their
    own, so a failed test that killed the server's group alone left them serving (seen after a CI failure)."""
    if p is None or p.poll() is not None:
        return
    started = children(p.pid)
    os.killpg(p.pid, signal.SIGKILL)
    for c in started:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(c, signal.SIGKILL)


def replicas_answering(base: str, asks: int = 12) -> set[str]:
    """The replicas new browsers (no affinity cookie) reach; a replica that is down is tried and passed."""
    seen = set()
    for _ in range(asks):
        with urllib.request.urlopen(base + "/", timeout=10) as r:
            seen.add(r.headers["X-Gpt2viz-Replica"].split(",")[-1].strip())
    return seen


def test_start_serve_through_nginx_lose_a_process_and_stop():
    if nginx_path() is None:
        if os.environ.get("GPT2VIZ_REQUIRE_NGINX") == "1":
            pytest.fail("GPT2VIZ_REQUIRE_NGINX=1 but nginx is not installed")
        pytest.skip("no nginx")
    from gpt2viz.server.class_server import free_port

    port = free_port()
    p = cli("--processes", "2", "--port", str(port), "--address", "127.0.0.1")
    base = f"http://127.0.0.1:{port}"
    try:
        end = time.monotonic() + 180
        while not healthy(base):
            assert p.poll() is None, p.communicate()[1]
            assert time.monotonic() < end, "the class server did not answer in 180 s"
            time.sleep(0.5)
        replicas = replicas_answering(base)  # new browsers spread over both processes
        assert len(replicas) == 2, replicas
        apps = [c for c in children(p.pid) if "streamlit" in Path(f"/proc/{c}/cmdline").read_text(errors="ignore")]
        assert len(apps) >= 2, apps
        environ = dict(v.split("=", 1) for v in Path(f"/proc/{apps[0]}/environ").read_text().split("\0") if "=" in v)
        shared = Path(environ["GPT2VIZ_SHARED_RUNS"])  # the folder of the runs its processes share
        assert shared.is_dir() and environ["GPT2VIZ_SHARED_RUNS_MB"] == "1024"
        os.kill(apps[0], signal.SIGKILL)  # a process lost mid-class: nginx answers from the other
        time.sleep(1)
        assert all(healthy(base, timeout=10) for _ in range(4))
        end = time.monotonic() + 180  # and the lost one is started again
        while len(replicas_answering(base)) < 2:
            assert time.monotonic() < end, "the lost process was not started again in 180 s"
            time.sleep(1)
        started = children(p.pid)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        assert "2 app processes behind nginx" in err and "starting it again (restart 1 of 3)" in err
        assert "1024 MiB of runs they share" in err and not shared.exists()  # removed with the rest
        time.sleep(0.5)
        assert not [c for c in started if Path(f"/proc/{c}").exists()], "processes left running"
        assert not healthy(base, timeout=2)
    finally:
        stop_all(p)


# ---------------------------------------------------------------------------- the template, as a visitor sees it
def needs_nginx():
    if nginx_path() is None:
        pytest.skip("no nginx")


@pytest.fixture
def echoes():
    """Two upstreams that answer with their name and the X-Gpt2viz-Proxied header they received."""
    import http.server
    import threading

    servers = []
    for name in ("a", "b"):
        class Echo(http.server.BaseHTTPRequestHandler):
            me = name

            def do_GET(self):
                body = f"{self.me} {self.headers.get('X-Gpt2viz-Proxied')} {self.path}".encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Echo)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
    yield [f"127.0.0.1:{s.server_address[1]}" for s in servers]
    for s in servers:
        s.shutdown()


def ask(base: str, path: str = "/", **headers) -> tuple[int, dict, str]:
    request = urllib.request.Request(base + path, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as r:
            return r.status, dict(r.headers), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), ""


def proxy(servers, **kw):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from nginx_proxy import Proxy

    return Proxy(servers, **kw)


def test_the_proxy_names_no_version_no_replica_and_hides_the_metrics(echoes):
    needs_nginx()
    with proxy(echoes, replica_header=False) as p:
        status, headers, _ = ask(p.base)
        assert status == 200 and headers["Server"] == "nginx" and "X-Gpt2viz-Replica" not in headers
        status, _, body = ask(p.base, "/_stcore/metrics")
        assert status == 404 and " /_stcore/metrics" not in body


def test_the_proxy_marks_every_request_whatever_the_visitor_sent(echoes):
    needs_nginx()
    with proxy(echoes, replica_header=False) as p:
        _, _, body = ask(p.base, "/", **{"X-Gpt2viz-Proxied": "no, I am local"})
        assert body.split()[1] == "1"


def test_a_visitor_cannot_aim_its_affinity_cookie(echoes):
    """The same cookies land on other replicas under another start's secret: no value names a replica."""
    needs_nginx()

    def landing() -> list[str]:
        with proxy(echoes, replica_header=False) as p:
            return [ask(p.base, "/", Cookie=f"gpt2viz_affinity=student-{i}")[2].split()[0] for i in range(24)]
    first, second = landing(), landing()
    assert set(first) == {"a", "b"} and first != second


def test_a_process_that_exits_is_started_again_up_to_the_limit(tmp_path):
    needs_nginx()
    from gpt2viz.server.class_server import ClassServer

    class Gone:
        returncode = -9

        def poll(self):
            return self.returncode

    said = []
    cs = ClassServer(2, 8600, env={"GPT2VIZ_RESTARTS": "2"}, log=None)
    cs._say = said.append
    spawned = []
    cs._spawn = lambda i: spawned.append(i) or Gone()
    cs.apps = [Gone(), type("Alive", (), {"poll": lambda self: None})()]
    for _ in range(4):
        cs.restart_exited()
    assert spawned == [0, 0] and cs.restarts == [2, 0]
    assert said[0].startswith("app process 0 (port") and "starting it again (restart 1 of 2)" in said[0]
    assert "not started again (2 restarts, the limit)" in said[2] and len(said) == 3
    cs.apps = []
    cs.stop()


def test_behind_the_proxy_a_loopback_app_offers_its_visitors_no_uploads():
    """An app started by hand on loopback (local: uploads and downloads on) behind the template: a
    visitor through the proxy is not local, one on the app's own port is."""
    needs_nginx()
    import asyncio

    sys.path.insert(0, str(ROOT / "benchmarks"))
    sys.path.insert(0, str(ROOT / "tests"))
    from st_protocol import Session
    from streamlit_server import StreamlitServer

    from gpt2viz.ui.upload import NO_UPLOADS

    async def captions(base: str) -> list[str]:
        s = Session(base)
        await s.open("tokens", "weights=hf-cache")
        view = await s.view("tokens", "weights=hf-cache")
        await s.close()
        assert view.ok, view.error or view.exceptions
        return view.captions

    with pytest.MonkeyPatch.context() as mp:
        for k in ("GPT2VIZ_ALLOW_UPLOAD", "GPT2VIZ_ALLOW_DOWNLOAD"):
            mp.delenv(k, raising=False)
        with StreamlitServer("app.py", cwd=ROOT) as app:
            app.wait_healthy(timeout=120)
            with proxy([f"127.0.0.1:{app.port}"], replica_header=False) as p:
                assert NO_UPLOADS in asyncio.run(captions(p.base))
                assert NO_UPLOADS not in asyncio.run(captions(app.base))


# ---------------------------------------------------------------------------- several hosts
@pytest.mark.parametrize("args,says", [
    (["--backends-only"], "needs --address"),  # every interface: the students' too
    (["--backends-only", "--address", "127.0.0.1"], "STREAMLIT_SERVER_COOKIE_SECRET alike"),
    (["--upstream", "127.0.0.1:8601"], "STREAMLIT_SERVER_COOKIE_SECRET alike"),
    (["--upstream", "no-port"], "HOST:PORT"),
    (["--upstream", "0.0.0.0:8601"], "HOST:PORT"),
    (["--backends-only", "--address", "10.0.0.2", "--upstream", "10.0.0.3:8601"], "takes no --upstream"),
    (["--backends-only", "--address", "10.0.0.2", "--port", "65535", "--processes", "2"], "for every process"),
])
def test_a_host_among_several_refuses_what_would_not_work_in_one_line(args, says):
    env = {k: v for k, v in os.environ.items() if k != "STREAMLIT_SERVER_COOKIE_SECRET"}
    p = cli(*args, env=env)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 2 and says in err and err.strip().count("\n") == 0, err


def test_the_front_host_puts_other_hosts_processes_behind_its_nginx():
    needs_nginx()
    from gpt2viz.server.class_server import ClassServer

    cs = ClassServer(0, 8600, upstream=["10.0.0.2:8601", "[fd00::2]:8601"],
                     env={"STREAMLIT_SERVER_COOKIE_SECRET": "s" * 64}, log=None)
    assert (cs.upstream, cs.ports, cs.app_address) == (["10.0.0.2:8601", "[fd00::2]:8601"], [], "127.0.0.1")
    cs.stop()
    backend = ClassServer(3, 8601, address="10.0.0.2", backends_only=True,
                          env={"STREAMLIT_SERVER_COOKIE_SECRET": "s" * 64}, log=None)
    assert (backend.ports, backend.app_base(2), backend.nginx) == ([8601, 8602, 8603], "http://10.0.0.2:8603", None)
    assert backend.env["STREAMLIT_SERVER_COOKIE_SECRET"] == "s" * 64  # the operator's, never one made here
    backend.stop()


def wait_healthy(base: str, p: subprocess.Popen, what: str) -> None:
    end = time.monotonic() + 180
    while not healthy(base):
        assert p.poll() is None, f"{what} exited: {p.communicate()[1][-2000:]}"
        assert time.monotonic() < end, f"{what} did not answer in 180 s"
        time.sleep(0.5)


def test_two_hosts_one_lost_its_students_come_back_on_their_view_through_the_other():
    """A backend host (one process on its own port, no nginx) and a front host (one process, nginx,
    the backend as --upstream), one cookie secret: students land on both through the front; the
    backend's process, killed, is started again by its own host; the backend host then lost whole,
    its students reconnect through the front's nginx to the front's process, on the same view."""
    if nginx_path() is None:
        if os.environ.get("GPT2VIZ_REQUIRE_NGINX") == "1":
            pytest.fail("GPT2VIZ_REQUIRE_NGINX=1 but nginx is not installed")
        pytest.skip("no nginx")
    import asyncio
    import secrets

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from st_protocol import Session

    from gpt2viz.server.class_server import free_port

    env = {**os.environ, "GPT2VIZ_REPLICA_HEADER": "1", "STREAMLIT_SERVER_COOKIE_SECRET": secrets.token_hex(32)}
    backend_port, front_port = free_port(), free_port()
    backend_app = f"127.0.0.1:{backend_port}"
    backend = cli("--backends-only", "--address", "127.0.0.1", "--port", str(backend_port), "--processes", "1",
                  env=env)
    front = None
    base = f"http://127.0.0.1:{front_port}"
    try:
        # the backend first: the front host picks free ports for its own process, and must not pick the
        # backend's before that is bound (on one machine, not across hosts)
        wait_healthy(f"http://{backend_app}", backend, "the backend host")
        front = cli("--processes", "1", "--port", str(front_port), "--address", "127.0.0.1", "--upstream",
                    backend_app, env=env)
        wait_healthy(base, front, "the front host")
        # the backend host restarts its own process, on the port the front host names
        os.kill(next(c for c in children(backend.pid) if "streamlit" in
                     Path(f"/proc/{c}/cmdline").read_text(errors="ignore")), signal.SIGKILL)
        time.sleep(1)
        wait_healthy(f"http://{backend_app}", backend, "the backend host's restarted process")

        def query(i: int) -> str:
            return f"weights=hf-cache&text=Student+{i}+reads+this+line"

        async def go():
            students: list[tuple[Session, str, object]] = []  # session, its query, its view
            # a request that met the backend while it could not answer (its process was killed and started
            # again just before) has nginx send every student to the front for fail_timeout (10 s, max_fails=1
            # in deploy/nginx.conf.template), as it should: 24 students in a row landed there once in CI
            until = time.monotonic() + 30
            while len({s.replica for s, _, _ in students}) < 2:
                assert time.monotonic() < until and len(students) < 120, \
                    f"{len(students)} new students in 30 s all landed on one host"
                s = Session(base)
                q = query(len(students))
                await s.open("tokens", q)
                view = await s.view("tokens", q)
                assert view.ok, view.error or view.exceptions
                assert f"Student {len(students)} reads this line" in view.boxes.values(), view.boxes  # its URL's
                students.append((s, q, view))
            homes = {s.replica for s, _, _ in students}
            assert backend_app in homes and len(homes) == 2, homes  # the front's process and the backend's
            on_backend = [s for s, _, _ in students if s.replica == backend_app]

            lost = children(backend.pid)  # the backend host lost whole: its class server, then its process
            os.killpg(backend.pid, signal.SIGKILL)
            for c in lost:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(c, signal.SIGKILL)
            backend.wait(timeout=10)
            for s, q, before in students:
                if s in on_backend:  # its websocket closed with its host; the frontend pings, then opens a new one
                    assert await s.closed_within(30)
                    await s.reopen(timeout=30)
                back = await s.view("tokens", q)
                assert back.ok, back.error or back.exceptions
                assert s.replica != backend_app and (back.h1, back.boxes) == (before.h1, before.boxes)
                await s.close()
            return len(on_backend), len(students)

        moved, total = asyncio.run(go())
        print(f"{moved} of {total} students moved from the lost host to the front host's process")
        assert moved >= 1 and total >= 2
        front.send_signal(signal.SIGINT)
        out, err = front.communicate(timeout=60)
        assert front.returncode == 0, err
        assert "1 app process and 1 app process on other hosts behind nginx" in err
        _, backend_err = backend.communicate(timeout=10)
        assert "backend host: 1 app process at 127.0.0.1:" in backend_err
        assert "starting it again (restart 1 of 3)" in backend_err
    finally:
        for p in (front, backend):
            stop_all(p)


def test_a_stopping_class_server_says_the_last_traceback_of_each_process_before_its_logs_go():
    """A visitor's page that fails says "its log says what"; the app processes' logs live in the class
    server's folder, removed when it stops (a trial found them gone). Stopping, it prints each one's last
    traceback, from its first line to the exception's."""
    from gpt2viz.server.class_server import ClassServer, last_traceback

    log = ("starting\nTraceback (most recent call last):\n  File \"a.py\", line 1, in <module>\n    old()\n"
           "KeyError: 'old'\nrun abc (full): 0.1 s\nTraceback (most recent call last):\n"
           "  File \"views/attention.py\", line 9, in <module>\n    draw()\nValueError: the last one\n"
           "run def (full): 0.2 s\n")
    assert last_traceback(log).splitlines() == ["Traceback (most recent call last):",
                                                "  File \"views/attention.py\", line 9, in <module>",
                                                "    draw()", "ValueError: the last one"]
    assert last_traceback("run abc (full): 0.1 s\n") == ""
    chained = ("run x\nTraceback (most recent call last):\n  File \"b.py\", line 2\nKeyError: 'k'\n\n"
               "The above exception was the direct cause of the following exception:\n\n"
               "Traceback (most recent call last):\n  File \"c.py\", line 3\nRuntimeError: from k")  # no newline
    assert last_traceback(chained) == chained[len("run x\n"):]  # the cause too, to the last line
    said = []
    cs = ClassServer(2, 8600, log=None)
    cs._say = said.append
    cs.apps = [type("Gone", (), {"poll": lambda self: 0})()] * 2
    (Path(cs.dir) / "app-0.log").write_text("x" * 3_000_000 + log)  # a long class's log: its end is read
    (Path(cs.dir) / "app-1.log").write_text("run abc (full): 0.1 s\n")
    cs.stop()
    assert len(said) == 1 and said[0].startswith("app process 0's log, removed now, had a traceback")
    assert said[0].endswith("ValueError: the last one") and not Path(cs.dir).exists()
    closed = ClassServer(1, 8600, log=None)  # a terminal gone (a pipe closed): the folders go all the same

    def fail(line):
        raise BrokenPipeError(line)
    closed._say = fail
    closed.apps = [type("Gone", (), {"poll": lambda self: 0})()]
    (Path(closed.dir) / "app-0.log").write_text(log)
    with pytest.raises(BrokenPipeError):
        closed.stop()
    assert not Path(closed.dir).exists() and (closed.runs_dir is None or not Path(closed.runs_dir).exists())
