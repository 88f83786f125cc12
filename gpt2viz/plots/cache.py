"""The KV cache: one step's cached and new positions per layer, and its growth step by step."""

from collections.abc import Sequence
from typing import NamedTuple

import plotly.graph_objects as go

from ..spec.costs import human_bytes
from . import checks
from .axes import (
    BLUE,
    CELL_PX,
    LEGEND_PX,
    SKY,
    VERMILLION,
    bytes_axis,
    clamp_height,
    default_margin,
    legend_above,
    thinned,
    top_margin,
    value_axis,
    with_layout,
)

KV_CELLS_MAX = 32  # kv_cache_diagram: per-position cells up to this many, one block above

KV_BLOCK_WIDTH = 12  # display width (in cells) of a compressed block of positions


class _Segment(NamedTuple):
    cached: bool
    lo: int  # first position
    hi: int  # one past the last position
    x0: float  # where it is drawn (display units: one cell = 1)

    @property
    def size(self) -> int:
        return self.hi - self.lo

    @property
    def width(self) -> float:
        return float(self.size if self.size <= KV_CELLS_MAX else KV_BLOCK_WIDTH)

    @property
    def label(self) -> str:
        return str(self.lo) if self.size == 1 else f"{self.lo}–{self.hi - 1}"


def _cache_segments(P: int, T: int) -> list[_Segment]:
    """Positions 0..P-1 (cached) and P..P+T-1 (new), one cell each, or one compressed block for a
    part longer than KV_CELLS_MAX, laid out left to right in display units."""
    parts = [(True, 0, P), (False, P, P + T)]
    segments, x = [], 0.0
    for cached, lo, hi in parts:
        pieces = [(lo, hi)] if hi - lo > KV_CELLS_MAX else [(i, i + 1) for i in range(lo, hi)]
        for a, b in pieces:
            segments.append(_Segment(cached, a, b, x))
            x += segments[-1].width
    return segments


def _kv_trace(segments: list[_Segment], n_layer: int, cached: bool) -> go.Bar:
    mine = [s for s in segments if s.cached == cached]
    what = "read from the cache (K, V stored by earlier steps)" if cached else "computed now (K, V appended)"
    rows = [(layer, s) for layer in range(n_layer) for s in mine]
    return go.Bar(y=[layer for layer, _ in rows], x=[s.width for _, s in rows], base=[s.x0 for _, s in rows],
                  orientation="h", width=0.8, name="read from cache" if cached else "computed now",
                  marker=dict(color=SKY if cached else VERMILLION, line=dict(color="white", width=1)),
                  text=[s.label if s.size > 1 else "" for _, s in rows], textposition="inside",
                  insidetextanchor="middle", customdata=[s.label for _, s in rows],
                  hovertemplate="layer %{y}<br>position %{customdata}<br>" + what + "<extra></extra>")


def kv_cache_diagram(P: int, T: int, n_layer: int, title: str) -> go.Figure:
    """A schematic of one step's keys and values per layer: P cached positions read from the cache
    and T new positions computed now. Parts longer than KV_CELLS_MAX are drawn as one labelled
    block (not to scale), so P = 1000 with T = 1 stays readable."""
    P, T = checks.integer(P, "P", 0), checks.integer(T, "T", 1)
    n_layer = checks.integer(n_layer, "n_layer", 1)
    segments = _cache_segments(P, T)
    traces = [_kv_trace(segments, n_layer, cached) for cached in (True, False)
              if any(s.cached == cached for s in segments)]
    to_scale = all(s.width == s.size for s in segments)
    ticks = thinned(segments)
    layers = list(range(n_layer))
    return with_layout(go.Figure(traces), title, height=clamp_height(110 + 16 * n_layer), barmode="overlay",
                       uniformtext=dict(minsize=CELL_PX, mode="hide"),
                       legend=legend_above(), margin=default_margin(t=top_margin() + LEGEND_PX),
                       xaxis=value_axis("position" if to_scale else "position (blocks not to scale)",
                                        tickmode="array", tickvals=[s.x0 + s.width / 2 for s in ticks],
                                        ticktext=[s.label for s in ticks], showgrid=False),
                       yaxis=value_axis("layer", tickmode="array", tickvals=thinned(layers, 16),
                                        autorange="reversed", showgrid=False))


def cache_growth(steps: Sequence[int], bytes_per_step: Sequence[int], title: str) -> go.Figure:
    """Per decode step: L, the positions each query reads (line, left axis), and the KV cache
    size in bytes after the step, its new keys and values in (bars, right axis). Steps are whole
    numbers from 1: the axis says 1, not 0.6…1.4, for a single step."""
    L = checks.integers(steps, "steps")
    size = checks.integers(bytes_per_step, "bytes_per_step")
    if len(L) != len(size):
        raise ValueError(f"steps has {len(L)} entries but bytes_per_step has {len(size)}")
    x = list(range(1, len(L) + 1))
    fig = go.Figure([
        go.Bar(x=x, y=size, yaxis="y2", name="KV cache after the step", marker=dict(color=SKY, opacity=0.6),
               customdata=[human_bytes(b) for b in size],
               hovertemplate="step %{x}<br>KV cache after it %{y:,} bytes (%{customdata})<extra></extra>"),
        go.Scatter(x=x, y=L, name="L (positions read)", mode="lines+markers", line=dict(color=BLUE),
                   hovertemplate="step %{x}<br>L = %{y:,} positions<extra></extra>"),
    ])
    return with_layout(fig, title, legend=legend_above(), margin=default_margin(r=95, t=top_margin() + LEGEND_PX),
                       xaxis=value_axis("decode step", tickmode="array", tickvals=thinned(x, 16),
                                        range=[0.5, len(x) + 0.5]),
                       yaxis=value_axis("L (positions)", rangemode="tozero"),
                       yaxis2=bytes_axis("KV cache size", max(size), overlaying="y", side="right",
                                         rangemode="tozero", showgrid=False))
