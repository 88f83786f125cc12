"""A class server on every core: N app processes on loopback behind Debian's nginx, by one command.

    python -m gpt2viz class-server --port 8501              # N = the number of cores
    python -m gpt2viz class-server --processes 3 --address 0.0.0.0

One Streamlit process runs the app's Python on one core, so a class of 30 queues on it while the
other cores idle. This starts N processes (`streamlit run serve.py`, app.py behind its upload gate and the
class vote's browser id, on 127.0.0.1 and ports of their
own) and nginx in front of them with the tested `deploy/nginx.conf.template` (websockets passed
through, session affinity by cookie, a lost process's students moved to another). The processes
share one cookie secret (Streamlit signs its XSRF cookie with it) and one lesson key where one is
set, split one memory budget (GPT2VIZ_TRACE_BUDGET_MB, default 2,048: half for the runs they share
in /dev/shm, server/shared_runs.py, the rest divided by N), run torch on one thread each, and,
because they listen on loopback and would otherwise look local, offer neither uploads nor downloads
unless the operator asks (GPT2VIZ_ALLOW_UPLOAD=1, GPT2VIZ_ALLOW_DOWNLOAD=1).
A process that exits is started again on its port (a line in the log each time), at most
GPT2VIZ_RESTARTS times (3) each: one that keeps dying is left down, said once, and nginx sends its
students to the others. Ctrl-C (or SIGTERM) stops everything it started. Without nginx it refuses in
one line: a laptop keeps the single process of `streamlit run app.py`.

Past one machine, each host runs it too:

    python -m gpt2viz class-server --backends-only --address 10.0.0.2 --port 8601 --processes 4
    python -m gpt2viz class-server --port 8501 --upstream 10.0.0.2:8601 10.0.0.2:8602 ...

A backend host starts its processes on the given private address and ports PORT, PORT+1, ... with no
nginx; the front host puts them behind its own nginx next to its own processes. Every host restarts
its own processes. They must all sign cookies alike and check lesson links alike, so a multi-host
run refuses to start without STREAMLIT_SERVER_COOKIE_SECRET, and every host prints a short
fingerprint of its cookie secret and lesson key for the operator to compare.
"""

import hashlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from ..model.memory import ONE_ARENA_ENV
from ..spec.paths import APP_ROOT
from ..spec.serving import DEFAULT_RANDOM_MODELS, RANDOM_MODELS
from .addresses import ip_literal, listen_address
from .addresses import upstream as upstream_address
from .launch import config_flags
from .received import LESSON_UPLOAD_MB, max_upload_mb
from .shared_runs import BUDGET_ENV as SHARED_MB_ENV
from .shared_runs import DIR_ENV as SHARED_DIR_ENV
from .shared_runs import KEEP_ENV as SHARED_KEEP_ENV

ROOT = APP_ROOT
TEMPLATE = ROOT / "deploy" / "nginx.conf.template"
APP = ROOT / "serve.py"  # app.py behind the upload gate and the class vote's cookie (serve.py)
DEFAULT_BUDGET_MB = 2048
RESTARTS_ENV, RESTARTS = "GPT2VIZ_RESTARTS", 3
REPLICA_HEADER_ENV = "GPT2VIZ_REPLICA_HEADER"  # "1": responses name the replica that answered (tests)


def nginx_path() -> str | None:
    return shutil.which("nginx") or ("/usr/sbin/nginx" if os.access("/usr/sbin/nginx", os.X_OK) else None)


def nginx_config(template: str, prefix: str, listen: str, servers: list[str], replica_header: bool = False,
                 secret: str | None = None, max_body_mb: int = LESSON_UPLOAD_MB) -> str:
    """deploy/nginx.conf.template with its placeholders filled in: the affinity hash's secret made
    here unless given; the replica header only where asked (tests and benchmarks read it).
    `max_body_mb`: the largest request body nginx takes, as the app's upload route does (nginx reads
    a body whole, to disk, before the app sees it: with uploads off a 700 MB PUT is refused at its
    headers, not after)."""
    lines = "\n".join(f"        server {s} max_fails=1 fail_timeout=10s;" for s in servers)
    values = {"@PREFIX@": prefix, "@LISTEN@": listen, "@SERVERS@": lines, "@SECRET@": secret or secrets.token_hex(16),
              "@REPLICA@": "$upstream_addr" if replica_header else "", "@MAXBODY@": f"{max_body_mb}m"}
    for placeholder, value in values.items():
        template = template.replace(placeholder, value)
    return template


def restarts_allowed(env=os.environ) -> int:
    n = env.get(RESTARTS_ENV, "")
    return int(n) if n.isdigit() else RESTARTS


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def replica_env(n: int, base: dict[str, str]) -> dict[str, str]:
    """The environment every process gets: one cookie secret, the budget split N ways, one torch
    thread, no uploads or downloads unless the operator set them, no traceback for a visitor, and
    only the random sizes a class server builds (gpt2 and tiny) unless the operator names others."""
    env = dict(base)
    env.setdefault("STREAMLIT_SERVER_COOKIE_SECRET", secrets.token_hex(32))
    budget = env.get("GPT2VIZ_TRACE_BUDGET_MB", "")
    total = int(budget) if budget.isdigit() and int(budget) > 0 else DEFAULT_BUDGET_MB
    # the runs the processes share are counted once, in their folder's budget: half the host's unless
    # the operator says (0: none, each process keeps its own runs); the processes split the rest
    asked = env.get(SHARED_MB_ENV, "")
    shared = 0 if n < 2 else min(int(asked), total // 2) if asked.isdigit() else total // 2
    env[SHARED_MB_ENV] = str(shared)
    # each keeps mapped at most the folder over N + 1: a share of it no process holds, where new runs find room
    # (server/shared_runs.py)
    env[SHARED_KEEP_ENV] = str(shared // (n + 1))
    env["GPT2VIZ_TRACE_BUDGET_MB"] = str(max(1, (total - shared) // n))
    env.setdefault("GPT2VIZ_THREADS", "1")
    env.setdefault(*ONE_ARENA_ENV)  # see memory.py
    env.setdefault("GPT2VIZ_ALLOW_UPLOAD", "0")
    env.setdefault("GPT2VIZ_ALLOW_DOWNLOAD", "0")
    # loopback processes look local, where tracebacks are shown: the class reads one line instead
    # (client.showErrorDetails, which gpt2viz/ui/errors.py reads too)
    env.setdefault("STREAMLIT_CLIENT_SHOW_ERROR_DETAILS", "none")
    env.setdefault(RANDOM_MODELS, ",".join(DEFAULT_RANDOM_MODELS))  # and would build any size a link asks for
    return env


TRACEBACK_CHARS = 4000  # the most of one traceback a stopping class server prints


HEAD = "Traceback (most recent call last)"
CHAINED = ("The above exception was the direct cause of the following exception:",
           "During handling of the above exception, another exception occurred:")


def last_traceback(log: str) -> str:
    """The last traceback in an app process's log, with the ones it was chained to (from the first's
    "Traceback" line to the last exception's line, at most TRACEBACK_CHARS, its end kept), or "" when
    there is none."""
    last = log.rfind(HEAD)
    if last < 0:
        return ""
    at = last
    while log[:at].rstrip().endswith(CHAINED) and (before := log.rfind(HEAD, 0, at)) >= 0:
        at = before
    lines = log[last:].splitlines()
    end = next((k for k in range(1, len(lines)) if lines[k] and not lines[k].startswith((" ", "\t"))), len(lines) - 1)
    return log[at:last + len("\n".join(lines[:end + 1]))][-TRACEBACK_CHARS:]


COOKIE_SECRET = "STREAMLIT_SERVER_COOKIE_SECRET"
LESSON_KEY = "GPT2VIZ_LESSON_KEY"
def url_host(address: str) -> str:
    return f"[{address}]" if ":" in address and not address.startswith("[") else address


def fingerprint(value: str | None) -> str:
    """Eight hex digits of the value's SHA-256, to compare across hosts without showing it; "unset"."""
    return hashlib.sha256(value.encode()).hexdigest()[:8] if value else "unset"


def healthy(base: str, timeout: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(base + "/_stcore/health", timeout=timeout) as r:
            return r.status == 200 and r.read().strip() == b"ok"
    except OSError:
        return False


class StoppedWhileStarting(Exception):
    """Ctrl-C or SIGTERM arrived before every process answered."""


class ClassServer:
    """N app processes and nginx in front of them and of the `upstream` ones (none with `backends_only`);
    `start()` returns when nginx (or, on a backend host, every process) answers, `stop()` ends them all."""

    def __init__(self, processes: int, port: int, address: str = "0.0.0.0", script: Path = APP,
                 env: dict[str, str] | None = None, log=sys.stderr, backends_only: bool = False,
                 upstream: list[str] | tuple = ()):
        base_env = dict(os.environ if env is None else env)
        upstream = [upstream_address(u) for u in upstream]
        if backends_only and upstream:
            raise ValueError("--backends-only starts no nginx, so it takes no --upstream (the front host does)")
        if processes < (0 if upstream else 1):
            raise ValueError(f"--processes must be at least {0 if upstream else 1}, got {processes}")
        if not 0 < port < 65536 or (backends_only and port + processes - 1 > 65535):
            raise ValueError(f"--port must be between 1 and 65535{' for every process' * backends_only}, got {port}")
        address = listen_address(address, private=backends_only)  # every interface, however written: not a backend's
        if (backends_only or upstream) and not base_env.get(COOKIE_SECRET):
            raise ValueError(f"several hosts sign one cookie: set {COOKIE_SECRET} alike on every host "
                             "(made once with: openssl rand -hex 32)")
        self.nginx = None if backends_only else nginx_path()
        if self.nginx is None and not backends_only:
            raise OSError("nginx is not installed (apt-get install nginx); on a laptop run the single process: "
                          "streamlit run app.py")
        self.n, self.port, self.address, self.script, self.log = processes, port, address, Path(script), log
        self.backends_only, self.upstream = backends_only, upstream
        self.env = replica_env(max(processes, 1), base_env)
        # a backend host's processes listen where the front host reaches them, on ports it names;
        # otherwise on loopback ports of their own, behind this host's nginx
        self.app_address = address if backends_only else "127.0.0.1"
        self.ports = [port + i for i in range(processes)] if backends_only else [free_port() for _ in range(processes)]
        self.dir = tempfile.mkdtemp(prefix="gpt2viz-class-")
        os.chmod(self.dir, 0o711)  # nginx's workers (nobody, when run as root) write request bodies here
        # the shared runs' files in memory (tmpfs), where the system has it; removed with the rest at stop
        memory = "/dev/shm" if os.path.isdir("/dev/shm") else None
        self.runs_dir = tempfile.mkdtemp(prefix="gpt2viz-runs-", dir=memory) if self.env[SHARED_MB_ENV] != "0" else None
        if self.runs_dir:
            self.env[SHARED_DIR_ENV] = self.runs_dir
        self.apps: list[subprocess.Popen] = []
        self._logs: list = []
        self.proxy: subprocess.Popen | None = None
        self.restarts = [0] * processes  # times each process was started again
        self.max_restarts = restarts_allowed(self.env)
        self._given_up: set[int] = set()
        self.stopping = False  # set by Ctrl-C or SIGTERM; start() gives up at its next look

    @property
    def base(self) -> str:
        literal = ip_literal(self.address)
        host = ("127.0.0.1" if literal.version == 4 else "::1") if literal and literal.is_unspecified else self.address
        return f"http://{url_host(host)}:{self.port}"

    def _say(self, line: str) -> None:
        print(line, file=self.log, flush=True)

    def _spawn(self, i: int) -> subprocess.Popen:
        """App process i on its port; its output appended to its log."""
        out = open(Path(self.dir) / f"app-{i}.log", "a")  # noqa: SIM115 (closed in stop)
        self._logs.append(out)
        return subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", str(self.script), "--server.port", str(self.ports[i]),
             "--server.address", self.app_address, "--server.headless", "true",
             "--browser.gatherUsageStats", "false", *config_flags()],  # the app's settings, wherever it runs
            cwd=self.script.parent, env=self.env, stdin=subprocess.DEVNULL, stdout=out,
            stderr=subprocess.STDOUT, start_new_session=True)

    def app_base(self, i: int) -> str:
        return f"http://{url_host(self.app_address)}:{self.ports[i]}"

    def start(self, timeout: float = 120.0) -> None:
        self.apps = [self._spawn(i) for i in range(self.n)]
        end = time.monotonic() + timeout
        for i, p in enumerate(self.ports):
            while not healthy(self.app_base(i)):
                if self.stopping:
                    raise StoppedWhileStarting
                if self.apps[i].poll() is not None or time.monotonic() > end:
                    raise RuntimeError(f"app process {i} (port {p}) did not start: {self.app_log(i)[-500:]}")
                time.sleep(0.2)
        secrets_line = (f"cookie secret {fingerprint(self.env.get(COOKIE_SECRET))}, lesson key "
                        f"{fingerprint(self.env.get(LESSON_KEY))} (fingerprints: the same on every host)")
        if self.backends_only:
            apps = f"{self.n} app {'process' if self.n == 1 else 'processes'}"
            self._say(f"gpt2viz class server, backend host: {apps} at "
                      f"{' '.join(f'{url_host(self.app_address)}:{p}' for p in self.ports)}, for the front host's "
                      f"--upstream; no nginx here (budget {self.env['GPT2VIZ_TRACE_BUDGET_MB']} MiB each"
                      f"{self._shared_said()}; "
                      f"{secrets_line}). Ctrl-C stops it.")
            return
        conf = Path(self.dir) / "nginx.conf"
        conf.write_text(nginx_config(TEMPLATE.read_text(), self.dir, f"{url_host(self.address)}:{self.port}",
                                     [f"127.0.0.1:{p}" for p in self.ports] + self.upstream,
                                     replica_header=self.env.get(REPLICA_HEADER_ENV) == "1",
                                     max_body_mb=max_upload_mb(self.env["GPT2VIZ_ALLOW_UPLOAD"] == "1")))
        with open(Path(self.dir) / "nginx.out", "w") as out:
            self.proxy = subprocess.Popen([self.nginx, "-p", self.dir, "-c", str(conf), "-e", f"{self.dir}/error.log",
                                           "-g", "daemon off;"], stdin=subprocess.DEVNULL, stdout=out,
                                          stderr=subprocess.STDOUT, start_new_session=True)
        while not healthy(self.base):
            if self.stopping:
                raise StoppedWhileStarting
            if self.proxy.poll() is not None or time.monotonic() > end:
                raise RuntimeError(f"nginx did not start: {self.nginx_log()[-500:]}")
            time.sleep(0.1)
        own = f"{self.n} app {'process' if self.n == 1 else 'processes'}" if self.n else ""
        k = len(self.upstream)
        others = f"{k} app {'process' if k == 1 else 'processes'} on other hosts" if k else ""
        budget = f"budget {self.env['GPT2VIZ_TRACE_BUDGET_MB']} MiB each{self._shared_said()}; " if self.n else ""
        self._say(f"gpt2viz class server: {' and '.join(p for p in (own, others) if p)} behind nginx at {self.base} "
                  f"({budget}uploads "
                  f"{'on' if self.env['GPT2VIZ_ALLOW_UPLOAD'] == '1' else 'off'}, downloads "
                  f"{'on' if self.env['GPT2VIZ_ALLOW_DOWNLOAD'] == '1' else 'off'}"
                  f"{'; ' + secrets_line if self.upstream else ''}). Its processes' logs: "
                  f"{Path(self.dir) / 'app-N.log'} (N from 0; removed when it stops). Ctrl-C stops it.")
        for u in self.upstream:
            if not healthy(f"http://{u}"):
                self._say(f"upstream {u} does not answer yet: nginx sends its students to the others until it does")

    def _shared_said(self) -> str:
        return f", {self.env[SHARED_MB_ENV]} MiB of runs they share" if self.runs_dir else ""

    def app_log(self, i: int, tail: int = 2**20) -> str:
        """The end of app process i's log (at most `tail` bytes: a class's run lines add up)."""
        p = Path(self.dir) / f"app-{i}.log"
        if not p.exists():
            return ""
        with open(p, "rb") as f:
            f.seek(max(0, p.stat().st_size - tail))
            return f.read().decode(errors="replace")

    def nginx_log(self) -> str:
        return " ".join(p.read_text(errors="replace") for p in Path(self.dir).glob("*.log") if p.name == "error.log")

    def serve(self) -> int:
        """Start, then wait until Ctrl-C or SIGTERM; say when a process dies (nginx moves its students)."""
        def asked_to_stop(*_):
            self.stopping = True

        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, asked_to_stop)
        try:
            try:
                self.start()
            except StoppedWhileStarting:  # at once, not when the start's timeout runs out
                self._say("gpt2viz class server: stopped while starting; everything it started is stopped")
                return 0
            while not self.stopping:
                self.restart_exited()
                if self.proxy is not None and self.proxy.poll() is not None:
                    self._say(f"nginx exited with {self.proxy.returncode}: {self.nginx_log()[-300:]}")
                    return 1
                time.sleep(0.5)
            return 0
        finally:
            self.stop()

    def restart_exited(self) -> None:
        """Start again each app process that exited, while it has restarts left; say so either way."""
        for i, proc in enumerate(self.apps):
            if i in self._given_up or proc.poll() is None:
                continue
            where = f"app process {i} (port {self.ports[i]}) exited with {proc.returncode}"
            if self.restarts[i] >= self.max_restarts:
                self._given_up.add(i)
                self._say(f"{where}; not started again ({self.restarts[i]} restarts, the limit): nginx sends its "
                          "students to the others")
                continue
            self.restarts[i] += 1
            self._say(f"{where}; starting it again (restart {self.restarts[i]} of {self.max_restarts}); nginx "
                      "sends its students to the others meanwhile")
            self.apps[i] = self._spawn(i)

    def stop(self) -> None:
        for proc in [self.proxy, *self.apps]:
            if proc is not None and proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=10)
                except ProcessLookupError:
                    pass
        for out in self._logs:
            out.close()
        try:  # the logs go with the folder: what a visitor was told "its log says" is said here first
            for i in range(len(self.apps)):
                if said := last_traceback(self.app_log(i)):
                    self._say(f"app process {i}'s log, removed now, had a traceback; the last one:\n{said}")
        finally:  # (a closed terminal or pipe fails the saying, not the removing)
            shutil.rmtree(self.dir, ignore_errors=True)
            if self.runs_dir:
                shutil.rmtree(self.runs_dir, ignore_errors=True)
