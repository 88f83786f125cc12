"""`python -m gpt2viz lesson export`: a lesson as a static website (gpt2viz/teaching/site.py writes it).

Each stop is drawn by the app itself: app.py runs headless (Streamlit's AppTest, in this process) with
the lesson opened as the Lessons page's "Open it here" opens it, on the stop's page, and what the page
drew (its Markdown, numbers, tables, code, and each chart's figure as sent to the browser) is read back
as teaching.site's neutral tree. So every figure comes from the very run and figure builders the page
uses. The results a page computes only on a click (What if's sweeps, the patching grid, the knock-out
sweep of Who wrote the answer, a long path patching) are clicked and included: a lesson's note may refer to them.

A stop whose student may change the head, block or mode is drawn once per value, up to
site.MAX_VARIANTS pictures a stop; a control past that, or one that is not a few values (the text, the
weights), is said on the page to be fixed here.
"""

import contextlib
import itertools
import json
import logging
import math
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import quote, urlencode

from .plots import chart_box
from .spec import bundle
from .spec.pages import BY_URL, DEFAULT
from .spec.paths import APP_ROOT
from .teaching import lessons as lf
from .teaching import site

APP = APP_ROOT / "app.py"
LOCAL = "_lesson_local"  # the session key of a lesson opened from a file (ui/lesson_view.py LOCAL)
OPEN_CODE = "_code_open"  # every code expander drawn open (ui/code_panel.py OPEN_CODE)
STATIC = "_static_export"  # the session flag that leaves a stop's question to the site (ui/state.py STATIC)
RECORD = "_page_record"  # the session key of what a page drew (ui/export.py)
# buttons whose results a page computes only when clicked, clicked in this order
COMPUTE = ("sweep_heads", "sweep_mlps", "attr_sweep", "run_patch", "run_paths")
ENUMERABLE = ("head", "block", "mode")  # free controls of a few values each; text and weights are not
RUN_SECONDS = 600  # one run of a page, at most (a sweep on a large model)
# what a static page leaves out: the app's navigation and buttons, its styles, and passing progress
_SKIP = {"page_link", "button", "download_button", "html", "empty", "file_uploader", "form_submit_button",
         "chat_input", "progress", "spinner", "toast", "balloons", "snow", "link_button"}
_CONTROLS = {"radio", "selectbox", "slider", "select_slider", "number_input", "text_input", "text_area",
             "checkbox", "toggle", "multiselect", "segmented_control", "pills", "color_picker", "date_input",
             "time_input", "button_group"}


@dataclass(frozen=True)
class Written:
    files: list[Path]
    bytes: int
    seconds: float


# ---------------------------------------------------------------------------- the app's tree, read back
def _table(df) -> tuple[list[str], list[list[str]]]:
    """A dataframe's columns and cells (its index too, unless it is the rows' numbers)."""
    import pandas as pd

    df = df if isinstance(df.index, pd.RangeIndex) else df.reset_index()
    return [str(c) for c in df.columns], [[_cell(v) for v in row] for row in df.itertuples(index=False)]


def _cell(v) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def tree(node) -> tuple[site.Node, ...]:
    """What an AppTest node drew, as site Nodes (its children's, for a block)."""
    return tuple(n for c in getattr(node, "children", {}).values() for n in _node(c))


def _node(el) -> tuple[site.Node, ...]:
    kind = getattr(el, "type", "")
    if kind == "html" and (drawn := chart_box.drawn(el.proto.body)) is not None:  # the app's chart box
        return (site.Node("chart", data=drawn[0]),)
    if kind in _SKIP:
        return ()
    if kind in ("title", "header", "subheader"):
        return (site.Node(kind, el.value, el.proto.anchor or None),)
    if kind in ("markdown", "caption", "info", "warning", "success", "error", "code", "latex"):
        html = kind in ("markdown", "caption") and bool(getattr(el.proto, "allow_html", False))
        return (site.Node(kind, el.value, getattr(el, "language", None), html=html),)
    if kind in ("dataframe", "table"):
        return (site.Node("table", data=_table(el.value)),)
    if kind == "metric":
        return (site.Node("metric", el.label, (el.value, el.delta or "")),)
    if kind == "plotly_chart":  # Streamlit's element; the site draws with the app's bundle, which may lack a trace
        spec = json.loads(el.proto.spec)
        return (site.Node("chart", data=spec),) if bundle.draws(spec) else (site.Node("other", "chart"),)
    if kind in _CONTROLS:
        value = el.value
        return (site.Node("control", el.label, ", ".join(map(str, value)) if isinstance(value, list) else value),)
    if kind == "flex_container":
        children = tree(el)
        is_row = children and all(c.kind == "column" for c in children)
        return (site.Node("row" if is_row else "group", children=children),) if children else ()
    if kind == "column":
        return (site.Node("column", children=tree(el)),)
    if kind == "tab_container":
        return (site.Node("tabs", children=tree(el)),)
    if kind == "tab":
        return (site.Node("tab", el.label, children=tree(el)),)
    if kind == "expander":
        return (site.Node("expander", el.label, children=tree(el)),)
    if kind in ("form", "vertical", "horizontal", "container", "popover", "dialog", "chat_message"):
        return tree(el)
    return (site.Node("other", kind or type(el).__name__),)


def _stop_bar(node: site.Node) -> bool:
    """The row the app draws atop a stop: the lesson's title and the stop's place (ui/lesson_view.py
    stop_bar; its back and next are page links, left out already)."""
    first = node.children[0].children[:1] if node.kind == "row" and node.children else ()
    return bool(first) and first[0].kind == "markdown" and first[0].text.startswith(":material/school:")


def _main(at, lesson: lf.Lesson, i: int) -> tuple[site.Node, ...]:
    """The page's main area without the stop's bar and note (the site page draws its own), said as a
    static page may say it (static)."""
    nodes = list(tree(at.main))
    if nodes and _stop_bar(nodes[0]):
        nodes.pop(0)
        if lesson.stops[i].note and nodes and nodes[0].kind == "info":  # the note, under the bar
            nodes.pop(0)
    paths = public_paths(lesson)
    return tuple(n for n in (static(node, paths) for node in nodes) if n is not None)


# ---------------------------------------------------------------------------- what holds on a static page
# the app's sentences that speak of its sidebar or of links the site does not keep, as a static page says
# them, in this order ("" drops the sentence; a text left empty is dropped); then any other mention of the
# sidebar, as the lesson's (its text, mode, weights) or the live app's
APP_ONLY = (("Type your own text in the sidebar first; every page then shows what the model computes on it, and "
             "every link here keeps it (and the mode, block and head). ", ""),
            ("Type a text in the sidebar; every page shows what GPT-2 computes on it. Click a part of the model to "
             "open it; the shapes are this text's, in this mode.", "The shapes are this text's, in this mode."),
            ("The sidebar's block and head choose where.", "The view's block and head, above, choose where."),
            ("The boxes open their pages outside the lesson, on the lesson's weights and text.", ""),
            ("the text in the sidebar", "the lesson's text"),
            ("The sidebar's", "The lesson's"), ("the sidebar's", "the lesson's"),
            (" in the sidebar", " in the live app"))


def public_paths(lesson: lf.Lesson) -> dict[str, str]:
    """This machine's paths a page may print (a Code panel's file), each as the lesson names its weights:
    the demo model's file from the app's folder, a listed folder by its name, a cached checkpoint where
    Hugging Face keeps it by default, and what is left under the app's folder or the home folder from
    there ("~")."""
    from .model.demo_recipe import DEMO_PATH
    from .model.weights import hf_hub_dir
    from .spec.serving import model_dirs

    w = lesson.weights
    out = {str(DEMO_PATH): DEMO_PATH.relative_to(APP_ROOT).as_posix()}
    if w["source"] == "folder" and w["name"] in model_dirs():
        out[model_dirs()[w["name"]]] = w["name"]
    if w["source"] == "hf-cache":  # where Hugging Face keeps it by default, on anyone's machine
        out[str(hf_hub_dir())] = "~/.cache/huggingface/hub"
    return out | {str(APP_ROOT) + "/": "", str(Path.home()) + "/": "~/"}


def static(node: site.Node, paths: dict[str, str]) -> site.Node | None:
    """`node` as a static page may say it: no sentence about the app's sidebar (APP_ONLY), no path of this
    machine (public_paths); None when nothing is left of a text."""
    if node.children:
        children = tuple(c for c in (static(c, paths) for c in node.children) if c is not None)
        return replace(node, children=children)
    text = node.text
    for said, static_text in APP_ONLY:
        text = text.replace(said + " ", static_text + " " if static_text else "").replace(said, static_text)
    for path, name in paths.items():
        text = text.replace(path, name)
    if text == node.text:
        return node
    return replace(node, text=text) if text.strip() or node.kind not in ("markdown", "caption") else None


# ---------------------------------------------------------------------------- a stop, run by the app
def open_stop(lesson: lf.Lesson, i: int):
    """app.py at stop i of `lesson`, as "Open it here" on the Lessons page opens it."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(APP), default_timeout=RUN_SECONDS)
    at.session_state[LOCAL] = lesson
    at.session_state[OPEN_CODE] = True  # the Code panels drawn open, their code in the tree
    at.session_state[STATIC] = True  # the site writes a stop's question as a self-check of its own
    at.query_params["stop"] = str(i)
    at.switch_page(BY_URL[lesson.stops[i].page].file)
    return at.run()


def compute(at):
    """Click each button whose result the page computes only on a click, one run each."""
    for key in COMPUTE:
        found = [b for b in at.get("button") if getattr(b, "key", None) == key]
        if found and not found[0].disabled:
            found[0].click()
            at.run()
    return at


def _options(widget) -> list:
    """The values a sidebar control takes: a slider's every step, a choice's options."""
    if getattr(widget, "type", "") == "slider":
        return list(range(int(widget.min), int(widget.max) + 1))
    return list(getattr(widget, "options", []))


def _sidebar_widget(at, key: str):
    for kind in ("slider", "radio", "selectbox", "segmented_control"):
        for w in at.sidebar.get(kind):
            if getattr(w, "key", None) == key:
                return w
    return None


def variants_of(at, lesson: lf.Lesson) -> tuple[dict[str, list], list[str]]:
    """The free controls drawn at every value ({"head": [0, 1, 2, 3]}: at most MAX_VARIANTS pictures
    together) and those fixed here."""
    drawn: dict[str, list] = {}
    fixed = [c for c in lesson.free if c not in ENUMERABLE]
    for control in (c for c in ENUMERABLE if c in lesson.free):
        widget = _sidebar_widget(at, control)
        values = _options(widget) if widget is not None and not widget.disabled else []
        count = len(values) * math.prod(len(v) for v in drawn.values())
        if len(values) > 1 and count <= site.MAX_VARIANTS:
            drawn[control] = values
        elif len(values) > 1:
            fixed.append(control)
    return drawn, fixed


def _view(at) -> str:
    """The view in a line, as the sidebar holds it."""
    parts = []
    for key in ("mode", "block", "head"):
        w = _sidebar_widget(at, key)
        if w is not None:
            parts.append(f"{key} {w.value}")
    return " · ".join(parts)


def live_link(base: str, lesson: lf.Lesson, i: int) -> str:
    """The stop's view in the live app (a link, not a lesson: it needs no signing key)."""
    page = lesson.stops[i].page
    params = {k: (str(v).lower() if isinstance(v, bool) else f"{v:g}" if isinstance(v, float) else str(v))
              for k, v in lesson.pins(i).items()}
    return base.rstrip("/") + ("/" if page == DEFAULT else "/" + page) + "?" + urlencode(params, quote_via=quote)


def stop_page(lesson: lf.Lesson, i: int, base: str = "") -> site.StopPage:
    s = lesson.stops[i]
    title = BY_URL[s.page].title
    live = live_link(base, lesson, i) if base else ""
    try:
        at = open_stop(lesson, i)
    except Exception as e:  # noqa: BLE001 - a page that cannot run headless is said on its stop page
        return site.StopPage(title, s.note, "", (), cannot=f"{type(e).__name__}: {e}".splitlines()[0], live=live,
                             question=s.question)
    if at.exception:
        return site.StopPage(title, s.note, "", (), cannot=at.exception[0].value.splitlines()[0], live=live,
                             question=s.question)
    source = at.session_state[RECORD].source if RECORD in at.session_state else ""
    drawn, fixed = variants_of(at, lesson)
    variants, default = [], 0
    own = {k: getattr(s, k) if k != "mode" else s.mode for k in drawn}
    for values in (dict(zip(drawn, combo)) for combo in itertools.product(*drawn.values())):
        for key, value in values.items():
            _sidebar_widget(at, key).set_value(value)
        at.run()
        compute(at)
        if at.exception:
            return site.StopPage(title, s.note, source, (), cannot=at.exception[0].value.splitlines()[0], live=live,
                                 question=s.question)
        if values == {k: own[k] for k in values}:
            default = len(variants)
        variants.append(site.Variant(values, _main(at, lesson, i), _view(at)))
    if len(variants) > 1 and all(v.body == variants[0].body for v in variants):  # the page does not use them
        variants, default = [site.Variant({}, variants[default].body, variants[default].view)], 0
    return site.StopPage(title, s.note, source, tuple(variants), tuple(fixed), live=live, default=default,
                         question=s.question)


def source_line(lesson: lf.Lesson) -> str:
    texts = f"text “{lesson.text.strip()}”" + (f", text B “{lesson.text_b.strip()}”" if lesson.text_b else "")
    return f"{lf.weights_name(lesson.weights)} · {texts}"


def refuse_missing(lesson: lf.Lesson) -> None:
    """A lesson whose weights this machine cannot load is refused in one line: its site would say "Numbers
    from: the checkpoint gpt2" over pages drawn on other weights."""
    missing = lf.missing_weights(lesson.weights)
    if missing:
        raise lf.LessonError(f"this lesson's numbers need {missing}, which this machine does not have: "
                             "its site is not written")


@contextlib.contextmanager
def quiet_streamlit():
    """Streamlit's warnings of a headless run ("missing ScriptRunContext", a widget's default beside its
    session value) are not the reader's: an export prints its result only. (Streamlit resets its own
    loggers' level when a headless run reads its configuration, so warnings are off for the process,
    and on again after.)"""
    logging.disable(logging.WARNING)
    try:
        yield
    finally:
        logging.disable(logging.NOTSET)


def export(lesson: lf.Lesson, out: Path, base: str = "", say: Callable[[str], None] = lambda _: None) -> Written:
    """The lesson's site in `out`; `say` hears each stop as it is drawn. A lesson whose weights are not
    here is refused (refuse_missing)."""
    refuse_missing(lesson)
    start = time.perf_counter()
    stops = []
    with quiet_streamlit():
        for i, s in enumerate(lesson.stops):
            say(f"stop {i + 1} of {len(lesson.stops)}: {BY_URL[s.page].title}")
            stops.append(stop_page(lesson, i, base))
    files = site.write(site.Site(lesson.title, source_line(lesson), lesson.free, stops, base),
                       [s.page for s in lesson.stops], out)
    return Written(files, sum(f.stat().st_size for f in files), time.perf_counter() - start)


def zipped(lesson: lf.Lesson, timeout: float = 1800) -> bytes:
    """The lesson's site as a zip, written by `python -m gpt2viz lesson export` in a process of its own:
    the app serving a class runs no headless copy of itself, and the memory it takes goes with it."""
    with tempfile.TemporaryDirectory(prefix="gpt2viz-site-") as tmp:
        src, out = Path(tmp) / "lesson.json", Path(tmp) / "site"
        src.write_text(json.dumps(lesson.as_dict(), ensure_ascii=False), encoding="utf-8")
        done = subprocess.run([sys.executable, "-m", "gpt2viz", "lesson", "export", str(src), "--out", str(out)],
                              cwd=APP_ROOT, capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no message"])[-1]
            raise RuntimeError(f"the export stopped: {last}")
        return site.zipped(out)
