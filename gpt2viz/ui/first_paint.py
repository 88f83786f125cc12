"""The first page of a new server process before PyTorch is imported: the Overview's drawing of the model.

A server's first visitor waits for torch's import (1-3 s), the random weights (0.5-1 s to draw; 0.01 s to map
from the file an earlier server on the machine kept: model/drawn_weights.py) and the first run.
Everything the Overview's diagram says (its boxes, each with its parameter count, and the shapes of this
text in this mode) comes from the torch-free `spec/`, the component tree and the tokenizer, so app.py draws
it first (`draw`), with a line that says what is still loading, then imports the rest; the real page
replaces it (`clear`) once it draws. Meanwhile a thread draws the URL's random weights (`prebuild`;
torch's kernels release the interpreter while app.py goes on importing), which the model cache then takes
(`take`) instead of drawing them again. Only the first run of a process needs this (afterwards torch is
loaded), and the drawing only a view whose weights the URL alone decides: random weights of a preset,
outside a lesson.

This module imports nothing that imports torch (tests/test_first_paint.py checks it)."""

import logging
import sys
import threading

import streamlit as st
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

from ..anatomy import diagram
from ..anatomy.components import component_tree
from ..model.tokenizer import TextError, encode
from ..spec.config import PRESETS, get_config
from ..spec.pages import DEFAULT, home
from ..spec.schema import Mode, text_dims
from ..spec.serving import random_models
from . import chart_element, preload
from .visitor import server_address

log = logging.getLogger(__name__)
DEFAULT_TEXT = "The quick brown fox jumps over the lazy dog because"  # the text a view starts with (ui/state.py)
HEAVY = "gpt2viz.ui.cache"  # imported with torch by the rest of app.py: once it is loaded, no preview is needed
_prebuilt: dict = {}  # (preset, seed) -> [the thread, the model it built or None]; "done" once taken
_prebuilt_lock = threading.Lock()


def needed() -> bool:
    """Whether this run comes before torch is loaded in this process (a new server's first run)."""
    return HEAVY not in sys.modules


def _page() -> str:
    """The page this run is for ("" for the Overview), as the URL names it."""
    ctx = get_script_run_ctx()
    name = getattr(getattr(ctx, "pages_manager", None), "intended_page_name", None) if ctx else None
    return (name or "").strip("/")


def overview(query: dict[str, str]) -> tuple[str, str] | None:
    """The Overview's title and drawing for the view `query` (the URL's values) when the URL alone
    decides them: random weights of a preset this server builds, a text that tokenizes; else None."""
    weights = weights_of(query)
    if weights is None:
        return None
    cfg = get_config(weights[0])
    try:
        mode = Mode.parse(query.get("mode", Mode.FULL.value))
        n = len(encode(query.get("text", DEFAULT_TEXT)))
    except (ValueError, TextError):
        return None
    n = max(min(n, cfg.n_positions), 2 if mode is Mode.TRAINING else 1)
    cat = component_tree(cfg)
    parents = {c.id: c.parent for c in cat}
    homes = {c.id: home(c.id, parents) for c in cat}
    links = diagram.Links({cid: row.url for cid, (row, _) in homes.items()} | {"dropout": "training"},
                          dict(query), current=DEFAULT, default=DEFAULT,
                          selects={cid: params for cid, (_, params) in homes.items() if params})
    return cat["model"].title, diagram.overview(cat, mode, text_dims(cfg, n, mode), links)


def _seed(query: dict[str, str]) -> int:
    seed = int(query.get("seed", 0))
    if not 0 <= seed < 2**31:
        raise ValueError(f"seed {seed} out of range")
    return seed


def weights_of(query: dict[str, str]) -> tuple[str, int] | None:
    """(preset, seed) of the random weights the URL `query` asks for, when the URL alone decides them and
    they are at most gpt2's size (a larger one is built when asked, as before); else None."""
    if query.get("weights", "random") != "random" or "lesson" in query:
        return None
    allowed = random_models(server_address(), PRESETS)
    name = query.get("model", allowed[0] if allowed else "")
    try:
        seed = _seed(query)
    except ValueError:
        return None
    return (name, seed) if name in allowed and get_config(name).n_embd <= 768 else None


def prebuild(name: str, seed: int) -> None:
    """Draw random `name` weights of `seed` in a thread, for `take` (once a process: its first run)."""
    def build(slot: list) -> None:
        from ..model.drawn_weights import drawn_model  # torch, in this thread

        slot[1] = drawn_model(get_config(name), seed, write=True)

    with _prebuilt_lock:
        if _prebuilt:
            return
        slot = _prebuilt[(name, seed)] = [threading.Thread(target=lambda: build(slot), daemon=True), None]
        slot[0].start()


def take(name: str, seed: int):
    """The model `prebuild` drew for (name, seed), once it is done; None if it drew another or none.
    Whatever it drew is let go here, so an unused one is not kept."""
    with _prebuilt_lock:
        slots = {k: v for k, v in _prebuilt.items() if k != "done"}
        _prebuilt.clear()
        _prebuilt["done"] = None  # no second prebuild in this process
    for thread, _ in slots.values():
        thread.join()
    return slots[(name, seed)][1] if (name, seed) in slots else None


def draw() -> tuple:
    """The preview of this run's page, in placeholders (returned) that `clear` empties later in the same
    run: on the Overview its drawing and a line that says what is loading; on another page that line
    alone. Whatever goes wrong here is logged and the preview left out: the page itself follows."""
    boxes = st.empty(), st.sidebar.empty()
    try:
        _draw(*boxes)
    except Exception:  # noqa: BLE001 (a preview never stands in the page's way)
        log.exception("the first page's preview failed")
        clear(boxes)
    return boxes


def _draw(main, side) -> None:
    query = {k: st.query_params.get(k) for k in st.query_params}
    page = _page() or DEFAULT
    drawn = overview(query) if page == DEFAULT else None
    weights = weights_of(query)
    if weights is not None:
        prebuild(*weights)
    with side.container():
        st.caption(":material/hourglass_top: The controls follow once the model is loaded.")
        # Streamlit's chart chunk, compiled by the browser while this server imports torch, where Streamlit's
        # element draws the charts (app.py's assets/charts.js fetches the app's own bundle already)
        if not chart_element.available() and (script := preload.plotly_script()):
            st.html(script, unsafe_allow_javascript=True)
    with main.container():
        if drawn is not None:
            st.title(drawn[0])
        st.caption(":material/hourglass_top: Starting: loading PyTorch and the model's weights (the first view "
                   "of this server waits for them once); this page's values follow.")
        if drawn is not None:
            st.markdown(diagram.scroll_box(drawn[1]), unsafe_allow_html=True)


def clear(boxes: tuple) -> None:
    """Empty the preview's placeholders (`draw`'s, of this run; call when the real page starts drawing)."""
    for box in boxes:
        box.empty()
