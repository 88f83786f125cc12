"""The shipped demo lesson exported as a static site by the command line, and the pieces of its pages
that the tests read back (tests/test_lesson_export.py, tests/test_browser_lesson_site.py)."""

import json
import re
import subprocess
import sys
from html import unescape
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "lessons" / "attention-demo.json"


def export(lesson: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    """`python -m gpt2viz lesson export LESSON --out DIR`, as a lecturer types it."""
    return subprocess.run([sys.executable, "-m", "gpt2viz", "lesson", "export", str(lesson), "--out", str(out),
                           *extra], cwd=ROOT, capture_output=True, text=True, timeout=900)


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
