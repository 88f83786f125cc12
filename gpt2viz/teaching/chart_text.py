"""Every chart in words and in numbers, read from the chart's own data: a sentence for a screen reader
and for anyone (what the chart shows and what stands out in this run) and the table of the values it
draws ("Show the numbers"), the same in the app, the page's handout and the static lesson site.

Both are read off the figure's JSON: each trace's hover template already names what a point is and
the precision the chart shows it at ("query %{y}<br>key %{x}<br>attention %{z:.3f}"), so a point is
said the way the chart's own hover says it. A trace's *value* is its last placeholder with a number
format (`attention %{z:.3f}`), or, where none has one, the bar's length or the point's height. Traces
without a hover (decorations: the text labels of a drawing, an invisible layer that takes clicks) are
not described.

Each claim is computed: "highest" and "lowest" name the largest and smallest value (ties at the
printed precision counted, "at 3 cells, among them …"), "every" is said only when every printed
value is the same, and an attention map's rows are said to put their largest weight on a token only
where that row's largest weight is alone at its printed precision.

Pure: a figure's dict (plotly JSON: lists, or typed arrays as {dtype, bdata, shape}) in, text out.
"""

import base64
import functools
import html
import math
import re
from dataclasses import dataclass

import numpy as np

TABLE_ROWS = 64  # a map's table shows at most this many rows …
TABLE_POINTS = 128  # … a bar or line chart's this many points (a histogram's 80 bins all: its sentence names one) …
TABLE_COLUMNS = 32  # … and a map's table this many columns; the caption says how many of how many
# the words and the table outside the app (the handout, the static lesson site); app.py styles them alike
STYLE = (".gpt2viz-figure-words{font-size:.9rem;color:#5c5f6a}.gpt2viz-figtext{margin:0 0 .25rem}"
         ".gpt2viz-figure-words summary{cursor:pointer;color:#31333f}"
         ".gpt2viz-numbers{overflow:auto;max-height:22rem;margin:.25rem 0 .5rem}"
         ".gpt2viz-numbers table{border-collapse:collapse;font-size:.85rem;color:#31333f}"
         ".gpt2viz-numbers caption{text-align:left;color:#5c5f6a;padding-bottom:.25rem}"
         ".gpt2viz-numbers th,.gpt2viz-numbers td{border:1px solid #e0e2e6;padding:1px 6px;text-align:right;"
         "white-space:nowrap}.gpt2viz-numbers th{background:#f6f7f9;text-align:left}")
MANY = 3  # more traces of one quantity than this are said together, as one pool of values

_PLACEHOLDER = re.compile(r"%\{([^}:|]+)(?::([^}]*))?\}")
_TAG = re.compile(r"<[^>]+>")
_EXTRA = re.compile(r"<extra>.*?</extra>", re.S)
_ITEM = re.compile(r"^(\w+)(?:\[(\d+)\])?$")
_DTYPES = {"f4": "<f4", "f8": "<f8", "i1": "i1", "i2": "<i2", "i4": "<i4", "u1": "u1", "u2": "<u2", "u4": "<u4",
           "u1c": "u1"}


def as_array(value) -> np.ndarray | None:
    """A trace's data as numpy: a list, an array, or plotly's typed array {dtype, bdata, shape}."""
    if value is None:
        return None
    if isinstance(value, dict) and "bdata" in value:
        a = np.frombuffer(base64.b64decode(value["bdata"]), dtype=_DTYPES.get(value.get("dtype", "f8"), "<f8"))
        shape = value.get("shape")
        if shape:
            a = a.reshape([int(s) for s in str(shape).split(",")] if isinstance(shape, str) else shape)
        return a
    if isinstance(value, np.ndarray):
        return value
    try:
        return np.asarray(value, dtype=object)
    except ValueError:  # ragged: a list of lists of different lengths
        out = np.empty(len(value), dtype=object)
        out[:] = list(value)
        return out


def _plain(text) -> str:
    """A title or label without plotly's markup: <br> as a space, tags dropped, entities read ("&lt;" is
    "<": the builders escape a token's text for plotly, and figure_html escapes it once, for the page)."""
    return html.unescape(" ".join(_TAG.sub(" ", str(text or "")).split()))


def _number(value) -> float | None:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _formatted(value, spec: str | None) -> str:
    """A value as plotly's hover prints it with d3 format `spec` (the common ones: .3f, .4g, ,, .2%);
    a string as it is."""
    if isinstance(value, str):  # a label (a token's text is never read as a number)
        return value
    v = _number(value)
    if v is None:
        return "" if value is None or (isinstance(value, float) and not np.isfinite(value)) else str(value)
    return _printed(v, spec)


def _printed(v: float, spec: str | None) -> str:
    """A finite number as `_formatted` prints it."""
    spec = (spec or "").replace("~", "")
    if spec in ("", ","):  # d3 prints an integral value without a decimal point
        return (f"{int(v):,}" if spec or abs(v) >= 1e4 else str(int(v))) if v == int(v) and abs(v) < 1e15 \
            else f"{v:{spec}}" if spec else f"{v:.4g}"
    try:
        out = format(v, spec)
    except ValueError:
        out = f"{v:.4g}"
    return "0" + out[2:] if out.startswith("-0") and float(out.rstrip("%").replace(",", "")) == 0 else out


@dataclass(frozen=True)
class Segment:
    """One line of a hover template: its header (what it names) and its template."""
    header: str
    template: str


@dataclass
class Series:
    """One described trace: its points' data and how its hover says them."""
    name: str
    kind: str  # "map" (a heatmap), "bars", "line" or "points"
    data: dict  # x, y, z, text, customdata as numpy arrays (or None)
    segments: list[Segment]
    value: tuple[str | None, str | None]  # the placeholder that is the trace's value: (variable, format)
    value_name: str
    shape: tuple[int, ...]  # (rows, columns) of a map; (points,) otherwise
    # a map whose later cells of each row are masked (a causal mask over raw scores: drawn veiled, their
    # hover keeps the score): each row's unmasked cells, from the trace's meta "kept_per_row"; None: all
    kept_per_row: np.ndarray | None = None

    def get(self, var: str, point: tuple[int, ...]):
        """Variable `var` ("x", "customdata[1]", "fullData.name") at a point: (row, column) of a map,
        (k,) otherwise."""
        if var == "fullData.name":
            return self.name
        name, item = _item(var)
        if name not in self.data or self.data[name] is None:
            return None
        a = self.data[name]
        try:
            if self.kind == "map":
                r, c = point
                v = a[c] if name == "x" else a[r] if name == "y" else a[r][c]
            else:
                v = a[point[0]] if a.ndim else a
            return v[int(item)] if item is not None else v
        except (IndexError, TypeError, KeyError):
            return None

    def say(self, template: str, point: tuple[int, ...]) -> str:
        """The template's text at a point, as the hover prints it."""
        parts = _pieces(template)
        text = "".join(part if i % 2 == 0 else _formatted(self.get(part[0], point), part[1])
                       for i, part in enumerate(parts))
        return " ".join(text.split()) if "<" not in text and "&" not in text else _plain(text)

    def values(self) -> np.ndarray:
        """The value at every point, NaN where there is none (a map's masked cells)."""
        var = self.value[0]
        if self.kind == "map" and var == "z":
            z = self.data["z"]
            try:
                out = np.array(z.tolist() if z.dtype == object else z, dtype=float)  # None: NaN
            except (TypeError, ValueError):  # strings among the numbers
                out = np.array([[np.nan if (x := _number(v)) is None else x for v in row] for row in z], dtype=float)
            if self.kept_per_row is not None:  # masked cells say nothing: NaN, as a map's missing cells
                out[np.arange(out.shape[1])[None, :] >= self.kept_per_row[:, None]] = np.nan
            return out
        points = list(np.ndindex(*self.shape))
        flat = [_number(self.get(var, p)) for p in points]
        return np.array([np.nan if v is None else v for v in flat], dtype=float).reshape(self.shape)

    def label(self, point: tuple[int, ...]) -> str:
        """A point named as its hover names it, without its value: "query 9·␣because, key 0·The"."""
        parts = [self.say(s.template, point) for s in self.segments if not _has(s.template, self.value[0])]
        if not any(parts) and self.kind != "map":  # its hover names it only beside its value: by its place
            axis = "y" if self.value[0] == "x" else "x"
            return f"{axis} = {_plain(_formatted(self.get(axis, point), None))}"  # a label's markup, read
        return ", ".join(p for p in parts if p)


@functools.lru_cache(maxsize=1024)
def _item(var: str) -> tuple[str | None, str | None]:
    """A placeholder's variable as (name, index): "customdata[1]" -> ("customdata", "1"); (None, None) if
    it names no data."""
    m = _ITEM.match(var)
    return (m.group(1), m.group(2)) if m else (None, None)


@functools.lru_cache(maxsize=1024)
def _pieces(template: str) -> tuple:
    """A hover template split once: its text and its placeholders, (variable, format), in turn."""
    out, at = [], 0
    for m in _PLACEHOLDER.finditer(template):
        out += [template[at:m.start()], (m.group(1), m.group(2))]
        at = m.end()
    return tuple(out + [template[at:]])


def _has(template: str, var: str) -> bool:
    return any(m.group(1) == var for m in _PLACEHOLDER.finditer(template))


def _axis_title(layout: dict, trace: dict, axis: str) -> str:
    ref = trace.get(f"{axis}axis") or axis
    t = (layout.get(f"{axis}axis{ref[1:]}") or {}).get("title")
    return _plain(t.get("text") if isinstance(t, dict) else t)


def _segments(template: str, layout: dict, trace: dict) -> list[Segment]:
    """The hover's lines, each with a header: its words before its first placeholder ("attention",
    "‖x‖₂"), or its axes' titles where it has none ("%{y} · %{x}" -> "block · head")."""
    out = []
    for line in _EXTRA.sub("", template).split("<br>"):
        if not line.strip():
            continue
        head = re.split(r"%\{", line, maxsplit=1)[0]
        head = head.strip().rstrip("=:").strip()
        if not re.search(r"\w", head):
            named = _PLACEHOLDER.sub(lambda m: _axis_title(layout, trace, m.group(1)) if m.group(1) in "xy" else "",
                                     line)
            head = _plain(re.sub(r"[^\w‖·()\s-]", " ", named)) if re.search(r"[^\W\d_]", named) else ""
        out.append(Segment(head, line))
    return out


def _value(segments: list[Segment], trace: dict, layout: dict, kind: str) -> tuple[tuple[str | None, str | None], str]:
    """(the trace's value placeholder, its name): the last placeholder with a number format, else the
    bar's length or the point's height (z for a map); (None, None) for bars drawn from a base, whose
    length is no quantity of their own. Its name: its axis's title, else the hover's words just
    before it ("attention %{z:.3f}" -> "attention"), else the colour bar's title."""
    found = None
    for s in reversed(segments):
        matches = list(_PLACEHOLDER.finditer(s.template))
        for i, m in enumerate(reversed(matches)):
            if m.group(2) and m.group(2) != "s":
                start = matches[len(matches) - 2 - i].end() if len(matches) - 1 - i > 0 else 0
                found = (m.group(1), m.group(2)), _plain(s.template[start:m.start()]).strip(" =:(")
                break
        if found:
            break
    if found is None:
        if kind == "bars" and trace.get("base") is not None:
            return (None, None), "bars"
        var = "z" if kind == "map" else "x" if trace.get("orientation") == "h" else "y"
        found = (var, None), next((s.header for s in segments if _has(s.template, var)), "")
    (var, fmt), words = found
    if var in ("x", "y"):
        words = _axis_title(layout, trace, var) or words
    if var == "z" and len(words) <= 2:
        bar = (trace.get("colorbar") or {}).get("title") or {}
        words = _plain(bar.get("text") if isinstance(bar, dict) else bar) or words
    return (var, fmt), words or "value"


def _panel_titles(layout: dict) -> list[str]:
    """make_subplots' panel titles (its annotations at the top of each panel), in order."""
    return [_plain(a.get("text")) for a in layout.get("annotations") or ()
            if a.get("yanchor") == "bottom" and a.get("xref") == "paper" and not a.get("yshift")]


def series(spec: dict) -> list[Series]:
    """The figure's described traces."""
    layout = spec.get("layout") or {}
    traces = [t for t in spec.get("data") or () if _described(t)]
    panels = _panel_titles(layout)
    out = []
    for i, trace in enumerate(traces):
        kind = ("map" if trace.get("type") == "heatmap" else "bars" if trace.get("type") == "bar"
                else "line" if "lines" in (trace.get("mode") or "lines") else "points")
        data = {k: as_array(trace.get(k)) for k in ("x", "y", "z", "text", "customdata")}
        template = trace.get("hovertemplate") or ("%{x}<br>%{y}" if kind != "map" else "%{y} · %{x}<br>%{z}")
        segments = _segments(template, layout, trace)
        value, value_name = _value(segments, trace, layout, kind)
        if kind == "map":
            z = data["z"]
            if z is None or z.ndim < 2 and not (z.dtype == object and len(z) and hasattr(z[0], "__len__")):
                continue
            shape = (len(z), len(z[0]) if len(z) else 0)
            if data["x"] is None:
                data["x"] = np.arange(shape[1])
            if data["y"] is None:
                data["y"] = np.arange(shape[0])
        else:
            n = max((len(a) for k, a in data.items() if a is not None and a.ndim and k in ("x", "y")), default=0)
            if n == 0:
                continue
            for axis in ("x", "y"):
                if data[axis] is None:
                    data[axis] = np.arange(n)
            shape = (n,)
        name = _plain(trace.get("name")) or (panels[i] if len(panels) == len(traces) else
                                             f"panel {i + 1}" if len(traces) > 1 else "")
        meta = trace.get("meta")
        kept = meta.get("kept_per_row") if kind == "map" and isinstance(meta, dict) else None
        kept = np.asarray(kept, dtype=int) if kept is not None and len(kept) == shape[0] else None
        out.append(Series(name, kind, data, segments, value, value_name, shape, kept))
    return out


def _described(trace: dict) -> bool:
    """A trace with something to say: it has a hover, and is seen."""
    if trace.get("hoverinfo") == "skip" or trace.get("visible") is False:
        return False
    return (trace.get("marker") or {}).get("opacity") != 0


def title(spec: dict) -> str:
    t = (spec.get("layout") or {}).get("title")
    return _plain(t.get("text") if isinstance(t, dict) else t)


# ---------------------------------------------------------------------------- the sentence
_UNITS = {"map": "cells", "bars": "bars", "line": "points", "points": "points"}


def _one(unit: str, n: int) -> str:
    """"bars" as a count says it: 1 bar, 2 bars."""
    return unit[:-1] if n == 1 else unit


def _half_unit(printed: str) -> float:
    """Half the last printed digit's unit ("0.103" -> 0.0005, "29.84%" -> 0.00005, "5.084e-05"
    -> 5e-09): every value that prints as `printed` is within this of it."""
    text = printed.replace(",", "")
    scale = 0.01 if text.endswith("%") else 1.0
    mantissa, _, exponent = text.rstrip("%").partition("e")
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    return 0.5 * 10.0 ** (int(exponent or 0) - decimals) * scale


def _printing(v: np.ndarray, printed: str, fmt: str | None) -> np.ndarray:
    """The points of `v` that print as `printed`. Those strictly inside its rounding interval (and, for a
    format of significant digits, in its decade: 0.996 prints as "0.996", not "1.00") do; the few at its
    edges are printed one by one."""
    value = float(printed.replace(",", "").rstrip("%")) * (0.01 if printed.endswith("%") else 1.0)
    finite = np.isfinite(v)
    if (fmt or "").replace("~", "") in ("", ","):  # an integral value, printed whole: only itself prints so
        return finite & (v == value) if float(value).is_integer() else _one_by_one(v, finite, printed, fmt)
    half = _half_unit(printed)
    g = re.fullmatch(r"[^.]*\.(\d+)[gG]?", (fmt or "").replace("~", ""))  # significant digits, trailing zeros cut
    if g:
        digits = max(1, int(g.group(1)))
        half = 0.5 * 10.0 ** (np.floor(np.log10(abs(value))) - digits + 1) if value else 0.0
    gap = np.abs(np.where(finite, v, np.inf) - value)
    near = gap <= 1.01 * half + 1e-12 * abs(value)
    sure = near & (gap < 0.999 * half)
    if not re.search(r"[f%]$", fmt or ""):
        with np.errstate(divide="ignore"):
            sure &= np.floor(np.log10(np.abs(v))) == (np.floor(np.log10(abs(value))) if value else -np.inf)
    return sure | _one_by_one(v, near & ~sure, printed, fmt)


def _one_by_one(v: np.ndarray, which: np.ndarray, printed: str, fmt: str | None) -> np.ndarray:
    out = np.zeros(v.shape, dtype=bool)
    for point in zip(*np.nonzero(which)):
        out[point] = _formatted(float(v[point]), fmt) == printed
    return out


def _prints_negative(f: np.ndarray, fmt: str | None) -> np.ndarray:
    """Which values print with a minus sign (a fixed-point format prints a tiny negative as 0)."""
    m = re.search(r"\.(\d+)([f%])", fmt or "")
    if m:
        return f < -0.5 * 10.0 ** -(int(m.group(1)) + (2 if m.group(2) == "%" else 0))
    return f < 0


def _extreme(group: list[Series], values: list[np.ndarray], which) -> tuple[str, int, str]:
    """(the printed extreme value, how many points print it, where the first of them is)."""
    fmt = group[0].value[1]
    best = which(np.nanmax(v) if which is max else np.nanmin(v) for v in values if np.isfinite(v).any())
    printed = _formatted(float(best), fmt)
    where, count = "", 0
    for s, v in zip(group, values):
        at = _printing(v, printed, fmt)
        count += int(at.sum())
        if not where and at.any():
            point = tuple(int(i) for i in np.argwhere(at)[0])
            where = ", ".join(x for x in (s.name if len(group) > 1 else "", s.label(point)) if x)
    return printed, count, where


def _say_extreme(word: str, printed: str, count: int, where: str, unit: str) -> str:
    if count > 1:
        return f"{word} {printed} at {count:,} {unit}" + (f", among them {where}" if where else "")
    return f"{word} {printed}" + (f" at {where}" if where else "")


def _row_targets(s: Series, v: np.ndarray) -> dict[str, int] | None:
    """Where each row of an attention map puts its largest weight ({"itself": 3, …, "tie": rows whose
    largest is not alone at the printed precision}), for a map whose labels start with their positions
    ("9·␣because"); None otherwise."""
    def position(label) -> int | None:
        m = re.match(r"\s*(\d+)", str(label))
        return int(m.group(1)) if m else None
    rows, cols = [position(y) for y in s.data["y"]], [position(x) for x in s.data["x"]]
    if None in rows or None in cols or len(rows) < 2:
        return None
    counts = dict.fromkeys(ROW_TARGETS + ("tie",), 0)
    fmt = s.value[1]
    for r, q in enumerate(rows):
        row = v[r]
        if not np.isfinite(row).any():
            continue
        at = list(np.nonzero(_printing(row, _formatted(float(np.nanmax(row)), fmt), fmt))[0])
        if len(at) > 1:
            counts["tie"] += 1
            continue
        k = cols[at[0]]
        counts["itself" if k == q else "the first token" if k == 0 else
               "the token before it" if k == q - 1 else "another token"] += 1
    return counts


ROW_TARGETS = ("itself", "the first token", "the token before it", "another token")


@dataclass
class Facts:
    """What the sentence says of one quantity of a chart (traces of one quantity pooled)."""
    scope: str  # what is drawn, where: "attention in 10 rows by 10 columns"
    n: int  # points with a value
    highest: tuple[str, int, str] | None = None  # (printed, how many points print it, the first's place)
    lowest: tuple[str, int, str] | None = None
    every: str | None = None  # every point prints as this
    below: int = 0  # points printed with a minus sign
    rows: dict[str, int] | None = None  # an attention map's rows, by where their largest weight falls
    placed: str | None = None  # bars placed by where they start: how many of each


def _facts(group: list[Series]) -> Facts:
    s0 = group[0]
    unit = _UNITS[s0.kind]
    names = [s.name for s in group if s.name]
    if s0.value[0] is None:  # bars drawn from a base: where they are is what they say
        n = sum(s.shape[0] for s in group)
        return Facts("bars", n, placed=", ".join(f"{s.name or 'bars'}: {s.shape[0]}" for s in group))
    values = [s.values() for s in group]
    finite = [v[np.isfinite(v)] for v in values]
    n = sum(f.size for f in finite)
    what = s0.value_name
    if len(group) > 1:
        listed = (", ".join(names[:MANY]) + (f" and {len(names) - MANY} more" if len(names) > MANY else "")) \
            if names else ""
        scope = f"{what} in {len(group)} {'panels' if s0.kind == 'map' else 'series'}" + \
            (f" ({listed})" if listed else "") + f", {n:,} {_one(unit, n)} in all"
    else:
        # a name that only restates the quantity ("= x′ₙ (resid_mid)" for x′ₙ (resid_mid), a sum's result) is said once
        bare = what.lstrip("=+−- ")
        what = f"{s0.name}: {what}" if s0.name and s0.name.lstrip("=+−- ") != bare else bare
        if s0.kind == "map":
            scope = f"{what} in {s0.shape[0]:,} {'row' if s0.shape[0] == 1 else 'rows'} by {s0.shape[1]:,} " \
                    f"{'column' if s0.shape[1] == 1 else 'columns'}"
            if s0.kept_per_row is not None:
                scope += f" ({n:,} unmasked {_one('cells', n)})"
            elif n < s0.shape[0] * s0.shape[1]:
                scope += f" ({n:,} {_one('cells', n)} drawn)"
        else:
            scope = f"{what} at {n:,} {_one(unit, n)}"
    facts = Facts(scope, n)
    if n == 0:
        return facts
    fmt = s0.value[1]
    top = _formatted(float(max(f.max() for f in finite if f.size)), fmt)
    if top == _formatted(float(min(f.min() for f in finite if f.size)), fmt):  # rounding keeps the order
        facts.every = top
        return facts
    facts.highest, facts.lowest = _extreme(group, values, max), _extreme(group, values, min)
    facts.below = sum(int(_prints_negative(f, fmt).sum()) for f in finite)
    if len(group) == 1 and s0.kind == "map" and s0.value_name == "attention":
        facts.rows = _row_targets(s0, values[0])
    return facts


def _said(f: Facts, unit: str) -> str:
    if f.placed is not None:
        return f"{f.n:,} bars placed by where they start ({f.placed})."
    if f.n == 0:
        return f"{f.scope}: nothing drawn."
    if f.every is not None:
        return f"{f.scope}: {'every one is ' if f.n > 1 else ''}{f.every}."
    out = f"{f.scope}: {_say_extreme('highest', *f.highest, unit)}; {_say_extreme('lowest', *f.lowest, unit)}."
    if 0 < f.below < f.n:
        out += f" {f.below:,} of {f.n:,} {'is' if f.below == 1 else 'are'} below zero."
    if f.rows:
        n = sum(f.rows.values())
        parts = [f"{where} in {f.rows[where]:,}" for where in ROW_TARGETS if f.rows[where]]
        said = f"Each row's largest weight falls on {', '.join(parts)} of its {n:,} rows" if parts else ""
        if k := f.rows["tie"]:
            tied = f"{k:,} of the {n:,} rows {'has' if k == 1 else 'have'} no single largest weight at this precision"
            said = f"{said}; {tied}" if said else tied
        out += f" {said}." if said else ""
    return out


def facts(spec: dict) -> list[tuple[list[Series], Facts]]:
    """The chart's quantities (its traces grouped by what they draw) and what is said of each."""
    groups: dict[tuple, list[Series]] = {}
    for s in series(spec):
        groups.setdefault((s.value_name, s.kind), []).append(s)
    return [(g, _facts(g)) for g in groups.values()]


def sentence(spec: dict) -> str:
    """The chart in words: its title, then for each quantity it draws, where it is highest and lowest
    in this run (traces of one quantity said together)."""
    said = [("The chart draws " if i == 0 else "It also draws ") + _said(f, _UNITS[g[0].kind])
            for i, (g, f) in enumerate(facts(spec))]
    return f"{title(spec) or 'A chart'}. " + (" ".join(said) if said else "It draws no values.")


# ---------------------------------------------------------------------------- the numbers
def _table_rows(s: Series) -> tuple[list[str], list[list[str]], int]:
    """(column headers, rows of cells, how many rows there are in all) of a trace's table."""
    if s.kind == "map":
        R, C = s.shape
        value_seg = next((seg for seg in s.segments if _has(seg.template, s.value[0])), None)
        corner = " / ".join(x for x in (_axis_word(s, "y"), _axis_word(s, "x")) if x)
        cols = [_plain(x) for x in s.data["x"][:TABLE_COLUMNS]]
        R, C = min(R, TABLE_ROWS), min(C, TABLE_COLUMNS)
        if (framing := _value_frame(s, value_seg)) is not None:  # every cell the same words around its value
            before, after = framing
            z, fmt = s.values()[:R, :C], s.value[1]
            rows = [[_plain(s.data["y"][r])] + [before + _printed(v, fmt) + after if math.isfinite(v) else ""
                                                for v in z[r].tolist()] for r in range(R)]
            return [corner] + cols, rows, s.shape[0]

        def cell(r, c):
            if _number(s.get(s.value[0], (r, c))) is None:
                return ""
            text = s.say(value_seg.template, (r, c)) if value_seg else _formatted(s.get("z", (r, c)), None)
            return text[len(value_seg.header):].lstrip(" =:") if value_seg and text.startswith(value_seg.header) \
                else text
        rows = [[_plain(s.data["y"][r])] + [cell(r, c) for c in range(C)] for r in range(R)]
        return [corner] + cols, rows, s.shape[0]
    n = s.shape[0]
    headers = [seg.header or "value" for seg in s.segments]
    rows = []
    for k in range(min(n, TABLE_POINTS)):
        cells = []
        for seg in s.segments:
            text = s.say(seg.template, (k,))
            cells.append(text[len(seg.header):].lstrip(" =:") if seg.header and text.startswith(seg.header) else text)
        rows.append(cells)
    return headers, rows, n


_PLAIN_FORMAT = re.compile(r"^,?(\.\d+)?[defg%]?~?$")  # d3 formats that print a finite number with no space


def _value_frame(s: Series, seg: Segment | None) -> tuple[str, str] | None:
    """(before, after): the words around the value in every cell of a map's table, where its value's hover
    line names nothing but the value (`attention %{z:.3f}`) and the values are numbers; else None. The
    same text as `say` cell by cell: the value is printed without spaces, tags or entities, so the line's
    words read once, a placeholder in the value's place, stand around each value unchanged."""
    found = list(_PLACEHOLDER.finditer(seg.template)) if seg is not None else []
    if len(found) != 1 or found[0].group(1) != "z" or s.value[0] != "z":
        return None
    fmt = found[0].group(2)  # the format of this line's value (the trace's value may be another line's)
    if fmt != s.value[1] or not _PLAIN_FORMAT.match(fmt or "") or not _numbers(s.data["z"]) \
            or re.search(r"[<>&\x00]", _PLACEHOLDER.sub("", seg.template)):
        return None
    text = _plain(_PLACEHOLDER.sub("\x00", seg.template))
    if text.startswith(seg.header):
        text = text[len(seg.header):].lstrip(" =:")
    before, _, after = text.partition("\x00")
    return before, after


def _numbers(a: np.ndarray) -> bool:
    """Whether every item of `a` is a number or None (no string, which a hover prints as it is)."""
    if a.dtype.kind in "fiub":
        return True
    return a.dtype == object and all(x is None or isinstance(x, (int, float, np.number))
                                     for x in np.asarray(a.tolist(), dtype=object).ravel())


def _axis_word(s: Series, var: str) -> str:
    return next((seg.header for seg in s.segments if _has(seg.template, var) and seg.header), "")


def _table_html(s: Series, cap: str) -> str:
    headers, rows, total = _table_rows(s)
    e = html.escape
    shown = len(rows)
    more = []
    if shown < total:
        more.append(f"the first {shown:,} of {total:,} rows")
    if s.kind == "map" and s.shape[1] > TABLE_COLUMNS:
        more.append(f"the first {TABLE_COLUMNS} of {s.shape[1]} columns")
    caption = cap + (f" ({' and '.join(more)}; the chart's hover has every value)" if more else "")
    head = "".join(f'<th scope="col">{e(h)}</th>' for h in headers)
    body = "".join(f'<tr><th scope="row">{e(r[0])}</th>{_cells(r[1:])}</tr>' for r in rows)
    return (f'<div class="gpt2viz-numbers" tabindex="0" role="region" aria-label="{e(caption)}"><table>'
            f"<caption>{e(caption)}</caption><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>")


def _cells(cells: list[str]) -> str:
    """A row's cells as <td> elements, escaped: the row escaped at once, joined by a character that no cell
    holds (else cell by cell)."""
    joined = "\x00".join(cells)
    if joined.count("\x00") != len(cells) - 1:
        return "".join(f"<td>{html.escape(c)}</td>" for c in cells)
    return "<td>" + html.escape(joined).replace("\x00", "</td><td>") + "</td>" if cells else ""


def numbers_html(spec: dict) -> str:
    """Every described trace's values as an HTML table (escaped), its axes' names as headers."""
    parts = []
    for s in series(spec):
        cap = ": ".join(x for x in (s.name, s.value_name) if x) or "values"
        parts.append(_table_html(s, cap))
    return "".join(parts) or "<p>This chart draws no values.</p>"


def figure_html(spec: dict, ident: str, folded: bool = False, lazy: bool = False) -> str:
    """The chart's sentence (id `ident`, which the chart's box names as its accessible name) and its
    "Show the numbers" table, folded; `folded`: the sentence folded too (presentation mode); `lazy`: the
    table's HTML kept, escaped, in the fold's data-numbers attribute, which the app's script (assets/a11y.js)
    puts in the page when the fold is first opened: a page of many maps then lays out no table it is
    not asked for."""
    said = f'<p class="gpt2viz-figtext" id="{html.escape(ident)}">{html.escape(sentence(spec))}</p>'
    if folded:
        said = f"<details class=\"gpt2viz-words\"><summary>In words</summary>{said}</details>"
    numbers = numbers_html(spec)
    fold = (f'<details class="gpt2viz-show" data-numbers="{html.escape(numbers)}"><summary>Show the numbers</summary>'
            if lazy else f'<details class="gpt2viz-show"><summary>Show the numbers</summary>{numbers}')
    return f'<div class="gpt2viz-figure-words" data-figure="{html.escape(ident)}">{said}{fold}</details></div>'


SENTENCES = (sentence,)
NOT_SENTENCES = (title,  # a chart's own title, its markup taken out
                 facts,  # the numbers `sentence` says, as data (a corpus test checks them)
                 series,  # the chart's traces, read
                 numbers_html,  # the chart's values as a table, formatted as its hover formats them
                 figure_html)  # the sentence and the table laid out as HTML
