"""The test suite's footprint: wall time, the pytest process's peak resident memory, and the peak of
the whole process tree (pytest, the Streamlit servers, chromium, nginx), sampled every second.

    .venv/bin/python benchmarks/suite_footprint.py                    # the README's test command
    .venv/bin/python benchmarks/suite_footprint.py -- -q tests/test_scale.py

`/usr/bin/time -v` reports the largest single process, not the tree: a suite that starts servers and
browsers needs the tree's sum as well. With GPT2VIZ_TEST_MEMORY_LOG=FILE set (this script sets it),
tests/conftest.py writes each test's resident memory when it ends, so the tests that raise the
peak can be named; the ten largest steps are printed at the end."""

import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = os.sysconf("SC_PAGE_SIZE")


def tree_rss(pid: int) -> int:
    """Resident bytes of pid and every descendant (from /proc)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            rss[int(entry.name)] = int((entry / "statm").read_text().split()[1]) * PAGE
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        total += rss.get(p, 0)
        todo.extend(children.get(p, ()))
    return total


def main(argv: list[str]) -> int:
    args = argv[argv.index("--") + 1:] if "--" in argv else ["-q", "-n", "2", "--dist", "loadfile"]  # the README's
    log = Path(tempfile.mkstemp(suffix=".tsv")[1])
    env = {**os.environ, "GPT2VIZ_TEST_MEMORY_LOG": str(log)}
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "pytest", *args], cwd=ROOT, env=env)
    peak = [0]

    def sample():
        while proc.poll() is None:
            peak[0] = max(peak[0], tree_rss(proc.pid))
            time.sleep(1)
    threading.Thread(target=sample, daemon=True).start()
    code = proc.wait()
    wall = time.monotonic() - start
    import resource

    own = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    rows = [line.split("\t") for line in log.read_text().splitlines() if line.count("\t") == 2]
    steps, last = [], {}  # each worker's peak so far (pytest-xdist runs several)
    for nodeid, maxrss, _ in rows:
        worker = nodeid.split(" ")[0]
        steps.append((float(maxrss) - last.get(worker, 0.0), nodeid))
        last[worker] = max(last.get(worker, 0.0), float(maxrss))
    print(f"exit {code}; wall {wall / 60:.1f} min; peak RSS of the largest process (pytest's own or a child's) "
          f"{own / 1024:.2f} GiB; peak of the process tree {peak[0] / 2**30:.2f} GiB")
    for worker, peak_mib in sorted(last.items()):
        print(f"pytest process {worker}: peak RSS {peak_mib / 1024:.2f} GiB (its own ru_maxrss)")
    for grow, nodeid in sorted(steps, reverse=True)[:10]:
        if grow > 0:
            print(f"  +{grow:7.0f} MiB  {nodeid}")
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
