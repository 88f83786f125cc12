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
    labelled = x.size <= LABELLED_MAX
    point = go.Scatter(x=x, y=y, mode="markers+text" if labelled else "markers", marker=marker,
                       text=names if labelled else None, textposition="top center", textfont=dict(size=10),
                       customdata=np.array([blocks, heads]).T,
                       hovertemplate="block %{customdata[0]} head %{customdata[1]}<br>" + escape(x_title)
                       + " %{x:.3f}<br>" + escape(y_title) + " %{y:.3f}<extra></extra>")
    return with_layout(go.Figure(point), title, xaxis=value_axis(x_title, **_whole(x_range)),
                       yaxis=value_axis(y_title, **_whole(y_range)))


def _whole(span: tuple[float, float] | None) -> dict:
    """An axis range showing all of `span`, with 5% room for the markers at its ends."""
    if span is None:
        return {}
    lo, hi = checks.value_range(span)
    pad = (hi - lo) * 0.05
    return dict(range=[lo - pad, hi + pad])
