"""The class server's own arguments, read as the system reads them: every interface however it is
written is refused for a backend host's processes; an upstream is a name or an address and a port
and nothing nginx would read as a directive; SIGTERM stops a server that is still starting."""

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpt2viz.server import addresses
from gpt2viz.server.addresses import listen_address, upstream
from gpt2viz.server.class_server import nginx_config

ROOT = Path(__file__).resolve().parents[1]
SECRET = {"STREAMLIT_SERVER_COOKIE_SECRET": "s" * 64}
EVERY_INTERFACE = ["0", "0.0.0.0", "000.0.0.0", "0x0", "0x00000000", "0.0", "::", "[::]", "0:0:0:0:0:0:0:0", ""]
# what made nginx serve /etc with a listing, and its relatives: each would end the upstream line early
CRAFTED = ["127.0.0.1:8601 max_fails=1; } server { listen 127.0.0.1:9999; location / { root /etc; autoindex on; } "
           "} upstream x { server 127.0.0.1:8601",
           "127.0.0.1:8601;", "a{b:80", "a b:80", "a\nb:80", "'a':80", '"a":80', "h:80 backup", "fe80::1%eth0;:80",
           "[fe80::1%x]:80", "h:+80", "h:٨٠", "h:0", "h:65536", "h:", ":80", "0:80", "0x0:80", "[::]:80", "0.0.0.0:80",
           "fd00::2:8601", "-h:80", "h-:80", "a..b:80", "x" * 64 + ".lan:80"]


def cli(*args, env=None):
    env = {**os.environ, **SECRET} if env is None else env
    return subprocess.run([sys.executable, "-m", "gpt2viz", "class-server", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("address", EVERY_INTERFACE)
def test_every_interface_however_written_is_refused_for_a_backend_host(address):
    with pytest.raises(ValueError, match="--backends-only needs --address") as e:
        listen_address(address, private=True)
    assert "\n" not in str(e.value)
    # the front host's nginx may listen there (that is its job), written as nginx reads it
    assert listen_address(address, private=False) in ("0.0.0.0", "::")


def test_the_command_line_refuses_address_0_for_a_backend_host_in_one_line():
    r = cli("--backends-only", "--address", "0", "--port", "8601")
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0, r.stderr
    assert "--backends-only needs --address" in r.stderr and "'0' is read as 0.0.0.0" in r.stderr


def test_a_name_that_resolves_to_every_interface_is_refused(monkeypatch):
    real = socket.getaddrinfo

    def fake(host, *a, **k):
        if host == "anywhere.example":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("0.0.0.0", 0))]
        return real(host, *a, **k)

    monkeypatch.setattr(addresses.socket, "getaddrinfo", fake)
    with pytest.raises(ValueError, match="'anywhere.example' is read as 0.0.0.0"):
        listen_address("anywhere.example", private=True)


@pytest.mark.parametrize("address, canonical", [("127.0.0.1", "127.0.0.1"), ("localhost", "localhost"),
                                                ("[::1]", "::1"), ("127.1", "127.0.0.1"), ("10.0.0.2", "10.0.0.2")])
def test_a_private_address_is_kept_in_the_form_a_socket_reads(address, canonical):
    assert listen_address(address, private=True) == canonical


@pytest.mark.parametrize("address", ["a;b", "127.0.0.1; root /etc", "a b", "x\ny", "no-such-host.invalid"])
def test_an_address_that_is_neither_an_address_nor_a_name_is_refused(address):
    with pytest.raises(ValueError, match="--address") as e:
        listen_address(address, private=False)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("value", CRAFTED)
def test_a_crafted_upstream_never_reaches_nginx_s_configuration(value):
    with pytest.raises(ValueError, match="--upstream takes HOST:PORT") as e:
        upstream(value)
    assert "\n" not in str(e.value)


def test_the_crafted_upstream_on_the_command_line_is_refused_in_one_line():
    r = cli("--processes", "0", "--upstream", CRAFTED[0])
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "--upstream takes HOST:PORT" in r.stderr


@pytest.mark.parametrize("value, line", [("10.0.0.2:8601", "10.0.0.2:8601"), ("[fd00::2]:08601", "[fd00::2]:8601"),
                                         ("backend-1.class.lan:8601", "backend-1.class.lan:8601"),
                                         ("[10.0.0.2]:80", "10.0.0.2:80")])
def test_an_upstream_is_written_as_nginx_reads_it(value, line):
    assert upstream(value) == line
    conf = nginx_config("upstream app {\n@SERVERS@\n}", "/tmp", "127.0.0.1:1", [upstream(value)])
    assert f"server {line} max_fails=1 fail_timeout=10s;" in conf and conf.count(";") == 1


def test_sigterm_stops_a_server_that_is_still_starting(tmp_path):
    """The processes never answer (health is faked to fail): SIGTERM ends the command, and everything
    it started, at its next look, not when the start's 120 s run out."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code = ("import sys; from gpt2viz.server import class_server as c\n"
            "c.healthy = lambda *a, **k: False\n"
            f"sys.exit(c.ClassServer(1, {port}, '127.0.0.1', backends_only=True).serve())\n")
    p = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env={**os.environ, **SECRET}, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        app = None
        for _ in range(300):  # until its app process exists: the start is under way
            out = subprocess.run(["pgrep", "-P", str(p.pid)], capture_output=True, text=True).stdout.split()
            if out:
                app = int(out[0])
                break
            time.sleep(0.1)
        assert app is not None, p.communicate(timeout=5)
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=40)  # the old server waited out its 120 s
        assert p.returncode == 0 and "stopped while starting" in err, err
        with pytest.raises(ProcessLookupError):
            os.kill(app, 0)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
