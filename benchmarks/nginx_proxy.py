"""Debian's nginx in front of app replicas, from deploy/nginx.conf.template, on a free loopback port.

Used by benchmarks/classroom.py, benchmarks/static_site_load.py (a static site) and
tests/test_st_protocol.py; nginx runs in the foreground as a
child (never as a daemon), with its pid, logs and temporary files in a directory of its own.
"""

import os
import shutil
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

from streamlit_server import free_port

from gpt2viz.server.class_server import nginx_config
from gpt2viz.server.received import MODEL_UPLOAD_MB

NGINX = "/usr/sbin/nginx"
TEMPLATE = Path(__file__).resolve().parents[1] / "deploy" / "nginx.conf.template"


class Proxy:
    """Debian's nginx in the foreground, on a free loopback port, in front of `servers`."""

    def __init__(self, servers: list[str], replica_header: bool = True, max_body_mb: int = MODEL_UPLOAD_MB,
                 config: Callable[[str, str], str] | None = None, health: str = "/_stcore/health"):
        """`replica_header`: responses name the replica that answered (the benchmarks and tests read it;
        the template as deployed sends none). `max_body_mb`: as for replicas that offer model uploads
        (the upload benchmarks send model files). `config(prefix, listen)`: another nginx.conf than the
        replicas' (a static site's), ready when `health` answers 200."""
        self.dir = tempfile.mkdtemp(prefix="gpt2viz-nginx-")
        os.chmod(self.dir, 0o711)  # run as root, nginx's workers (nobody) write request bodies in client_body/
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        conf = Path(self.dir) / "nginx.conf"
        listen = f"127.0.0.1:{self.port}"
        conf.write_text(config(self.dir, listen) if config else
                        nginx_config(TEMPLATE.read_text(), self.dir, listen, servers, replica_header=replica_header,
                                     max_body_mb=max_body_mb))
        with open(Path(self.dir) / "stdout.log", "w") as out:  # nginx's messages before its error log opens
            self.proc = subprocess.Popen([NGINX, "-p", self.dir, "-c", str(conf), "-e", f"{self.dir}/error.log",
                                          "-g", "daemon off;"], stdin=subprocess.DEVNULL, stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        end = time.monotonic() + 20
        while True:
            try:
                with urllib.request.urlopen(self.base + health, timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError as e:
                if self.proc.poll() is not None or time.monotonic() > end:
                    why = self.error_log()
                    self.stop()
                    raise RuntimeError(f"nginx did not start: {why}") from e
            time.sleep(0.1)

    def error_log(self) -> str:
        logs = [Path(self.dir) / name for name in ("error.log", "stdout.log")]
        return " ".join(p.read_text(errors="replace")[-2000:] for p in logs if p.exists())

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
