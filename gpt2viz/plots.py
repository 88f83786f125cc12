"""Plotly figure builders for the app: numpy arrays and labels in, `go.Figure` out.

Every builder is a pure function. It takes arrays (anything `np.asarray` accepts, so CPU torch
tensors too) with the batch axis already removed, checks the shapes and labels (raising a
`ValueError` that names the argument, the expected shape and the shape it got), and returns a
compact figure (height 200-450 px, small margins, short title, axis titles always set). It never
imports streamlit or torch.

Colours are chosen to work for colour-blind readers:
- sequential "Viridis" (attention probabilities, 0 to 1 fixed), which is perceptually uniform and
  readable under all three common colour-vision deficiencies and in greyscale;
- diverging "PuOr" (ColorBrewer purple-orange; raw attention scores, centred on 0), one of
  ColorBrewer's colour-blind-safe diverging schemes (orange = negative, purple = positive);
- categorical colours from the Okabe-Ito palette (blue #0072B2, orange #E69F00, vermillion
  #D55E00, sky blue #56B4E9, grey #999999), which stay distinct for protan, deutan and tritan
  readers; none is black or white, so lines show on the light and the dark theme;
- masked attention cells are neutral grey, outside every colour scale.
No Plotly template is set: the app gives each figure its look (plot_theme.py, light or dark);
every colour that carries meaning is set explicitly.

Tokens: a token can occur twice ("␣the" at 3 and at 9), and Plotly merges identical category
labels, so per-position axes are labelled "3·␣the" (absolute position, middle dot, token) and
horizontal bar charts use numeric axes with `ticktext`. Tokens are HTML-escaped, because Plotly
renders <b>, <br> and entities in labels and tokens like "<br>" or "&amp;" exist. Long sequences
(T up to 1024) stay usable: at most MAX_TICKS tick labels per axis, cell values written into
heatmaps only up to ANNOTATE_MAX positions, and histograms binned in numpy, not in the browser.
Axis titles, hover templates and masks follow the names in model.py: B, T, P, L, d, nh, V.
"""

import functools
import html
import math
import numbers
from typing import Mapping, NamedTuple, Sequence

import numpy as np
import plotly.colors as pcolors
import plotly.graph_objects as go

SEQUENTIAL = "Viridis"
DIVERGING = "PuOr"
BLUE, ORANGE, VERMILLION, SKY = "#0072B2", "#E69F00", "#D55E00", "#56B4E9"
GREY = "#999999"  # Okabe-Ito's grey: visible on the light and the dark theme
MASKED_GREY = "#d0d0d0"
GREYS = "Greys"

HEIGHT = 400  # default figure height in px
MAX_TICKS = 32  # tick labels per axis before thinning
TICK_CHARS = 14  # tick labels are cut to this many characters ("…"); hover shows them whole
CHAR_PX = 6.5  # width of a character of a 10 px tick label, generously (for fixed margins)
NUMBER_CHARS = 7  # characters of a numeric axis' tick labels ("−0.0015", "1.2k"), for fixed margins
ANNOTATE_MAX = 16  # write values into heatmap cells only when both axes are at most this long
PERCENTILES = 99  # dots on the GELU curve: this input's 1st ... 99th percentiles
MAX_LINES = 16  # residual_norms: one line per token up to this T, mean and min-max band above
LEGEND_MAX = 10  # show a legend of token lines only up to this many lines
MAX_GRID_CELLS = 4_000_000  # heads_grid: nh*T*L above this would ship tens of MB to the browser
MARGIN_LEFT, MARGIN_BOTTOM = 90, 76  # px: what automargin widened the default margins to, measured
KV_CELLS_MAX = 32  # kv_cache_diagram: per-position cells up to this many, one block above
KV_BLOCK_WIDTH = 12  # display width (in cells) of a compressed block of positions


# ---------------------------------------------------------------------------- validation
def _numeric(a: np.ndarray, name: str) -> np.ndarray:
    if a.dtype == bool or not np.issubdtype(a.dtype, np.number):
        raise ValueError(f"{name} must be numeric, got dtype {a.dtype}")
    if a.size == 0:
        raise ValueError(f"{name} is empty (shape {a.shape})")
    a = a.astype(np.promote_types(a.dtype, np.float32), copy=False)  # float32 stays float32
    bad = int(a.size - np.count_nonzero(np.isfinite(a)))
    if bad:
        raise ValueError(f"{name} has {bad:,} non-finite values (NaN or ±inf)")
    return a


def _array(x, name: str, dims: str) -> np.ndarray:
    """`x` as a finite float array with the axes named in `dims` ("T, L")."""
    a = np.asarray(x)
    n_dims = len(dims.split(", "))
    if a.ndim != n_dims:
        raise ValueError(f"{name} must be {n_dims}-D [{dims}], got shape {a.shape}")
    return _numeric(a, name)


def _values(x, name: str) -> np.ndarray:
    """`x` of any shape, flattened to a finite float vector."""
    return _numeric(np.asarray(x).ravel(), name)


def _labels(labels, n: int, name: str, what: str) -> list[str]:
    """`labels` as n strings; `what` says where n comes from ("pattern has T = 4 rows")."""
    if isinstance(labels, str):
        raise ValueError(f"{name} must be a list of strings, got one string {labels!r}")
    labels = [str(label) for label in labels]
    if len(labels) != n:
        raise ValueError(f"{name} has {len(labels)} labels but {what}")
    return labels


def _integer(value, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def _index(value, n: int, name: str) -> int:
    """An index into n items; negative values count from the end, as in Python."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if not -n <= value < n:
        raise ValueError(f"{name} must be in [0, {n}) (or [-{n}, 0) from the end), got {value}")
    return int(value) % n


def _integers(values, name: str) -> list[int]:
    """A non-empty list of non-negative integers (counts, byte sizes, lengths)."""
    a = np.asarray(values)
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D list of integers, got shape {a.shape}")
    if a.dtype.kind not in "iu":
        raise ValueError(f"{name} must be integers, got dtype {a.dtype}")
    if (a < 0).any():
        raise ValueError(f"{name} must be >= 0, got {int(a.min())} at index {int(a.argmin())}")
    return [int(v) for v in a]


def _unique(labels: list[str], name: str) -> list[str]:
    seen = set()
    for label in labels:
        if label in seen:
            raise ValueError(f"{name} must be unique, {label!r} appears more than once")
        seen.add(label)
    return labels


# ---------------------------------------------------------------------------- labels and layout
def _escape(text: str) -> str:
    return html.escape(text, quote=False)


def _position_labels(tokens: Sequence[str], start: int = 0) -> list[str]:
    """Unique category labels "3·␣the": absolute position, middle dot, escaped token."""
    return [f"{start + i}·{_escape(token)}" for i, token in enumerate(tokens)]


def _thinned(labels: list, max_ticks: int = MAX_TICKS) -> list:
    """Every k-th label, so that at most max_ticks remain."""
    return labels[:: max(1, math.ceil(len(labels) / max_ticks))]


def _category_axis(labels: list[str], title: str, max_ticks: int = MAX_TICKS, **extra) -> dict:
    shown = _thinned(labels, max_ticks)
    return dict(dict(type="category", title=dict(text=title), tickmode="array", tickvals=shown,
                     ticktext=[_short(label) for label in shown], tickfont=dict(size=10), automargin=True), **extra)


def _short(label: str, n: int = TICK_CHARS) -> str:
    """A tick label cut to n characters (hover keeps the whole label); entities stay whole."""
    text = html.unescape(label)
    return label if len(text) <= n else _escape(text[: n - 1] + "…")


def _fixed_margins(xaxis: dict, yaxis: dict, top: int, x_span_px: float = 500) -> tuple[dict, dict, dict]:
    """(xaxis, yaxis, margin) with margins sized from the tick labels and automargin off: measuring
    labels in the browser (automargin) cost a tenth of a second per heatmap redraw. Long key axes
    get labels at -45°, sized for at x_span_px of plot width."""
    x_chars, y_chars = _label_chars(xaxis.get("ticktext", ())), _label_chars(yaxis.get("ticktext", ()))
    rotated = len(xaxis["ticktext"]) * (x_chars * CHAR_PX + 6) > x_span_px
    bottom = 30 + (0.71 * CHAR_PX * x_chars + 12 if rotated else 16)
    left = 30 + CHAR_PX * y_chars
    return (dict(xaxis, automargin=False, tickangle=-45 if rotated else 0), dict(yaxis, automargin=False),
            dict(l=int(left), r=20, t=top, b=int(bottom)))


def _index_axis(labels: list[str], title: str, **extra) -> dict:
    """A numeric axis 0..n-1 labelled with `labels` (which may repeat)."""
    return dict(title=dict(text=title), tickmode="array", tickvals=list(range(len(labels))),
                ticktext=labels, automargin=True, **extra)


def _axis(title: str, **extra) -> dict:
    return dict(title=dict(text=title), automargin=True, **extra)


def _clamp_height(px: float) -> int:
    return int(min(450, max(200, px)))


def _margin(subtitle: str | None = None, **sides) -> dict:
    """Room for numeric tick labels and an axis title at the app's font sizes (plot_theme.py), or
    the given sides: a margin the browser has to widen (automargin) costs a chart a second drawing."""
    return dict(dict(l=MARGIN_LEFT, r=20, t=70 if subtitle else 45, b=MARGIN_BOTTOM), **sides)


def _label_chars(labels) -> int:
    """Characters of the longest tick label as shown (NUMBER_CHARS for a numeric axis)."""
    return max((len(html.unescape(str(t))) for t in labels), default=NUMBER_CHARS)


def _label_px(labels, floor: int, rotated: bool = False) -> int:
    """Room for the longest of these tick labels and the axis title beside them, at least floor."""
    return max(floor, int(56 + (0.71 if rotated else 1) * CHAR_PX * _label_chars(labels)))


def _layout_dict(title: str, height: int = HEIGHT, subtitle: str | None = None, **extra) -> dict:
    # titles may carry tokens ("<br>" is one): plotly would render them as markup
    heading = dict(text=_escape(title), x=0.01, xanchor="left", font=dict(size=15))
    if subtitle:
        heading["subtitle"] = dict(text=_escape(subtitle), font=dict(size=11))
    extra.setdefault("margin", _margin(subtitle))
    return dict(title=heading, height=height, hoverlabel=dict(namelength=-1), **extra)


def _layout(fig: go.Figure, title: str, height: int = HEIGHT, subtitle: str | None = None,
            **extra) -> go.Figure:
    fig.update_layout(**_layout_dict(title, height, subtitle, **extra))
    return fig


def _unvalidated(data: list[dict], layout: dict) -> go.Figure:
    """A figure from plain trace and layout dicts, without plotly.py checking each value again
    (`_validate=False`, its switch for trusted JSON): for the maps of long texts, where the checks
    cost ~20 ms a figure on every view change. Plain dicts only (no "line_width" shorthands):
    test_plots.py builds each such figure again with the checks and compares."""
    return go.Figure(dict(data=data, layout=layout), _validate=False)


def _human_bytes(n: int) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} B"


# ---------------------------------------------------------------------------- attention heatmaps
# One heatmap trace per map, every cell's true value in it; masked cells are covered by a shape
# (one SVG path of row runs), which costs the browser a fraction of a second trace of T x L cells.
_CELL = "query %{y}<br>key %{x}<br>"
MASK_VEIL = dict(fillcolor="white", opacity=0.65)  # scores: masked cells stay visible, dimmed


@functools.cache
def _scale(name: str) -> tuple:
    """A named colour scale as the (position, colour) pairs plotly.py's checks make of it (figures
    built with `_unvalidated` skip them)."""
    return go.layout.Coloraxis(colorscale=name).colorscale


def _heatmap(z: np.ndarray, x: list[str], y: list[str], hovertemplate: str, **style) -> dict:
    # float32 halves the payload of a 1024 x 1024 map
    return dict(type="heatmap", z=z.astype(np.float32), x=x, y=y, hovertemplate=hovertemplate + "<extra></extra>",
                **style)


def _future_zeros(pattern: np.ndarray, query_offset: int) -> np.ndarray:
    """Cells the causal mask removed: key j after query i's absolute position, and exactly 0."""
    T, L = pattern.shape
    future = np.arange(L)[None, :] > query_offset + np.arange(T)[:, None]  # [T, L]
    return future & (pattern == 0)


def mask_path(mask: np.ndarray, row_offset: int = 0) -> str:
    """An SVG path covering the True cells of mask [T, L] in cell-index coordinates (cell (i, j)
    spans x j-0.5..j+0.5, y i-0.5..i+0.5), one rectangle per run of True cells in a row; rows are
    shifted down by row_offset. Empty when nothing is masked."""
    mask = np.asarray(mask, dtype=bool)
    padded = np.zeros((mask.shape[0], mask.shape[1] + 2), dtype=np.int8)
    padded[:, 1:-1] = mask
    step = np.diff(padded, axis=1)  # [T, L + 1]: +1 where a run starts, -1 just after it ends
    rows, starts = np.nonzero(step == 1)  # row-major, so the i-th start and i-th end are one run
    ends = np.nonzero(step == -1)[1]
    return "".join(f"M{a - 0.5},{i + row_offset - 0.5}H{b - 0.5}V{i + row_offset + 0.5}H{a - 0.5}Z"
                   for i, a, b in zip(rows.tolist(), starts.tolist(), ends.tolist()))


def _cover(path: str, xref: str = "x", yref: str = "y", **style) -> list[dict]:
    """The shape covering masked cells (none when the path is empty)."""
    return [dict(type="path", path=path, xref=xref, yref=yref, line=dict(width=0), layer="above", **style)] if path else []


def _attention_axes(T: int, L: int, query_tokens, key_tokens, query_offset) -> tuple[list, list]:
    """(query labels, key labels) after checking counts and that queries fall within the keys."""
    query_offset = _integer(query_offset, "query_offset", 0)
    if query_offset + T > L:
        raise ValueError(f"query_offset + T must be <= L (query i sits at key position "
                         f"query_offset + i): got {query_offset} + {T} > {L}")
    queries = _labels(query_tokens, T, "query_tokens", f"the pattern has T = {T} query rows")
    keys = _labels(key_tokens, L, "key_tokens", f"the pattern has L = {L} key columns")
    return _position_labels(queries, query_offset), _position_labels(keys)


def _heatmap_layout(fig: go.Figure, title: str, ylabels: list[str], xlabels: list[str],
                    subtitle: str | None = None) -> go.Figure:
    xaxis, yaxis, margin = _fixed_margins(_category_axis(xlabels, "key"),
                                          _category_axis(ylabels, "query", autorange="reversed"), 70 if subtitle else 45)
    return _layout(fig, title, height=_clamp_height(230 + 16 * len(ylabels)), subtitle=subtitle,
                   xaxis=xaxis, yaxis=yaxis, margin=margin)


def _annotate(trace: go.Heatmap, T: int, L: int) -> None:
    if max(T, L) <= ANNOTATE_MAX:
        trace.update(texttemplate="%{z:.2f}", textfont=dict(size=9))


MASKED_NOTE = "grey: masked (a future key), probability exactly 0"


def attention_heatmap(pattern, query_tokens: Sequence[str], key_tokens: Sequence[str], title: str,
                      query_offset: int = 0) -> go.Figure:
    """One head's attention pattern [T, L]: rows are queries (absolute positions query_offset + i),
    columns keys 0..L-1, colour the probability on a fixed 0-1 scale. FULL: T = L, offset 0.
    DECODE: T = 1, L = P + 1, query_offset = P. Masked cells (future keys, exactly 0) are covered
    in grey; their hover still says 0."""
    pattern = _array(pattern, "pattern", "T, L")
    T, L = pattern.shape
    ylabels, xlabels = _attention_axes(T, L, query_tokens, key_tokens, query_offset)
    probs = _heatmap(pattern, xlabels, ylabels, _CELL + "attention %{z:.3f}", colorscale=SEQUENTIAL,
                     zmin=0, zmax=1, colorbar=dict(title=dict(text="p"), thickness=12))
    _annotate(probs, T, L)
    cover = _cover(mask_path(_future_zeros(pattern, query_offset)), fillcolor=MASKED_GREY)
    fig = go.Figure(probs, layout=dict(shapes=cover))
    return _heatmap_layout(fig, title, ylabels, xlabels, subtitle=MASKED_NOTE if cover else None)


def heads_grid(patterns, tokens_q: Sequence[str], tokens_k: Sequence[str], title: str,
               max_cols: int = 4, query_offset: int = 0) -> go.Figure:
    """Every head's pattern [nh, T, L] on one shared 0-1 colour scale: up to max_cols columns, each
    one heatmap of its heads stacked (head h in column h // rows), separated by white lines; the
    y axis names the heads, hover names head, query, key and probability. At most MAX_GRID_CELLS
    cells: for long texts pass the last n queries, patterns[:, -n:], tokens_q[-n:], with
    query_offset = T - n."""
    patterns = _array(patterns, "patterns", "nh, T, L")
    nh, T, L = patterns.shape
    if patterns.size > MAX_GRID_CELLS:
        raise ValueError(f"heads_grid would draw nh*T*L = {patterns.size:,} cells, more than "
                         f"{MAX_GRID_CELLS:,}: pass fewer query rows (patterns[:, -n:], "
                         f"tokens_q[-n:], query_offset=T - n)")
    ylabels, xlabels = _attention_axes(T, L, tokens_q, tokens_k, query_offset)
    cols = min(_integer(max_cols, "max_cols", 1), nh)
    rows = math.ceil(nh / cols)  # heads per column
    cols = math.ceil(nh / rows)
    masked = [_future_zeros(p, query_offset) for p in patterns]
    data, layout = [], dict(shapes=[])
    gap = 0.07  # of the width, between columns: room for the next column's "head h" labels
    for c in range(cols):
        heads = range(c * rows, min(nh, (c + 1) * rows))
        s = "" if c == 0 else str(c + 1)
        y = [f"head {h} · {label}" for h in heads for label in ylabels]
        data.append(_heatmap(patterns[heads.start: heads.stop].reshape(-1, L), xlabels, y,
                             "%{y}<br>key %{x}<br>attention %{z:.3f}", coloraxis="coloraxis",
                             xaxis=f"x{s}", yaxis=f"y{s}"))
        middle = [y[r * T + T // 2] for r in range(len(heads))]
        xaxis, yaxis, margin = _fixed_margins(
            _category_axis(xlabels, "key", max_ticks=8),
            dict(type="category", tickmode="array", tickvals=middle, ticktext=[f"head {h}" for h in heads],
                 tickfont=dict(size=10), range=[rows * T - 0.5, -0.5]), 70, x_span_px=900 / cols)
        layout[f"xaxis{s}"] = dict(xaxis, anchor=f"y{s}", domain=[c / cols + (gap if c else 0), (c + 1) / cols])
        layout[f"yaxis{s}"] = dict(yaxis, anchor=f"x{s}")
        path = "".join(mask_path(masked[h], r * T) for r, h in enumerate(heads))
        layout["shapes"] += _cover(path, f"x{s}", f"y{s}", fillcolor=MASKED_GREY)
        layout["shapes"] += [dict(type="line", xref=f"x{s} domain", yref=f"y{s}", x0=0, x1=1, y0=r * T - 0.5,
                                  y1=r * T - 0.5, line=dict(color="white", width=3)) for r in range(1, len(heads))]
    row_px = min(170, 70 + 12 * T)
    if not layout["shapes"]:
        del layout["shapes"]  # as plotly.py's checks leave an empty list
    return _unvalidated(data, dict(layout, **_layout_dict(
        title, height=margin["b"] + 40 + rows * row_px, margin=margin,
        subtitle=MASKED_NOTE if any(m.any() for m in masked) else None,
        coloraxis=dict(colorscale=_scale(SEQUENTIAL), cmin=0, cmax=1, colorbar=dict(title=dict(text="p"), thickness=12)))))


def attention_maps(scores, pattern, z_norms, query_tokens: Sequence[str], key_tokens: Sequence[str],
                   title: str, query_offset: int = 0, mask=None) -> go.Figure:
    """One head, one figure, one row per query: the raw scores q·k/sqrt(dh) [T, L] (diverging,
    centred on 0, range set by the cells `mask` keeps; masked cells veiled in white, their hover
    keeps the score), the softmax pattern [T, L] (0-1; masked cells, exactly 0, in grey) and the
    norm of the head's output z for each query [T] (a strip beside the pattern). One figure rather
    than three: each Plotly chart costs the browser a fixed part of a redraw."""
    scores, pattern = _array(scores, "scores", "T, L"), _array(pattern, "pattern", "T, L")
    z_norms = _array(z_norms, "z_norms", "T")
    T, L = scores.shape
    if pattern.shape != scores.shape or z_norms.shape != (T,):
        raise ValueError(f"scores {scores.shape}, pattern {pattern.shape} and z_norms {z_norms.shape} "
                         f"must be [T, L], [T, L] and [T]")
    ylabels, xlabels = _attention_axes(T, L, query_tokens, key_tokens, query_offset)
    mask = np.zeros((T, L), dtype=bool) if mask is None else _mask(mask, scores.shape)
    kept_cells = scores[~mask] if (~mask).any() else scores
    bound = float(np.abs(kept_cells).max()) or 1.0  # symmetric around 0; 1 if all scores are 0
    traces = [
        _heatmap(scores, xlabels, ylabels, _CELL + "score %{z:.3f}", coloraxis="coloraxis"),
        _heatmap(pattern, xlabels, ylabels, _CELL + "attention %{z:.3f}", coloraxis="coloraxis2", xaxis="x2"),
        _heatmap(z_norms[:, None], ["‖z‖"], ylabels, "query %{y}<br>‖z‖₂ = %{z:.4g}", coloraxis="coloraxis3",
                 xaxis="x3"),
    ]
    for trace in traces[:2]:
        _annotate(trace, T, L)
    veil = _cover(mask_path(mask), **MASK_VEIL)
    grey = _cover(mask_path(_future_zeros(pattern, query_offset)), "x2", fillcolor=MASKED_GREY)
    xaxis, yaxis, margin = _fixed_margins(_category_axis(xlabels, "key"),
                                          _category_axis(ylabels, "query", autorange="reversed"), 70, 400)
    bar = dict(thickness=10, len=0.85, y=0.42, title=dict(side="top"))
    panels = {"xaxis": (xaxis, [0, 0.41]), "xaxis2": (xaxis, [0.52, 0.90]),
              "xaxis3": (dict(type="category", automargin=False, showticklabels=False), [0.915, 0.945])}
    layout = {name: dict(axis, domain=domain, anchor="y") for name, (axis, domain) in panels.items()}
    layout["coloraxis"] = dict(colorscale=_scale(DIVERGING), cmin=-bound, cmax=bound,
                               colorbar=dict(bar, x=0.42, xanchor="left", title=dict(bar["title"], text="score")))
    layout["coloraxis2"] = dict(colorscale=_scale(SEQUENTIAL), cmin=0, cmax=1,
                                colorbar=dict(bar, x=0.96, xanchor="left", title=dict(bar["title"], text="p")))
    layout["coloraxis3"] = dict(colorscale=_scale(GREYS), showscale=False)
    notes = [("scores q·k/√dh" + (" · veiled: masked, −∞ before the softmax" if veil else ""), 0.0),
             ("pattern = softmax(scores)" + (" · grey: masked, exactly 0" if grey else ""), 0.52), ("‖z‖", 0.915)]
    layout["annotations"] = [dict(text=_escape(text), x=x, xref="paper", xanchor="left", y=1.0, yref="paper",
                                  yanchor="bottom", showarrow=False, font=dict(size=11)) for text, x in notes]
    if veil or grey:
        layout["shapes"] = veil + grey
    return _unvalidated(traces, dict(layout, **_layout_dict(
        title, height=_clamp_height(250 + 16 * T), margin=dict(margin, r=10), yaxis=yaxis)))


def _mask(mask, shape: tuple[int, int]) -> np.ndarray:
    mask = np.asarray(mask)
    if mask.dtype != bool:
        raise ValueError(f"mask must be boolean (True = masked), got dtype {mask.dtype}")
    if mask.shape != shape:
        raise ValueError(f"mask must have the scores' shape {shape}, got {mask.shape}")
    return mask


# ---------------------------------------------------------------------------- distributions
def histogram(values, title: str, x_title: str, bins: int = 80) -> go.Figure:
    """Histogram of all entries of `values` (any shape), binned in numpy so that a [T, V] logits
    tensor costs `bins` bars, not T*V points. Mean and std in the subtitle, a dashed line at the mean."""
    v = _values(values, "values")
    counts, edges = np.histogram(v, bins=_integer(bins, "bins", 1))
    bars = go.Bar(x=(edges[:-1] + edges[1:]) / 2, y=counts, width=np.diff(edges),
                  customdata=np.stack([edges[:-1], edges[1:]], axis=1), marker=dict(color=BLUE, line_width=0),
                  hovertemplate="[%{customdata[0]:.4g}, %{customdata[1]:.4g})<br>count %{y:,}<extra></extra>")
    mean, std = float(v.mean(dtype=np.float64)), float(v.std(dtype=np.float64))
    fig = go.Figure(bars).add_vline(x=mean, line=dict(color=VERMILLION, dash="dash", width=1.5))
    return _layout(fig, title, subtitle=f"n = {v.size:,} · mean {mean:.4g} · std {std:.4g}",
                   bargap=0, xaxis=_axis(x_title), yaxis=_axis("count"))


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def _gelu_erf(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))  # numpy has no erf


def gelu_curve(pre_activations, title: str, x_range: tuple[float, float] = (-5.0, 5.0),
               bins: int = 80) -> go.Figure:
    """GPT-2's tanh GELU over x_range, the exact (erf) GELU dashed, and this input's pre-activations:
    all of them binned (bars on a right-hand axis: the share in each bin) and PERCENTILES dots on
    the tanh curve at the 1st, 2nd, ... 99th percentile (light: a few hundred SVG elements, where a
    sample of thousands of dots took the browser most of a second)."""
    v = _values(pre_activations, "pre_activations")
    lo, hi = _range(x_range)
    grid = np.linspace(lo, hi, 401)
    counts, edges = np.histogram(v, bins=_integer(bins, "bins", 1), range=(lo, hi))
    share = counts / v.size
    pct = np.arange(1, PERCENTILES + 1) * (100 / (PERCENTILES + 1))
    q = np.percentile(v, pct)
    inside = (q >= lo) & (q <= hi)
    fig = go.Figure([
        go.Bar(x=(edges[:-1] + edges[1:]) / 2, y=share, width=np.diff(edges), yaxis="y2", name="share of this input",
               marker=dict(color=SKY, opacity=0.45, line_width=0), customdata=np.stack([edges[:-1], edges[1:], counts], 1),
               hovertemplate="[%{customdata[0]:.3g}, %{customdata[1]:.3g}): %{customdata[2]:,} pre-activations "
                             "(%{y:.2%})<extra></extra>"),
        go.Scatter(x=grid, y=_gelu_tanh(grid), mode="lines", name="tanh GELU (GPT-2)",
                   line=dict(color=BLUE, width=2), hovertemplate="x = %{x:.3f}<br>GELU %{y:.4f}<extra></extra>"),
        go.Scatter(x=grid, y=_gelu_erf(grid), mode="lines", name="exact GELU (erf)",
                   line=dict(color=GREY, width=1.5, dash="dash"),
                   hovertemplate="x = %{x:.3f}<br>erf GELU %{y:.4f}<extra></extra>"),
        go.Scatter(x=q[inside], y=_gelu_tanh(q[inside]), customdata=pct[inside], mode="markers",
                   name="percentiles of this input", marker=dict(color=ORANGE, size=6, line=dict(width=0.5, color="white")),
                   hovertemplate="percentile %{customdata:.0f}<br>pre-activation %{x:.3f}<br>GELU %{y:.3f}<extra></extra>"),
    ])
    outside = int(v.size - counts.sum())
    subtitle = f"{v.size:,} pre-activations · {float((v < 0).mean()):.1%} negative"
    if outside:
        subtitle += f" · {outside / v.size:.1%} outside [{lo:g}, {hi:g}]"
    return _layout(fig, title, subtitle=subtitle, bargap=0, margin=_margin(subtitle, r=80),
                   legend=dict(orientation="h", y=1.0, yanchor="bottom", x=1, xanchor="right"),
                   xaxis=_axis("pre-activation x", range=[lo, hi]), yaxis=_axis("GELU(x)"),
                   yaxis2=_axis("share of pre-activations", overlaying="y", side="right", showgrid=False,
                                tickformat=".0%", rangemode="tozero"))


def _range(x_range) -> tuple[float, float]:
    message = f"x_range must be two finite numbers (lo, hi) with lo < hi, got {x_range!r}"
    try:
        lo, hi = (float(v) for v in x_range)
    except (TypeError, ValueError):
        raise ValueError(message) from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(message)
    return lo, hi


# ---------------------------------------------------------------------------- per position
def _positions(tokens, T: int, source: str, offset: int = 0) -> list[str]:
    tokens = _labels(tokens, T, "tokens", f"{source} has T = {T} positions")
    return _position_labels(tokens, _integer(offset, "offset", 0))


def position_norms(x, tokens: Sequence[str], title: str, offset: int = 0) -> go.Figure:
    """The L2 norm of each position's vector in x [T, d], one bar per position
    (positions offset..offset+T-1; pass offset=P for a DECODE step)."""
    x = _array(x, "x", "T, d")
    _positions(tokens, x.shape[0], "x", offset)  # errors name x, the caller's argument
    return position_values(np.linalg.norm(x, axis=1), tokens, title, "L2 norm ‖x‖₂", offset)


def position_values(values, tokens: Sequence[str], title: str, y_title: str, offset: int = 0) -> go.Figure:
    """One value per position [T] (a LayerNorm's μ or σ², a norm), one bar per position."""
    v = _array(values, "values", "T")
    labels = _positions(tokens, v.shape[0], "values", offset)
    bars = go.Bar(x=labels, y=v, marker_color=BLUE,
                  hovertemplate="position·token %{x}<br>" + _escape(y_title) + " = %{y:.4g}<extra></extra>")
    xaxis, yaxis, margin = _fixed_margins(_category_axis(labels, "position·token"), _axis(y_title), 45)
    return _layout(go.Figure(bars), title, xaxis=xaxis, yaxis=yaxis, margin=margin)


def _depth_series(norms, labels) -> tuple[list[str], np.ndarray]:
    """(unique depth labels, values [n_points, T]) from an array with labels, or a dict."""
    if isinstance(norms, Mapping):
        if labels is not None and list(labels) != list(norms):
            raise ValueError("pass labels=None with a dict of norms (its keys are the labels), "
                             f"got labels {list(labels)!r} for keys {list(norms)!r}")
        rows = [_array(v, f"norms[{k!r}]", "T") for k, v in norms.items()]
        if len({len(r) for r in rows}) > 1:
            raise ValueError(f"every norms entry must have the same T, got lengths {[len(r) for r in rows]}")
        values, labels = np.stack(rows), list(norms)
    else:
        values = _array(norms, "norms", "n_points, T")
        if labels is None:
            raise ValueError("labels are required when norms is an array [n_points, T]")
    labels = _labels(labels, len(values), "labels", f"norms has n_points = {len(values)} rows")
    return _unique([_escape(label) for label in labels], "labels"), values


def residual_norms(norms, labels: Sequence[str] | None, tokens: Sequence[str], title: str,
                   offset: int = 0, max_lines: int = MAX_LINES) -> go.Figure:
    """The residual stream's norm across depth. `norms` is [n_points, T] with `labels` naming the
    points ("embed", "block 0 mid", ...), or a dict label -> [T] with labels=None. Up to max_lines
    positions: one line per token coloured by position (Viridis); beyond: mean line and min-max band."""
    depth, values = _depth_series(norms, labels)
    positions = _positions(tokens, values.shape[1], "norms", offset)
    if values.shape[1] <= _integer(max_lines, "max_lines", 1):
        traces = _token_lines(values, depth, positions)
    else:
        traces = _summary_band(values, depth, positions)
    return _layout(go.Figure(traces), title, showlegend=len(traces) <= LEGEND_MAX,
                   margin=_margin(b=_label_px(map(_short, depth), MARGIN_BOTTOM, rotated=True)),
                   xaxis=_category_axis(depth, "depth"), yaxis=_axis("L2 norm ‖x‖₂"))


def _token_lines(values: np.ndarray, depth: list[str], positions: list[str]) -> list[go.Scatter]:
    colours = pcolors.sample_colorscale(SEQUENTIAL, np.linspace(0, 1, len(positions)))
    return [go.Scatter(x=depth, y=values[:, j], name=label, mode="lines+markers",
                       line=dict(color=colours[j], width=1.5), marker=dict(size=4),
                       hovertemplate="%{x}<br>‖x‖₂ = %{y:.2f}<extra>%{fullData.name}</extra>")
            for j, label in enumerate(positions)]


def _summary_band(values: np.ndarray, depth: list[str], positions: list[str]) -> list[go.Scatter]:
    where = np.array(positions, dtype=object)
    band = dict(mode="lines", line=dict(width=0.5, color=SKY), showlegend=False)
    return [
        go.Scatter(x=depth, y=values.max(axis=1), customdata=where[values.argmax(axis=1)], **band,
                   name="max", hovertemplate="%{x}<br>max %{y:.2f} at %{customdata}<extra></extra>"),
        go.Scatter(x=depth, y=values.min(axis=1), customdata=where[values.argmin(axis=1)], **band,
                   name="min", fill="tonexty", fillcolor="rgba(86, 180, 233, 0.3)",
                   hovertemplate="%{x}<br>min %{y:.2f} at %{customdata}<extra></extra>"),
        go.Scatter(x=depth, y=values.mean(axis=1), mode="lines+markers", name=f"mean of {len(positions)}",
                   line=dict(color=BLUE, width=2), hovertemplate="%{x}<br>mean %{y:.2f}<extra></extra>"),
    ]


def top_neurons(post, tokens: Sequence[str], k: int = 10, position: int | None = None,
                title: str = "", offset: int = 0) -> go.Figure:
    """The k MLP neurons of post [T, 4d] with the largest activation: the mean over positions
    (position=None) or at one position (an index into T; negative counts from the end)."""
    post = _array(post, "post", "T, 4d")
    T, n = post.shape
    labels = _positions(tokens, T, "post", offset)
    k = _integer(k, "k", 1)
    if k > n:
        raise ValueError(f"k must be <= the {n} neurons of post, got {k}")
    if position is None:
        score, where = post.mean(axis=0), f"mean over {T} positions"
    else:
        p = _index(position, T, "position")
        score, where = post[p], f"at {labels[p]}"
    top = np.argsort(-score, kind="stable")[:k]
    bars = go.Bar(x=[f"#{i}" for i in top], y=score[top], marker_color=BLUE,
                  customdata=[[int(i), where] for i in top],
                  hovertemplate="neuron %{customdata[0]}<br>%{customdata[1]}<br>activation %{y:.3f}<extra></extra>")
    return _layout(go.Figure(bars), title or f"Top {k} neurons", subtitle=where,
                   xaxis=_axis("neuron", type="category"), yaxis=_axis("activation (GELU output)"))


def loss_per_token(per_token, tokens: Sequence[str], title: str) -> go.Figure:
    """Cross-entropy per prediction [T-1]: bar t sits at target position t+1, labelled with the
    target token; hover "predicting TOKEN from …context". Mean and perplexity in the subtitle."""
    loss = _array(per_token, "per_token", "T-1")
    n = loss.size
    tokens = _labels(tokens, n + 1, "tokens", f"per_token has T-1 = {n} losses, so T = {n + 1}")
    targets = _position_labels(tokens)[1:]
    bars = go.Bar(x=targets, y=loss, marker_color=BLUE, customdata=[_context(tokens, t) for t in range(n)],
                  hovertemplate="predicting %{x}<br>from %{customdata}<br>loss %{y:.3f} nats<extra></extra>")
    mean = float(loss.mean(dtype=np.float64))
    fig = go.Figure(bars).add_hline(y=mean, line=dict(color=VERMILLION, dash="dash", width=1.5))
    return _layout(fig, title, subtitle=f"mean {mean:.3f} nats · perplexity {math.exp(min(mean, 700)):.4g}",
                   xaxis=_category_axis(targets, "target position·token"), yaxis=_axis("cross-entropy (nats)"))


def _context(tokens: list[str], last: int, width: int = 4) -> str:
    """The context ending at position `last`: its last `width` tokens, "…" if there are more."""
    start = max(0, last + 1 - width)
    span = "position 0" if last == 0 else f"positions 0–{last}"
    return ("…" if start else "") + _escape("".join(tokens[start:last + 1])) + f" ({span})"


# ---------------------------------------------------------------------------- bar charts
_HBAR_PX = 30  # height per horizontal bar
def _hbars(values, labels: list[str], text: list[str], customdata: list, hovertemplate: str,
           colours) -> go.Bar:
    """Horizontal bars on a numeric y axis 0..n-1 (labelled by the caller), first bar on top."""
    return go.Bar(x=values, y=list(range(len(labels))), orientation="h", marker_color=colours,
                  text=text, textposition="outside", cliponaxis=False, customdata=customdata,
                  hovertemplate=hovertemplate + "<extra></extra>")


def _hbar_xaxis(values, title: str) -> dict:
    """A value axis from 0 with room for the bar labels drawn outside the bars."""
    lo, hi = min(0.0, float(np.min(values))), max(0.0, float(np.max(values)))
    pad = 0.2 * ((hi - lo) or 1.0)
    return _axis(title, range=[lo - pad if lo < 0 else lo, hi + pad if hi > 0 else hi])


def topk_tokens(values, labels: Sequence[str], title: str, x_title: str = "probability",
                highlight: int | None = None) -> go.Figure:
    """The top-k next tokens as horizontal bars in the order given (the first on top); `highlight`
    (an index into values, e.g. the sampled token) is drawn in vermillion, the rest in blue."""
    values = _array(values, "values", "k")
    k = values.size
    labels = [_escape(s) for s in _labels(labels, k, "labels", f"values has k = {k} entries")]
    chosen = None if highlight is None else _index(highlight, k, "highlight")
    colours = [VERMILLION if i == chosen else BLUE for i in range(k)]
    notes = ["<br>(chosen)" if i == chosen else "" for i in range(k)]
    bars = _hbars(values, labels, [f"{v:.3g}" for v in values], [list(z) for z in zip(labels, notes)],
                  "%{customdata[0]}<br>" + x_title + " %{x:.4g}%{customdata[1]}", colours)
    return _layout(go.Figure(bars), title, height=_clamp_height(_HBAR_PX * (k + 3)),
                   margin=_margin(l=_label_px(labels, MARGIN_LEFT)), xaxis=_hbar_xaxis(values, x_title),
                   yaxis=_index_axis(labels, "next token", autorange="reversed"))


def param_breakdown(labels: Sequence[str], counts: Sequence[int], title: str) -> go.Figure:
    """Parameter counts per component as horizontal bars, exact with thousands separators."""
    counts = _integers(counts, "counts")
    labels = [_escape(s) for s in _labels(labels, len(counts), "labels", f"counts has {len(counts)} entries")]
    total = sum(counts)
    shares = [f"{c / total:.1%}" if total else "0%" for c in counts]
    bars = _hbars(counts, labels, [f"{c:,}" for c in counts], [list(z) for z in zip(labels, shares)],
                  "%{customdata[0]}<br>%{text} parameters<br>%{customdata[1]} of the total", BLUE)
    subtitle = f"total {total:,}"
    return _layout(go.Figure(bars), title, height=_clamp_height(_HBAR_PX * (len(counts) + 4)), subtitle=subtitle,
                   margin=_margin(subtitle, l=_label_px(labels, MARGIN_LEFT)), xaxis=_hbar_xaxis(counts, "parameters"),
                   yaxis=_index_axis(labels, "component", autorange="reversed"))


# ---------------------------------------------------------------------------- KV cache
class _Segment(NamedTuple):
    cached: bool
    lo: int  # first position
    hi: int  # one past the last position
    x0: float  # where it is drawn (display units: one cell = 1)

    @property
    def size(self) -> int:
        return self.hi - self.lo

    @property
    def width(self) -> float:
        return float(self.size if self.size <= KV_CELLS_MAX else KV_BLOCK_WIDTH)

    @property
    def label(self) -> str:
        return str(self.lo) if self.size == 1 else f"{self.lo}–{self.hi - 1}"


def _cache_segments(P: int, T: int) -> list[_Segment]:
    """Positions 0..P-1 (cached) and P..P+T-1 (new), one cell each, or one compressed block for a
    part longer than KV_CELLS_MAX, laid out left to right in display units."""
    parts = [(True, 0, P), (False, P, P + T)]
    segments, x = [], 0.0
    for cached, lo, hi in parts:
        pieces = [(lo, hi)] if hi - lo > KV_CELLS_MAX else [(i, i + 1) for i in range(lo, hi)]
        for a, b in pieces:
            segments.append(_Segment(cached, a, b, x))
            x += segments[-1].width
    return segments


def _kv_trace(segments: list[_Segment], n_layer: int, cached: bool) -> go.Bar:
    mine = [s for s in segments if s.cached == cached]
    what = "read from the cache (K, V stored by earlier steps)" if cached else "computed now (K, V appended)"
    rows = [(layer, s) for layer in range(n_layer) for s in mine]
    return go.Bar(y=[layer for layer, _ in rows], x=[s.width for _, s in rows], base=[s.x0 for _, s in rows],
                  orientation="h", width=0.8, name="read from cache" if cached else "computed now",
                  marker=dict(color=SKY if cached else VERMILLION, line=dict(color="white", width=1)),
                  text=[s.label if s.size > 1 else "" for _, s in rows], textposition="inside",
                  insidetextanchor="middle", customdata=[s.label for _, s in rows],
                  hovertemplate="layer %{y}<br>position %{customdata}<br>" + what + "<extra></extra>")


def kv_cache_diagram(P: int, T: int, n_layer: int, title: str) -> go.Figure:
    """A schematic of one step's keys and values per layer: P cached positions read from the cache
    and T new positions computed now. Parts longer than KV_CELLS_MAX are drawn as one labelled
    block (not to scale), so P = 1000 with T = 1 stays readable."""
    P, T = _integer(P, "P", 0), _integer(T, "T", 1)
    n_layer = _integer(n_layer, "n_layer", 1)
    segments = _cache_segments(P, T)
    traces = [_kv_trace(segments, n_layer, cached) for cached in (True, False)
              if any(s.cached == cached for s in segments)]
    to_scale = all(s.width == s.size for s in segments)
    ticks = _thinned(segments)
    layers = list(range(n_layer))
    return _layout(go.Figure(traces), title, height=_clamp_height(110 + 16 * n_layer), barmode="overlay",
                   uniformtext=dict(minsize=8, mode="hide"),
                   legend=dict(orientation="h", y=1.0, yanchor="bottom", x=1, xanchor="right"),
                   xaxis=_axis("position" if to_scale else "position (blocks not to scale)",
                               tickmode="array", tickvals=[s.x0 + s.width / 2 for s in ticks],
                               ticktext=[s.label for s in ticks], showgrid=False),
                   yaxis=_axis("layer", tickmode="array", tickvals=_thinned(layers, 16),
                               autorange="reversed", showgrid=False))


def cache_growth(steps: Sequence[int], bytes_per_step: Sequence[int], title: str) -> go.Figure:
    """Per decode step: L, the positions each query reads (line, left axis), and the KV cache
    size in bytes (bars, right axis)."""
    L = _integers(steps, "steps")
    size = _integers(bytes_per_step, "bytes_per_step")
    if len(L) != len(size):
        raise ValueError(f"steps has {len(L)} entries but bytes_per_step has {len(size)}")
    x = list(range(1, len(L) + 1))
    fig = go.Figure([
        go.Bar(x=x, y=size, yaxis="y2", name="KV cache size", marker=dict(color=SKY, opacity=0.6),
               customdata=[_human_bytes(b) for b in size],
               hovertemplate="step %{x}<br>KV cache %{y:,} bytes (%{customdata})<extra></extra>"),
        go.Scatter(x=x, y=L, name="L (positions read)", mode="lines+markers", line=dict(color=BLUE),
                   hovertemplate="step %{x}<br>L = %{y:,} positions<extra></extra>"),
    ])
    return _layout(fig, title, legend=dict(orientation="h", y=1.0, yanchor="bottom", x=1, xanchor="right"),
                   margin=_margin(r=95), xaxis=_axis("decode step"), yaxis=_axis("L (positions)", rangemode="tozero"),
                   yaxis2=_axis("KV cache size", overlaying="y", side="right", tickmode="auto",
                                tickformat="~s", ticksuffix="B", rangemode="tozero", showgrid=False))


# ---------------------------------------------------------------------------- matrices and depth
def matrix_heatmap(z, row_labels: Sequence[str], col_labels: Sequence[str], title: str, value_title: str,
                   x_title: str = "block", y_title: str = "") -> go.Figure:
    """A small labelled matrix [rows, cols] on the sequential scale, e.g. gradient norms per
    component (rows) and block (columns); hover names the row, the column and the value."""
    z = _array(z, "z", "rows, cols")
    rows = _labels(row_labels, z.shape[0], "row_labels", f"z has {z.shape[0]} rows")
    cols = _labels(col_labels, z.shape[1], "col_labels", f"z has {z.shape[1]} columns")
    rows, cols = [_escape(r) for r in rows], [_escape(c) for c in cols]
    trace = _heatmap(z, cols, rows, "%{y} · %{x}<br>" + value_title + " %{z:.3g}", colorscale=SEQUENTIAL,
                     colorbar=dict(title=dict(text=value_title)))
    fig = go.Figure(trace)
    return _layout(fig, title, height=_clamp_height(150 + 28 * len(rows)),
                   margin=_margin(l=_label_px(map(_short, rows), MARGIN_LEFT)),
                   xaxis=_category_axis(cols, x_title), yaxis=_category_axis(rows, y_title, autorange="reversed"))


def depth_bars(values, labels: Sequence[str], title: str, y_title: str) -> go.Figure:
    """One bar per depth point or part (labels in order), e.g. the norm of each residual update."""
    v = _values(values, "values")
    names = [_escape(s) for s in _labels(labels, v.size, "labels", f"values has {v.size} entries")]
    fig = go.Figure(go.Bar(x=list(range(v.size)), y=v, marker_color=BLUE, customdata=names,
                           hovertemplate="%{customdata}<br>" + y_title + " %{y:.4g}<extra></extra>"))
    return _layout(fig, title, xaxis=_index_axis(names, ""), yaxis=_axis(y_title))
