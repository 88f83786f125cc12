"""Attribution patching beside activation patching: each cell's linear estimate against its exact
restored fraction, one point a cell, the two grids in two colours, the line where they agree."""

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from . import checks
from .axes import BLUE, GREY, ORANGE, escape, legend_above, top_margin, value_axis, with_layout


def estimate_scatter(exact: Sequence, estimated: Sequence, names: Sequence[str], groups: Sequence[str],
                     title: str) -> go.Figure:
    """One point a cell at (exact, estimated); `names` for the hover, `groups` (at most two kinds, e.g. the
    residual grid and the heads) for the colour. Non-finite cells are left out. The dashed line: y = x."""
    x, y = checks.values(exact, "exact"), checks.values(estimated, "estimated")
    if x.size != y.size:
        raise ValueError(f"exact has {x.size} cells but estimated has {y.size}")
    names = [escape(s) for s in checks.labels(names, x.size, "names", f"exact has {x.size} cells")]
    groups = checks.labels(groups, x.size, "groups", f"exact has {x.size} cells")
    kinds = list(dict.fromkeys(groups))
    if len(kinds) > 2:
        raise ValueError(f"groups: at most two kinds, got {len(kinds)}")
    ok = np.isfinite(x) & np.isfinite(y)
    points = []
    for kind, colour in zip(kinds, (BLUE, ORANGE)):
        idx = [i for i in range(x.size) if groups[i] == kind and ok[i]]
        points.append(go.Scatter(x=x[idx], y=y[idx], mode="markers", name=escape(kind),
                                 marker=dict(size=8, color=colour, line=dict(width=0.5)),
                                 customdata=[names[i] for i in idx],
                                 hovertemplate="%{customdata}<br>exact %{x:.3f}<br>estimate %{y:.3f}<extra></extra>"))
    both = np.concatenate([x[ok], y[ok]]) if ok.any() else np.array([0.0, 1.0])
    lo, hi = float(min(both.min(), 0.0)), float(max(both.max(), 1.0))
    points.append(go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", name="estimate = exact",
                             line=dict(color=GREY, dash="dash"), hoverinfo="skip"))
    return with_layout(go.Figure(points), title, legend=legend_above(), margin=dict(t=top_margin() + 26, l=80, r=20),
                       xaxis=value_axis("exact restored fraction"), yaxis=value_axis("linear estimate"))
