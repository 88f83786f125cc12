"""Across depth: the residual stream's norm block by block, and one bar per depth point or part."""

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.colors as pcolors
import plotly.graph_objects as go

from . import checks
from .axes import (
    BLUE,
    MARGIN_BOTTOM,
    SEQUENTIAL,
    SKY,
    category_axis,
    checked_positions,
    default_margin,
    escape,
    label_px,
    short,
    value_axis,
    with_layout,
)

MAX_LINES = 16  # residual_norms: one line per token up to this T, mean and min-max band above

LEGEND_MAX = 10  # show a legend of token lines only up to this many lines


def _depth_series(norms, labels) -> tuple[list[str], np.ndarray]:
    """(unique depth labels, values [n_points, T]) from an array with labels, or a dict."""
    if isinstance(norms, Mapping):
        if labels is not None and list(labels) != list(norms):
            raise ValueError("pass labels=None with a dict of norms (its keys are the labels), "
                             f"got labels {list(labels)!r} for keys {list(norms)!r}")
        rows = [checks.array(v, f"norms[{k!r}]", "T") for k, v in norms.items()]
        if len({len(r) for r in rows}) > 1:
            raise ValueError(f"every norms entry must have the same T, got lengths {[len(r) for r in rows]}")
        values, labels = np.stack(rows), list(norms)
    else:
        values = checks.array(norms, "norms", "n_points, T")
        if labels is None:
            raise ValueError("labels are required when norms is an array [n_points, T]")
    labels = checks.labels(labels, len(values), "labels", f"norms has n_points = {len(values)} rows")
    return checks.unique([escape(label) for label in labels], "labels"), values


def residual_norms(norms, labels: Sequence[str] | None, tokens: Sequence[str], title: str,
                   offset: int = 0, max_lines: int = MAX_LINES) -> go.Figure:
    """The residual stream's norm across depth. `norms` is [n_points, T] with `labels` naming the
    points ("embed", "block 0 mid", ...), or a dict label -> [T] with labels=None. Up to max_lines
    positions: one line per token coloured by position (Viridis); beyond: mean line and min-max band."""
    depth, values = _depth_series(norms, labels)
    positions = checked_positions(tokens, values.shape[1], "norms", offset)
    if values.shape[1] <= checks.integer(max_lines, "max_lines", 1):
        traces = _token_lines(values, depth, positions)
    else:
        traces = _summary_band(values, depth, positions)
    return with_layout(go.Figure(traces), title, showlegend=len(traces) <= LEGEND_MAX,
                       margin=default_margin(b=label_px(map(short, depth), MARGIN_BOTTOM, rotated=True)),
                       xaxis=category_axis(depth, "depth"), yaxis=value_axis("L2 norm ‖x‖₂"))


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


def depth_bars(values, labels: Sequence[str], title: str, y_title: str) -> go.Figure:
    """One bar per depth point or part (labels in order), e.g. the norm of each residual update."""
    v = checks.values(values, "values")
    names = [escape(s) for s in checks.labels(labels, v.size, "labels", f"values has {v.size} entries")]
    names = checks.unique(names, "labels")  # categories: plotly shows the ones that fit the width
    fig = go.Figure(go.Bar(x=names, y=v, marker_color=BLUE,
                           hovertemplate="%{x}<br>" + y_title + " %{y:.4g}<extra></extra>"))
    return with_layout(fig, title, margin=default_margin(b=label_px(map(short, names), MARGIN_BOTTOM, rotated=True)),
                       xaxis=category_axis(names, ""), yaxis=value_axis(y_title))
