"""A real PostgreSQL server for a test: Debian's `postgresql` binaries, a cluster in a temporary folder,
run by an unprivileged user (the `postgres` account the package makes, when the tests run as root),
listening on 127.0.0.1 and a free port, stopped when the test is done. `.ci/run` installs the package;
without it these tests skip outside CI (GPT2VIZ_REQUIRE_POSTGRES=1 makes them fail instead)."""

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time

import pytest

REQUIRE_ENV = "GPT2VIZ_REQUIRE_POSTGRES"


def binaries() -> str | None:
    """The folder of initdb and pg_ctl (the newest Debian version), or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return os.path.dirname(found[-1]) if found else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def postgres():
    """Yields a postgresql:// URL of a new, empty database; skips (or fails in CI) without the binaries."""
    bin_dir = binaries()
    if bin_dir is None:
        if os.environ.get(REQUIRE_ENV):
            pytest.fail("PostgreSQL's binaries are missing (apt-get install postgresql)")
        pytest.skip("PostgreSQL's binaries are missing (apt-get install postgresql)")
    as_root = os.geteuid() == 0
    user = pwd.getpwnam("postgres") if as_root else None
    folder = tempfile.mkdtemp(prefix="gpt2viz-pg-")
    if user:
        os.chown(folder, user.pw_uid, user.pw_gid)

    def run(*args: str, **kw) -> subprocess.CompletedProcess:
        cmd = (["runuser", "-u", "postgres", "--"] if as_root else []) + list(args)
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=True, **kw)

    data, port = os.path.join(folder, "data"), _free_port()
    run(f"{bin_dir}/initdb", "-D", data, "-A", "trust", "-U", "gpt2viz", "--no-sync")
    options = f"-c listen_addresses=127.0.0.1 -p {port} -k {folder} -c fsync=off"
    try:
        run(f"{bin_dir}/pg_ctl", "-D", data, "-o", options, "-l", os.path.join(folder, "log"), "-w", "start")
        url = f"postgresql://gpt2viz@127.0.0.1:{port}/postgres"
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                break
            time.sleep(0.1)
        yield url
    finally:
        with contextlib.suppress(Exception):
            run(f"{bin_dir}/pg_ctl", "-D", data, "-m", "immediate", "stop")
        shutil.rmtree(folder, ignore_errors=True)
