"""Distributions of values: a histogram binned in numpy, the GELU curve with this input on it."""

import math

import numpy as np
import plotly.graph_objects as go

from . import checks
from .axes import BLUE, GREY, HEIGHT, ORANGE, SKY, VERMILLION, default_margin, value_axis, with_layout

LEGEND_ROWS_PX = 60  # gelu_curve's legend under the plot: in a phone's window its 4 entries take a row each

PERCENTILES = 99  # dots on the GELU curve: this input's 1st ... 99th percentiles


def histogram(values, title: str, x_title: str, bins: int = 80) -> go.Figure:
    """Histogram of all entries of `values` (any shape), binned in numpy so that a [T, V] logits
    tensor costs `bins` bars, not T*V points. Mean and std in the subtitle, a dashed line at the mean."""
    v = checks.values(values, "values")
    counts, edges = np.histogram(v, bins=checks.integer(bins, "bins", 1))
    bars = go.Bar(x=(edges[:-1] + edges[1:]) / 2, y=counts, width=np.diff(edges),
                  customdata=np.stack([edges[:-1], edges[1:]], axis=1), marker=dict(color=BLUE, line_width=0),
                  hovertemplate="[%{customdata[0]:.4g}, %{customdata[1]:.4g})<br>count %{y:,}<extra></extra>")
    mean, std = float(v.mean(dtype=np.float64)), float(v.std(dtype=np.float64))
    fig = go.Figure(bars).add_vline(x=mean, line=dict(color=VERMILLION, dash="dash", width=1.5))
    return with_layout(fig, title, subtitle=f"n = {v.size:,} · mean {mean:.4g} · std {std:.4g}",
                       bargap=0, xaxis=value_axis(x_title), yaxis=value_axis("count"))


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def _gelu_erf(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))  # numpy has no erf


def gelu_curve(pre_activations, title: str, x_range: tuple[float, float] = (-5.0, 5.0),
               bins: int = 80, exact: bool = False) -> go.Figure:
    """The model's GELU over x_range (GPT-2's tanh form; with `exact`, the erf form nanoGPT uses), the
    other form dashed, and this input's pre-activations: all of them binned (bars on a right-hand
    axis: the share in each bin) and PERCENTILES dots on the model's curve at the 1st, 2nd, ... 99th
    percentile (light: a few hundred SVG elements, where a sample of thousands of dots took the
    browser most of a second)."""
    v = checks.values(pre_activations, "pre_activations")
    lo, hi = checks.value_range(x_range)
    grid = np.linspace(lo, hi, 401)
    counts, edges = np.histogram(v, bins=checks.integer(bins, "bins", 1), range=(lo, hi))
    share = counts / v.size
    pct = np.arange(1, PERCENTILES + 1) * (100 / (PERCENTILES + 1))
    q = np.percentile(v, pct)
    inside = (q >= lo) & (q <= hi)
    used, other = (_gelu_erf, _gelu_tanh) if exact else (_gelu_tanh, _gelu_erf)
    names = ("exact GELU (erf, this model)", "tanh GELU (GPT-2)") if exact else \
        ("tanh GELU (GPT-2)", "exact GELU (erf)")
    fig = go.Figure([
        go.Bar(x=(edges[:-1] + edges[1:]) / 2, y=share, width=np.diff(edges), yaxis="y2", name="share of this input",
               marker=dict(color=SKY, opacity=0.45, line_width=0),
               customdata=np.stack([edges[:-1], edges[1:], counts], 1),
               hovertemplate="[%{customdata[0]:.3g}, %{customdata[1]:.3g}): %{customdata[2]:,} pre-activations "
                             "(%{y:.2%})<extra></extra>"),
        go.Scatter(x=grid, y=used(grid), mode="lines", name=names[0],
                   line=dict(color=BLUE, width=2), hovertemplate="x = %{x:.3f}<br>GELU %{y:.4f}<extra></extra>"),
        go.Scatter(x=grid, y=other(grid), mode="lines", name=names[1],
                   line=dict(color=GREY, width=1.5, dash="dash"),
                   hovertemplate="x = %{x:.3f}<br>" + names[1].split(" (")[0] + " %{y:.4f}<extra></extra>"),
        go.Scatter(x=q[inside], y=used(q[inside]), customdata=pct[inside], mode="markers",
                   name="percentiles of this input",
                   marker=dict(color=ORANGE, size=6, line=dict(width=0.5, color="white")),
                   hovertemplate="percentile %{customdata:.0f}<br>pre-activation %{x:.3f}<br>GELU %{y:.3f}"
                                 "<extra></extra>"),
    ])
    outside = int(v.size - counts.sum())
    subtitle = f"{v.size:,} pre-activations · {float((v < 0).mean()):.1%} negative"
    if outside:
        subtitle += f" · {outside / v.size:.1%} outside [{lo:g}, {hi:g}]"
    return with_layout(fig, title, HEIGHT + LEGEND_ROWS_PX, subtitle=subtitle, bargap=0,
                       margin=default_margin(subtitle, r=80),
                       # under the plot, at the figure's foot, in as many rows as the width needs: above the plot
                       # it wrapped onto the title; inside it, it covered the curve (presented) and the histogram
                       legend=dict(orientation="h", x=0, xanchor="left", xref="container", y=0, yanchor="bottom",
                                   yref="container"),
                       xaxis=value_axis("pre-activation x", range=[lo, hi]), yaxis=value_axis("GELU(x)"),
                       yaxis2=value_axis("share of pre-activations", overlaying="y", side="right", showgrid=False,
                                         tickformat=".0%", rangemode="tozero"))
