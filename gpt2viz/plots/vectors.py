"""Figures of one position's vectors: where a plot per position would be one bar (decode computes a
single position), show that position's d values instead.

- `stacked_vectors`: several d-vectors of one position, one row each, on a shared feature axis
  (the stream before and after a block's updates; a token's wte and wpe rows and their sum);
- `layernorm_stages`: one position's vector as it enters a LayerNorm, centred, scaled, and with
  gain and bias applied;
- `heads_merged`: the nh heads' outputs z [nh, dh] side by side, and the merged vector [d] they
  become, coloured by the head each stretch of it came from;
- `sorted_products`: one query's and one key's dh products, sorted, with their running sum (the
  dot product behind an attention score).
"""

import functools
import json
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .axes import (
    BLUE,
    ORANGE,
    SEQUENTIAL,
    SUBTITLE_PX,
    VERMILLION,
    default_margin,
    escape,
    figure_layout,
    merged,
    top_margin,
    value_axis,
    with_layout,
)
from .checks import array

ROW_PX = 125  # height of one vector's row
# the first row's title sits above the plot, under the figure's title
ROW_TITLE_MARGIN = dict(t=top_margin() + SUBTITLE_PX + 10)
# between heads_merged's two panels, for the map's tick labels: presented, filling a 1280 x 720 screen, 50 px of it
# stay (at 42 px on a page, a fraction of the plot's height, the bars' title above them lay on those labels)
HEADS_GAP_PX = 60


def _bars(v: np.ndarray, colors=BLUE, name: str = "") -> go.Bar:
    return go.Bar(x=np.arange(v.size), y=v, marker={"color": colors, "line": {"width": 0}}, showlegend=False,
                  hovertemplate="feature %{x}<br>" + escape(name) + " = %{y:.4g}<extra></extra>")


def stacked_vectors(rows: Sequence[tuple[str, object]], title: str, x_title: str = "feature i (of d)") -> go.Figure:
    """One bar chart per (label, vector [d]) row, top to bottom, sharing the feature axis."""
    if not rows:
        raise ValueError("rows is empty: give at least one (label, vector)")
    vectors = [array(v, f"rows[{i}] ({label!r})", "d") for i, (label, v) in enumerate(rows)]
    d = vectors[0].size
    for i, v in enumerate(vectors):
        if v.size != d:
            raise ValueError(f"rows[{i}] has {v.size} values, rows[0] has {d}: every vector must be [d]")
    n = len(rows)
    layout = json.loads(_panels(n))
    for panel, (label, _) in zip(layout["annotations"], rows):
        panel.update(text=escape(label), font={"size": SUBTITLE_PX}, x=0, xanchor="left")
    layout[f"xaxis{n if n > 1 else ''}"]["title"] = {"text": x_title}
    bars = [_bars(v, name=label).update(xaxis=f"x{i if i > 1 else ''}", yaxis=f"y{i if i > 1 else ''}")
            for i, ((label, _), v) in enumerate(zip(rows, vectors), 1)]
    return go.Figure(data=bars, layout=merged(layout, figure_layout(
        title, height=min(900, 110 + ROW_PX * n), bargap=0, margin=default_margin(**ROW_TITLE_MARGIN))))


@functools.lru_cache(maxsize=16)
def _panels(n: int) -> str:
    """The layout (JSON) of n panels in a column on one shared feature axis, as plotly's make_subplots
    lays them out, with a title above each: made once per n (make_subplots took 10 ms a figure)."""
    fig = make_subplots(rows=n, cols=1, shared_xaxes=True, vertical_spacing=0.22 / n, subplot_titles=["-"] * n)
    layout = fig.layout.to_plotly_json()
    layout.pop("template", None)
    return json.dumps(layout)


def layernorm_stages(x, normalized, out, eps: float, title: str) -> go.Figure:
    """x [d] as it enters, centred (x − μ), scaled ((x − μ)/√(σ² + ε), as recorded) and out
    (g ⊙ scaled + b, as recorded), with μ, σ² and each stage's spread in the row titles."""
    x = array(x, "x", "d")
    mu, var = float(x.mean()), float(x.var())
    rows = [(f"entering: x   (μ = {mu:.3g}, σ² = {var:.3g})", x),
            (f"centred: x − μ   (mean 0, σ² = {var:.3g})", x - mu),
            (f"scaled: (x − μ)/√(σ² + ε), ε = {eps:g}   (variance ≈ 1)", normalized),
            ("out: g ⊙ scaled + b   (learned gain g, bias b)", out)]
    return stacked_vectors(rows, title)


def heads_merged(z, merged, title: str) -> go.Figure:
    """z [nh, dh] (each head's output for one position) as nh rows, above the merged vector [d]
    whose stretch h·dh … (h+1)·dh − 1 is head h's row, coloured by head."""
    z = array(z, "z", "nh, dh")
    merged = array(merged, "merged", "d")
    nh, dh = z.shape
    if merged.size != nh * dh:
        raise ValueError(f"merged has {merged.size} values but z is [{nh}, {dh}]: merged must be [nh · dh]")
    height = max(380, 220 + 18 * nh) + HEADS_GAP_PX
    margin = default_margin(**ROW_TITLE_MARGIN)
    # the bars are named by their axis' title below them, not a title above (where it lay on the map's tick labels)
    fig = make_subplots(rows=2, cols=1, row_heights=[0.6, 0.4],
                        subplot_titles=[f"z [nh, dh] = [{nh}, {dh}]: a row per head, a column per feature"],
                        vertical_spacing=HEADS_GAP_PX / (height - margin["t"] - margin["b"]))
    fig.add_trace(go.Heatmap(z=z, x=np.arange(dh), y=[f"h{h}" for h in range(nh)], colorscale=SEQUENTIAL, name="z",
                             colorbar={"title": {"text": "z"}, "len": 0.55, "y": 1, "yanchor": "top"},
                             hovertemplate="head %{y} · feature %{x}<br>z = %{z:.4g}<extra></extra>"), row=1, col=1)
    colors = [BLUE if (i // dh) % 2 == 0 else ORANGE for i in range(merged.size)]
    fig.add_trace(_bars(merged, colors, "merged").update(name="merge(H)"), row=2, col=1)  # as the words name them
    heads = [f"h{h}" for h in range(nh)]
    # a row per head, each labelled (a screen-filling chart leaves them to the browser: axes.fit_rows)
    fig.update_yaxes(type="category", autorange="reversed", tickmode="array", tickvals=heads, ticktext=heads,
                     row=1, col=1)
    fig.update_xaxes(title_text=f"merge(H), d = {nh * dh}: head h covers features h·{dh} … h·{dh} + {dh - 1}",
                     row=2, col=1)
    fig.update_annotations(font_size=SUBTITLE_PX, x=0, xanchor="left")
    return with_layout(fig, title, height=height, bargap=0, yaxis2=value_axis("value"), margin=margin)


def sorted_products(q, k, title: str) -> go.Figure:
    """The dh products q[c] · k[c] of one query and one key, largest first (blue: the two agree in
    sign and push the score up; orange: they disagree and pull it down), and the running sum that
    ends at the dot product q · k. Hover names each product's coordinate and its two factors."""
    q, k = array(q, "q", "dh"), array(k, "k", "dh")
    if q.size != k.size:
        raise ValueError(f"q has {q.size} values and k {k.size}: both must be [dh]")
    products = q * k
    order = np.argsort(-products, kind="stable")
    ranked = products[order]
    bars = go.Bar(x=np.arange(q.size), y=ranked, marker={"color": [BLUE if p >= 0 else ORANGE for p in ranked],
                                                         "line": {"width": 0}},
                  customdata=np.stack([order, q[order], k[order]], axis=-1), name="q[c] · k[c]",
                  hovertemplate="coordinate %{customdata[0]}<br>q = %{customdata[1]:.4g} · k = %{customdata[2]:.4g}"
                                "<br>product %{y:.4g}<extra></extra>")
    running = go.Scatter(x=np.arange(q.size), y=np.cumsum(ranked), mode="lines", name="running sum",
                         line={"color": VERMILLION, "width": 2},
                         hovertemplate="the first %{x} + 1 products add up to %{y:.4g}<extra></extra>")
    return with_layout(go.Figure([bars, running]), title, bargap=0.1,
                       xaxis=value_axis("the dh products, largest first"), yaxis=value_axis("q[c] · k[c]"),
                       legend=dict(orientation="h", y=1.02, x=1, xanchor="right", yanchor="bottom"))
