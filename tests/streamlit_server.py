"""Run a Streamlit script on a free port and drive it with headless Chromium (Debian's, never a
downloaded one). Independent of gpt2viz; shared by tests/test_browser.py and benchmarks/bench_app.py.

Readiness follows Streamlit's own browser tests: poll `/_stcore/health`, then wait for
`[data-testid='stApp'][data-test-script-state='notRunning']`. A rerun inside one session (slider,
page link) starts from `notRunning` too, and a fast run may never show `running` at all (React
batches the two states), so after an action wait for what the new run must show (`must_see`, or
a new h1): content of the new run on screen and the state `notRunning` mean that run has ended.
"""

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

CHROMIUM_ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
APP_IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"
EXCEPTION = "[data-testid='stException']"
# a chart: Streamlit's element (a chart that answers clicks, the projector's first) or the app's (ui/chart_element.py)
CHART = ":is([data-testid='stPlotlyChart'], .gpt2viz-chart)"

# Keeps the performance.now() at which the last script run was seen to start and to end (a run
# too fast to render `running` is not seen); installed before any page script.
_RUN_TIMES_JS = """
window.__stRunStart = null;
window.__stRunEnd = null;
new MutationObserver(records => {
  for (const r of records) {
    if (r.oldValue === 'running') window.__stRunEnd = performance.now();
    else if (r.oldValue === 'notRunning' || r.oldValue === 'initial') window.__stRunStart = performance.now();
  }
}).observe(document, {subtree: true, attributes: true, attributeOldValue: true,
                      attributeFilter: ['data-test-script-state']});
"""

# Settled: the script is idle (and, if an exception shows, nothing more), nothing is stale or still a
# skeleton, every chart has been drawn by Plotly, at least `minCharts` of them, `mustSee` (if any) appears in an h1
# or a chart title, and the first h1 is not `notH1` (if given). Returns performance.now() then.
_SETTLED_JS = """
([minCharts, mustSee, notH1]) => {
  const app = document.querySelector("[data-testid='stApp']");
  if (!app || app.dataset.testScriptState !== 'notRunning') return false;
  if (document.querySelector("[data-testid='stException']")) return performance.now();  // an error
  if (document.querySelector("[data-testid='stElementContainer'][data-stale='true']")) return false;
  // an element whose code Streamlit still loads (each kind's chunk, the first time a tab draws one) is a skeleton
  if (document.querySelector("[data-testid='stSkeleton']")) return false;
  const charts = [...document.querySelectorAll("[data-testid='stPlotlyChart'], .gpt2viz-chart")];
  if (charts.length < minCharts || !charts.every(c => c.querySelector(".main-svg"))) return false;
  if (notH1 !== null) {
    const h1 = document.querySelector("h1");
    if (!h1 || h1.textContent === notH1) return false;
  }
  if (mustSee === null) return performance.now();
  const texts = [...document.querySelectorAll("h1, .gtitle")].map(e => e.textContent);
  return texts.some(t => t.includes(mustSee)) && performance.now();
}
"""


def chromium_path() -> str | None:
    for candidate in ("/usr/bin/chromium", shutil.which("chromium")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def require_chromium() -> None:
    """Skip the calling test without chromium, except where GPT2VIZ_REQUIRE_BROWSER=1 (CI): fail."""
    if chromium_path() is None:
        import pytest

        message = "no chromium (/usr/bin/chromium or `chromium` on PATH)"
        if os.environ.get("GPT2VIZ_REQUIRE_BROWSER") == "1":
            pytest.fail(message + ", and GPT2VIZ_REQUIRE_BROWSER=1")
        pytest.skip(message)


@contextlib.contextmanager
def chromium_for_tests():
    """A headless Debian chromium for a test module (playwright's sync API); skips or fails as
    `require_chromium` says when there is none."""
    require_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = launch_chromium(p)
        try:
            yield browser
        finally:
            browser.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class StreamlitServer:
    """`python -m streamlit run SCRIPT` in its own process group; output goes to a log file."""

    def __init__(self, script: str | Path, cwd: str | Path, port: int | None = None, address: str = "127.0.0.1",
                 command: list[str] | None = None):
        """`address`: what the server listens on; "0.0.0.0" is a class server (not local), still
        reached at 127.0.0.1. `command`: what starts it instead of `python -m streamlit run SCRIPT`
        (the same flags follow)."""
        self.port = port or free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        # kept open for the server's lifetime and closed in stop()
        self.log = tempfile.NamedTemporaryFile("w+", prefix="streamlit-", suffix=".log", delete=False)  # noqa: SIM115
        cmd = (command or [sys.executable, "-m", "streamlit", "run", str(script)]) + [
            "--server.port", str(self.port), "--server.address", address, "--server.headless", "true",
            "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"]
        self.proc = subprocess.Popen(cmd, cwd=cwd, stdout=self.log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)

    def wait_healthy(self, timeout: float = 60.0) -> float:
        """Seconds until /_stcore/health answers `ok`; raises with the server log on failure."""
        start = time.perf_counter()
        while time.perf_counter() - start < timeout:
            if self.proc.poll() is not None:
                raise RuntimeError(f"streamlit exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(self.base + "/_stcore/health", timeout=2) as r:
                    if r.status == 200 and r.read().strip() == b"ok":
                        return time.perf_counter() - start
            except OSError:
                pass
            time.sleep(0.05)
        raise TimeoutError(f"{self.base}/_stcore/health not ok after {timeout:.0f} s:\n{self.log_tail()}")

    def log_tail(self, n: int = 4000) -> str:
        self.log.flush()
        return Path(self.log.name).read_text(errors="replace")[-n:]

    def stop(self) -> None:
        """Terminate the whole process group (streamlit and anything it started)."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
            except ProcessLookupError:
                pass
        self.log.close()
        Path(self.log.name).unlink(missing_ok=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def launch_chromium(playwright, executable: str | None = None):
    return playwright.chromium.launch(executable_path=executable or chromium_path(), args=CHROMIUM_ARGS)


# How long an action (a click, a fill) or a wait without its own timeout may take: what a browser test
# asserts is what appears, not how fast. Playwright's own 30 s ran out for a click in the class vote's
# test under load (the suite on 2 cores beside a server and a browser); it passed alone.
ACTION_TIMEOUT_MS = 120_000


def new_context(browser, width: int = 1400, height: int = 1000):
    """A browser context whose pages note script run times (see `run_times`). Pages of one
    context share the HTTP cache, so only the first loads Streamlit's JavaScript from the server."""
    context = browser.new_context(viewport={"width": width, "height": height})
    context.set_default_timeout(ACTION_TIMEOUT_MS)
    context.add_init_script(_RUN_TIMES_JS)
    return context


def profile_context(playwright, directory: str | Path, width: int = 1400, height: int = 1000,
                    executable: str | None = None):
    """A browser with a profile on disk in `directory`, as a user's is: besides the HTTP cache, it keeps
    the code V8 compiled from a script it has run before (a context of `new_context` keeps none, as a
    private window). Its pages note script run times as `new_context`'s do; close it when done."""
    context = playwright.chromium.launch_persistent_context(
        str(directory), executable_path=executable or chromium_path(), args=CHROMIUM_ARGS,
        viewport={"width": width, "height": height})
    context.set_default_timeout(ACTION_TIMEOUT_MS)
    context.add_init_script(_RUN_TIMES_JS)
    return context


def run_times(page) -> tuple[float | None, float | None]:
    """performance.now() (ms) at which the last script run was seen to start and to end."""
    return tuple(page.evaluate("[window.__stRunStart, window.__stRunEnd]"))


def wait_rendered(page, min_charts: int = 0, must_see: str | None = None, not_h1: str | None = None,
                  timeout_ms: float = 60_000) -> float:
    """Wait until the app is idle and drawn (see _SETTLED_JS); return performance.now() (ms) then.
    After an action in the same session, pass what only the new run shows: `must_see` (text in an
    h1 or a chart title) or `not_h1` (the h1 before a page change)."""
    page.wait_for_selector(APP_IDLE, state="attached", timeout=timeout_ms)
    handle = page.wait_for_function(_SETTLED_JS, arg=[min_charts, must_see, not_h1], timeout=timeout_ms,
                                    polling="raf")
    return handle.json_value()
