"""How fast the app is in a real browser: cold start, and views changed in a warm app.

Headless Debian chromium (playwright, never `playwright install`) drives `streamlit run app.py`.
A view counts as rendered when the script is idle, nothing is stale or still Streamlit's loading skeleton
(an element whose code the tab is still fetching), every Plotly chart is drawn and the expected block/head
shows in a chart title (tests/streamlit_server.py, `wait_rendered`).

(a) Cold start: from launching `python -m streamlit run app.py` to the first page rendered, with
    random gpt2 weights and the default text (URL `/?model=gpt2`), in a fresh browser context (no
    HTTP cache). Split into launch → /_stcore/health and health → rendered. Target ≤ 10 s (the
    issue's: ≤ 5 s). Beside it, launch → the diagram drawn: the Overview's drawing of the model is in
    the page (an `svg` whose aria-label ends in "overview": its boxes, shapes and parameter counts;
    for the trivial baselines, their h1). Target ≤ 3 s. `--cold-only`: (a) alone.
(b) Warm: the app has served the view before (the trace is cached); the text has T = 256 tokens
    (and, for comparison, the default text). Two ways to change the view:
      goto     page.goto of the new URL (a reload: new Streamlit session, JavaScript from cache)
      session  what a user does: the Block or Head slider (keyboard, one step) or a sidebar page
               link, in the same session
    One browser tab is open at a time, as for a user. The goto cases rotate, each in a tab of
    its own; the session cases of one text run in one warm tab (one user's session): a slider
    step on the attention page, a sidebar link from the previous page of a cycle to the next.
    Target ≤ 0.5 s. The in-page split: action → script run starts, run (server script and
    streamed elements), run end → all charts drawn (Plotly); "-" where runs were too fast for the
    page to show the state `running`.
(b') Every page of PAGES by goto, warm, T = 256: which page costs what.
(c) A new tab's view (issue 40: p50 <= 2 s over the registry's pages): every page of the registry
    (gpt2viz/spec/pages.py) at the default text, the server warm (the page viewed once before, so its
    run is cached), in a new tab of a browser that has the page's JavaScript in its HTTP cache:
    new tab -> goto -> rendered (at least the registry's charts for the page), then the tab closed.
    In two browsers, alternating in the same rounds: "private", a context as a private window (what
    the earlier rounds measured: it keeps no compiled code, so every tab compiles the app's Plotly
    bundle, 1.4 MB, again: Streamlit's whole Plotly, 4.7 MB, on the attention page), and "profile",
    a profile on disk as a student's browser has, which keeps the code V8 compiled from a script it
    ran before. p50 and p95 over the pages' medians, beside the trivial
    app's new tab (its h1; and with 4 small Plotly charts: Plotly's own cost in a new tab) in the same
    browser and run. `--new-tabs`: (c) alone.
Baselines, measured in the same run: a trivial Streamlit script written to a temporary directory
(a slider bound to the URL and a title), without and with 4 small Plotly charts. Ratios are ours
over the trivial baseline of the same kind. Medians over rounds; in each round every case of a
table runs once, in an order that rotates, so that machine noise hits every case alike.

Usage:  .venv/bin/python benchmarks/bench_app.py [--quick]
"""

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # streamlit_server: a gpt2viz-independent helper

from streamlit_server import (  # noqa: E402
    EXCEPTION,
    StreamlitServer,
    chromium_path,
    launch_chromium,
    new_context,
    profile_context,
    run_times,
    wait_rendered,
)

from gpt2viz.model.tokenizer import encode  # noqa: E402
from gpt2viz.spec.pages import BY_URL  # noqa: E402
from gpt2viz.spec.pages import PAGES as REGISTRY  # noqa: E402

COLD_TARGET_S, WARM_TARGET_S = 10.0, 0.5
DIAGRAM_TARGET_S, WHOLE_TARGET_S = 3.0, 5.0  # issue 40: launch -> the diagram drawn; -> the whole first page
DIAGRAM = "svg[aria-label$=' overview']"  # the Overview's drawing of the model (anatomy/diagram.py)
TOKENS = 256
PAGES = [row.url for row in REGISTRY]
TITLES = {row.url: row.title for row in REGISTRY}
SECTIONS = {row.url: row.section for row in REGISTRY}
NEW_TAB_TARGET_S = 2.0  # issue 40: a new session's view, p50 over the registry's pages
CYCLE = ["attention", "mlp", "block", "layernorm", "merge", "tokens", "output"]  # page changes in (b)
N_BLOCK = N_HEAD = 12  # gpt2
ATTENTION_CHARTS = 2  # charts on the attention page: the head's maps and the grid of every head

TRIVIAL = '''import streamlit as st

block = st.sidebar.slider("Block", 0, 11, 0, key="block", bind="query-params")
st.title(f"Trivial · block {block}")
st.write("A baseline: Streamlit and the browser, nothing of gpt2viz.")
n = int(st.query_params.get("charts", 0))
if n:
    import plotly.graph_objects as go
    for i in range(n):
        st.plotly_chart(go.Figure(go.Bar(y=[1, 3, 2]), layout_title_text=f"chart {i} · block {block}"))
'''


# ---------------------------------------------------------------------------- measurements
class Sample:
    """One timed view change: wall seconds, and the in-page split in seconds (None if unknown);
    or, if it failed, `error` and no times."""

    def __init__(self, wall=None, to_run=None, run=None, draw=None, error: str | None = None):
        self.wall, self.to_run, self.run, self.draw, self.error = wall, to_run, run, draw, error
        self.opened = None  # (c): the new tab's own opening, before its view is asked for


def attempt(fn, *args) -> Sample:
    """fn(*args), or a failed Sample: one view that breaks must not lose a long benchmark."""
    try:
        return fn(*args)
    except Exception as e:  # noqa: BLE001 (reported in the tables)
        return Sample(error=f"{type(e).__name__}: {str(e).splitlines()[0][:200]}")


def _split(page, t_action_ms: float, t_settled_ms: float) -> tuple:
    start, end = run_times(page)
    if start is None or end is None or start < t_action_ms or end < start:
        return None, None, None
    return (start - t_action_ms) / 1e3, (end - start) / 1e3, (t_settled_ms - end) / 1e3


def _check(page, what: str) -> None:
    errors = page.locator(EXCEPTION).all_inner_texts()
    if errors:
        raise RuntimeError(f"{what}: exception on the page: {errors[0][:500]}")


def timed_goto(page, url: str, min_charts: int, must_see: str | None) -> Sample:
    t0 = time.perf_counter()
    page.goto(url)
    settled = wait_rendered(page, min_charts, must_see=must_see)
    wall = time.perf_counter() - t0
    _check(page, url.split("?")[0])
    return Sample(wall, *_split(page, 0.0, settled))  # performance.now() counts from navigation start


def timed_action(page, action, min_charts: int, must_see: str | None, what: str) -> Sample:
    """An action in the same session; without `must_see`, wait for the h1 to change (a page link)."""
    h1 = None if must_see else page.locator("h1").first.text_content()
    t_action = page.evaluate("performance.now()")
    t0 = time.perf_counter()
    action()
    settled = wait_rendered(page, min_charts, must_see=must_see, not_h1=h1)
    wall = time.perf_counter() - t0
    _check(page, what)
    return Sample(wall, *_split(page, t_action, settled))


def press_slider(page, label: str, key: str):
    return lambda: (page.get_by_test_id("stSlider").filter(has_text=label).get_by_role("slider").focus(),
                    page.keyboard.press(key))


def click_page_link(page, url: str):
    """The page's link in the app's top navigation: its section's menu, then the page in it."""
    def click():
        page.get_by_test_id("stTopNavSection").filter(has_text=SECTIONS[url]).click()
        page.get_by_role("menuitem", name=TITLES[url], exact=True).click()
    return click


def cold_start(browser, script: Path, cwd: Path, path: str, min_charts: int,
               drawn: str = "h1") -> tuple[float, float, float]:
    """(launch → health, launch → rendered, launch → `drawn` in the page) in seconds, for a new server
    and a new browser context."""
    context = new_context(browser)
    page = context.new_page()
    t0 = time.perf_counter()
    server = StreamlitServer(script, cwd)
    try:
        health = server.wait_healthy(timeout=120)
        page.goto(server.base + path)
        page.wait_for_selector(drawn, state="attached", timeout=120_000)
        first = time.perf_counter() - t0
        wait_rendered(page, min_charts, timeout_ms=120_000)
        total = time.perf_counter() - t0
        _check(page, f"cold start of {script.name}")
    finally:
        context.close()
        server.stop()
    return health, total, first


def long_text(n_tokens: int) -> str:
    """An English text of at most n_tokens GPT-2 tokens (whole words, as close as they allow)."""
    words = ["The", "model", "reads", "every", "token", "once,", "writes", "a", "residual", "stream,", "and",
             "each", "block", "adds", "what", "its", "attention", "and", "its", "MLP", "computed", "from", "a",
             "normalised", "copy", "of", "that", "stream."]
    text = ""
    for i in range(10 * n_tokens):
        candidate = (text + " " + words[i % len(words)]).strip()
        if len(encode(candidate)) > n_tokens:
            break
        text = candidate
    return text


# ---------------------------------------------------------------------------- rounds
def run_rounds(cases: dict, rounds: int, warmup: int = 1) -> dict[str, list[Sample]]:
    """Each case is a callable(i) -> Sample; round r runs every case once, order rotated by r."""
    names = list(cases)
    samples = {n: [] for n in names}
    for r in range(warmup + rounds):
        order = names[r % len(names):] + names[: r % len(names)]
        for n in order:
            s = attempt(cases[n], r)
            if r >= warmup:
                samples[n].append(s)
    return samples


def med(samples: list[Sample], field: str) -> float | None:
    """Median over the samples that have the field (a run too fast to show `running` has no split,
    a failed one has nothing); None when fewer than half have it."""
    values = [getattr(s, field) for s in samples if getattr(s, field) is not None]
    return statistics.median(values) if values and 2 * len(values) >= len(samples) else None


def errors(named: dict[str, list[Sample]]) -> list[str]:
    return [f"  {name}: {sum(1 for s in ss if s.error)} of {len(ss)} failed, "
            f"e.g. {next(s.error for s in ss if s.error)}"
            for name, ss in named.items() if any(s.error for s in ss)]


def fmt(x: float | None, unit: str = "s") -> str:
    return "-" if x is None else (f"{x:.2f} {unit}" if unit == "s" else f"{x:.1f}×")


def table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]

    def line(r):
        return "  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w) for i, (c, w) in enumerate(zip(r, widths)))

    return "\n".join([line(header), "  ".join("-" * w for w in widths)] + [line(r) for r in rows])


# ---------------------------------------------------------------------------- the benchmark
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repetitions (a smoke run)")
    ap.add_argument("--cold-only", action="store_true", help="(a) alone: the cold starts")
    ap.add_argument("--new-tabs", action="store_true", help="(c) alone: every page in a new tab")
    args = ap.parse_args()
    cold_reps, warm_rounds, page_reps = (1, 3, 1) if args.quick else (3, 5, 2)
    if chromium_path() is None:
        sys.exit("no chromium (/usr/bin/chromium or `chromium` on PATH)")
    import streamlit
    from playwright.sync_api import sync_playwright

    text256 = long_text(TOKENS)
    T = len(encode(text256))
    print(f"gpt2viz app benchmark · streamlit {streamlit.__version__} · {chromium_path()} · "
          f"{'quick' if args.quick else 'full'} run")
    print(f"(a) {cold_reps} cold starts each; (b) {warm_rounds} rounds after 1 warm-up round; long text T = {T}")

    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        trivial = Path(tmp) / "trivial.py"
        trivial.write_text(TRIVIAL)
        browser = launch_chromium(p)
        if args.new_tabs:
            with StreamlitServer("app.py", ROOT) as app, StreamlitServer(trivial, tmp) as base:
                app.wait_healthy(120)
                base.wait_healthy(60)
                tabs = new_tabs_in_both(p, browser, tmp, app.base, base.base, page_reps)
            browser.close()
            report_new_tabs(tabs)
            return

        # (a) cold starts, alternating app and baselines
        cold = {"app": [], "trivial": [], "trivial4": []}
        for _ in range(cold_reps):
            cold["trivial"].append(cold_start(browser, trivial, tmp, "/", 0))
            cold["trivial4"].append(cold_start(browser, trivial, tmp, "/?charts=4", 4))
            cold["app"].append(cold_start(browser, Path("app.py"), ROOT, "/?model=gpt2", 2, DIAGRAM))
        if args.cold_only:
            browser.close()
            report_cold(cold)
            return

        # (b) warm: one server each; one tab open at a time (see measure_warm)
        with StreamlitServer("app.py", ROOT) as app, StreamlitServer(trivial, tmp) as base:
            app.wait_healthy(120)
            base.wait_healthy(60)
            context = new_context(browser)
            warm, per_page = measure_warm(context, app.base, base.base, text256, warm_rounds, page_reps)
            context.close()
            tabs = new_tabs_in_both(p, browser, tmp, app.base, base.base, page_reps)
        browser.close()

    report(cold, warm, per_page, T)
    report_new_tabs(tabs)


def new_tab(context, url: str, min_charts: int) -> Sample:
    """A new tab of `context` opened on `url`: timed from the link asked for in the new tab (as a user
    pastes it) to the view rendered; the tab's own opening (playwright's new_page: the driver's round
    trips and chromium's new tab) is kept apart, in `opened`."""
    t0 = time.perf_counter()
    page = context.new_page()
    opened = time.perf_counter() - t0
    try:
        t0 = time.perf_counter()
        page.goto(url)
        settled = wait_rendered(page, min_charts, timeout_ms=120_000)
        wall = time.perf_counter() - t0
        _check(page, url.split("?")[0])
        sample = Sample(wall, *_split(page, 0.0, settled))
        sample.opened = opened
        return sample
    finally:
        page.close()


BROWSERS = ("private", "profile")  # (c)'s two browsers: a private window's context, a profile on disk


def new_tabs_in_both(playwright, browser, tmp: str, app: str, base: str,
                     reps: int) -> dict[str, dict[str, list[Sample]]]:
    """(c) in a private window's context of `browser` and in a browser with a profile on disk (in `tmp`)."""
    contexts = {"private": new_context(browser), "profile": profile_context(playwright, Path(tmp) / "profile")}
    try:
        return measure_new_tabs(contexts, app, base, reps)
    finally:
        for context in contexts.values():
            context.close()


def measure_new_tabs(contexts: dict, app: str, base: str, reps: int) -> dict[str, dict[str, list[Sample]]]:
    """(c): every registry page at the default text in a new tab each, in each browser of `contexts`,
    after one untimed view of it there (the server warm, its run cached, the browser's caches filled);
    the trivial app's new tab in every round, the baseline. {browser: {page: samples}}."""
    cases = {url: (f"{app}/{url}?model=gpt2", BY_URL[url].charts) for url in PAGES}
    cases["trivial"] = (f"{base}/?block=0", 0)
    cases["trivial + 4 charts"] = (f"{base}/?block=0&charts=4", 4)  # Plotly's own cost in a new tab
    for context in contexts.values():
        for address, charts in cases.values():  # warm: the page's run cached, its code imported
            attempt(new_tab, context, address, charts)
    samples = run_rounds({(who, name): lambda r, ctx=context, a=address, c=charts: new_tab(ctx, a, c)
                          for who, context in contexts.items() for name, (address, charts) in cases.items()},
                         reps, warmup=0)
    return {who: {name: samples[(who, name)] for name in cases} for who in contexts}


def report_new_tabs(tabs: dict[str, dict[str, list[Sample]]]) -> None:
    import os

    first = next(iter(tabs.values()))
    print(f"\n(c) A new tab's view, warm, default text (median of {len(first['trivial'])} per page and browser; "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}); private: a private window's "
          "context, which keeps no compiled code; profile: a browser profile on disk, as a student's")
    bases = {who: med(named["trivial"], "wall") for who, named in tabs.items()}
    rows = []
    for name in first:
        row = [name]
        for who, named in tabs.items():
            ss = named[name]
            row += [fmt(med(ss, "wall")), fmt(ratio(med(ss, "wall"), bases[who]), "x")]
        ss = first[name]
        rows.append(row + [fmt(med(ss, "to_run")), fmt(med(ss, "run")), fmt(med(ss, "draw")), fmt(med(ss, "opened"))])
    header = ["page"] + [f"{label} {who}" for who in tabs for label in ("total", "÷ trivial")]
    first_who = next(iter(tabs))
    print(table(rows, header + [f"{label} ({first_who})" for label in ("→run", "run", "draw", "tab opening")]))
    for who, named in tabs.items():
        failed = errors({f"{who} {name}": ss for name, ss in named.items()})
        if failed:
            print("failures (excluded):\n" + "\n".join(failed))
        walls = sorted(w for name, ss in named.items() if name in PAGES and (w := med(ss, "wall")) is not None)
        if walls:
            p50, p95 = percentile(walls, 50), percentile(walls, 95)
            print(f"new tab, {who}, over {len(walls)} of {len(PAGES)} pages: p50 {p50:.2f} s "
                  f"({fmt(ratio(p50, bases[who]), 'x')} the trivial app's {fmt(bases[who])}), p95 {p95:.2f} s; "
                  f"target p50 <= {NEW_TAB_TARGET_S:.0f} s: {'met' if p50 <= NEW_TAB_TARGET_S else 'MISSED'}")


def percentile(sorted_values: list[float], q: int) -> float:
    """The q-th percentile of sorted values, the nearest rank (the median for q = 50)."""
    if q == 50:
        return statistics.median(sorted_values)
    return sorted_values[min(len(sorted_values) - 1, round(q / 100 * (len(sorted_values) - 1)))]


def measure_warm(context, app: str, base: str, text256: str, rounds: int, page_reps: int):
    texts = {"T=256": quote(text256), "default": None}

    def q(t):
        return f"?model=gpt2&text={texts[t]}" if texts[t] else "?model=gpt2"

    tabs: dict[str, object] = {}

    def tab(name: str, url: str, min_charts: int):
        """The tab `name`, and no other: a user has one tab, and background tabs of the app would
        share the 2 cores with the measured one. A new tab loads `url` first (a warm view)."""
        for other in [n for n in tabs if n != name]:
            tabs.pop(other).close()
        if name not in tabs:
            tabs[name] = context.new_page()
            tabs[name].goto(url)
            wait_rendered(tabs[name], min_charts, timeout_ms=120_000)
        tabs[name].bring_to_front()
        return tabs[name]

    def on_page(page, url: str, min_charts: int):
        """Bring the session to page `url` by its sidebar link (not timed), unless it is there."""
        if f"/{url}" not in page.url:
            h1 = page.locator("h1").first.text_content()
            click_page_link(page, url)()
            wait_rendered(page, min_charts, not_h1=h1, timeout_ms=120_000)
        return page

    # goto: a new URL each time in a tab of its own (the view was served before: warm-up round)
    gotos = {}
    for t in texts:
        gotos[f"goto block · {t}"] = lambda r, t=t: timed_goto(
            tab(f"goto-{t}", f"{app}/attention{q(t)}", ATTENTION_CHARTS), f"{app}/attention{q(t)}&block={r % N_BLOCK}",
            ATTENTION_CHARTS, f"block {r % N_BLOCK} head 0")
        gotos[f"goto head · {t}"] = lambda r, t=t: timed_goto(
            tab(f"goto-{t}", f"{app}/attention{q(t)}", ATTENTION_CHARTS), f"{app}/attention{q(t)}&head={r % N_HEAD}",
            ATTENTION_CHARTS, f"block 0 head {r % N_HEAD}")
        gotos[f"goto page · {t}"] = lambda r, t=t: timed_goto(
            tab(f"goto-{t}", f"{app}/attention{q(t)}", ATTENTION_CHARTS),
            f"{app}/{CYCLE[r % len(CYCLE)]}{q(t)}", 1, None)
    for charts in (0, 4):
        suffix = f"&charts={charts}" if charts else ""
        label = "trivial" if charts == 0 else "trivial + 4 charts"
        gotos[f"goto · {label}"] = lambda r, s=suffix, c=charts: timed_goto(
            tab(f"base-goto{c}", f"{base}/?block=0{s}", c), f"{base}/?block={r % N_BLOCK}{s}", c,
            f"block {r % N_BLOCK}")
    warm = run_rounds(gotos, rounds)

    # session: what one user does in one warm tab: a slider step (0 → 1, or back), a page link
    for t in texts:

        def session(t=t):
            return tab(f"session-{t}", f"{app}/attention{q(t)}", ATTENTION_CHARTS)

        warm |= run_rounds({
            f"session Block slider · {t}": lambda r: slider_step(
                on_page(session(), "attention", ATTENTION_CHARTS), "Block", r, "block {block} head {head}"),
            f"session Head slider · {t}": lambda r: slider_step(
                on_page(session(), "attention", ATTENTION_CHARTS), "Head", r, "block {block} head {head}"),
            f"session page link · {t}": lambda r: timed_action(
                on_page(session(), CYCLE[(r - 1) % len(CYCLE)], 1), click_page_link(session(), CYCLE[r % len(CYCLE)]),
                1, None, "page link"),
        }, rounds)
    for charts in (0, 4):
        suffix = f"&charts={charts}" if charts else ""
        label = "trivial" if charts == 0 else "trivial + 4 charts"
        warm |= run_rounds({f"session slider · {label}": lambda r, s=suffix, c=charts: slider_step(
            tab(f"base-slider{c}", f"{base}/?block=0{s}", c), "Block", r, "block {block}", c)}, rounds)

    # every page once per repetition, warm, by goto, at T = 256 (which page costs what)
    page = tab("pages", f"{app}/attention{q('T=256')}", ATTENTION_CHARTS)
    per_page = {url: [] for url in PAGES}
    for r in range(1 + page_reps):
        for url in PAGES:
            s = attempt(timed_goto, page, f"{app}/{url}{q('T=256')}", 0, None)
            if r:
                per_page[url].append(s)
    return warm, per_page


def slider_value(page, label: str) -> int:
    return int(page.get_by_test_id("stSlider").filter(has_text=label).get_by_role("slider").input_value())


def slider_step(page, label: str, r: int, title: str, min_charts: int = ATTENTION_CHARTS) -> Sample:
    """One keyboard step of a slider: right from 0, else left (r is unused: the session's sliders
    may be anywhere). `title` names what the new view's chart shows: "block {block} head {head}"
    (the other slider's value read from the page) or, in the trivial app, "block {block}"."""
    now = slider_value(page, label)
    key, value = ("ArrowRight", now + 1) if now == 0 else ("ArrowLeft", now - 1)
    values = {label.lower(): value}
    for other in ("Block", "Head"):
        if "{" + other.lower() + "}" in title and other.lower() not in values:
            values[other.lower()] = slider_value(page, other)
    return timed_action(page, press_slider(page, label, key), min_charts, title.format(**values), f"{label} slider")


def ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else a / b


def report_cold(cold) -> None:
    import os

    print(f"\n(a) Cold start: launch `streamlit run` → first page rendered (median; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())})")
    base_total = statistics.median(t for _, t, _ in cold["trivial"])
    base_first = statistics.median(f for _, _, f in cold["trivial"])
    rows = []
    for key, label in (("app", "app.py, /?model=gpt2 (random gpt2, default text)"),
                       ("trivial", "baseline: trivial script"), ("trivial4", "baseline: trivial + 4 charts")):
        health = statistics.median(h for h, _, _ in cold[key])
        total = statistics.median(t for _, t, _ in cold[key])
        first = statistics.median(f for _, _, f in cold[key])
        rows.append([label, fmt(health), fmt(first), fmt(first / base_first, "x"), fmt(total - health), fmt(total),
                     fmt(total / base_total, "x"),
                     (f"{'yes' if first <= DIAGRAM_TARGET_S else 'NO'} / {'yes' if total <= WHOLE_TARGET_S else 'NO'}")
                     if key == "app" else ""])
    print(table(rows, ["case", "to health", "diagram", "÷ trivial h1", "health→drawn", "total", "÷ trivial",
                       f"≤ {DIAGRAM_TARGET_S:.0f} / {WHOLE_TARGET_S:.0f} s"]))
    print("all cold totals (s): " + "; ".join(f"{k}: " + ", ".join(f"{t:.2f}" for _, t, _ in v)
                                             for k, v in cold.items()))
    print("all launch → diagram (app) or h1 (s): " + "; ".join(
        f"{k}: " + ", ".join(f"{f:.2f}" for _, _, f in v) for k, v in cold.items()))


def report(cold, warm, per_page, T) -> None:
    report_cold(cold)

    print(f"\n(b) Warm view changes (median of {len(next(iter(warm.values())))} rounds; split in-page: "
          "action→run start, run, run end→charts drawn)")
    base_goto = med(warm["goto · trivial"], "wall")
    base_session = med(warm["session slider · trivial"], "wall")
    rows = []
    for name, samples in warm.items():
        wall = med(samples, "wall")
        ok = [x.wall for x in samples if x.wall is not None]
        rows.append([name, fmt(wall), fmt(med(samples, "to_run")), fmt(med(samples, "run")),
                     fmt(med(samples, "draw")),
                     fmt(ratio(wall, base_goto if name.startswith("goto") else base_session), "x"),
                     "" if "trivial" in name else "-" if wall is None else "yes" if wall <= WARM_TARGET_S else "NO",
                     f"{min(ok):.2f}–{max(ok):.2f}" if ok else "-"])
    print(table(rows, ["case", "total", "→run", "run", "draw", "÷ trivial", f"≤ {WARM_TARGET_S} s", "range"]))
    print(f"(÷ trivial: goto rows over 'goto · trivial' = {fmt(base_goto)}, session rows over "
          f"'session slider · trivial' = {fmt(base_session)}; T = {T} tokens for the T=256 rows)")

    print(f"\n(b') Each page by goto, warm, T = {T} (median of {len(next(iter(per_page.values())))})")
    rows = [[url, fmt(med(ss, "wall")), fmt(med(ss, "to_run")), fmt(med(ss, "run")), fmt(med(ss, "draw")),
             fmt(ratio(med(ss, "wall"), base_goto), "x")] for url, ss in per_page.items()]
    print(table(rows, ["page", "total", "→run", "run", "draw", "÷ trivial goto"]))
    failed = errors(warm) + errors(per_page)
    if failed:
        print("\nfailures (excluded from the medians):\n" + "\n".join(failed))
    timed = {u: med(ss, "wall") for u, ss in per_page.items() if med(ss, "wall") is not None}
    if timed:
        worst = max(timed, key=timed.get)
        print(f"\nslowest page by goto: {worst} {fmt(timed[worst])}; "
              f"session Block slider T=256: {fmt(med(warm['session Block slider · T=256'], 'wall'))}")


if __name__ == "__main__":
    main()
