"""Side by side: a few series of one value per category (with and without a change, one series a
temperature), as grouped bars. The Experiments page draws its answers with it."""

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from . import checks
from .axes import BLUE, GREY, ORANGE, VERMILLION, escape, index_axis, label_px, value_axis, with_layout

SERIES_COLOURS = (BLUE, ORANGE, VERMILLION, GREY)  # Okabe-Ito, distinct for colour-blind readers


def grouped_bars(values, series: Sequence[str], categories: Sequence[str], title: str, y_title: str,
                 x_title: str = "", subtitle: str | None = None) -> go.Figure:
    """values [S, n]: one row per series (named in the legend), one group of S bars per category.
    Categories may repeat (two tokens alike): the axis is numeric, labelled with them."""
    v = checks.array(values, "values", "S, n")
    rows, n = v.shape
    if rows > len(SERIES_COLOURS):
        raise ValueError(f"values has {rows} series; at most {len(SERIES_COLOURS)} are drawn")
    names = [escape(s) for s in checks.labels(series, rows, "series", f"values has S = {rows} rows")]
    cats = [escape(c) for c in checks.labels(categories, n, "categories", f"values has n = {n} columns")]
    bars = [go.Bar(x=np.arange(n), y=v[i], name=names[i], marker_color=SERIES_COLOURS[i], customdata=cats,
                   hovertemplate=f"%{{customdata}}<br>{names[i]}: %{{y:.4g}}<extra></extra>") for i in range(rows)]
    return with_layout(go.Figure(bars), title, subtitle=subtitle, barmode="group",
                       legend=dict(orientation="h", yanchor="bottom", y=1.0, xanchor="right", x=1.0),
                       xaxis=index_axis(cats, x_title, tickangle=-45 if label_px(cats, 0) > 120 else 0),
                       yaxis=value_axis(y_title))
