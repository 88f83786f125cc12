"""Issue 24 (2): one command starts a class server on every core, N app processes behind nginx,
and stops all it started; without nginx it refuses in one line."""

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
    assert env["GPT2VIZ_TRACE_BUDGET_MB"] == "1024" and len(env["STREAMLIT_SERVER_COOKIE_SECRET"]) == 64
    assert (env["GPT2VIZ_ALLOW_UPLOAD"], env["GPT2VIZ_ALLOW_DOWNLOAD"], env["GPT2VIZ_THREADS"]) == ("0", "0", "1")
    asked = replica_env(2, {"GPT2VIZ_ALLOW_UPLOAD": "1", "STREAMLIT_SERVER_COOKIE_SECRET": "s", "GPT2VIZ_THREADS": "2"})
    assert (asked["GPT2VIZ_ALLOW_UPLOAD"], asked["STREAMLIT_SERVER_COOKIE_SECRET"], asked["GPT2VIZ_THREADS"]) == \
        ("1", "s", "2")
    assert asked["GPT2VIZ_TRACE_BUDGET_MB"] == "1024"  # the default 2,048 split in two


def cli(*args, env=None, **kw):
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
        replicas = set()
        for _ in range(12):  # new browsers (no affinity cookie) spread over both processes
            with urllib.request.urlopen(base + "/", timeout=10) as r:
                replicas.add(r.headers["X-Gpt2viz-Replica"])
        assert len(replicas) == 2, replicas
        apps = [c for c in children(p.pid) if "streamlit" in Path(f"/proc/{c}/cmdline").read_text(errors="ignore")]
        assert len(apps) >= 2, apps
        os.kill(apps[0], signal.SIGKILL)  # a process lost mid-class: nginx answers from the other
        time.sleep(1)
        assert all(healthy(base, timeout=10) for _ in range(4))
        started = children(p.pid)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        assert "2 app processes behind nginx" in err and "app process" in err  # said it lost one
        time.sleep(0.5)
        assert not [c for c in started if Path(f"/proc/{c}").exists()], "processes left running"
        assert not healthy(base, timeout=2)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
