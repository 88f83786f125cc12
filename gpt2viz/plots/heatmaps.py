"""The one way to draw a heatmap: a plain trace dict (float32 values), cells covered by one SVG
path where a mask says so, figures made with `axes.figure`; and the labelled matrix."""

import functools
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from . import checks
from .axes import (
    CELL_PX,
    DIVERGING,
    MARGIN_BOTTOM,
    MARGIN_LEFT,
    ORANGE,
    SEQUENTIAL,
    across_axis,
    category_axis,
    checked_positions,
    clamp_height,
    default_margin,
    escape,
    figure,
    figure_layout,
    label_px,
    short,
)

ANNOTATE_MAX = 16  # write values into heatmap cells only up to this many rows, and when they fit:
NARROWEST_PX = 360  # the plot area of a full-width chart in an 800 px window (sidebar open, 13 px labels)
# and in a phone's window (390 px, columns stacked): values are written into cells only where they fit there,
# else they overlapped into a smear; hover reads every cell
PHONE_PLOT_PX = 220
CELL_CHAR_PX = 6.7  # width of a digit of the CELL_PX cell text
LENS_TEXT_PX = CELL_PX  # the logit lens' tokens written in its cells
LENS_CHAR_PX = 6.2  # width of a character of them, generously

# scores: masked cells faded to near white, their raw score still faintly there, and the masked region's edge (the
# causal staircase) drawn (mask_edge): at 0.65 and with no edge, faded cells read as scores near 0, the diverging
# scale's white
MASK_VEIL = dict(fillcolor="white", opacity=0.8)
MASK_EDGE = dict(color="#5f6368", width=1.5)


@functools.cache
def colorscale(name: str) -> tuple:
    """A named colour scale as the (position, colour) pairs plotly.py's checks make of it (figures
    built with `figure` skip them)."""
    return go.layout.Coloraxis(colorscale=name).colorscale


def heatmap(z: np.ndarray, x: list[str], y: list[str], hovertemplate: str, **style) -> dict:
    """A heatmap trace as a plain dict, for `axes.figure` (a named colour scale as `colorscale(name)`).
    float32 halves the payload of a 1024 x 1024 map."""
    return dict(type="heatmap", z=z.astype(np.float32), x=x, y=y, hovertemplate=hovertemplate + "<extra></extra>",
                **style)


def annotate(trace: dict, T: int, L: int, panel_px: float, chars: int = 4) -> None:
    """Each cell's value ("0.25", `chars` wide) written in it when it fits a cell of a panel
    `panel_px` wide in the narrowest window: readable or not written, never clipped."""
    if T <= ANNOTATE_MAX and panel_px / L >= chars * CELL_CHAR_PX + 6:
        trace.update(texttemplate="%{z:.2f}", textfont=dict(size=CELL_PX))


def future_zeros(pattern: np.ndarray, query_offset: int) -> np.ndarray:
    """Cells the causal mask removed: key j after query i's absolute position, and exactly 0."""
    T, L = pattern.shape
    future = np.arange(L)[None, :] > query_offset + np.arange(T)[:, None]  # [T, L]
    return future & (pattern == 0)


def mask_path(mask: np.ndarray, row_offset: int = 0) -> str:
    """An SVG path covering the True cells of mask [T, L] in cell-index coordinates (cell (i, j)
    spans x j-0.5..j+0.5, y i-0.5..i+0.5), one rectangle per run of True cells in a row; rows are
    shifted down by row_offset. Empty when nothing is masked."""
    return "".join(f"M{a - 0.5},{i + row_offset - 0.5}H{b - 0.5}V{i + row_offset + 0.5}H{a - 0.5}Z"
                   for i, a, b in _runs(np.asarray(mask, dtype=bool)))


def mask_edge(mask: np.ndarray) -> str:
    """An SVG path of the edges between masked and kept cells of mask [T, L] (the masked region's outline inside
    the map, in mask_path's coordinates), each straight run one segment: a causal mask's staircase."""
    mask = np.asarray(mask, dtype=bool)
    parts = []
    across = mask[1:, :] != mask[:-1, :]  # [T - 1, L]: an edge under row i, between rows i and i + 1
    for i, j0, j1 in _runs(across):
        parts.append(f"M{j0 - 0.5},{i + 0.5}H{j1 - 0.5}")
    down = (mask[:, 1:] != mask[:, :-1]).T  # [L - 1, T]: an edge right of column j, between columns j and j + 1
    for j, i0, i1 in _runs(down):
        parts.append(f"M{j + 0.5},{i0 - 0.5}V{i1 - 0.5}")
    return "".join(parts)


def _runs(flags: np.ndarray):
    """(row, start, end) of every run of True in each row of a 2-D bool array, end exclusive."""
    padded = np.zeros((flags.shape[0], flags.shape[1] + 2), dtype=np.int8)
    padded[:, 1:-1] = flags
    step = np.diff(padded, axis=1)
    rows, starts = np.nonzero(step == 1)
    ends = np.nonzero(step == -1)[1]
    return zip(rows.tolist(), starts.tolist(), ends.tolist())


def mask_cover(path: str, xref: str = "x", yref: str = "y", **style) -> list[dict]:
    """The shape covering masked cells (none when the path is empty)."""
    if not path:
        return []
    return [dict(dict(type="path", path=path, xref=xref, yref=yref, line=dict(width=0), layer="above"), **style)]


def matrix_heatmap(z, row_labels: Sequence[str], col_labels: Sequence[str], title: str, value_title: str,
                   x_title: str = "block", y_title: str = "", signed: bool = False,
                   cell_text: str | None = None, helps_when_negative: bool = False) -> go.Figure:
    """A small labelled matrix [rows, cols] on the sequential scale, e.g. gradient norms per
    component (rows) and block (columns), or with `signed` on the diverging scale centred on 0
    (an effect that can go either way); hover names the row, the column and the value.
    `cell_text`: a d3 number format ("+.2f") to write each value in its cell, for maps whose
    numbers are read, not only their colours. `helps_when_negative`: the signed scale turned round, for a
    value whose negative means "helps" (a knock-out's Δ log p), so that purple means "helps this token" on
    every map that says so (Attribution's direct shares, What if's sweeps)."""
    z = checks.array(z, "z", "rows, cols")
    rows = checks.labels(row_labels, z.shape[0], "row_labels", f"z has {z.shape[0]} rows")
    cols = checks.labels(col_labels, z.shape[1], "col_labels", f"z has {z.shape[1]} columns")
    rows, cols = [escape(r) for r in rows], [escape(c) for c in cols]
    scale = dict(colorscale=colorscale(DIVERGING), zmid=0) if signed else dict(colorscale=colorscale(SEQUENTIAL))
    if signed and helps_when_negative:
        scale["reversescale"] = True
    trace = heatmap(z, cols, rows, "%{y} · %{x}<br>" + value_title + " %{z:.3g}", **scale,
                    colorbar=dict(title=dict(text=value_title)))
    height = 150 + 28 * len(rows)
    if cell_text:
        trace.update(texttemplate="%{z:" + cell_text + "}", textfont=dict(size=CELL_PX))
        height = max(height, 260)  # two rows' height crowded the colour bar's ticks into one another
    return figure([trace], figure_layout(title, height=clamp_height(height),
                                         margin=default_margin(l=label_px(map(short, rows), MARGIN_LEFT)),
                                         xaxis=category_axis(cols, x_title),
                                         yaxis=category_axis(rows, y_title, autorange="reversed")))


def lens_heatmap(top_probs, top_tokens: Sequence[Sequence[str]], final_ranks, depth_labels: Sequence[str],
                 tokens: Sequence[str], title: str, offset: int = 0, chosen: int | None = None) -> go.Figure:
    """The logit lens across depth (rows, top to bottom) and positions (columns, tokens starting at
    absolute position `offset`): each cell the top next token's probability on a fixed 0-1 scale,
    the token written in the cell where it fits, and in the hover with the rank there of the model's
    final prediction. `chosen`: the column outlined (the position the table below shows)."""
    z = checks.array(top_probs, "top_probs", "depths, positions")
    n_d, n_p = z.shape
    ranks = checks.array(final_ranks, "final_ranks", "depths, positions")
    if ranks.shape != z.shape or [len(row) for row in top_tokens] != [n_p] * n_d:
        raise ValueError(f"final_ranks {list(ranks.shape)} and top_tokens must be shaped as top_probs {[n_d, n_p]}")
    rows = [escape(s) for s in checks.labels(depth_labels, n_d, "depth_labels", f"top_probs has {n_d} rows")]
    cols = checked_positions(tokens, n_p, "top_probs", offset)
    top = [[escape(t) for t in row] for row in top_tokens]
    counted = [[[t, int(r) + 1] for t, r in zip(tr, rr)] for tr, rr in zip(top, ranks)]  # ranks from 1, as read
    trace = heatmap(z, cols, rows, "%{y} · %{x}<br>top next token %{customdata[0]}: p = %{z:.3f}<br>"
                    "the final prediction's rank here: %{customdata[1]} (1: the top)",
                    colorscale=colorscale(SEQUENTIAL), zmin=0, zmax=1, customdata=counted,
                    colorbar=dict(title=dict(text="p(top)")))
    # characters of a token a cell holds in an 800 px window: the lens is read by its cells' tokens (in a phone's
    # window, where they would not fit, they overlap; hover reads each)
    fits = int((NARROWEST_PX / n_p - 4) // LENS_CHAR_PX)
    if fits >= 2:  # each cell's token, cut to what the cell holds in the narrowest window ("…"): never clipped
        trace.update(text=[[short(t, fits) for t in row] for row in top], texttemplate="%{text}",
                     textfont=dict(size=LENS_TEXT_PX))
    at = None if chosen is None else checks.index(chosen, n_p, "chosen")
    outline = [] if at is None else [dict(type="rect", xref="x", yref="paper", x0=at - 0.5, x1=at + 0.5, y0=0, y1=1,
                                          line=dict(color=ORANGE, width=3))]
    # at least 300 px: a colour bar of a few rows' height crowded its 13 px ticks
    return figure([trace], figure_layout(title, height=clamp_height(max(300, 150 + 26 * n_d)), shapes=outline,
                                         margin=default_margin(l=label_px(rows, MARGIN_LEFT), b=MARGIN_BOTTOM + 20),
                                         xaxis=across_axis(cols, "position · token"),
                                         yaxis=category_axis(rows, "depth", autorange="reversed")))
