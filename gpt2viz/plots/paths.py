"""Path patching's chart: one bar per receiver, grouped by the receiver's block, coloured by what it
reads (a head's query, key or value input, an MLP, the logits directly), with the total effect drawn
as a dashed line across."""

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from . import checks
from .axes import BLUE, GREY, ORANGE, SKY, VERMILLION, escape, top_margin, value_axis, with_layout

KINDS = {"q": ("query input (q)", BLUE), "k": ("key input (k)", ORANGE), "v": ("value input (v)", SKY),
         "mlp": ("MLP input", VERMILLION), "logits": ("the logits directly", GREY)}
GAP = 1.0  # bars' widths between two blocks' groups


def path_bars(values, receivers: Sequence[str], groups: Sequence[str], kinds: Sequence[str], total: float,
              title: str, y_title: str, total_label: str) -> go.Figure:
    """values [n]: one per receiver (named in `receivers`, hover only); `groups`: each bar's group
    (a block, or the logits), consecutive bars of one group drawn together, the group named under
    them; `kinds`: each bar's colour, a key of KINDS; `total`: the line's height, named `total_label`."""
    v = checks.values(values, "values")
    n = v.size
    names = [escape(s) for s in checks.labels(receivers, n, "receivers", f"values has {n} entries")]
    group = checks.labels(groups, n, "groups", f"values has {n} entries")
    kind = checks.labels(kinds, n, "kinds", f"values has {n} entries")
    unknown = sorted(set(kind) - set(KINDS))
    if unknown:
        raise ValueError(f"kinds: {unknown[0]!r} is not one of {', '.join(KINDS)}")
    x, ticks, texts, start = np.empty(n), [], [], 0
    for i in range(n):
        if i and group[i] != group[i - 1]:
            ticks.append((x[start] + x[i - 1]) / 2)
            texts.append(escape(group[i - 1]))
            start = i
        x[i] = i + GAP * len(texts)
    if n:
        ticks.append((x[start] + x[n - 1]) / 2)
        texts.append(escape(group[n - 1]))
    bars = []
    for key, (label, colour) in KINDS.items():
        idx = [i for i in range(n) if kind[i] == key]
        if idx:
            bars.append(go.Bar(x=x[idx], y=v[idx], name=label, marker_color=colour, width=0.8,
                               customdata=[names[i] for i in idx],
                               hovertemplate="%{customdata}<br>" + escape(y_title) + " %{y:.4g}<extra></extra>"))
    fig = go.Figure(bars)
    fig.add_hline(y=float(total), line_dash="dash", line_color=VERMILLION, line_width=2,
                  annotation_text=escape(total_label), annotation_position="bottom right")
    # the legend under the axis title: at 800 px its five entries take two rows, which above the plot
    # ran into the title
    return with_layout(fig, title, barmode="overlay", bargap=0.15, height=440,
                       legend=dict(orientation="h", y=-0.3, yanchor="top", x=0, xanchor="left"),
                       margin=dict(t=top_margin(), b=130, l=80, r=20),
                       xaxis=dict(title=dict(text="receiver, by block"), tickmode="array", tickvals=ticks,
                                  ticktext=texts, automargin=True, zeroline=False),
                       yaxis=value_axis(escape(y_title)))
