"""A lecturer's lesson: a title, the weights, one or two texts and a sequence of stops (a page and its
view, with an optional note), and which controls the students may change.

A lesson is a small JSON or TOML file a lecturer writes by hand (lessons/*.json ship two), and it
travels in a link: `?lesson=<payload>.<tag>&stop=<i>`, where the payload is the lesson's compact JSON,
zlib-compressed, in URL-safe base64, and the tag is an HMAC-SHA256 of the payload under the server's
key (`GPT2VIZ_LESSON_KEY`), cut to 128 bits. A link needs no storage shared by replicas, only their
one key; a hash anyone can recompute would let anyone forge a lesson. An expiry, when given, is a
unix time inside the signed payload.

Pure: dicts, bytes and strings in, a `Lesson` or a `LessonError` whose one line names the field out.
"""

import base64
import hashlib
import hmac
import json
import time
import tomllib
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from ..spec.config import PRESETS
from ..spec.pages import PAGES as APP_PAGES  # the registry alone: no Streamlit
from ..spec.schema import Mode

KEY_ENV = "GPT2VIZ_LESSON_KEY"
MIN_KEY_CHARS = 16
TAG_BYTES = 16  # 128 bits of HMAC-SHA256
# the caps keep a link well under a proxy's default 8 KB request line (nginx, and most others)
MAX_TITLE, MAX_TEXT, MAX_NOTE, MAX_STOPS = 120, 400, 600, 24
MAX_TOKEN_CHARS = 6_000  # the `lesson` value: payload and tag
MAX_JSON_BYTES = 64 * 1024  # what a payload may inflate to

# every page a stop may visit: the app's, but the one that builds lessons
PAGES = tuple(row.url for row in APP_PAGES if row.url != "lesson")
# a page's own URL-bound controls that a stop may set, and the values each takes: its options, int
# (a slider), float (a number input: the app's hold floats, ui/state.py number) or bool (a toggle)
# (tests/test_lessons.py checks the options against the pages' own lists)
EXPERIMENT_KEYS = ("no scale", "temperature", "no mask", "no positions")
SCORE_LABELS = ("previous token", "induction", "first token", "entropy", "mean distance")
PAGE_VALUES: dict[str, dict[str, type | tuple]] = {
    # track: the token followed, as the page writes it ("␣after"), one of the 10 most likely
    "whatif": {"part": ("head", "attention", "MLP", "neuron"), "method": ("zero", "mean"), "neuron": float,
               "track": str},
    "attention": {"qi": int, "kj": int},  # the cell whose dot product is taken apart
    "attribution": {"answer": str, "versus": str, "position": int},  # one-token strings, such as " after"
    "paths": {"sender": ("head", "MLP"), "method": ("zero", "mean"), "answer": str, "versus": str, "position": int},
    "layernorm": {"ln": ("ln_1", "ln_2", "ln_f"), "ln_pos": int},
    "output": {"temp": float, "topk": float, "topp": float},
    "generation": {"steps": float, "temperature": float, "top_k": float, "topp": float, "gen_seed": float,
                   "step": int},
    "training": {"dropout": bool},
    "exercises": {"set": float, "questions": float},
    "experiments": {"experiment": EXPERIMENT_KEYS},
    "lens": {"lens_pos": int, "lens_depth": int},  # the position read, the depth taken apart
    "heads": {"score_x": SCORE_LABELS, "score_y": SCORE_LABELS, "open_block": int, "open_head": int},
    "patch": {"answer_a": str, "answer_b": str},  # tokens as the page writes them
}
# the weights a lesson may name (not a session's upload); "folder" by its name in GPT2VIZ_MODEL_DIRS
SOURCES = ("random", "demo", "hf-cache", "folder")
# the controls a lesson may leave free; "weights" frees the size, seed and checkpoint with it
CONTROLS = ("text", "text_b", "weights", "mode", "block", "head")
WEIGHT_KEYS = ("weights", "model", "seed", "checkpoint", "folder")


# what a student reads where the server's key is missing or unusable: the operator's business, said to
# the lecturer on the Lessons page and in the server's log, not to every student who opens a link
CANNOT_CHECK = "This server cannot check lesson links, so this one does not open here: tell your lecturer."


class LessonError(ValueError):
    """One line that names the field at fault (`stops[2].page: ...`)."""


@dataclass(frozen=True)
class Stop:
    page: str
    mode: str = "full"
    block: int = 0
    head: int = 0
    values: dict = field(default_factory=dict)  # the page's own controls (PAGE_VALUES)
    note: str = ""
    claims: tuple[dict, ...] = ()  # published claims this stop checks on the weights in view (_claim)


@dataclass(frozen=True)
class Lesson:
    title: str
    # {"source": "random", "model": "gpt2", "seed": 0}, {"source": "demo"}, {"source": "hf-cache", "checkpoint": …},
    # {"source": "folder", "name": …}
    weights: dict
    text: str
    stops: tuple[Stop, ...]
    text_b: str | None = None
    free: tuple[str, ...] = ()  # the controls students may change; every other one the lesson sets is locked
    expires: int | None = None  # unix time

    def as_dict(self) -> dict:
        """The lesson as its file says it, without defaults (what a link carries)."""
        out = {"title": self.title, "weights": self.weights, "text": self.text}
        out |= {"text_b": self.text_b} if self.text_b is not None else {}
        out |= {"free": list(self.free)} if self.free else {}
        out |= {"expires": self.expires} if self.expires is not None else {}
        default = Stop("")
        out["stops"] = [{k: list(getattr(s, k)) if k == "claims" else getattr(s, k) for k in STOP_FIELDS
                         if k == "page" or getattr(s, k) != getattr(default, k)} for s in self.stops]
        return out

    def pins(self, i: int) -> dict[str, object]:
        """The session values stop i sets (sidebar controls by their URL keys, then the page's own)."""
        s = self.stops[i]
        w = self.weights
        out: dict[str, object] = {"weights": w["source"]}
        if w["source"] == "random":
            out |= {"model": w["model"], "seed": float(w["seed"])}
        elif w["source"] == "hf-cache":
            out["checkpoint"] = w["checkpoint"]
        elif w["source"] == "folder":
            out["folder"] = w["name"]
        out |= {"text": self.text} | ({"text_b": self.text_b} if self.text_b is not None else {})
        return out | {"mode": s.mode, "block": s.block, "head": s.head} | dict(s.values)

    def locked(self, i: int) -> frozenset[str]:
        free = set(self.free) | (set(WEIGHT_KEYS) if "weights" in self.free else set())
        return frozenset(self.pins(i)) - free


# ---------------------------------------------------------------------------- parsing
def _str(value, where: str, cap: int, empty: bool = False) -> str:
    if not isinstance(value, str):
        raise LessonError(f"{where}: expected a string, got {type(value).__name__}")
    if not value.strip() and not empty:
        raise LessonError(f"{where}: is empty")
    if len(value) > cap:
        raise LessonError(f"{where}: {len(value):,} characters, at most {cap:,} (a lesson travels in a link)")
    return value


def _int(value, where: str, lo: int = 0, hi: int = 2**31 - 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise LessonError(f"{where}: expected a whole number, got {value!r:.40}")
    if not lo <= value <= hi:
        raise LessonError(f"{where}: {value} is not between {lo} and {hi}")
    return value


def _only(d, where: str, allowed: tuple[str, ...]) -> dict:
    if not isinstance(d, dict):
        raise LessonError(f"{where}: expected a table of fields, got {type(d).__name__}")
    extra = [k for k in d if k not in allowed]
    if extra:
        raise LessonError(f"{(where + '.') if where else ''}{extra[0]}: unknown field (known: {', '.join(allowed)})")
    return d


def _need(d: dict, key: str, where: str):
    if key not in d:
        raise LessonError(f"{(where + '.') if where else ''}{key}: missing")
    return d[key]


def _weights(w) -> tuple[dict, int | None, int | None]:
    """The weights, and the block and head counts where they are known without loading them."""
    _only(w, "weights", ("source", "model", "seed", "checkpoint", "name"))
    source = _need(w, "source", "weights")
    if source not in SOURCES:
        raise LessonError(f"weights.source: {source!r:.40} is not one of {', '.join(SOURCES)}")
    if source == "random":
        model = w.get("model", "gpt2")
        if model not in PRESETS:
            raise LessonError(f"weights.model: {model!r:.40} is not one of {', '.join(PRESETS)}")
        cfg = PRESETS[model]
        seed = _int(w.get("seed", 0), "weights.seed")
        return {"source": source, "model": model, "seed": seed}, cfg.n_layer, cfg.n_head
    if source == "hf-cache":
        return {"source": source, "checkpoint": _str(_need(w, "checkpoint", "weights"), "weights.checkpoint", 80)}, \
            None, None
    if source == "folder":  # a folder the server's operator lists, by its name: never a path
        name = _str(_need(w, "name", "weights"), "weights.name", 80)
        if "/" in name or "\\" in name or name in (".", ".."):
            raise LessonError(f"weights.name: {name!r:.40} is a path; name a folder of GPT2VIZ_MODEL_DIRS by its name")
        return {"source": source, "name": name}, None, None
    return {"source": source}, None, None


def _value(page: str, key: str, value, where: str):
    kind = PAGE_VALUES.get(page, {}).get(key)
    if kind is None:
        known = ", ".join(PAGE_VALUES.get(page, {})) or "none"
        raise LessonError(f"{where}.{key}: not a control of the {page} page (its controls: {known})")
    if isinstance(kind, tuple):
        if value not in kind:
            raise LessonError(f"{where}.{key}: {value!r:.40} is not one of {', '.join(kind)}")
        return value
    if kind is str:
        return _str(value, f"{where}.{key}", 40)
    if kind is bool:
        if not isinstance(value, bool):
            raise LessonError(f"{where}.{key}: expected true or false, got {value!r:.40}")
        return value
    if kind is float and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return _int(value, f"{where}.{key}")


STOP_FIELDS = ("page", "mode", "block", "head", "values", "note", "claims")
CLAIM_MEASURES = ("induction", "logit_diff", "attribution", "knockout", "path_share")  # analysis/claims.py
CLAIM_FIELDS = ("text", "citation", "measure", "heads", "published", "threshold", "tokens", "prompts", "seed")
PATH_FIELDS = ("sender", "receiver", "answer", "on_text", "bound", "ablation")  # a path_share claim's own
MAX_CLAIMS, MAX_CLAIM_TEXT = 4, 300


def _claim(d, where: str) -> dict:
    """A published claim, checked live: `text` and `citation` (what was published, where), `measure`
    (how it is measured here: one of CLAIM_MEASURES), `heads` ([[block, head], ...], the heads it names;
    none for logit_diff), `published` (the published number, optional), `threshold` (the measured value
    that agrees: at least it, or for knockout at most it), `tokens` ("any" or "demo": the random tokens
    of an induction measurement), `prompts` (how many indirect-object prompts, 1 to 64) and `seed`."""
    measure = d.get("measure") if isinstance(d, dict) else None
    if measure == "path_share":
        return _path_claim(d, where)
    _only(d, where, CLAIM_FIELDS)
    measure = _need(d, "measure", where)
    if measure not in CLAIM_MEASURES:
        raise LessonError(f"{where}.measure: {measure!r:.40} is not one of {', '.join(CLAIM_MEASURES)}")
    heads = d.get("heads", [])
    if not isinstance(heads, list) or not all(isinstance(h, list) and len(h) == 2 for h in heads):
        raise LessonError(f"{where}.heads: expected a list of [block, head] pairs")
    if measure != "logit_diff" and not heads:
        raise LessonError(f"{where}.heads: a {measure} claim names at least one head")
    out = {"text": _str(_need(d, "text", where), f"{where}.text", MAX_CLAIM_TEXT),
           "citation": _str(_need(d, "citation", where), f"{where}.citation", 200), "measure": measure,
           "heads": [[_int(b, f"{where}.heads"), _int(h, f"{where}.heads")] for b, h in heads],
           "threshold": _number(_need(d, "threshold", where), f"{where}.threshold")}
    if d.get("published") is not None:
        out["published"] = _number(d["published"], f"{where}.published")
    tokens = d.get("tokens", "any")
    if tokens not in ("any", "demo"):
        raise LessonError(f"{where}.tokens: {tokens!r:.40} is not one of any, demo")
    return out | {"tokens": tokens, "prompts": _int(d.get("prompts", 16), f"{where}.prompts", 1, 64),
                  "seed": _int(d.get("seed", 0), f"{where}.seed")}


def _path_claim(d: dict, where: str) -> dict:
    """A path_share claim (analysis/claims.py path_share): `sender` (a head or an MLP, as the attribution
    names them), `receiver` (a receiver's name, `*` for any number), `answer` (one token, " after"),
    `on_text` (the text it is measured on, at its last position), `bound` ("at least", the default, or "at
    most"), `ablation` (zero or mean), and the claim's `text`, `citation`, `threshold`, `published`."""
    _only(d, where, ("text", "citation", "measure", "published", "threshold", *PATH_FIELDS))
    out = {"text": _str(_need(d, "text", where), f"{where}.text", MAX_CLAIM_TEXT),
           "citation": _str(_need(d, "citation", where), f"{where}.citation", 200), "measure": "path_share",
           "threshold": _number(_need(d, "threshold", where), f"{where}.threshold"),
           "sender": _str(_need(d, "sender", where), f"{where}.sender", 40),
           "receiver": _str(_need(d, "receiver", where), f"{where}.receiver", 40),
           "answer": _str(_need(d, "answer", where), f"{where}.answer", 40),
           "on_text": _str(_need(d, "on_text", where), f"{where}.on_text", MAX_TEXT)}
    for key, options in (("bound", ("at least", "at most")), ("ablation", ("zero", "mean"))):
        value = d.get(key, options[0])
        if value not in options:
            raise LessonError(f"{where}.{key}: {value!r:.40} is not one of {', '.join(options)}")
        out[key] = value
    if d.get("published") is not None:
        out["published"] = _number(d["published"], f"{where}.published")
    return out


def _number(value, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise LessonError(f"{where}: expected a number, got {value!r:.40}")
    return float(value)


def _stop(d, i: int, n_layer: int | None, n_head: int | None) -> Stop:
    where = f"stops[{i}]"
    _only(d, where, STOP_FIELDS)
    page = _need(d, "page", where)
    if page not in PAGES:
        raise LessonError(f"{where}.page: {page!r:.40} is not a page (one of {', '.join(PAGES)})")
    mode = d.get("mode", "full")
    if mode not in [m.value for m in Mode]:
        raise LessonError(f"{where}.mode: {mode!r:.40} is not one of {', '.join(m.value for m in Mode)}")
    block = _int(d.get("block", 0), f"{where}.block", 0, (n_layer or 1024) - 1)
    head = _int(d.get("head", 0), f"{where}.head", 0, (n_head or 1024) - 1)
    values = d.get("values", {})
    if not isinstance(values, dict):
        raise LessonError(f"{where}.values: expected a table of the page's controls, got {type(values).__name__}")
    values = {k: _value(page, k, v, f"{where}.values") for k, v in values.items()}
    claims = d.get("claims", [])
    if not isinstance(claims, list) or len(claims) > MAX_CLAIMS:
        raise LessonError(f"{where}.claims: expected a list of at most {MAX_CLAIMS} claims")
    return Stop(page, mode, block, head, values, _str(d.get("note", ""), f"{where}.note", MAX_NOTE, empty=True),
                tuple(_claim(c, f"{where}.claims[{j}]") for j, c in enumerate(claims)))


def parse(d) -> Lesson:
    """A validated Lesson from a lesson's dict (a file's, or a link's)."""
    _only(d, "", ("title", "weights", "text", "text_b", "free", "expires", "stops"))
    title = _str(_need(d, "title", ""), "title", MAX_TITLE)
    weights, n_layer, n_head = _weights(_need(d, "weights", ""))
    text = _str(_need(d, "text", ""), "text", MAX_TEXT)
    text_b = _str(d["text_b"], "text_b", MAX_TEXT) if d.get("text_b") is not None else None
    free = d.get("free", [])
    stops = d.get("stops")
    # the sidebar's controls, and the page values of the lesson's pages (a student may move them)
    freeable = CONTROLS + tuple(k for s in (stops if isinstance(stops, list) else ()) if isinstance(s, dict)
                                for k in PAGE_VALUES.get(s.get("page"), {}))
    if not isinstance(free, list) or any(f not in freeable for f in free):
        bad = free if not isinstance(free, list) else next(f for f in free if f not in freeable)
        raise LessonError(f"free: {bad!r:.40} is not a list of controls from {', '.join(dict.fromkeys(freeable))}")
    expires = _int(d["expires"], "expires", 0, 2**40) if d.get("expires") is not None else None
    stops = _need(d, "stops", "")
    if not isinstance(stops, list) or not 1 <= len(stops) <= MAX_STOPS:
        raise LessonError(f"stops: expected a list of 1 to {MAX_STOPS} stops")
    return Lesson(title, weights, text, tuple(_stop(s, i, n_layer, n_head) for i, s in enumerate(stops)),
                  text_b, tuple(dict.fromkeys(free)), expires)


def loads(text: str, name: str = "lesson.json") -> Lesson:
    """A lesson file's text: TOML when `name` ends in .toml, else JSON."""
    try:
        d = tomllib.loads(text) if name.endswith(".toml") else json.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as e:
        raise LessonError(f"{name}: not valid {'TOML' if name.endswith('.toml') else 'JSON'}: {e}") from None
    return parse(d)


def load(path: str | Path) -> Lesson:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise LessonError(f"{path}: cannot read it: {e}") from None
    return loads(text, path.name)


# ---------------------------------------------------------------------------- links
def server_key(env) -> bytes | None:
    """The signing key from the environment; None when it is unset. A short key is refused."""
    key = env.get(KEY_ENV, "")
    if not key:
        return None
    if len(key) < MIN_KEY_CHARS:
        raise LessonError(f"{KEY_ENV}: {len(key)} characters, at least {MIN_KEY_CHARS} (e.g. `openssl rand -hex 32`)")
    return key.encode()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(s: str) -> bytes:
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def _tag(key: bytes, payload: str) -> str:
    return _b64(hmac.new(key, payload.encode(), hashlib.sha256).digest()[:TAG_BYTES])


def sign(lesson: Lesson, key: bytes, expires: int | None = None) -> str:
    """The `lesson` value of a link: compact JSON, zlib, URL-safe base64, a dot, the HMAC tag."""
    d = lesson.as_dict() | ({"expires": int(expires)} if expires is not None else {})
    payload = _b64(zlib.compress(json.dumps(d, separators=(",", ":"), ensure_ascii=False).encode(), 9))
    token = f"{payload}.{_tag(key, payload)}"
    if len(token) > MAX_TOKEN_CHARS:
        raise LessonError(f"stops: the lesson takes {len(token):,} characters in a link, at most "
                          f"{MAX_TOKEN_CHARS:,}: shorten the notes or the texts")
    return token


def verify(token: str, key: bytes | None, now: float | None = None) -> Lesson:
    """The lesson a link carries, if its tag is this key's and it has not expired; else one line."""
    if key is None:
        raise LessonError(CANNOT_CHECK)
    payload, _, tag = token.rpartition(".")
    if not payload or len(token) > MAX_TOKEN_CHARS or \
            not hmac.compare_digest(tag.encode(), _tag(key, payload).encode()):
        raise LessonError("This lesson link's signature does not match: it was changed, or signed by another server.")
    try:
        inflate = zlib.decompressobj()
        raw = inflate.decompress(_unb64(payload), MAX_JSON_BYTES)
        if inflate.unconsumed_tail:
            raise LessonError(f"lesson: more than {MAX_JSON_BYTES:,} bytes")
        lesson = parse(json.loads(raw))
    except (ValueError, zlib.error) as e:  # signed by this key, so written by a lecturer: say what is wrong
        raise LessonError(f"This lesson link is signed but malformed: {e}") from None
    if lesson.expires is not None and (time.time() if now is None else now) >= lesson.expires:
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(lesson.expires))
        raise LessonError(f"This lesson link expired on {when}: ask your lecturer for a new one.")
    return lesson


def digest(token: str) -> str:
    """A short name of a link's lesson, for caches and the session."""
    return hashlib.sha256(token.encode()).hexdigest()[:16]


def href(page: str, token: str, i: int, default: str = "overview") -> str:
    """The address of stop i of a signed lesson on `page` (the default page is served at /)."""
    return ("/" if page == default else "/" + page) + f"?lesson={token}&stop={i}"


def qr_svg(link: str) -> str:
    """The link as a QR code (SVG text, black on white, a quiet zone of 4 modules), for the projector."""
    import segno

    svg = segno.make(link, error="m").svg_inline(scale=6, border=4, light="#fff")
    return svg.replace("<svg ", '<svg xmlns="http://www.w3.org/2000/svg" ', 1)  # a file of its own, e.g. an image
