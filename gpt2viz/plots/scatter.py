"""A scatter of two scores, one point per head (the head finder's): where a head sits on both."""

import numpy as np
import plotly.graph_objects as go

from . import checks
from .axes import SEQUENTIAL, escape, value_axis, with_layout

LABELLED_MAX = 16  # write each point's "block.head" beside it up to this many heads (hover always)


def head_scatter(x, y, blocks, heads, title: str, x_title: str, y_title: str,
                 x_range: tuple[float, float] | None = None, y_range: tuple[float, float] | None = None) -> go.Figure:
    """Head k at (x[k], y[k]), coloured by its block (the sequential scale, light = late); hover names
    block, head and both scores. `blocks`, `heads`: the integers naming each point. `x_range`,
    `y_range`: where the scores can lie, drawn whole (a small spread then looks small)."""
    x, y = checks.values(x, "x"), checks.values(y, "y")
    if x.size != y.size:
        raise ValueError(f"x has {x.size} heads but y has {y.size}")
    blocks, heads = checks.integers(blocks, "blocks"), checks.integers(heads, "heads")
    if not len(blocks) == len(heads) == x.size:
        raise ValueError(f"blocks and heads must name the {x.size} heads, got {len(blocks)} and {len(heads)}")
    names = [f"{b}.{h}" for b, h in zip(blocks, heads)]
    top = max(blocks)
    marker = dict(size=10, color=blocks, colorscale=SEQUENTIAL, cmin=0, cmax=max(top, 1), line=dict(width=0.5),
                  colorbar=dict(title=dict(text="block"), tickvals=list(range(top + 1)) if top < 13 else None))
    # names on the points only where they stand apart (a head's name is in its hover anyway): on random
    # weights every head sits in one cluster and the names were written over one another
    apart = x.size <= LABELLED_MAX and _apart(x, y, x_range, y_range)
    point = go.Scatter(x=x, y=y, mode="markers+text" if apart else "markers", marker=marker,
                       text=names if apart else None, textposition="top center", textfont=dict(size=11),
                       customdata=np.array([blocks, heads]).T,
                       hovertemplate="block %{customdata[0]} head %{customdata[1]}<br>" + escape(x_title)
                       + " %{x:.3f}<br>" + escape(y_title) + " %{y:.3f}<extra></extra>")
    return with_layout(go.Figure(point), title, xaxis=value_axis(x_title, **_whole(x_range)),
                       yaxis=value_axis(y_title, **_whole(y_range)))


def _apart(x: np.ndarray, y: np.ndarray, x_range, y_range) -> bool:
    """Whether every two points are at least 8 % of the axes' spans apart (their labels then do not meet)."""
    sx = (x_range[1] - x_range[0]) if x_range else float(np.ptp(x)) or 1.0
    sy = (y_range[1] - y_range[0]) if y_range else float(np.ptp(y)) or 1.0
    d = np.hypot((x[:, None] - x[None, :]) / sx, (y[:, None] - y[None, :]) / sy)  # [n, n]
    return bool((d + np.eye(len(x)) > 0.08).all())


def _whole(span: tuple[float, float] | None) -> dict:
    """An axis range showing all of `span`, with 5% room for the markers at its ends."""
    if span is None:
        return {}
    lo, hi = checks.value_range(span)
    pad = (hi - lo) * 0.05
    return dict(range=[lo - pad, hi + pad])
