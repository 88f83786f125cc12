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
    MARGIN_LEFT,
    SEQUENTIAL,
    category_axis,
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
CELL_CHAR_PX = 6.7  # width of a digit of the CELL_PX cell text

MASK_VEIL = dict(fillcolor="white", opacity=0.65)  # scores: masked cells stay visible, dimmed


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
    mask = np.asarray(mask, dtype=bool)
    padded = np.zeros((mask.shape[0], mask.shape[1] + 2), dtype=np.int8)
    padded[:, 1:-1] = mask
    step = np.diff(padded, axis=1)  # [T, L + 1]: +1 where a run starts, -1 just after it ends
    rows, starts = np.nonzero(step == 1)  # row-major, so the i-th start and i-th end are one run
    ends = np.nonzero(step == -1)[1]
    return "".join(f"M{a - 0.5},{i + row_offset - 0.5}H{b - 0.5}V{i + row_offset + 0.5}H{a - 0.5}Z"
                   for i, a, b in zip(rows.tolist(), starts.tolist(), ends.tolist()))


def mask_cover(path: str, xref: str = "x", yref: str = "y", **style) -> list[dict]:
    """The shape covering masked cells (none when the path is empty)."""
    if not path:
        return []
    return [dict(type="path", path=path, xref=xref, yref=yref, line=dict(width=0), layer="above", **style)]


def matrix_heatmap(z, row_labels: Sequence[str], col_labels: Sequence[str], title: str, value_title: str,
                   x_title: str = "block", y_title: str = "", signed: bool = False) -> go.Figure:
    """A small labelled matrix [rows, cols] on the sequential scale, e.g. gradient norms per
    component (rows) and block (columns), or with `signed` on the diverging scale centred on 0
    (an effect that can go either way); hover names the row, the column and the value."""
    z = checks.array(z, "z", "rows, cols")
    rows = checks.labels(row_labels, z.shape[0], "row_labels", f"z has {z.shape[0]} rows")
    cols = checks.labels(col_labels, z.shape[1], "col_labels", f"z has {z.shape[1]} columns")
    rows, cols = [escape(r) for r in rows], [escape(c) for c in cols]
    scale = dict(colorscale=colorscale(DIVERGING), zmid=0) if signed else dict(colorscale=colorscale(SEQUENTIAL))
    trace = heatmap(z, cols, rows, "%{y} · %{x}<br>" + value_title + " %{z:.3g}", **scale,
                    colorbar=dict(title=dict(text=value_title)))
    return figure([trace], figure_layout(title, height=clamp_height(150 + 28 * len(rows)),
                                         margin=default_margin(l=label_px(map(short, rows), MARGIN_LEFT)),
                                         xaxis=category_axis(cols, x_title),
                                         yaxis=category_axis(rows, y_title, autorange="reversed")))
