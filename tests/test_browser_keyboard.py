"""Every page by the keyboard alone, in a real browser (1280x720, random tiny weights).

Presented (`present=1`) on four pages (every page plain: tests/test_browser_pages.py), Tab is pressed from the top of
the page until the focus comes back to the first stop, and the walk is held against every visible interactive
control the page draws (links, buttons, inputs, text areas, sliders, selectboxes, radio groups, toggles,
segmented controls, expanders' and "Show the numbers" summaries, tabs, the diagram's boxes, the toolbar's
buttons of each chart):

- the first stop is the skip link ("Skip to main content"), and the walk wraps (no control keeps the focus);
- every control is reached (a radio group and a row of tabs count once: one stop, then the arrow keys);
- the order is the skip link, then the sidebar and the top bar's navigation, then the page, each in the
  document's order (no positive tabindex);
- every stop wears a visible focus indicator: an outline (or a ring of box-shadow) of at least 2 px on the
  control or on the box that draws it, not cut away by a box that clips it, not transparent, not on a
  control hidden at that moment, and gone once the focus moves on (the computed styles compared).

Then the skip link and a few controls are driven: Enter on the skip link puts the focus in the page (plain and
presented), a selectbox opened and changed with the arrow keys and Enter, a slider moved with an arrow, a
segmented control's option chosen with the arrow keys and Space, an expander opened with Enter, the
presentation toggle switched on with Space and off again with the bar's "Exit presentation" and Enter.

One server, one browser context, tabs reused (browser_tabs). Skipped without Debian's chromium, as
test_browser.py is.
"""

import contextlib
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from browser_tabs import app_context, leave, tab  # noqa: E402
from streamlit_server import EXCEPTION, wait_rendered  # noqa: E402
from sweep import sweep  # noqa: E402
from test_browser_a11y import query, tab_to  # noqa: E402

from gpt2viz.spec.pages import href  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TABS = 700  # more stops than any page has (the most, /heads presented, about 300)
# Controls the app cannot bring into the Tab order or give a ring (Streamlit's own markup): (what, a CSS
# selector). None at streamlit 1.67; an entry names its upstream issue.
STREAMLIT_OWN: tuple[tuple[str, str], ...] = ()

# Marks every visible interactive control of the page (data-gpt2viz-key = its number) and describes it:
# where it is (skip, bar = the sidebar or the top bar, page), its words, whether it is a Tab stop of its own
# or one of a group that takes one stop (the radio buttons of one name, a row of tabs), and the positive
# tabindex found anywhere.
CONTROLS_JS = r"""(own) => {
  const SELECTOR = "a[href], button, input:not([type='hidden']), textarea, select, summary, " +
    "[contenteditable='true'], [role='button'], [role='link'], [role='slider'], [role='tab'], [role='switch'], " +
    "[role='radio'], [role='checkbox'], [role='combobox'], [role='menuitem'], [role='option'], " +
    "[tabindex]:not([tabindex='-1'])";
  const where = e => e.closest("[data-testid='stSkipToContent']") ? "skip"
    : e.closest("[data-testid='stSidebar'], [data-testid='stTopNavSection'], header, [data-testid='stHeader']") ? "bar"
    : e.closest("[data-testid='stMain']") ? "page" : "elsewhere";
  const words = e => (e.getAttribute("aria-label") || e.innerText || e.textContent || e.getAttribute("title") ||
                      e.closest("label")?.innerText || e.tagName).trim().replace(/\s+/g, " ").slice(0, 60);
  const boxes = [...document.querySelectorAll("[data-testid='stElementContainer']")];
  const lists = role => [...document.querySelectorAll(`[role='${role}']`)];
  const out = [];
  let n = 0;
  for (const e of document.querySelectorAll(SELECTOR)) {
    if (e.disabled || e.getAttribute("aria-disabled") === "true" || e.closest("[inert], fieldset:disabled")) continue;
    if (!e.checkVisibility({visibilityProperty: true})) continue;  // not drawn (display none, a closed details)
    const r = e.getBoundingClientRect();
    if (!r.width && !r.height && !e.closest("label")) continue;
    if (e === document.querySelector("[data-testid='stMain']")) continue;  // the page's scroller, not a control
    if (own.some(s => e.matches(s))) continue;
    const roving = "[role='tab'], [role='radio'], [role='option'], input[type='radio']";
    const control = "a[href], button, input, textarea, select, summary, [role='button'], [role='link'], " +
                    "[role='slider'], [role='switch'], [role='checkbox'], [role='combobox']";
    // tabindex -1 on a box that is not a control: taken out of the Tab order on purpose (only a script focuses it)
    if (e.getAttribute("tabindex") === "-1" && !e.matches(roving) && !e.matches(control)) continue;
    let group = "";
    if (e.matches("input[type='radio']")) group = "radio:" + (e.name || e.closest("[role='radiogroup']")?.id || n);
    else if (e.matches("[role='tab']")) group = "tabs:" + lists("tablist").indexOf(e.closest("[role='tablist']"));
    else if (e.matches("[role='radio']"))
      group = "radios:" + lists("radiogroup").indexOf(e.closest("[role='radiogroup']"));
    else if (e.matches("[role='option']")) continue;  // an open list's options: the arrow keys
    e.dataset.gpt2vizKey = String(n);
    const box = boxes.indexOf(e.closest("[data-testid='stElementContainer']"));
    out.push({key: n++, where: where(e), words: words(e), group, box,
              tabindex: e.getAttribute("tabindex") || ""});
  }
  const positive = [...document.querySelectorAll("[tabindex]")].filter(e => +e.getAttribute("tabindex") > 0)
    .map(e => e.outerHTML.slice(0, 120));
  return {controls: out, positive};
}"""

# The focused element: its mark (or its nearest marked ancestor's), where it is, its words, its focus
# indicator, whether it is in the document order after the last stop; and the indicator of the element
# that had the focus before, now that it lost it.
STEP_JS = r"""async () => {
  // a control shown while it has the focus fades in: its styles once every transition has ended (ended
  // at once: the end state is what is checked, and waiting 150-300 ms a stop made the walk minutes)
  for (const a of document.getAnimations()) if (a instanceof CSSTransition) a.finish();
  const visible = n => {
    let opacity = 1;
    for (let a = n; a && a.nodeType === 1; a = a.parentElement) {
      const cs = getComputedStyle(a);
      opacity *= +cs.opacity;
      if (cs.visibility === "hidden" || cs.display === "none") return false;
      if (cs.clipPath !== "none" || (cs.clip && cs.clip !== "auto")) return false;  // visually hidden
    }
    const r = n.getBoundingClientRect();
    return opacity >= 0.5 && r.width >= 4 && r.height >= 4;
  };
  // a box between n and its widget's that cuts away half its ring or more (the ring: from `offset` to
  // `offset` + `width` outside n's box; a negative offset draws it inside)
  const clipped = (n, offset, width) => {
    const r = n.getBoundingClientRect();
    const grown = d => ({left: r.left - d, top: r.top - d, right: r.right + d, bottom: r.bottom + d});
    const outer = grown(offset + width), inner = grown(offset);
    const area = (a, b) => Math.max(0, Math.min(a.right, b.right) - Math.max(a.left, b.left)) *
                           Math.max(0, Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top));
    const band = area(outer, outer) - area(inner, inner);
    let a = n.parentElement;
    for (let i = 0; a && i < 8; i++, a = a.parentElement) {
      if (a.matches("[data-testid='stMain'], [data-testid='stSidebar'], [data-testid='stSidebarContent'], " +
                    "[data-testid='stMainBlockContainer'], [data-testid='stSidebarUserContent'], body")) break;
      const cs = getComputedStyle(a);
      if (cs.overflowX === "visible" && cs.overflowY === "visible") continue;
      const b = a.getBoundingClientRect();
      if (area(outer, b) - area(inner, b) < band / 2) return true;
    }
    return false;
  };
  const opaque = c => c && c !== "transparent" && !/rgba\(.*,\s*0\)$/.test(c);
  const ring = e => {  // the focus indicator: the first box of e and five ancestors that draws a visible one
    if (!e) return "";
    const boxes = [e];
    for (let a = e.parentElement, i = 0; a && i < 5; i++, a = a.parentElement) boxes.push(a);
    for (const [i, b] of boxes.entries()) {
      const cs = getComputedStyle(b);
      const w = parseFloat(cs.outlineWidth) || 0;
      if (cs.outlineStyle !== "none" && w >= 2 && opaque(cs.outlineColor) && visible(b) &&
          !clipped(b, parseFloat(cs.outlineOffset) || 0, w))
        return `outline ${w}px ${cs.outlineColor} on ${i ? "ancestor " + i : "itself"}`;
      const spread = /(rgba?\([^)]*\)|#\w+)\s+0px\s+0px\s+0px\s+([\d.]+)px/.exec(cs.boxShadow);
      if (spread && +spread[2] >= 2 && opaque(spread[1]) && visible(b) && !clipped(b, 0, +spread[2]))
        return `box-shadow ${spread[2]}px ${spread[1]} on ${i ? "ancestor " + i : "itself"}`;
    }
    if (e instanceof SVGElement) {  // a diagram's box: its rectangle's stroke
      const rect = e.querySelector("rect");
      const cs = rect && getComputedStyle(rect);
      if (cs && parseFloat(cs.strokeWidth) >= 3 && opaque(cs.stroke) && visible(rect))
        return `stroke ${cs.strokeWidth}`;
    }
    return "";
  };
  const prev = window.__gpt2vizFocus;
  const e = document.activeElement;
  // a table's grid moves the focus to its cell and marks it a frame or more later (later on a loaded machine:
  // ten frames were once not enough while the suite shared the 2 cores with two more browsers): a stop without a
  // ring is looked at again at every frame for up to 1.5 s before it counts as one without
  const since = performance.now();
  while (e && e !== document.body && !ring(e) && performance.now() - since < 1500)
    await new Promise(done => requestAnimationFrame(() => {
      for (const a of document.getAnimations()) if (a instanceof CSSTransition) a.finish();
      done();
    }));
  const widget = n => n && n.closest && n.closest("[data-testid='stElementContainer']");
  // a control the focus left for another part of the same widget (a table's grid) may keep the widget's ring
  const left = prev && !(widget(prev) && widget(prev) === widget(e))
    ? {key: prev.dataset.gpt2vizKey ?? "", ring: ring(prev)} : null;
  window.__gpt2vizFocus = e;
  if (!e || e === document.body) return {body: true, left};
  const marked = e.closest("[data-gpt2viz-key]");
  const order = window.__gpt2vizLast && e !== window.__gpt2vizLast
    ? !!(window.__gpt2vizLast.compareDocumentPosition(e) & Node.DOCUMENT_POSITION_FOLLOWING) : true;
  window.__gpt2vizLast = e;
  return {key: marked ? marked.dataset.gpt2vizKey : "", testid: e.dataset.testid || "",
          words: (e.getAttribute("aria-label") || e.innerText || e.textContent || e.tagName).trim()
                   .replace(/\s+/g, " ").slice(0, 60),
          tag: e.tagName.toLowerCase(), ring: ring(e), order, left,
          // a table's grid (st.dataframe) moves the focus to a cell of its hidden copy for screen readers and
          // draws that cell's highlight on its canvas: shown while the grid is
          shown: visible(e) || !!ring(e) || !!(e.closest("[data-testid='stDataFrame']") &&
                                               visible(e.closest("[data-testid='stDataFrame']")))};
}"""

RANK = {"skip": 0, "bar": 1, "page": 2}


@pytest.fixture(scope="module")
def context():
    """The module's browser context at 1280x720, and (as `.gpt2viz_base`) the address of its server."""
    with app_context(ROOT, 1280, 720) as context:
        yield context


def open_view(context, path: str):
    page = tab(context)
    page.goto(context.gpt2viz_base + path)
    wait_rendered(page, 0, timeout_ms=180_000)
    page.wait_for_timeout(300)  # a11y.js marks the regions that scroll sideways at the next frame
    assert page.locator(EXCEPTION).count() == 0, page.locator(EXCEPTION).first.inner_text()[:300]
    return page


def walk(page) -> dict:
    """Tab from the top of the page until the focus is back on the first stop: the controls, the stops."""
    found = page.evaluate(CONTROLS_JS, [s for _, s in STREAMLIT_OWN])
    page.evaluate("() => { window.__gpt2vizFocus = null; window.__gpt2vizLast = null; }")
    page.locator("body").focus()
    stops = []
    for _ in range(TABS):
        page.keyboard.press("Tab")
        now = page.evaluate(STEP_JS)
        if stops and now["left"] is not None and stops[-1].get("key") == now["left"]["key"]:
            stops[-1]["after"] = now["left"]["ring"]
        if now.get("body"):
            continue  # past the last stop, the browser's own
        if stops and now["key"] and now["key"] == stops[0]["key"]:
            break
        stops.append(now)
    else:
        raise AssertionError(f"the focus did not come back to the first stop in {TABS} Tabs: "
                             f"{[s['words'] for s in stops[-12:]]} ...")
    return {**found, "stops": stops}


def problems(found: dict) -> list[str]:
    """What the walk breaks: the skip link first, every control reached, the order, a visible indicator."""
    controls, stops = {str(c["key"]): c for c in found["controls"]}, found["stops"]
    out = []
    if not stops or controls.get(stops[0]["key"], {}).get("where") != "skip":
        out.append(f"the first stop is {stops[0]['words'] if stops else None!r}, not the skip link")
    reached = {s["key"] for s in stops if s["key"]}
    groups = {c["group"] for c in controls.values() if c["group"] and str(c["key"]) in reached}
    # a widget's own buttons out of the Tab order (a selectbox's "Open", a number's "Increment"): its input is the stop
    widgets = {controls[key]["box"] for key in reached if key in controls and controls[key]["box"] >= 0}
    missed = [c for key, c in controls.items() if key not in reached and not (c["group"] and c["group"] in groups)
              and not (c["tabindex"] == "-1" and c["box"] in widgets)]
    out += [f"not reached by Tab: {c['where']} {c['words']!r} (tabindex {c['tabindex']!r})" for c in missed]
    out += [f"a positive tabindex: {p}" for p in found["positive"]]
    ranks = [RANK.get(controls[s["key"]]["where"], 3) for s in stops if s["key"] in controls]
    if ranks != sorted(ranks):
        seq = [controls[s["key"]]["where"] for s in stops if s["key"] in controls]
        out.append(f"the order is not skip link, bars, page: {seq[:80]}")
    out += [f"Tab goes back in the document's order at {s['words']!r}" for s in stops[1:] if not s["order"]]
    for s in stops:
        if not s["shown"]:
            out.append(f"the focus is on something not shown: {s['tag']} {s['words']!r}")
        elif not s["ring"]:
            out.append(f"no visible focus indicator on {s['tag']} {s['words']!r} ({s['testid']})")
        elif s.get("after") == s["ring"]:
            out.append(f"{s['tag']} {s['words']!r} wears its indicator ({s['ring']}) without the focus too")
    return out


# ---- driven by the keyboard ---------------------------------------------------------------------------------

FOCUS_JS = """() => { const e = document.activeElement; if (!e) return {};
  const r = e.getBoundingClientRect(), cs = getComputedStyle(e);
  return {tag: e.tagName.toLowerCase(), testid: e.dataset?.testid || e.closest("[data-testid]")?.dataset.testid || "",
          label: e.getAttribute("aria-label") || "", text: (e.innerText || "").trim().slice(0, 60),
          inMain: !!e.closest("[data-testid='stMain']"), inView: r.left >= 0 && r.top >= 0 && r.right <= innerWidth &&
          r.bottom <= innerHeight && r.width > 20 && r.height > 10, opacity: +cs.opacity, checked: e.checked ?? null,
          expanded: e.closest("details")?.open ?? null};
}"""


def focus(page) -> dict:
    return page.evaluate(FOCUS_JS)


def tab_until(page, wanted) -> dict:
    """Tab from the top of the page until the focus is on `wanted` (a predicate on test_browser_a11y's `focused`)."""
    page.locator("body").focus()
    return tab_to(page, wanted)


def press(page, key: str) -> None:
    """Press `key` and let the rerun it starts end (seen by the page's run times, streamlit_server): a key pressed
    while the sidebar is drawn again can be lost."""
    start = page.evaluate("performance.now()")
    page.keyboard.press(key)
    # a run too fast to show `running` is not seen; wait_rendered below still waits for the idle app
    with contextlib.suppress(Exception):
        page.wait_for_function("(t) => window.__stRunEnd !== null && window.__stRunEnd > t", arg=start, timeout=20_000)
    wait_rendered(page, 0, timeout_ms=120_000)


def wait_query(page, key: str, changed_from) -> str:
    """The URL's value of `key` once the rerun that changed it from `changed_from` has drawn the page."""
    try:
        page.wait_for_function("([k, v]) => new URLSearchParams(location.search).get(k) !== v",
                               arg=[key, changed_from], timeout=60_000)
    except Exception:
        raise AssertionError(f"{key} is still {changed_from!r} in {page.url}; the focus is on {focus(page)}") from None
    wait_rendered(page, 0, timeout_ms=120_000)
    return query(page).get(key)


@pytest.mark.parametrize("present", [False, True], ids=["plain", "presented"])
def test_the_skip_link_comes_first_shows_and_moves_the_focus_to_the_page(context, present):
    page = open_view(context, "/attention?model=tiny" + ("&present=1" if present else ""))
    try:
        skip = page.locator("[data-testid='stSkipToContent']")
        hidden = skip.bounding_box()
        page.locator("body").focus()
        page.keyboard.press("Tab")
        now = focus(page)
        assert now["testid"] == "stSkipToContent" and now["text"] == "Skip to main content", now
        assert now["inView"] and now["opacity"] == 1, f"the focused skip link is not shown: {now}"
        page.keyboard.press("Enter")
        assert focus(page)["testid"] == "stMain"
        page.keyboard.press("Tab")
        after = focus(page)
        assert after["inMain"] and after["testid"] != "stMain", f"Tab after the skip link went to {after}"
        # out of the way of the page when it has no focus: outside the window or not drawn
        opacity = skip.evaluate("e => getComputedStyle(e).opacity")
        assert hidden is None or hidden["y"] + hidden["height"] <= 0 or hidden["x"] + hidden["width"] <= 0 or \
            opacity == "0", hidden
    finally:
        leave(page)


def test_a_selectbox_a_slider_an_expander_and_the_presentation_toggle_by_keyboard(context):
    """Each on a view of its own (a key pressed while an earlier change's rerun draws the sidebar again is lost)."""
    page = open_view(context, "/attention?model=tiny")
    try:
        # the Block slider: one step with the right arrow
        tab_until(page, lambda f: f["label"] == "Block")
        press(page, "ArrowRight")
        assert wait_query(page, "block", None) == "1"

        # the Mode selectbox: opened with the arrow key, the mode after the next chosen with Enter
        page.goto(context.gpt2viz_base + "/attention?model=tiny")
        wait_rendered(page, 0, timeout_ms=120_000)
        tab_until(page, lambda f: f["label"] == "Mode")
        page.keyboard.press("ArrowDown")  # opens the list on the option after the chosen one
        page.locator("[role='listbox']").first.wait_for(timeout=10_000)
        page.keyboard.press("ArrowDown")
        press(page, "Enter")
        assert wait_query(page, "mode", None) == "prefill"

        # a chart's "Show the numbers": opened with Enter
        page.goto(context.gpt2viz_base + "/attention?model=tiny")
        wait_rendered(page, 0, timeout_ms=120_000)
        tab_until(page, lambda f: f["tag"] == "summary" and f["text"] == "Show the numbers")
        page.keyboard.press("Enter")
        assert focus(page)["expanded"] is True

        # the presentation toggle: on with Space (the sidebar goes), off with the bar's Exit and Enter
        tab_until(page, lambda f: f["label"] == "Presentation mode")
        assert focus(page)["checked"] is False
        press(page, "Space")
        page.locator(".st-key-present-bar").wait_for(timeout=60_000)  # presented: the bar, and no sidebar
        page.locator("[data-testid='stSidebar']").wait_for(state="hidden", timeout=30_000)
        wait_rendered(page, 0, timeout_ms=120_000)
        tab_until(page, lambda f: f["tag"] == "button" and "Exit presentation" in f["text"])
        press(page, "Enter")
        page.locator("[data-testid='stSidebar']").wait_for(state="visible", timeout=60_000)
        page.locator(".st-key-present-bar").wait_for(state="detached", timeout=60_000)
        wait_rendered(page, 0, timeout_ms=120_000)
        assert page.locator(EXCEPTION).count() == 0
    finally:
        leave(page)


def test_a_segmented_control_by_keyboard(context):
    page = open_view(context, "/layernorm?model=tiny")
    try:
        assert query(page).get("ln", "ln_1") == "ln_1"
        tab_until(page, lambda f: f["text"] == "ln_1" and f["tag"] == "button")
        page.keyboard.press("ArrowRight")  # the options are one radio group: one Tab stop, the arrows between them
        assert focus(page)["text"] == "ln_2", focus(page)
        press(page, "Space")
        assert wait_query(page, "ln", None) == "ln_2"
        assert "ln_2" in page.locator(".gtitle").first.text_content()  # the first chart: one position through ln_2
    finally:
        leave(page)


# presented, the pages whose presented layout differs most (a diagram, the first chart filling the screen, a
# lesson's bar, a page of columns)
PRESENTED = ("overview", "attention", "whatif", "lesson")


@pytest.mark.parametrize("url", sweep(PRESENTED, {"attention", "lesson"}))  # a full-screen chart, a lesson's bar
def test_presented_tab_reaches_every_control_in_order_with_a_visible_ring(context, url):
    page = open_view(context, href(url) + "?present=1&model=tiny")
    try:
        found = walk(page)
        print(f"{url} presented: {len(found['controls'])} controls, {len(found['stops'])} stops")
        found_problems = problems(found)
        assert not found_problems, f"{url} presented: " + "\n".join(found_problems)
    finally:
        leave(page)
