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
import functools
import hashlib
import hmac
import json
import math
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
MAX_FILE_CHARS = 256 * 1024  # a lesson file: 24 stops of the longest notes and questions take under 64 KB
MAX_DEPTH = 16  # arrays and tables nested: the shipped lessons nest 7 deep (a stop's claim's heads)

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
    question: dict | None = None  # a question the class votes on at this stop (_question)


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
    control = next((c for c in value if (ord(c) < 32 and c not in "\n\t") or ord(c) == 127), None)
    if control is not None:
        raise LessonError(f"{where}: holds the control character U+{ord(control):04X}")
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


@functools.cache
def _demo_sizes() -> tuple[int, int, int]:
    """(n_layer, n_head, d_mlp) of the shipped demo model, from its file's recipe (safetensors' header
    reader: no torch), or the recipe's defaults where the file is missing."""
    from safetensors import SafetensorError, safe_open

    from ..model.demo_recipe import DEMO_PATH, Recipe

    recipe = {}
    try:
        with safe_open(str(DEMO_PATH), framework="numpy") as f:
            recipe = json.loads((f.metadata() or {})["recipe"])
    except (OSError, ValueError, KeyError, SafetensorError):
        pass
    r = Recipe()
    return recipe.get("n_layer", r.n_layer), recipe.get("n_head", r.n_head), 4 * recipe.get("n_embd", r.n_embd)


def _weights(w) -> tuple[dict, tuple[int, int, int] | None]:
    """The weights, and (n_layer, n_head, d_mlp) where they are known without loading them."""
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
        return {"source": source, "model": model, "seed": seed}, (cfg.n_layer, cfg.n_head, cfg.d_mlp)
    if source == "hf-cache":
        name = _str(_need(w, "checkpoint", "weights"), "weights.checkpoint", 80)
        published = [n for n, cfg in PRESETS.items() if cfg.hf_repo]
        if name not in published:
            raise LessonError(f"weights.checkpoint: {name!r:.40} is not a published checkpoint (one of "
                              f"{', '.join(published)})")
        cfg = PRESETS[name]
        return {"source": source, "checkpoint": name}, (cfg.n_layer, cfg.n_head, cfg.d_mlp)
    if source == "folder":  # a folder the server's operator lists, by its name: never a path
        name = _str(_need(w, "name", "weights"), "weights.name", 80)
        if "/" in name or "\\" in name or name in (".", ".."):
            raise LessonError(f"weights.name: {name!r:.40} is a path; name a folder of GPT2VIZ_MODEL_DIRS by its name")
        return {"source": source, "name": name}, None
    return {"source": source}, _demo_sizes()


def _value(page: str, key: str, value, where: str, d_mlp: int | None = None):
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
    if key == "neuron":  # a number box on the page, a whole neuron of the MLP's d_mlp here
        return float(_int(value, f"{where}.{key}", 0, (d_mlp or 2**31) - 1))
    if kind is float and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return _int(value, f"{where}.{key}")


STOP_FIELDS = ("page", "mode", "block", "head", "values", "note", "claims", "question")
CLAIM_MEASURES = ("induction", "logit_diff", "attribution", "knockout", "path_share")  # analysis/claims.py
CLAIM_FIELDS = ("text", "citation", "measure", "heads", "published", "threshold", "tokens", "prompts", "seed")
PATH_FIELDS = ("sender", "receiver", "answer", "on_text", "bound", "ablation")  # a path_share claim's own
MAX_CLAIMS, MAX_CLAIM_TEXT = 4, 300


def _claim(d, where: str, n_layer: int = 1024, n_head: int = 1024) -> dict:
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
           "heads": [[_int(b, f"{where}.heads (a block)", 0, n_layer - 1),
                      _int(h, f"{where}.heads (a head)", 0, n_head - 1)] for b, h in heads],
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
    if not math.isfinite(value) or abs(value) > MAX_NUMBER:
        raise LessonError(f"{where}: {value!r:.40} is not a finite number of at most {MAX_NUMBER:.0e} in size")
    return float(value)


QUESTION_FIELDS = ("text", "choices", "answer", "number", "tolerance", "reveal")
MAX_QUESTION, MAX_CHOICE, MIN_CHOICES, MAX_CHOICES = 300, 80, 2, 6
MAX_NUMBER = 1e12  # a number answer, its tolerance and a student's vote are at most this in size


def _question(d, where: str) -> dict:
    """A question the class votes on: `text` and either `choices` (2 to 6 strings) with `answer` (the index
    of the right one), or `number` (the right value) with `tolerance` (how far from it still counts as
    right, at least 0); `reveal: "after"` hides the stop's charts until the lecturer reveals the answer
    (predict, then see)."""
    _only(d, where, QUESTION_FIELDS)
    out: dict = {"text": _str(_need(d, "text", where), f"{where}.text", MAX_QUESTION)}
    if ("choices" in d) == ("number" in d):
        raise LessonError(f"{where}: give either choices and answer, or number and tolerance")
    if "choices" in d:
        if "number" in d or "tolerance" in d:
            raise LessonError(f"{where}: a question with choices has no number or tolerance")
        choices = d["choices"]
        if not isinstance(choices, list) or not MIN_CHOICES <= len(choices) <= MAX_CHOICES:
            raise LessonError(f"{where}.choices: expected a list of {MIN_CHOICES} to {MAX_CHOICES} choices")
        out["choices"] = [_str(c, f"{where}.choices[{j}]", MAX_CHOICE) for j, c in enumerate(choices)]
        if len(set(out["choices"])) < len(out["choices"]):
            raise LessonError(f"{where}.choices: two choices are the same")
        out["answer"] = _int(_need(d, "answer", where), f"{where}.answer", 0, len(choices) - 1)
    else:
        if "answer" in d:
            raise LessonError(f"{where}.answer: a number question gives its answer as number")
        out["number"] = _number(d["number"], f"{where}.number")
        out["tolerance"] = _number(_need(d, "tolerance", where), f"{where}.tolerance")
        if out["tolerance"] < 0:
            raise LessonError(f"{where}.tolerance: {out['tolerance']:g} is below 0")
    reveal = d.get("reveal")
    if reveal is not None:
        if reveal != "after":
            raise LessonError(f"{where}.reveal: {reveal!r:.40} is not after (the stop's charts wait for the reveal)")
        out["reveal"] = "after"
    return out


REVEALS = ("shown at once", "hidden until the answer is revealed")  # the builder's words for `reveal`


def question_from_builder(text: str, choices: str, answer: str, tolerance: str, reveal: str) -> dict:
    """The Lessons page builder's question fields as a lesson file's `question`: choices one a line, the
    answer the right one's line from 1 (or the number), the tolerance 0 when empty. What does not read as
    a number is kept as typed, so that the lesson's check names the field (`stops[i].question.answer`)."""
    def number(raw: str):
        try:
            return float(raw)
        except ValueError:
            return raw.strip()

    lines = [c.strip() for c in choices.splitlines() if c.strip()]
    out: dict = {"text": text.strip()}
    if lines:
        picked = number(answer)
        out |= {"choices": lines, "answer": int(picked) - 1 if isinstance(picked, float) and picked.is_integer()
                else picked}
    else:
        out |= {"number": number(answer), "tolerance": number(tolerance) if tolerance.strip() else 0.0}
    return out | ({"reveal": "after"} if reveal == REVEALS[1] else {})


def _stop(d, i: int, sizes: tuple[int, int, int] | None) -> Stop:
    where = f"stops[{i}]"
    _only(d, where, STOP_FIELDS)
    page = _need(d, "page", where)
    if page not in PAGES:
        raise LessonError(f"{where}.page: {page!r:.40} is not a page (one of {', '.join(PAGES)})")
    mode = d.get("mode", "full")
    if mode not in [m.value for m in Mode]:
        raise LessonError(f"{where}.mode: {mode!r:.40} is not one of {', '.join(m.value for m in Mode)}")
    n_layer, n_head, d_mlp = sizes or (1024, 1024, None)  # a folder's sizes are known once it is loaded
    block = _int(d.get("block", 0), f"{where}.block", 0, n_layer - 1)
    head = _int(d.get("head", 0), f"{where}.head", 0, n_head - 1)
    values = d.get("values", {})
    if not isinstance(values, dict):
        raise LessonError(f"{where}.values: expected a table of the page's controls, got {type(values).__name__}")
    values = {k: _value(page, k, v, f"{where}.values", d_mlp) for k, v in values.items()}
    claims = d.get("claims", [])
    if not isinstance(claims, list) or len(claims) > MAX_CLAIMS:
        raise LessonError(f"{where}.claims: expected a list of at most {MAX_CLAIMS} claims")
    question = _question(d["question"], f"{where}.question") if d.get("question") is not None else None
    return Stop(page, mode, block, head, values, _str(d.get("note", ""), f"{where}.note", MAX_NOTE, empty=True),
                tuple(_claim(c, f"{where}.claims[{j}]", n_layer, n_head) for j, c in enumerate(claims)), question)


def parse(d) -> Lesson:
    """A validated Lesson from a lesson's dict (a file's, or a link's)."""
    _only(d, "", ("title", "weights", "text", "text_b", "free", "expires", "stops"))
    title = _str(_need(d, "title", ""), "title", MAX_TITLE)
    weights, sizes = _weights(_need(d, "weights", ""))
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
    return Lesson(title, weights, text, tuple(_stop(s, i, sizes) for i, s in enumerate(stops)),
                  text_b, tuple(dict.fromkeys(free)), expires)


def nesting(text: str, toml: bool = False) -> int:
    """How deep `text`'s arrays and tables nest, counted before a parser recurses into them (Python's
    json and tomllib raise RecursionError near 1,000 levels, past any `except ValueError`): brackets
    and braces outside strings (JSON's; TOML's one-line strings and its triple-quoted ones over several
    lines) and TOML's # comments."""
    depth = deepest = 0
    quote, i = None, 0
    while i < len(text):
        c = text[i]
        if quote:
            if len(quote) == 3 and text.startswith(quote, i):
                quote, i = None, i + 3
                continue
            if c == "\\" and quote[0] == '"':
                i += 1
            elif c == quote or c == "\n" and toml and len(quote) == 1:
                quote = None
        elif toml and text.startswith(('"""', "'''"), i):
            quote, i = text[i:i + 3], i + 3
            continue
        elif c == '"' or c == "'" and toml:
            quote = c
        elif c == "#" and toml:
            end = text.find("\n", i)
            i = len(text) if end < 0 else end
            continue
        elif c in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif c in "]}":
            depth = max(0, depth - 1)
        i += 1
    return deepest


def _parsed(text: str, toml: bool, name: str) -> object:
    """JSON or TOML within MAX_DEPTH, or one LessonError line."""
    if nesting(text, toml) > MAX_DEPTH:
        raise LessonError(f"{name}: arrays and tables nested more than {MAX_DEPTH} levels deep")
    try:
        return tomllib.loads(text) if toml else json.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as e:
        raise LessonError(f"{name}: not valid {'TOML' if toml else 'JSON'}: {e}") from None


def loads(text: str, name: str = "lesson.json") -> Lesson:
    """A lesson file's text: TOML when `name` ends in .toml, else JSON; within MAX_FILE_CHARS and MAX_DEPTH."""
    if len(text) > MAX_FILE_CHARS:
        raise LessonError(f"{name}: {len(text):,} characters, more than a lesson's {MAX_FILE_CHARS:,}")
    return parse(_parsed(text, name.endswith(".toml"), name))


def load(path: str | Path) -> Lesson:
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > 4 * MAX_FILE_CHARS:  # a UTF-8 character takes at most 4 bytes
            raise LessonError(f"{path}: {size:,} bytes, more than a lesson's {MAX_FILE_CHARS:,} characters")
        data = path.read_bytes()
    except OSError as e:
        raise LessonError(f"{path}: cannot read it: {e.strerror or e}") from None
    return loads_bytes(data, path.name, str(path))


def loads_bytes(data: bytes, name: str, where: str | None = None) -> Lesson:
    """A lesson file's bytes (read from disk or uploaded): UTF-8 text, else one line that says so."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise LessonError(f"{where or name}: not UTF-8 text (byte {e.start:,} is 0x{data[e.start]:02x})") from None
    return loads(text, name)


# ---------------------------------------------------------------------------- a lesson being built, in a URL
# the builder's fields (views/lesson.py) a draft keeps, each with its cap; its stops as the builder holds them
DRAFT_FIELDS = {"title": MAX_TITLE, "text_b": MAX_TEXT, "page": 40, "note": MAX_NOTE, "values": 300,
                "q_text": MAX_QUESTION, "q_choices": MAX_CHOICES * (MAX_CHOICE + 1), "q_answer": 24, "q_tolerance": 24,
                "q_reveal": 40}


def draft_token(draft: dict) -> str:
    """The Lessons page's builder as a URL value (compact JSON, zlib, URL-safe base64): what a reload or
    a copied address gives back. Longer than a link may be (MAX_TOKEN_CHARS): a LessonError."""
    token = _b64(zlib.compress(json.dumps(draft, separators=(",", ":"), ensure_ascii=False).encode(), 9))
    if len(token) > MAX_TOKEN_CHARS:
        raise LessonError(f"the draft takes {len(token):,} characters in the address, at most {MAX_TOKEN_CHARS:,}")
    return token


def read_draft(token: str) -> tuple[dict, list[dict], int]:
    """A builder URL value back: its fields (each a string within its cap, else left out), its stops
    that a lesson takes (each checked as a lesson's stop) and how many it left out. One line if it is
    too long or not a draft at all."""
    if len(token) > MAX_TOKEN_CHARS:
        raise LessonError(f"{len(token):,} characters, at most {MAX_TOKEN_CHARS:,}")
    try:
        inflate = zlib.decompressobj()
        raw = inflate.decompress(_unb64(token), MAX_JSON_BYTES)
        if inflate.unconsumed_tail:
            raise LessonError(f"more than {MAX_JSON_BYTES:,} bytes")
        d = _parsed(raw.decode(), False, "draft")
    except LessonError:
        raise
    except (ValueError, zlib.error):
        raise LessonError("not a draft of this page") from None
    if not isinstance(d, dict):
        raise LessonError("not a draft of this page")
    fields = {k: v for k, v in d.items() if k in DRAFT_FIELDS and isinstance(v, str) and len(v) <= DRAFT_FIELDS[k]}
    free = d.get("free")
    if isinstance(free, list) and len(free) <= 64 and all(isinstance(f, str) and len(f) <= 40 for f in free):
        fields["free"] = free
    given = d.get("stops") if isinstance(d.get("stops"), list) else []
    stops = []
    for s in given[:MAX_STOPS]:
        try:
            _stop(s, 0, None)
        except (LessonError, TypeError, ValueError):
            continue
        stops.append(s)
    return fields, stops, len(given) - len(stops)


# ---------------------------------------------------------------------------- the weights, here
def missing_weights(weights: dict, env=None) -> str | None:
    """What of a lesson's weights this machine cannot load, and how to get it, in a clause ("the checkpoint
    gpt2 (`python -m gpt2viz download gpt2` fetches it)"); None when it can. Random weights are always here."""
    import os

    from ..model.demo_recipe import DEMO_PATH
    from ..model.weights import find_hf_checkpoints
    from ..spec.serving import MODEL_DIRS, model_dirs

    env = os.environ if env is None else env
    source = weights["source"]
    if source == "demo" and not DEMO_PATH.is_file():
        return "the demo model (`python -m gpt2viz train-demo` writes it)"
    name = weights.get("checkpoint")
    if source == "hf-cache" and name not in [c.name for c in find_hf_checkpoints(env)]:
        return f"the checkpoint {name} (`python -m gpt2viz download {name}` fetches it)"
    if source == "folder" and weights["name"] not in model_dirs(env):
        return f"the folder {weights['name']} (listed in {MODEL_DIRS})"
    return None


def weights_name(weights: dict) -> str:
    """The weights as a lesson names them: "the checkpoint gpt2", "the demo model", "random gpt2 weights, seed 0"."""
    return {"random": lambda: f"random {weights.get('model')} weights, seed {weights.get('seed')}",
            "demo": lambda: "the demo model", "hf-cache": lambda: f"the checkpoint {weights.get('checkpoint')}",
            "folder": lambda: f"the folder {weights.get('name')}"}[weights["source"]]()


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
        lesson = parse(_parsed(raw.decode(), False, "lesson"))
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


# what of a lesson's weights this machine lacks, and how it names them (tests/test_text_corpus.py)
SENTENCES = (missing_weights, weights_name)
NOT_SENTENCES = (sign, digest, href, qr_svg,  # a lesson's signed token, digest, link and QR code: no sentence
                 draft_token)  # the builder's fields as a URL value
