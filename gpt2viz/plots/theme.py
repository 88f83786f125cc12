"""The app's look for Plotly figures, written into each figure's own layout.

Why not Streamlit's chart theme: it reaches the browser as a Plotly template that the browser
rebuilds when a chart mounts, and a chart mounts again on every view change. Plotly compares
templates by identity, so it drew every chart twice per change (profiled in Chromium: about a
third of the drawing time). `themed` gives a figure no template; it fills in the same look
(colours and sizes read from Streamlit 1.67's light and dark chart themes) wherever the figure's
builder left a value unset, and a `datarevision` digest of the traces' data so that Plotly's second
pass finds nothing changed. The figure is drawn with no theme of Streamlit's: as the app's own box
(plots/chart_box.py) or by `st.plotly_chart(..., theme=None)`.

Pure: plotly figures in and out, no streamlit import.
"""

import base64
import hashlib
import re
from dataclasses import dataclass

import numpy as np
import orjson
import plotly.graph_objects as go

from .axes import TICK_ANGLES, TICK_PX, TITLE_PX, merged  # the sizes the builders set, for what they leave unset

FONT = '"Source Sans", sans-serif'
# a chart's Plotly config (the app's box and st.plotly_chart): the toolbar shows while the pointer is over
# the chart, and no longer covers titles and legends the rest of the time; three buttons of plotly's (save,
# zoom, reset: a double click resets too) and a full-screen one (Streamlit's, or assets/charts.js's in
# Plotly's toolbar), so that it fits the strip above the title beside the
# caption of where the numbers come from, in a phone's window too
MODEBAR_REMOVED = ("pan2d", "zoomIn2d", "zoomOut2d", "autoScale2d", "select2d", "lasso2d")
MODEBAR_WIDTH_PX = 130  # its width from the chart's right edge, measured in chromium (4 buttons of 24 px, padding)
# and no "Share chart..." (plotly.js 4 shows it by default: it uploads the chart, a student's text in it, to
# Plotly's cloud)
CONFIG = {"displaylogo": False, "displayModeBar": "hover", "modeBarButtonsToRemove": list(MODEBAR_REMOVED),
          "showSendToCloud": False}
OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#56B4E9", "#CC79A7", "#F0E442", "#999999")
_AXIS = re.compile(r"^[xy]axis\d*$")
_COLORAXIS = re.compile(r"^coloraxis\d*$")
_COLORBAR_TRACES = {"heatmap", "histogram2d", "contour"}  # traces with a colour bar of their own


@dataclass(frozen=True)
class Palette:
    text: str  # tick labels, axis titles, colour-bar labels, hover text
    heading: str  # chart titles
    legend: str
    grid: str  # grid, zero and tick lines
    hover_bg: str
    hover_border: str
    page: str  # Streamlit's background of this theme: the chart's own, so that a saved SVG is not see-through


LIGHT = Palette(text="#808495", heading="#2F2D2B", legend="#262730", grid="#e6eaf1",
                hover_bg="#FFFFFF", hover_border="#DCD8D4", page="#FFFFFF")
DARK = Palette(text="#e6eaf1", heading="#EDEBE8", legend="#fafafa", grid="#31333F",
               hover_bg="#171614", hover_border="#4A4742", page="#0E1117")


def _looks(p: Palette) -> tuple[dict, dict, dict, dict]:
    """(layout, x axis, y axis, colour bar) defaults for one palette."""
    ticks = dict(tickfont=dict(color=p.text, size=TICK_PX), tickcolor=p.grid, gridcolor=p.grid, zerolinecolor=p.grid)
    layout = dict(
        font=dict(color=p.text, family=FONT, size=TICK_PX),
        title=dict(font=dict(family=FONT, size=TITLE_PX, color=p.heading, weight=700)),
        legend=dict(font=dict(size=TICK_PX, color=p.legend), bordercolor="rgba(0,0,0,0)"),
        # the page's colour, opaque: the camera's SVG had no background (dark text on a dark slide vanished)
        paper_bgcolor=p.page, plot_bgcolor="rgba(0,0,0,0)",
        hoverlabel=dict(bgcolor=p.hover_bg, bordercolor=p.hover_border,
                        font=dict(color=p.text, family=FONT, size=TICK_PX)),
        margin=dict(pad=8),
        colorway=OKABE_ITO,
    )
    xaxis = dict(ticks, title=dict(font=dict(color=p.text, size=14), standoff=20), showgrid=False, zeroline=False,
                 autotickangles=list(TICK_ANGLES))
    yaxis = dict(ticks, title=dict(font=dict(color=p.text, size=14), standoff=24))
    colorbar = dict(tickfont=dict(color=p.text, size=TICK_PX), title=dict(font=dict(color=p.text, size=14)),
                    outlinewidth=0)
    return layout, xaxis, yaxis, colorbar


LOOKS = {False: _looks(LIGHT), True: _looks(DARK)}


def _missing(current: dict, defaults: dict) -> dict:
    """The part of `defaults` that `current` (a plotly JSON dict) leaves unset."""
    patch = {}
    for key, value in defaults.items():
        if isinstance(value, dict):
            sub = _missing(current.get(key) or {}, value)
            if sub:
                patch[key] = sub
        elif key not in current:
            patch[key] = value
    return patch


def _feed(h, value) -> None:
    if isinstance(value, dict):
        for key in sorted(value):
            h.update(key.encode())
            _feed(h, value[key])
    elif isinstance(value, (list, tuple)):
        h.update(b"[%d" % len(value))
        for item in value:
            _feed(h, item)
    elif isinstance(value, np.ndarray):
        h.update(f"{value.dtype}{value.shape}".encode())
        h.update(np.ascontiguousarray(value).tobytes())
    else:
        h.update(repr(value).encode())


def data_digest(traces: list[dict]) -> str:
    """A digest of every trace's properties (plotly JSON dicts): equal for equal data, different
    otherwise. Read from their JSON (orjson, keys sorted), where NaN and infinity write as null as
    plotly.js draws them: nothing; a value orjson cannot write is read one by one instead."""
    try:
        blob = orjson.dumps(traces, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_SORT_KEYS)
    except TypeError:
        h = hashlib.blake2b(digest_size=8)
        _feed(h, traces)
        return h.hexdigest()
    return hashlib.blake2b(blob, digest_size=8).hexdigest()


def _vector(value) -> list | None:
    """A 1-D array (numpy, or plotly.py's base64 typed-array spec) as a plain list; else None."""
    if isinstance(value, np.ndarray):
        return value.tolist() if value.ndim == 1 else None
    if isinstance(value, dict) and "bdata" in value and "," not in str(value.get("shape", "")):
        dtype = np.dtype(value["dtype"].rstrip("c")).newbyteorder("<")  # "u1c" (clamped) is u1
        return np.frombuffer(base64.b64decode(value["bdata"]), dtype=dtype).tolist()
    return None


def _plain_vectors(props: dict) -> None:
    """1-D arrays in a trace (x, y, marker.color, ...) as plain lists, in place. Plotly.react's diff
    skips data arrays when layout.datarevision is unchanged, but only JavaScript Arrays: a typed
    array (how plotly.py sends numpy) of new identity counts as new data, and the chart was drawn a
    second time on mounting. 2-D arrays (heatmaps) arrive as Arrays of rows and stay binary."""
    for key, value in props.items():
        if isinstance(value, dict) and "bdata" not in value:
            _plain_vectors(value)
        elif (vector := _vector(value)) is not None:
            props[key] = vector


TITLE_CHAR_PX = 10  # width of a character of a TITLE_PX bold title, generously
SUBTITLE_CHAR_PX = 7.5  # and of a subtitle's (plots.SUBTITLE_PX)
TITLE_LINE_PX = 24  # a title's or subtitle's second line pushes the plot down by this much


def title_lines(text: str, max_chars: int) -> list[str]:
    """A title's words on lines of at most max_chars characters (a longer word has a line of its own).
    Plotly cuts a title at the figure's edge rather than wrapping it."""
    lines: list[str] = []
    for word in text.split(" "):
        if lines and len(lines[-1]) + 1 + len(word) <= max_chars:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines


def _line_chars(width_px: float, char_px: float) -> int:
    """The characters of a title's line in a chart `width_px` wide, at `char_px` a character (12 at least)."""
    return max(12, int(0.97 * width_px / char_px))


def _wrap_title(layout: dict, width_px: float, lines: int = 0) -> None:
    """The title and its subtitle on as many lines as a chart `width_px` wide needs, the plot moved
    down for them, and for as many more as make `lines` lines beyond one each (figures side by side take the
    most any of them needs: `added_lines`, so that their plots start level). Tokens in titles are escaped: the
    <br> added here is their only markup."""
    title = layout.get("title") or {}
    added = 0
    for part, char_px in ((title, TITLE_CHAR_PX), (title.get("subtitle") or {}, SUBTITLE_CHAR_PX)):
        wrapped = title_lines(part.get("text") or "", _line_chars(width_px, char_px))
        if len(wrapped) > 1:
            part["text"] = " <br>".join(wrapped)  # the space: the title's text reads as its words, not "head0"
            added += len(wrapped) - 1
            if part is title and "pad" in title:  # plotly raises a title's extra lines above its anchor
                title["pad"]["t"] = title["pad"].get("t", 0) + round(0.7 * TITLE_LINE_PX * (len(wrapped) - 1))
    extra = TITLE_LINE_PX * max(added, lines)
    if extra:
        margin = layout.setdefault("margin", {})
        margin["t"] = margin.get("t", 100) + extra
        if "height" in layout:
            layout["height"] += extra


def added_lines(title: str, subtitle: str, width_px: float) -> int:
    """The lines a title and its subtitle take beyond one each in a chart `width_px` wide (`_wrap_title`)."""
    return sum(max(0, len(title_lines(text, _line_chars(width_px, char_px))) - 1)
               for text, char_px in ((title, TITLE_CHAR_PX), (subtitle, SUBTITLE_CHAR_PX)) if text)


def themed_spec(spec: dict, dark: bool = False, width_px: float | None = None, lines: int = 0) -> dict:
    """`spec` (a figure's plotly JSON dict: `fig.to_dict()`), changed in place and returned: no template,
    the app's look wherever its builder set nothing, and layout.datarevision = data_digest of its
    traces. `width_px`: the narrowest the chart is drawn, if known; a title longer than that is
    wrapped onto more lines (and room made for `lines` beyond one each at least: `_wrap_title`). Works on the
    JSON dict: plotly.py's own updates validate every nested value (40 ms for the attention maps at T = 256,
    against 2 ms here)."""
    look, xaxis, yaxis, colorbar = LOOKS[bool(dark)]
    data, layout = spec.setdefault("data", []), spec.setdefault("layout", {})
    layout["template"] = None  # "template": null, not plotly.py's default: plotly.js has none to rebuild
    if width_px:
        _wrap_title(layout, width_px, lines)
    # every trace of gpt2viz.plots is on x/y axes (bars, lines, heatmaps): the axes they name, or x and y
    axes = {f"{a}axis{(trace.get(a + 'axis') or a)[1:]}" for trace in data for a in "xy"}
    axes |= {name for name in layout if _AXIS.match(name)}
    wanted = dict(look, **{name: xaxis if name[0] == "x" else yaxis for name in axes},
                  **{name: dict(colorbar=colorbar) for name in layout if _COLORAXIS.match(name)})
    merged(layout, _missing(layout, wanted))
    for trace in data:
        if trace.get("type") in _COLORBAR_TRACES and not trace.get("coloraxis"):
            merged(trace.setdefault("colorbar", {}), _missing(trace.get("colorbar", {}), colorbar))
        _plain_vectors(trace)
    layout["datarevision"] = data_digest(data)
    return spec


def themed(fig: go.Figure, dark: bool = False, width_px: float | None = None) -> go.Figure:
    """A copy of `fig` as `themed_spec` leaves its dict. The copy is built without validating again
    (`_validate=False`, plotly.py's switch for figures from trusted JSON): `fig` was validated when it
    was built, and the look above is tested against a validating build."""
    out = go.Figure(themed_spec(fig.to_dict(), dark=dark, width_px=width_px), _validate=False)
    out.layout.template = None  # "template": null, whatever plotly.py's default (none: plots/axes.py)
    return out
