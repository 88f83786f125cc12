"""The shared controls, declared once in app.py and bound to the URL so a view is a link.

A URL may carry any value. `settle_url` first keeps one value per key (a key given twice, as in
`?block=1&block=7`, means its last value, as `st.query_params[key]` reads it); Streamlit then ignores
values a widget cannot take (a block past the last, an unknown mode), and `url_fallbacks` says which
ones were ignored so the page can say so. That is said only for a URL opened from outside (a link, a
bookmark, a reload): a change made in the sidebar is not a link, and a block or head that the new
weights do not have moves quietly to the nearest one they do.
"""

import contextlib
import math
import os
import re
from dataclasses import dataclass, replace
from urllib.parse import parse_qsl, quote, urlencode

import streamlit as st
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

from ..model import tokenizer
from ..model.demo_model import DEMO_PATH
from ..model.modes import Mode
from ..model.tokenizer import TextError, encode
from ..spec.config import PRESETS
from ..spec.link_text import LINK_TEXT_CHARS, link_length, link_prefix
from ..spec.serving import model_dirs, random_models
from ..teaching import page_text
from ..teaching.prompts import prompts_for
from . import present
from .cache import (
    LoadedModel,
    cached_checkpoints,
    counted_weights,
    demo_weights,
    folder_weights,
    path_weights,
    random_weights,
)
from .fetch import offer_download, select_fetched
from .text import code_span, plain
from .upload import NO_UPLOADS, uploaded_weights, uploads_offered
from .visitor import server_address

DEFAULT_TEXT = "The quick brown fox jumps over the lazy dog because"
DEFAULT_TEXT_B = "The quick brown cat jumps over the lazy dog because"  # Compare and patch's text B
MAX_TEXT_CHARS = 20_000
MODE_LABELS = {Mode.FULL: "Full sequence", Mode.TRAINING: "Training", Mode.PREFILL: "Prefill",
               Mode.DECODE: "Decode (KV cache)"}
SOURCES = {"random": "Random (seeded)", "demo": "Demo: trained here", "hf-cache": "Hugging Face cache",
           "path": "Local file", "folder": "Folder", "upload": "Upload"}
ALLOW_LOCAL_PATH = "GPT2VIZ_ALLOW_LOCAL_PATH"
# the URL keys of the sidebar's controls: what a link to another page carries over
SELECTION_KEYS = ("text", "weights", "model", "seed", "folder", "mode", "block", "head", present.KEY)
STATIC = "_static_export"  # session flag: the lesson export runs the page (lesson_site.py), which reads every
# tab and writes a stop's question itself
LOCKED = "_locked"  # session key: the controls a lesson pins (ui/lesson_view.py), shown but not changeable
# session key: while a lesson's stop is shown, the URL values of its view (the lesson's weights and text, and
# the stop's view), which every link out of it carries: the stop's own URL holds only the lesson
LESSON_VIEW = "_lesson_view"
# the text boxes bound to the URL, and (session key) each one's last cut to what a link carries: key -> (the text
# kept, the characters typed, the characters the address took)
LINK_TEXTS = ("text", "text_b")
ASKED, SAID = "_link_asked", "_link_said"  # this run's link values from outside; the keys a control said itself
LINK_CUTS = "_link_cuts"
# a link out of a lesson names the stop it left (a signed lesson's `lesson` value, the stop's index), so the
# page it leads to offers the way back; links from there keep them
BACK_KEYS = ("from_lesson", "from_stop")
LEAVES = " (leaves the lesson)"  # on the label of a link out of a lesson


def locked(key: str) -> bool:
    """A control that the open lesson pins: declared with disabled=True (Streamlit then ignores any
    value the browser sends for it)."""
    return key in st.session_state.get(LOCKED, ())


@dataclass(frozen=True)
class Selection:
    """Everything the sidebar decides; pages read it, never the widgets."""
    text: str
    ids: tuple[int, ...]  # the text's tokens, cut to the context
    cut: int  # tokens cut from the end of an over-long text
    text_error: str | None  # why there is nothing to run (empty text), else None
    weights: LoadedModel
    source: str  # the weights source chosen: a key of SOURCES
    mode: Mode
    block: int
    head: int
    link_notes: tuple[str, ...] = ()  # values of the link the controls could not take, said at the page's top
    present: bool = False  # presentation mode (ui/present.py)

    @property
    def config(self):
        return self.weights.model.config


def default_text(source: str) -> str:
    """The text a view starts with: the first prompt measured on these weights, else DEFAULT_TEXT."""
    prompts = list(prompts_for(source).values())
    return prompts[0].text if prompts else DEFAULT_TEXT


def default_text_b(source: str) -> str:
    """Compare and patch's text B to start with: the B of the weights' ready pair, else DEFAULT_TEXT_B."""
    pair = prompts_for(source).get("pair")
    return pair.text_b if pair else DEFAULT_TEXT_B


def _defaults_follow_weights() -> None:
    """On a change of weights: a text still at the old weights' default becomes the new weights' default
    (a widget keeps its value when only its default changes); a text the reader wrote stays."""
    before, now = st.session_state.get("_source_before"), st.session_state.get("weights")
    for key, default in (("text", default_text), ("text_b", default_text_b)):
        if before is not None and st.session_state.get(key) == default(before):
            st.session_state[key] = default(now)


def buildable_models() -> tuple[str, ...]:
    """The random sizes this server builds for a visitor (GPT2VIZ_RANDOM_MODELS; every size on a local server)."""
    return random_models(server_address(), PRESETS)


def sources_enabled() -> list[str]:
    """Upload only where the operator allows it (ui/upload.py: on loopback, or GPT2VIZ_ALLOW_UPLOAD=1); a
    local file or any folder with GPT2VIZ_ALLOW_LOCAL_PATH=1; listed folders with GPT2VIZ_MODEL_DIRS."""
    allowed = ["random"] + (["demo"] if DEMO_PATH.is_file() else []) + ["hf-cache"] + \
        (["upload"] if uploads_offered() else [])
    if os.environ.get(ALLOW_LOCAL_PATH) == "1":
        allowed.insert(2, "path")
    # a folder (a converted nanoGPT model, its own vocabulary): any path on a local server, on a class
    # server only the folders its operator lists
    if os.environ.get(ALLOW_LOCAL_PATH) == "1" or model_dirs():
        allowed.insert(allowed.index("hf-cache") + 1 + ("path" in allowed), "folder")
    return allowed


def _raw_url() -> dict[str, str]:
    try:
        return {k: st.query_params.get(k) for k in st.query_params}
    except Exception:  # reading the URL must never break the frame
        return {}


def settle_url() -> None:
    """One value per URL key, the last, before any bound control reads the URL.

    Streamlit 1.67 seeds a bound control from every value of its key: given two (`?block=1&block=7`,
    or a page link whose query string the browser extends with the bound controls' own values) the
    control takes none and falls back to its default. Settling the session's copy of the URL (the
    one the controls read) and sending it back to the browser makes the address bar, a reload and
    a bookmark show the view the page shows."""
    _write_url(lambda url: {k: v[-1] for k, v in url.items() if isinstance(v, list) and len(v) > 1})


def _write_url(changes, drop: bool = False) -> None:
    """Set (or with `drop`, delete) URL values behind Streamlit's back (it refuses to touch a key bound
    to a control), in the session's copy, in the values the controls are seeded from, and in the
    browser's address bar. `changes`: the session's URL (key -> value or list of values) -> the values
    to set (with `drop`, the keys to delete)."""
    ctx = get_script_run_ctx()
    if ctx is None:
        return
    with ctx.session_state.query_params() as qp:
        new = changes(qp._query_params)
        if not new:
            return
        for key in new:
            if drop:
                del qp._query_params[key]
                qp._initial_query_params.pop(key, None)
                continue
            qp._query_params[key] = new[key]
            if key in qp._initial_query_params:
                qp._initial_query_params[key] = [new[key]]
        qp._send_query_param_msg()


def keep_only_url(keys: tuple[str, ...]) -> None:
    """Drop every other URL value before the controls read it (a lesson link: the lesson, not a value
    added to its link by hand, decides the view), in the session's copy and the address bar."""
    _write_url(lambda url: [k for k in url if k not in keys], drop=True)


def hold_controls(values: dict[str, object]) -> None:
    """Bound controls whose values must hold whatever this run's URL says (a lesson's locked ones):
    their keys leave the URL, so that no URL value seeds them; on a history navigation (back,
    forward, or a page's own `history.pushState` and `popstate`) they are seeded from `values`
    instead, since Streamlit then seeds a bound control from the URL over any value the code set,
    disabled or not, and restores its default where the URL has no value."""
    _write_url(lambda url: [k for k in url if k in values], drop=True)
    ctx = get_script_run_ctx()
    if ctx is None or not ctx.is_history_navigation:
        return
    with ctx.session_state.query_params() as qp:
        for key, value in values.items():
            qp._initial_query_params[key] = [_url_value(value)]


def _url_value(value: object) -> str:
    """A control's value as its URL carries it (a toggle's true, a whole float without its .0)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _clamp(key: str, last: int) -> None:
    """A block or head kept from other weights that these do not have: the nearest they do."""
    if isinstance(st.session_state.get(key), int) and st.session_state[key] > last:
        st.session_state[key] = last
        st.session_state["_clamped"] = st.session_state.get("_clamped", ()) + (key,)


def _sync_clamped(values: dict[str, int]) -> None:
    """Streamlit leaves a clamped control's key out of the URL (a new range is a new control): put it back."""
    keys = st.session_state.pop("_clamped", ())
    _write_url(lambda url: {k: str(values[k]) for k in keys if values[k] and url.get(k) != str(values[k])})


def _cut_for_link(key: str, value: object) -> str | None:
    """`value` cut to what a link carries (spec/link_text.py), remembered for its note; None if it fits."""
    if not isinstance(value, str) or link_length(value) <= LINK_TEXT_CHARS:
        return None
    kept = link_prefix(value)
    st.session_state[LINK_CUTS] = {**st.session_state.get(LINK_CUTS, {}), key: (kept, len(value), link_length(value))}
    return kept


def fit_link(key: str) -> None:
    """on_change of a text box bound to the URL: a text longer than a link carries is cut to the longest
    start that fits before the run reads it, so that the address, a reload and a shared link hold the text
    the page runs (a longer one was refused by the server when the link was opened)."""
    if (kept := _cut_for_link(key, st.session_state.get(key))) is not None:
        st.session_state[key] = kept


def link_cut_caption(container, key: str, which: str, text: str) -> None:
    """Under a text box: the note of its cut to what a link carries, while it shows the text kept."""
    cut = st.session_state.get(LINK_CUTS, {}).get(key)
    if cut and cut[0] == text:
        container.caption(":material/link: " + page_text.link_cut_note(which, len(cut[0]), cut[1], cut[2],
                                                                       LINK_TEXT_CHARS))


def controls() -> Selection:
    """Declare the sidebar widgets (call once per run, from app.py) and return the Selection."""
    settle_url()
    # a link that carries a longer text than the app writes (made by hand: the server took it) opens on its start
    _write_url(lambda url: {k: kept for k in LINK_TEXTS if (kept := _cut_for_link(k, url.get(k))) is not None})
    # `present=1`, as a lecturer types it, is the toggle's "true" (a bound toggle takes only true and false)
    _write_url(lambda url: {present.KEY: "true"} if url.get(present.KEY) == "1" else {})
    first_run = not st.session_state.get("_ran")  # this session's URL came from outside: a link, a reload
    st.session_state["_ran"] = True
    raw = _raw_url()
    st.session_state[ASKED] = raw if first_run else {}  # what the page's own controls are checked against
    st.session_state[SAID] = set()
    # what a class changes most (text, mode, block, head) on top; the weights below them: the
    # sliders' ranges come from the weights, so those are declared first, into the lower box
    steer, sb = st.sidebar.container(), st.sidebar.container()
    source = sb.radio("Weights", sources_enabled(), key="weights", bind="query-params", horizontal=True,
                      disabled=locked("weights"),
                      help=" · ".join(f"{k}: {v}" for k, v in SOURCES.items() if k in sources_enabled()),
                      on_change=_defaults_follow_weights)
    st.session_state["_source_before"] = source
    # the weights' own first prompt where they have one (a link to ?weights=demo opens on a text it knows)
    text = steer.text_area("Text", value=default_text(source), max_chars=MAX_TEXT_CHARS, height=90, key="text",
                           bind="query-params", disabled=locked("text"), on_change=fit_link, args=("text",),
                           help="At most n_ctx tokens (GPT-2 1,024, demo 32); longer text is cut.")
    link_cut_caption(steer, "text", "The text", text)
    weights = _weights(sb, source)
    # every text and token label of this run, the pages' included, in these weights' vocabulary
    tokenizer.use(tokenizer.vocabulary_of(weights.model))
    cfg = weights.model.config
    sb.caption((":material/casino: " if weights.random else ":material/inventory_2: ") + weights.label)
    for note in weights.notes:
        sb.caption(note)
    # bound widgets put their shown option in the URL, so options are shown as their URL values
    mode = Mode(steer.selectbox("Mode", [m.value for m in Mode], key="mode", bind="query-params",
                                disabled=locked("mode"),
                                help="full: the whole text at once · training: dropout, loss, gradients · "
                                     "prefill: fill the KV cache · decode: the last token against the cache"))
    _clamp("block", cfg.n_layer - 1)
    _clamp("head", cfg.n_head - 1)
    # no `value`: the default is the first block and head, and a clamped session value is not a second default
    block = int(steer.slider("Block", 0, cfg.n_layer - 1, key="block", bind="query-params", disabled=locked("block"))) \
        if cfg.n_layer > 1 else 0
    head = int(steer.slider("Head", 0, cfg.n_head - 1, key="head", bind="query-params", disabled=locked("head"))) \
        if cfg.n_head > 1 else 0
    _sync_clamped({"block": block, "head": head})
    presenting = present.toggle(steer)
    steer.divider()
    ids, cut, error = _tokens(text, cfg.n_positions, mode)
    sel = Selection(text, ids, cut, error, weights, source, mode, block, head, present=presenting)
    # the URL is cleaned after the first run; keep saying what was ignored until the selection changes
    signature = (mode, block, head, weights.key)
    notes = url_fallbacks(raw, sel) if first_run else []
    if notes:
        st.session_state["_url_notes"] = (notes, signature)
    kept, kept_for = st.session_state.get("_url_notes", ((), None))
    return replace(sel, link_notes=tuple(kept) if kept_for == signature else ())


@contextlib.contextmanager
def selection_of_this_run(script_names: dict):
    """Around a script run (app.py): afterwards nothing keeps the run's selection, and with it its
    model, so that one the model cache evicts is freed: neither the session's state nor the script's
    names (`globals()`), which Streamlit keeps as the module __main__ after the run."""
    try:
        yield
    finally:
        st.session_state.pop("selection", None)
        script_names.pop("selection", None)


COUNTING_PAGES = ("params", "modes", "exercises")  # pages that count a size and build nothing of it


def not_built(sel: Selection) -> str:
    """The line a page says for a size this server counts but does not build."""
    return (f"This server builds random {' and '.join(buildable_models())} weights for its visitors, not "
            f"{sel.weights.model_name} ({sel.weights.model_name} is counted on Parameter accounting, Modes and "
            "Exercises): choose another size in the sidebar to see its tensors.")


def page_may_run(sel: Selection, url: str) -> bool:
    """Whether the page runs on these weights: any page on weights that are built; on a size that is
    only counted, the pages that count (the others say so in one line and build nothing)."""
    if sel.weights.built or url in COUNTING_PAGES:
        return True
    st.info(not_built(sel), icon=":material/memory:")
    return False


def link_notes(sel: Selection) -> None:
    """At the top of the page, where the reader looks: the link's values that were ignored."""
    for note in sel.link_notes:
        st.warning(note, icon=":material/link:")


def link_params() -> dict[str, str]:
    """The selection as the URL carries it (only what differs from the defaults), for links to
    other pages that keep it; at a lesson's stop, the view the lesson shows, and the way back."""
    if st.session_state.get(LESSON_VIEW) is not None:
        return dict(st.session_state[LESSON_VIEW])
    return {k: v for k, v in _raw_url().items() if k in SELECTION_KEYS + BACK_KEYS and v is not None}


def link_label(label: str) -> str:
    """A link's label, saying so when the link leaves the lesson shown."""
    return label + LEAVES if st.session_state.get(LESSON_VIEW) is not None else label


# a Markdown link to one of the app's pages: `[the MLP](/mlp)`, `[logits](/glossary#logit)`
_APP_LINK = re.compile(r"\]\((/[a-z_]*)(\?[^)#\s]*)?(#[^)\s]*)?\)")


def carry_view(markdown: str) -> str:
    """`markdown` with its links to the app's pages carrying the view (link_params; a link's own values
    win). Streamlit opens them in a new tab: a new session, which the URL alone tells what to show."""
    view = link_params()
    if not view:
        return markdown

    def carry(m: re.Match) -> str:
        path, query, fragment = m.group(1), parse_qsl((m.group(2) or "?")[1:]), m.group(3) or ""
        return f"]({path}?{urlencode(view | dict(query), quote_via=quote)}{fragment})"
    return _APP_LINK.sub(carry, markdown)


def add_to_url(values: dict[str, str]) -> None:
    """`values` into the URL where it lacks them (the address bar, a reload and a shared link then show them)."""
    _write_url(lambda url: {k: v for k, v in values.items() if url.get(k) is None})


def number(container, label: str, lo, hi, default, key: str, follows: bool = False, **kw):
    """A URL-bound number input. Integer inputs are declared as floats shown with "%.0f": Streamlit
    1.67's integer input raises OverflowError on a link such as ?seed=1e309 (int(inf)), while its
    float input replaces a non-finite or out-of-range link value by the default.

    `follows`: the default is worked out from the view (the key a query weighs most), and a value the
    person did not choose follows it when the view changes. Streamlit leaves a value equal to the
    default out of the URL and keeps a widget's value when only its default changes, so a kept value
    would be out of the URL while a fresh load of that URL shows the new view's default."""
    if follows:
        _follow_default(key, default, lo, hi)
    if isinstance(default, int):
        kw = {"step": 1.0, "format": "%.0f", **kw}
    kw.setdefault("disabled", locked(key))
    asked = st.query_params.get(key)
    value = container.number_input(label, float(lo), float(hi), float(default), key=key, bind="query-params", **kw)
    if follows:
        st.session_state[_DRAWN + key] = value
    if asked is not None and not _same_number(asked, value):  # Streamlit put its default in its place
        st.session_state.setdefault(SAID, set()).add(key)
        container.caption(f"The link asked for {key}={code_span(repr(asked[:40]))}, which is not available "
                          f"here ({lo:g} to {hi:g}); showing {key}={code_span(f'{type(default)(value):g}')}.")
    return type(default)(value)


_DRAWN = "_drawn_"  # + a key: the value its box was last drawn with


def _follow_default(key: str, default, lo, hi) -> None:
    """Before the box is drawn, its value: one the URL holds stays (Streamlit gives it), and so does one the
    reader changed since the box was last drawn; any other follows the view's default. Set on every run, so
    that Streamlit draws the box with the value the page computes with. Two quick presses of a slider
    overlapped two runs: the second arrived with the box's value from before the first, which an older
    rule (the value equal to the last default = not chosen) took for a choice, and the box showed one key
    while the page computed with another."""
    drawn, now = st.session_state.get(_DRAWN + key), st.session_state.get(key)
    if locked(key) or key in st.query_params or drawn is None or now is None:
        return
    chosen = now != drawn and lo <= now <= hi
    st.session_state[key] = float(now if chosen else default)


def refused_values(container) -> None:
    """After the page drew (from app.py, into a box at its top): each value of an outside link that a
    page's own bound control could not take, and what it shows instead. Streamlit puts a control's
    default in place of a value it does not offer and drops the key from the URL, without a word; the
    sidebar's keys (url_fallbacks), the texts (their cut notes), a lesson's and number boxes (their own
    caption) say theirs elsewhere."""
    asked, said = st.session_state.pop(ASKED, {}), st.session_state.pop(SAID, set())
    elsewhere = set(SELECTION_KEYS) | set(BACK_KEYS) | set(LINK_TEXTS) | said | {"lesson", "stop", "text_b"}
    for key, value in asked.items():
        if key in elsewhere or value is None or key not in st.session_state:
            continue
        shown = st.session_state[key]
        if not _takes(value, shown):
            url_form = str(shown).lower() if isinstance(shown, bool) else str(shown)
            container.warning(page_text.link_choice_note(key, code_span(repr(value[:40])), code_span(url_form[:40])),
                              icon=":material/link:")


def _takes(value: str, shown) -> bool:
    """Whether a control showing `shown` took the link's `value`."""
    if isinstance(shown, bool):
        return value.lower() == str(shown).lower()
    if isinstance(shown, int | float):
        return _same_number(value, float(shown))
    return not isinstance(shown, str) or value == shown  # a list or None: not a bound choice of one value


def choose(**values: int) -> None:
    """Set URL-bound number inputs (`number`) from a chart's click, in a callback (before the run that
    draws them): the boxes and the URL then show these values. A control a lesson pins keeps its own."""
    for key, value in values.items():
        if not locked(key):
            st.session_state[key] = float(value)


def _same_number(text: str, value: float) -> bool:
    try:
        return math.isclose(float(text), value, rel_tol=1e-9, abs_tol=1e-12)
    except ValueError:
        return False


def nucleus(container) -> float | None:
    """The URL-bound top-p (nucleus sampling: keep the fewest most likely tokens whose probabilities reach
    p), from 0.01 to 1; None at 1 (every token)."""
    p = number(container, "Top-p (1 = all)", 0.01, 1.0, 1.0, key="topp", step=0.01,
               help="nucleus sampling, after top-k: keep the fewest most likely tokens whose probabilities add "
                    "up to p, and renormalise them")
    return None if p >= 1 else p


def sidebar_footer() -> None:
    """Below the controls (after st.navigation, which page links need): the way to the glossary."""
    st.sidebar.page_link("views/glossary.py", label="Glossary: B, T, P, L, d, nh, dh, V…", icon=":material/menu_book:")


def _weights(sb, source: str) -> LoadedModel:
    """The weights of `source`; on a bad file, say why and fall back to random gpt2."""
    if source == "random":
        # every size is offered: the pages that only count (Parameter accounting, Modes, Exercises)
        # show them all; the others build only the sizes the operator allows (spec/serving.py)
        allowed = buildable_models()
        model = sb.selectbox("Model size", list(PRESETS), index=list(PRESETS).index(allowed[0]), key="model",
                             bind="query-params", disabled=locked("model"),
                             help="tiny is a 2-block test model with GPT-2's vocabulary")
        seed = number(sb, "Seed", 0, 2**31 - 1, 0, key="seed")
        if model not in allowed:
            return counted_weights(model, seed, allowed)
        return random_weights(model, seed)
    try:
        if source == "demo":
            return demo_weights()
        if source == "hf-cache":
            if not uploads_offered():  # where a student looks for real weights: why there is no upload
                sb.caption(NO_UPLOADS)
            path = _cached_checkpoint_picker(sb)
            if path:
                return path_weights(path)
        elif source == "path":
            path = sb.text_input("Path to model.safetensors", key="path")
            if path:
                return path_weights(path)
        elif source == "folder":
            weights = _folder(sb)
            if weights is not None:
                return weights
        else:
            weights = uploaded_weights(sb)
            if weights is not None:
                return weights
    except ValueError as e:  # WeightsError: the message names the file or key at fault
        sb.error(plain(str(e)))
    except Exception as e:  # whatever else a hostile file provokes: said, never a traceback
        sb.error(f"Could not use these weights: {type(e).__name__}")
    fallback = buildable_models()[0]
    sb.caption(f"Using random {fallback} weights until a checkpoint is chosen.")
    return random_weights(fallback, 0)


def _folder(sb) -> LoadedModel | None:
    """The operator's listed folders by name; on a local server, also any folder by its path."""
    listed = model_dirs()
    if os.environ.get(ALLOW_LOCAL_PATH) == "1":
        path = sb.text_input("Folder path", key="folder_path",
                             help="A folder with model.safetensors, config.json and tokenizer.json, as "
                                  "python -m gpt2viz convert nanogpt writes it")
        if path:
            return folder_weights(path)
    if listed:
        name = sb.selectbox("Folder", list(listed), key="folder", bind="query-params", disabled=locked("folder"))
        return folder_weights(listed[name])
    sb.caption("Type the folder's path, or list folders in GPT2VIZ_MODEL_DIRS.")
    return None


def _tokens(text: str, n_positions: int, mode: Mode) -> tuple[tuple[int, ...], int, str | None]:
    try:
        ids = encode(text)
    except TextError as e:
        return (), 0, str(e)
    if mode is Mode.TRAINING and len(ids) < 2:
        return tuple(ids), 0, "training needs at least 2 tokens: each position predicts the next one"
    return tuple(ids[:n_positions]), max(0, len(ids) - n_positions), None


def _cached_checkpoint_picker(sb) -> str | None:
    found = cached_checkpoints()
    if not found:
        sb.info("No GPT-2 checkpoint in the Hugging Face cache. Put a model.safetensors there "
                "(see the README), or choose Random.")
        offer_download(sb, expanded=True)
        return None
    names = {c.name: c.path for c in found}
    select_fetched(list(names))
    path = names[sb.selectbox("Checkpoint", list(names), key="checkpoint", disabled=locked("checkpoint"))]
    offer_download(sb, expanded=False)
    return path


def url_fallbacks(raw: dict[str, str], sel: Selection) -> list[str]:
    """One note per URL value that the controls could not take."""
    shown = {"mode": sel.mode.value, "block": str(sel.block), "head": str(sel.head), "weights": sel.source}
    if sel.weights.random:
        shown |= {"model": sel.weights.model_name, "seed": str(sel.weights.seed)}
    if sel.source == "folder" and not sel.weights.random and st.session_state.get("folder"):
        shown["folder"] = st.session_state["folder"]  # a listed folder, by its name
    notes = []
    if raw.get("weights") == "folder" and sel.source == "folder" and sel.weights.random:  # none opened
        asked = f"the folder {code_span(repr(raw['folder'][:40]))}" if raw.get("folder") else "a folder's weights"
        notes.append(f"The link asked for {asked}, which is not available here; showing random "
                     f"{sel.weights.model_name} weights.")
    for key, value in raw.items():
        if key in shown and value is not None and value != shown[key]:
            notes.append(f"The link asked for {key}={code_span(repr(value[:40]))}, which is not available here; "
                         f"showing {key}={code_span(shown[key])}.")
    return notes
