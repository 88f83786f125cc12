"""Run one test in a pytest process of its own, for the few tests that need more memory than the
suite's process may hold (a model of several GB): its memory goes back to the system when it ends,
and its peak is reported apart from the suite's."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FLAG = "GPT2VIZ_IN_OWN_PROCESS"


def inside() -> bool:
    """True in the process that runs the test's body."""
    return os.environ.get(FLAG) == "1"


def run_alone(nodeid: str, why: str) -> None:
    """Run `nodeid` (tests/file.py::name) in a new pytest process; fail with its output if it fails.
    Prints the child's peak resident memory (GNU time's figure, read from the kernel's rusage)."""
    code = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:]); "
            "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024; "
            "print(f'peak RSS of the process of its own: {peak:.0f} MiB'); sys.exit(r.returncode)")
    # the child logs its memory (tests/conftest.py) under a name of its own, not as the worker that started it
    worker = f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')}-own-process"
    out = subprocess.run([sys.executable, "-c", code, sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          nodeid], cwd=ROOT, env={**os.environ, FLAG: "1", "PYTEST_XDIST_WORKER": worker},
                         capture_output=True, text=True, timeout=900)
    print(f"{nodeid} ran in a process of its own ({why}):", out.stdout.strip().splitlines()[-1])
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
