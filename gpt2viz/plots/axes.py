"""What every figure shares: the palette, sizes, tick labels (positions, tokens, thinning, cutting),
axes, margins sized from their labels, titles, and the one way to make a figure from plain dicts."""

import html
import math
from collections.abc import Sequence

import plotly.graph_objects as go
import plotly.io as pio

from . import checks

# No plotly template (the app gives each figure its look: theme.py): plotly.py's default one was deep-copied
# into every figure built and every copy of it (7 % of the attention page's drawing), then taken out again
# by theme.themed_spec. Every builder imports this module.
pio.templates.default = None

SEQUENTIAL = "Viridis"

DIVERGING = "PuOr"

BLUE, ORANGE, VERMILLION, SKY = "#0072B2", "#E69F00", "#D55E00", "#56B4E9"

GREY = "#999999"  # Okabe-Ito's grey: visible on the light and the dark theme

MASKED_GREY = "#d0d0d0"

GREYS = "Greys"

HEIGHT = 400  # default figure height in px

# Sizes for a projector: at 1280x720 a student in the back row reads these, in px as
# rendered (theme.py gives them to what a builder leaves unset)
TICK_PX = 13  # tick and token labels, colour-bar ticks, legends, hover text
TITLE_PX = 18  # chart titles
SUBTITLE_PX = 14  # a chart's subtitle, and the panel titles inside a figure
CELL_PX = 11  # values written into heatmap cells
# plotly's toolbar (the modebar, shown while the pointer is over a chart) fills the top right of a
# figure this high: titles start below it, never under it
MODEBAR_PX = 36  # the toolbar is 26 px tall from 2 px down; a title's glyphs rise 5 px above its anchor
LEGEND_PX = 26  # a one-row legend above the plot, under the title

MAX_TICKS = 32  # tick labels per fixed-array axis (bytes, cache blocks) before thinning

# category axes (tokens, positions) leave the labels to plotly (tickmode "auto"): it shows at most one
# per 1.2 label heights of the chart's width in this window, and turns them to the first of
# TICK_ANGLES at which neighbours no longer touch. A fixed array of labels cannot fit every window.
# (theme.py gives every x axis these angles.)
TICK_ANGLES = (0, -45, -90)

TICK_CHARS = 14  # tick labels are cut to this many characters ("…"); hover shows them whole

CHAR_PX = 8.0  # width of a character of a 13 px tick label, generously (for fixed margins)

NUMBER_CHARS = 7  # characters of a numeric axis' tick labels ("−0.0015", "1.2k"), for fixed margins

MARGIN_LEFT, MARGIN_BOTTOM = 90, 76  # px: what automargin widened the default margins to, measured


def escape(text: str) -> str:
    return html.escape(text, quote=False)


def position_labels(tokens: Sequence[str], start: int = 0) -> list[str]:
    """Unique category labels "3·␣the": absolute position, middle dot, escaped token."""
    return [f"{start + i}·{escape(token)}" for i, token in enumerate(tokens)]


def checked_positions(tokens, T: int, source: str, offset: int = 0) -> list[str]:
    tokens = checks.labels(tokens, T, "tokens", f"{source} has T = {T} positions")
    return position_labels(tokens, checks.integer(offset, "offset", 0))


def thinned(labels: list, max_ticks: int = MAX_TICKS) -> list:
    """Every k-th label, so that at most max_ticks remain."""
    return labels[:: max(1, math.ceil(len(labels) / max_ticks))]


def category_axis(labels: list[str], title: str, **extra) -> dict:
    """A category axis whose labels the browser thins to what fits the chart's width (TICK_ANGLES);
    labels longer than TICK_CHARS are shown cut (`labelalias`), hover keeps them whole."""
    cut = {label: short(label) for label in labels if short(label) != label}
    axis = dict(type="category", title=dict(text=title), tickmode="auto", autotickangles=list(TICK_ANGLES),
                tickfont=dict(size=TICK_PX), automargin=True)
    return dict(axis, **({"labelalias": cut} if cut else {}), **extra)


LABEL_ALL = 32  # token axes of up to this many labels write every one of them
# beyond, about this many, and the ones the page points at: 20 upright 13 px labels fit the narrowest
# window's plot (a fixed array of every label there overlapped into a smear)
LABEL_THINNED = 20
MIN_LABEL_PX = 8  # the smallest a token axis shrinks its labels to, to keep every one
# the plot area of a full-width chart in a 1280 px window with the sidebar open, measured (px):
# what token axes shrink their labels for, so that on the projector every label is drawn
PROJECTOR_PLOT_PX = 700
# a token axis turns its labels upright when they do not fit flat: turned 45 degrees, plotly let
# neighbours touch at spacings where upright ones are apart
UPRIGHT_ANGLES = (0, -90)
LABEL_PITCH = 1.25  # a label needs 1.25 font sizes of its axis' length beside its neighbours


def kept_labels(n: int, keep=()) -> list[int]:
    """Which of n labels a token axis writes: every one up to LABEL_ALL; beyond, every k-th (about
    LABEL_THINNED of them) and always those in `keep` (the cells the page points at), thinned ones
    that would touch a kept one left out."""
    if n <= LABEL_ALL:
        return list(range(n))
    step = math.ceil(n / LABEL_THINNED)
    keep = {i for i in keep if 0 <= i < n}
    near = {j for k in keep for j in range(k - step // 2, k + step // 2 + 1)}
    return sorted(keep | {i for i in range(0, n, step) if i not in near})


def label_font(axis_px: float, n: int, shown: list[int]) -> int:
    """The tick font (px) that gives each of the shown labels of n its room on an axis axis_px long:
    TICK_PX where it fits, smaller down to MIN_LABEL_PX (turned labels then touch, but none is dropped)."""
    gap = min((b - a for a, b in zip(shown, shown[1:])), default=n) or 1
    return int(max(MIN_LABEL_PX, min(TICK_PX, axis_px / max(n, 1) * gap / LABEL_PITCH)))


def token_axis(labels: list[str], title: str, axis_px: float, keep=(), **extra) -> dict:
    """A category axis of token labels down the page (rows: a figure's height is its own, whatever the
    window) that writes the ones `kept_labels` keeps (every one up to LABEL_ALL, shrunk to fit an axis
    axis_px long), cut to TICK_CHARS (hover keeps them whole)."""
    shown = kept_labels(len(labels), keep)
    font = label_font(axis_px, len(labels), shown)
    return dict(category_axis(labels, title, **extra), tickmode="array", tickvals=[labels[i] for i in shown],
                ticktext=[short(labels[i]) for i in shown], tickfont=dict(size=font),
                autotickangles=list(UPRIGHT_ANGLES))


def across_axis(labels: list[str], title: str, **extra) -> dict:
    """A category axis of token labels across the page, whose length is the window's: the browser writes
    as many as fit at TICK_PX (every one where there is room, every k-th in a phone's window), flat or
    upright; hover names every cell's token. A fixed array of them, sized for a projector, overlapped
    into one block in a 390 px window."""
    return category_axis(labels, title, **dict(dict(autotickangles=list(UPRIGHT_ANGLES)), **extra))


def fit_rows(fig: go.Figure) -> go.Figure:
    """`fig` (changed in place) with its token rows (a `token_axis` as its y axis) left to the browser, as
    `across_axis` leaves a width: for a chart that fills a screen, whose height the server does not know.
    Every row's label at TICK_PX where the screen has room (a 1920 x 1080 projector), every k-th where
    not; shrunk for the smallest screen, they were 7 px on the largest beside 18 px keys."""
    axis = fig.layout.yaxis
    if axis.type != "category" or axis.tickmode != "array" or not axis.tickvals or not fig.data:
        return fig
    rows = list(fig.data[0].y or ())
    if not set(axis.tickvals) <= set(rows) or list(axis.ticktext or ()) != [short(v) for v in axis.tickvals]:
        return fig  # not one label per row (the grid of every head names its heads)
    axis.update(tickmode="auto", tickvals=None, ticktext=None, tickfont_size=TICK_PX)
    return fig


def shown_labels(axis: dict, labels: list[str]) -> list[str]:
    """The labels a category axis writes when it writes them all: cut as its `labelalias` says."""
    alias = axis.get("labelalias") or {}
    return [alias.get(label, label) for label in labels]


def short(label: str, n: int = TICK_CHARS) -> str:
    """A tick label cut to n characters (hover keeps the whole label); entities stay whole."""
    text = html.unescape(label)
    return label if len(text) <= n else escape(text[: n - 1] + "…")


def fixed_margins(xaxis: dict, yaxis: dict, top: int, x_labels: list[str], y_labels: list[str]
                  ) -> tuple[dict, dict, dict]:
    """(xaxis, yaxis, margin) for two category axes of these labels, with margins sized from the
    labels and automargin off: measuring labels in the browser (automargin) cost a tenth of a second
    per heatmap redraw. The bottom margin has room for the x labels turned upright, the steepest of
    TICK_ANGLES the browser may need in a narrow window."""
    x_chars = label_chars(xaxis.get("ticktext") or shown_labels(xaxis, x_labels))
    y_chars = label_chars(yaxis.get("ticktext") or shown_labels(yaxis, y_labels))
    x_px, y_px = (axis.get("tickfont", {}).get("size", TICK_PX) for axis in (xaxis, yaxis))
    bottom = 34 + x_px + CHAR_PX * x_px / TICK_PX * x_chars  # the axis title, then the labels upright
    left = 36 + CHAR_PX * y_px / TICK_PX * y_chars
    return (dict(xaxis, automargin=False), dict(yaxis, automargin=False),
            dict(l=int(left), r=20, t=top, b=int(bottom)))


def index_axis(labels: list[str], title: str, **extra) -> dict:
    """A numeric axis 0..n-1 labelled with `labels` (which may repeat)."""
    return dict(title=dict(text=title), tickmode="array", tickvals=list(range(len(labels))),
                ticktext=labels, automargin=True, **extra)


def value_axis(title: str, **extra) -> dict:
    """A numeric axis. Tick labels never take SI prefixes: "2μ" would read as a mean of 2 here, so
    tiny values are written 2×10⁻⁶ (a caller may ask for "B": 50k, 7M on counts)."""
    return dict(dict(title=dict(text=title), automargin=True, exponentformat="power"), **extra)


BYTE_UNITS = (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10), ("B", 1))


def bytes_axis(title: str, largest: int, n_ticks: int = 5, **extra) -> dict:
    """A numeric axis of byte sizes with binary units (KiB, MiB, GiB, as costs.human_bytes writes
    them): ticks at 1, 2 or 5 × 10^k of the unit that fits the largest value."""
    name, unit = next((n, u) for n, u in BYTE_UNITS if largest >= u or u == 1)
    raw = max(largest / unit / n_ticks, 1e-9)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    values = [i * step for i in range(int(largest / unit / step) + 2)]
    return value_axis(title, tickmode="array", tickvals=[v * unit for v in values],
                      ticktext=[f"{v:g} {name}" for v in values], **extra)


def clamp_height(px: float) -> int:
    return int(min(450, max(200, px)))


def default_margin(subtitle: str | None = None, **sides) -> dict:
    """Room for numeric tick labels and an axis title at the app's font sizes (theme.py), or
    the given sides: a margin the browser has to widen (automargin) costs a chart a second drawing."""
    return dict(dict(l=MARGIN_LEFT, r=20, t=top_margin(subtitle), b=MARGIN_BOTTOM), **sides)


def top_margin(subtitle: str | None = None) -> int:
    """Room above the plot for the toolbar's strip (MODEBAR_PX), the title (TITLE_PX) under it, and
    the subtitle (SUBTITLE_PX) under that if there is one."""
    return MODEBAR_PX + (58 if subtitle else 34)


def legend_above(**extra) -> dict:
    """A one-row legend at the top right of the plot, between the title and the plot (the caller's
    top margin adds LEGEND_PX for it)."""
    return dict(dict(orientation="h", y=1.0, yanchor="bottom", x=1, xanchor="right"), **extra)


def label_chars(labels) -> int:
    """Characters of the longest tick label as shown (NUMBER_CHARS for a numeric axis)."""
    return max((len(html.unescape(str(t))) for t in labels), default=NUMBER_CHARS)


def label_px(labels, floor: int, rotated: bool = False) -> int:
    """Room for the longest of these tick labels and the axis title beside them, at least floor."""
    return max(floor, int(56 + (0.71 if rotated else 1) * CHAR_PX * label_chars(labels)))


def figure_layout(title: str, height: int = HEIGHT, subtitle: str | None = None, **extra) -> dict:
    # titles may carry tokens ("<br>" is one): plotly would render them as markup
    heading = dict(text=escape(title), x=0.01, xanchor="left", font=dict(size=TITLE_PX),
                   y=1, yref="container", yanchor="top", pad=dict(t=MODEBAR_PX))  # under the toolbar
    if subtitle:
        heading["subtitle"] = dict(text=escape(subtitle), font=dict(size=SUBTITLE_PX))
    extra.setdefault("margin", default_margin(subtitle))
    return dict(title=heading, height=height, hoverlabel=dict(namelength=-1), **extra)


def with_layout(fig: go.Figure, title: str, height: int = HEIGHT, subtitle: str | None = None,
                **extra) -> go.Figure:
    """`fig`'s traces in a new figure: its layout with `figure_layout(title, height, subtitle, **extra)`
    merged in, as `fig.update_layout` merges it (nested dicts key by key, anything else replaced), and
    validated once; plotly.py's update machinery took 7 ms a chart (17 for a panel of three), building
    it anew 1-2 ms. Keys are plotly's own (no "line_width" shorthands)."""
    layout = fig.layout.to_plotly_json()
    layout.pop("template", None)  # the new figure takes the default again (none: see above), as `fig` had it
    return go.Figure(data=fig.data, layout=merged(layout, figure_layout(title, height, subtitle, **extra)))


def merged(current: dict, patch: dict) -> dict:
    """`current` (a plotly JSON dict) with `patch` written into it, in place: nested dicts key by key (as
    `update_layout` merges them), anything else replaced. A dict of `patch` lands as a copy, so that
    changing the result later never changes `patch` (theme.py's shared defaults)."""
    for key, value in patch.items():
        if isinstance(value, dict):
            if not isinstance(current.get(key), dict):
                current[key] = {}
            merged(current[key], value)
        else:
            current[key] = value
    return current


def figure(data: list[dict], layout: dict) -> go.Figure:
    """A figure from plain trace and layout dicts, without plotly.py checking each value again
    (`_validate=False`, its switch for trusted JSON): for the maps of long texts, where the checks
    cost ~20 ms a figure on every view change. Plain dicts only (no "line_width" shorthands):
    test_plots.py builds each such figure again with the checks and compares."""
    return go.Figure(dict(data=data, layout=layout), _validate=False)
