"""Side by side: a few series of one value per category (with and without a change, one series a
temperature), as grouped bars. The Experiments page draws its answers with it."""

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from . import checks
from .axes import BLUE, CHAR_PX, GREY, ORANGE, VERMILLION, escape, label_chars, short, thinned, value_axis, with_layout

SERIES_COLOURS = (BLUE, ORANGE, VERMILLION, GREY)  # Okabe-Ito, distinct for colour-blind readers
HALF_PX = 350  # the plot width of a chart in one of two columns: wider tick labels than this turn -45°


def grouped_bars(values, series: Sequence[str], categories: Sequence[str], title: str, y_title: str,
                 x_title: str = "", subtitle: str | None = None, log: bool = False) -> go.Figure:
    """values [S, n]: one row per series (named in the legend), one group of S bars per category.
    Categories may repeat (two tokens alike): the axis is numeric, labelled with them. `log`: a
    logarithmic value axis, for values that span decades (a zero is then not drawn)."""
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
                       xaxis=_category_ticks(cats, x_title),
                       yaxis=value_axis(y_title, **({"type": "log"} if log else {})))


def _category_ticks(cats: list[str], title: str) -> dict:
    """A numeric axis 0..n-1 with at most MAX_TICKS of the labels (cut short; hover has them whole),
    turned -45° when they would not fit side by side in a half-width chart."""
    shown = thinned(list(range(len(cats))))
    text = [short(cats[i]) for i in shown]
    turned = len(shown) * (label_chars(text) * CHAR_PX + 6) > HALF_PX
    return dict(title=dict(text=title), tickmode="array", tickvals=shown, ticktext=text, tickfont=dict(size=10),
                tickangle=-45 if turned else 0, automargin=True)
