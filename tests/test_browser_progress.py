"""A long text's page says what it computes and how far it is on its first screen, before its results:
What if on a 600-word text on random gpt2, read from the DOM as the page draws (a MutationObserver
installed before the page loads records every spinner and progress line and when the first chart
came). No wall-clock assertion: the order of what showed is what is checked.

Needs Debian's chromium; skipped without it (unless GPT2VIZ_REQUIRE_BROWSER=1)."""

import sys
from pathlib import Path
from urllib.parse import quote

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from streamlit_server import EXCEPTION, StreamlitServer, chromium_for_tests, new_context, wait_rendered  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
WORDS = ["the", "model", "reads", "every", "token", "once", "and", "each", "block", "adds", "what", "its",
         "attention", "and", "its", "MLP", "computed", "from", "a", "normalised", "copy", "of", "that", "stream"]
TEXT_600 = " ".join(WORDS[i % len(WORDS)] for i in range(600))

RECORD = """
window.__seen = [];
new MutationObserver(() => {
  const t = performance.now();
  const lines = [...document.querySelectorAll("[data-testid='stSpinner'], [data-testid='stProgress']")]
    .map(e => e.innerText.trim()).filter(Boolean);
  const charts = document.querySelectorAll("[data-testid='stPlotlyChart']").length;
  const fold = window.innerHeight;
  const inView = [...document.querySelectorAll("[data-testid='stSpinner'], [data-testid='stProgress']")]
    .some(e => { const r = e.getBoundingClientRect(); return r.height > 0 && r.top < fold; });
  const last = window.__seen[window.__seen.length - 1];
  const key = JSON.stringify([lines, charts, inView]);
  if (!last || last.key !== key) window.__seen.push({key, t, lines, charts, inView});
}).observe(document, {subtree: true, childList: true, characterData: true});
"""


@pytest.fixture(scope="module")
def base():
    with StreamlitServer("app.py", cwd=ROOT) as server:  # stopped on leaving
        server.wait_healthy(timeout=60)
        yield server.base


def test_what_if_on_600_words_shows_its_progress_before_its_results(base):
    with chromium_for_tests() as browser:
        context = new_context(browser, 1280, 720)
        page = context.new_page()
        page.add_init_script(RECORD)
        page.goto(f"{base}/whatif?model=gpt2&text={quote(TEXT_600)}")
        wait_rendered(page, 1, timeout_ms=600_000)
        assert not page.locator(EXCEPTION).count()
        seen = page.evaluate("window.__seen")
        context.close()
    before = [s for s in seen if s["charts"] == 0]
    shown = [line for s in before if s["inView"] for line in s["lines"]]
    assert any("Running gpt2 on" in line and "tokens" in line for line in shown), shown  # what it computes
    assert any(" of 12 steps)" in line for line in shown), shown  # how far it is, block by block
    assert any(" left" in line for line in shown), shown  # about how long the rest takes
    assert any(s["charts"] for s in seen)  # then the results
