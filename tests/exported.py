"""The shipped demo lesson exported as a static site by the command line, and the pieces of its pages
that the tests read back (tests/test_lesson_export.py, tests/test_browser_lesson_site.py)."""

import fcntl
import json
import os
import re
import subprocess
import sys
import tempfile
from html import unescape
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "lessons" / "attention-demo.json"


def export(lesson: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    """`python -m gpt2viz lesson export LESSON --out DIR`, as a lecturer types it."""
    return subprocess.run([sys.executable, "-m", "gpt2viz", "lesson", "export", str(lesson), "--out", str(out),
                           *extra], cwd=ROOT, capture_output=True, text=True, timeout=900)


def demo_site() -> tuple[Path, str]:
    """The demo lesson exported once per test run, for the tests that only read it (the export is 15-20 s): its
    folder and what the command printed. The suite's workers share it (a folder named by xdist's run id, a lock
    while the first of them writes it); without xdist, one per process."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID") or f"pid{os.getpid()}"
    folder = Path(tempfile.gettempdir()) / f"gpt2viz-demo-site-{run}"
    folder.mkdir(exist_ok=True)
    out, printed = folder / "attention-demo", folder / "stdout.txt"
    with open(folder / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not printed.exists():
            done = export(DEMO, out)
            assert done.returncode == 0, done.stderr[-3000:]
            printed.write_text(done.stdout, encoding="utf-8")
    return out, printed.read_text(encoding="utf-8")


def figures(html: str) -> list[dict]:
    """The figures a stop page draws, in the order of their data-chart indices."""
    raw = re.search(r'<script type="application/json" id="figures">(.*?)</script>', html, re.S).group(1)
    return json.loads(raw.replace("<\\/", "</"))


def variants(html: str) -> dict[str, list[dict]]:
    """Each variant's figures, by its key ("head=2", or "fixed"), in the order the page draws them."""
    figs = figures(html)
    out = {}
    for key, body in re.findall(r'<section class="variant" data-key="([^"]*)"[^>]*>(.*?)</section>', html, re.S):
        out[unescape(key)] = [figs[int(i)] for i in re.findall(r'data-chart="(\d+)"', body)]
    return out


def hrefs(html: str) -> list[str]:
    return [unescape(h) for h in re.findall(r'<a\b[^>]*\bhref="([^"]*)"', html)]


# ---------------------------------------------------------------------------- a hostile lesson
# each sets the flag window.__pwned where a page lets it run (an iframe's script sets its parent's)
PAYLOADS = ('<img src=x onerror="window.__pwned=1">', "<script>window.__pwned=1</script>",
            '<details open ontoggle="window.__pwned=1">d</details>',
            '<iframe srcdoc="<script>parent.__pwned=1</script>"></iframe>', "[x](javascript:window.__pwned=1)",
            '<a href="javascript:window.__pwned=1">a</a>', '<svg onload="window.__pwned=1"></svg>')
EVERY = " ".join(PAYLOADS)
HOSTILE_PAGES = ("tokens", "attention", "whatif", "patch", "overview")


def hostile_lesson() -> dict:
    """A lesson on the demo model whose title, texts, notes and a claim hold every payload."""
    d = {"title": PAYLOADS[0] + PAYLOADS[-1], "weights": {"source": "demo"}, "text": " people play " + EVERY,
         "text_b": " people play one good " + " ".join(reversed(PAYLOADS)),
         "stops": [{"page": p, "note": EVERY} for p in HOSTILE_PAGES]}
    d["stops"][1]["claims"] = [{"text": EVERY[:300], "citation": EVERY[:200], "measure": "induction",
                                "heads": [[1, 2]], "threshold": 0.5, "tokens": "demo"}]
    return d
