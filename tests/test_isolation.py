"""Two users at once never see each other's view: two browser contexts (two sessions, as two
people on two machines) on one server, model=tiny, each with its own text in the URL.

Session A reads "Alpha apples arrive", session B "Zebra zeppelins zoom". Both open the tokens page
and the generation page at the same moment (four tabs, navigations started together, so the four
script runs overlap in the server). Each tab must show only its own tokens: in the token table
(tokens page), the "reads token" column (generation page), the position-labelled chart axes
("0·Alpha"), and the text box; the other session's tokens and words appear nowhere in them. Then
A changes its mode by its URL (decode), and B's two tabs must be exactly as they were.

Needs Debian's chromium (/usr/bin/chromium, or `chromium` on PATH); without it the module is
skipped, unless GPT2VIZ_REQUIRE_BROWSER=1, which turns the skip into a failure.
"""

import re
import sys
from pathlib import Path
from urllib.parse import quote

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from streamlit_server import EXCEPTION, StreamlitServer, chromium_for_tests, new_context, wait_rendered  # noqa: E402

from gpt2viz.model.tokenizer import encode, readable_tokens  # noqa: E402
from gpt2viz.spec.pages import BY_URL  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TEXT = {"A": "Alpha apples arrive", "B": "Zebra zeppelins zoom"}
TOKENS = {s: readable_tokens(encode(t)) for s, t in TEXT.items()}  # A: Alpha ␣apples ␣arrive; B: Z ebra ␣ze…
WORDS = {s: t.split() for s, t in TEXT.items()}
OTHER = {"A": "B", "B": "A"}
PAGES = {url: BY_URL[url].charts for url in ("tokens", "generation")}  # page → charts it draws in every mode
MODE_HEADING = {"full": "Intermediate states · Full sequence", "decode": "Intermediate states · Decode (KV cache)"}

# Values of the column `header` of the page's st.dataframe, from the grid's accessible table
# (Glide draws on a canvas and mirrors the cells in a <table role="grid">); null until it exists.
COLUMN_JS = """
(header) => {
  const grid = document.querySelector("[data-testid='stDataFrame'] table[role='grid']");
  if (!grid) return null;
  const th = [...grid.querySelectorAll("th")].find(th => th.textContent === header);
  if (!th) return null;
  const col = th.getAttribute("aria-colindex");
  return [...grid.querySelectorAll(`td[aria-colindex='${col}']`)].map(td => td.textContent);
}
"""
POSITIONED = re.compile(r"^(\d+)·(.*)$")  # chart tick labels of token positions, "0·Alpha"


def url(base: str, session: str, page: str, mode: str | None = None) -> str:
    return f"{base}/{page}?model=tiny&text={quote(TEXT[session])}" + (f"&mode={mode}" if mode else "")


def snapshot(page, column: str, rows: int) -> dict:
    """What the tab shows that could carry a session's text or mode."""
    page.wait_for_function(f"(h) => {{ const v = ({COLUMN_JS})(h); return v !== null && v.length >= {rows}; }}",
                           arg=column, timeout=15_000)
    # Streamlit loads a widget's code on first use and shows nothing meanwhile, which the settled
    # predicate does not see: wait for the text box to hold a value
    page.wait_for_function("() => !!document.querySelector(\"[data-testid='stSidebar'] textarea\")?.value",
                           timeout=15_000)
    svg = page.eval_on_selector_all(".js-plotly-plot text", "els => els.map(e => e.textContent)")
    return {
        "url": page.url,
        "text box": page.locator("[data-testid='stSidebar'] textarea").first.input_value(),
        "column": page.evaluate(COLUMN_JS, column),
        "positions": sorted({(int(m[1]), m[2]) for m in map(POSITIONED.match, svg) if m}),
        "svg": svg,
        "headings": page.locator("h1, h2, h3").all_inner_texts(),
        "exceptions": page.locator(EXCEPTION).all_inner_texts(),
    }


def check_own(snap: dict, session: str, page_name: str) -> None:
    own, other = TOKENS[session], TOKENS[OTHER[session]]
    where = f"session {session}, {page_name} page"
    assert snap["exceptions"] == [], where
    assert snap["text box"] == TEXT[session], where
    positions = dict(snap["positions"])
    assert positions == dict(enumerate(own)), f"{where}: chart axes show {positions}"
    if page_name == "tokens":
        assert snap["column"] == own, f"{where}: token table {snap['column']}"
    else:  # the first decode step reads the prompt's last token
        assert snap["column"][0] == own[-1], f"{where}: reads token {snap['column']}"
    shown = [snap["text box"], *snap["column"], *snap["svg"]]
    leaked = [v for v in shown if v in other or any(w in v for w in WORDS[OTHER[session]])]
    assert leaked == [], f"{where}: the other session's tokens {leaked}"


@pytest.fixture(scope="module")
def browser():
    with chromium_for_tests() as b:
        yield b


@pytest.fixture(scope="module")
def base(browser):
    server = StreamlitServer("app.py", cwd=ROOT)
    try:
        server.wait_healthy(timeout=60)
        yield server.base
    finally:
        server.stop()


def test_two_sessions_see_only_their_own_view(browser, base):
    assert not set(TOKENS["A"]) & set(TOKENS["B"]), "the two texts must share no token"
    contexts = {s: new_context(browser) for s in TEXT}  # two sessions: separate cookies, storage, cache
    try:
        tabs = {(s, p): contexts[s].new_page() for s in TEXT for p in PAGES}
        for (s, p), tab in tabs.items():  # start all four at once: their script runs overlap
            tab.goto(url(base, s, p), wait_until="commit")
        for (_, p), tab in tabs.items():
            wait_rendered(tab, PAGES[p], timeout_ms=120_000)  # four runs at once on a loaded CI machine
        column = {"tokens": "token", "generation": "reads token"}
        rows = {"tokens": 3, "generation": 1}
        before = {(s, p): snapshot(tab, column[p], rows[p]) for (s, p), tab in tabs.items()}
        for (s, p), snap in before.items():
            check_own(snap, s, p)
        assert MODE_HEADING["full"] in before[("A", "tokens")]["headings"]

        # A changes its mode by its URL; B's tabs must not change
        a = tabs[("A", "tokens")]
        a.goto(url(base, "A", "tokens", mode="decode"))
        wait_rendered(a, PAGES["tokens"], timeout_ms=120_000)
        after_a = snapshot(a, column["tokens"], rows["tokens"])
        assert MODE_HEADING["decode"] in after_a["headings"], after_a["headings"]
        assert after_a["text box"] == TEXT["A"] and after_a["column"] == TOKENS["A"]
        for p in PAGES:
            b = tabs[("B", p)]
            wait_rendered(b, PAGES[p], timeout_ms=10_000)  # idle, nothing stale
            after_b = snapshot(b, column[p], rows[p])
            assert after_b == before[("B", p)], f"B's {p} tab changed when A changed its mode"
            check_own(after_b, "B", p)
        assert MODE_HEADING["full"] in before[("B", "tokens")]["headings"]
        assert "mode=" not in tabs[("B", "tokens")].url
    finally:
        for c in contexts.values():
            c.close()
