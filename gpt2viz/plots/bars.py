"""Bar charts: one value per position, the most active neurons, the loss per prediction, the top
next tokens and the parameter counts (horizontal bars)."""

import html
import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from . import checks
from .axes import (
    BLUE,
    CHAR_PX,
    MARGIN_LEFT,
    VERMILLION,
    category_axis,
    checked_positions,
    clamp_height,
    default_margin,
    escape,
    fixed_margins,
    index_axis,
    label_chars,
    label_px,
    position_labels,
    top_margin,
    value_axis,
    with_layout,
)


def position_norms(x, tokens: Sequence[str], title: str, offset: int = 0) -> go.Figure:
    """The L2 norm of each position's vector in x [T, d], one bar per position
    (positions offset..offset+T-1; pass offset=P for a DECODE step)."""
    x = checks.array(x, "x", "T, d")
    checked_positions(tokens, x.shape[0], "x", offset)  # errors name x, the caller's argument
    return position_values(np.linalg.norm(x, axis=1), tokens, title, "L2 norm ‖x‖₂", offset)


def position_values(values, tokens: Sequence[str], title: str, y_title: str, offset: int = 0) -> go.Figure:
    """One value per position [T] (a LayerNorm's μ or σ², a norm), one bar per position."""
    v = checks.array(values, "values", "T")
    labels = checked_positions(tokens, v.shape[0], "values", offset)
    bars = go.Bar(x=labels, y=v, marker_color=BLUE,
                  hovertemplate="position·token %{x}<br>" + escape(y_title) + " = %{y:.4g}<extra></extra>")
    xaxis, yaxis, margin = fixed_margins(category_axis(labels, "position·token"), value_axis(y_title), top_margin(),
                                         labels, [])
    return with_layout(go.Figure(bars), title, xaxis=xaxis, yaxis=yaxis, margin=margin)


def top_neurons(post, tokens: Sequence[str], k: int = 10, position: int | None = None,
                title: str = "", offset: int = 0) -> go.Figure:
    """The k MLP neurons of post [T, 4d] with the largest activation: the mean over positions
    (position=None) or at one position (an index into T; negative counts from the end)."""
    post = checks.array(post, "post", "T, 4d")
    T, n = post.shape
    labels = checked_positions(tokens, T, "post", offset)
    k = checks.integer(k, "k", 1)
    if k > n:
        raise ValueError(f"k must be <= the {n} neurons of post, got {k}")
    if position is None and T == 1:  # decode computes one position: its values, not a "mean over 1"
        score, where = post[0], f"at {labels[0]}, the one position computed"
    elif position is None:
        score, where = post.mean(axis=0, dtype=np.float64), f"mean over {T} positions"  # as the MLP notice ranks
    else:
        p = checks.index(position, T, "position")
        score, where = post[p], f"at {labels[p]}"
    top = np.argsort(-score, kind="stable")[:k]
    bars = go.Bar(x=[f"#{i}" for i in top], y=score[top], marker_color=BLUE,
                  customdata=[[int(i), where] for i in top],
                  hovertemplate="neuron %{customdata[0]}<br>%{customdata[1]}<br>activation %{y:.3f}<extra></extra>")
    return with_layout(go.Figure(bars), title or f"Top {k} neurons", subtitle=where,
                       xaxis=value_axis("neuron", type="category"), yaxis=value_axis("activation (GELU output)"))


def loss_per_token(per_token, tokens: Sequence[str], title: str) -> go.Figure:
    """Cross-entropy per prediction [T-1]: bar t sits at target position t+1, labelled with the
    target token; hover "predicting TOKEN from …context". Mean and perplexity in the subtitle."""
    loss = checks.array(per_token, "per_token", "T-1")
    n = loss.size
    tokens = checks.labels(tokens, n + 1, "tokens", f"per_token has T-1 = {n} losses, so T = {n + 1}")
    targets = position_labels(tokens)[1:]
    bars = go.Bar(x=targets, y=loss, marker_color=BLUE, customdata=[_context(tokens, t) for t in range(n)],
                  hovertemplate="predicting %{x}<br>from %{customdata}<br>loss %{y:.3f} nats<extra></extra>")
    mean = float(loss.mean(dtype=np.float64))
    fig = go.Figure(bars).add_hline(y=mean, line=dict(color=VERMILLION, dash="dash", width=1.5))
    return with_layout(fig, title, subtitle=f"mean {mean:.3f} nats · perplexity {math.exp(min(mean, 700)):.4g}",
                       xaxis=category_axis(targets, "target position·token"), yaxis=value_axis("cross-entropy (nats)"))


def _context(tokens: list[str], last: int, width: int = 4) -> str:
    """The context ending at position `last`: its last `width` tokens, "…" if there are more."""
    start = max(0, last + 1 - width)
    span = "position 0" if last == 0 else f"positions 0–{last}"
    return ("…" if start else "") + escape("".join(tokens[start:last + 1])) + f" ({span})"

_HBAR_PX = 30  # height per horizontal bar


def _hbars(values, labels: list[str], text: list[str], customdata: list, hovertemplate: str,
           colours) -> go.Bar:
    """Horizontal bars on a numeric y axis 0..n-1 (labelled by the caller), first bar on top."""
    return go.Bar(x=values, y=list(range(len(labels))), orientation="h", marker_color=colours,
                  text=text, textposition="outside", cliponaxis=False, customdata=customdata,
                  hovertemplate=hovertemplate + "<extra></extra>")


def _hbar_xaxis(values, title: str, upto: float | None = None, **extra) -> dict:
    """A value axis from 0 (to `upto` at least: a chart drawn beside another on the same scale). Labels written
    past the ends of positive bars go into the right margin (`_text_room`); past negative ones, into room kept
    left of the longest."""
    lo, hi = min(0.0, float(np.min(values))), max(0.0, float(np.max(values)), upto or 0.0)
    span = (hi - lo) or 1.0
    return value_axis(title, range=[lo - 0.25 * span if lo < 0 else lo, hi + 0.03 * span if hi > 0 else hi], **extra)


def _text_room(texts: list[str]) -> int:
    """A right margin that holds the bar labels written past the bars' ends, whatever the chart's
    width: room kept inside the plot (20% of it) held them only where the chart was wide, and cut
    "0.000218" to "0.0002" in a half-width column of an 800 px window."""
    return int(12 + CHAR_PX * label_chars(texts))


def topk_tokens(values, labels: Sequence[str], title: str, x_title: str = "probability",
                highlight: int | None = None, subtitle: str | None = None, upto: float | None = None) -> go.Figure:
    """The top-k next tokens as horizontal bars in the order given (the first on top); `highlight`
    (an index into values, e.g. the sampled token) is drawn in vermillion, the rest in blue;
    `subtitle` says what the values are (e.g. before or after temperature and top-k); `upto`: the axis
    reaches this value at least, so that two charts side by side (before and after) share one scale."""
    values = checks.array(values, "values", "k")
    k = values.size
    labels = [escape(s) for s in checks.labels(labels, k, "labels", f"values has k = {k} entries")]
    chosen = None if highlight is None else checks.index(highlight, k, "highlight")
    colours = [VERMILLION if i == chosen else BLUE for i in range(k)]
    notes = ["<br>(chosen)" if i == chosen else "" for i in range(k)]
    texts = [f"{v:.3g}" for v in values]
    bars = _hbars(values, labels, texts, [list(z) for z in zip(labels, notes)],
                  "%{customdata[0]}<br>" + x_title + " %{x:.4g}%{customdata[1]}", colours)
    return with_layout(go.Figure(bars), title, height=clamp_height(_HBAR_PX * (k + 3)), subtitle=subtitle,
                       margin=default_margin(subtitle, l=label_px(labels, MARGIN_LEFT), r=_text_room(texts)),
                       xaxis=_hbar_xaxis(values, x_title, upto), yaxis=index_axis(labels, "next token",
                                                                                   autorange="reversed"))


PART_CHARS = 20  # a component's name on param_breakdown's axis: on two lines of at most this many characters


def _two_lines(label: str, n: int = PART_CHARS) -> str:
    """A label on at most two lines of n characters (words kept whole where they fit; cut with "…" past
    that): the axis' labels beside the bars took a phone's whole width and left the bars none."""
    words, lines = html.unescape(label).split(" "), [""]
    for word in words:
        if lines[-1] and len(lines[-1]) + 1 + len(word) > n:
            lines.append("")
        lines[-1] = (lines[-1] + " " + word).strip()
    if len(lines) > 2:
        lines = [lines[0], " ".join(lines[1:])]
    return "<br>".join(escape(line if len(line) <= n else line[: n - 1] + "…") for line in lines)


def param_breakdown(labels: Sequence[str], counts: Sequence[int], title: str, wrap: bool = True) -> go.Figure:
    """Parameter counts per component as horizontal bars, exact with thousands separators; each component's
    name on at most two lines beside its bar (hover names it whole), or on one (`wrap=False`: a chart that
    fills a projector's screen, whose rows are as tall as that leaves them)."""
    counts = checks.integers(counts, "counts")
    labels = [escape(s) for s in checks.labels(labels, len(counts), "labels", f"counts has {len(counts)} entries")]
    total = sum(counts)
    shares = [f"{c / total:.1%}" if total else "0%" for c in counts]
    texts = [f"{c:,}" for c in counts]
    bars = _hbars(counts, labels, texts, [list(z) for z in zip(labels, shares)],
                  "%{customdata[0]}<br>%{text} parameters<br>%{customdata[1]} of the total", BLUE)
    subtitle = f"total {total:,}"
    shown = [_two_lines(label) for label in labels] if wrap else labels
    row_px = _HBAR_PX + (10 if any("<br>" in label for label in shown) else 0)  # two lines need 34 px
    return with_layout(go.Figure(bars), title, height=max(200, row_px * (len(counts) + 4)), subtitle=subtitle,
                       margin=default_margin(subtitle, l=label_px([max(x.split("<br>"), key=len) for x in shown],
                                                                  MARGIN_LEFT), r=_text_room(texts)),
                       # each bar writes its exact count: the axis' own numbers (1×10⁶) add nothing, and in a
                       # phone's window they overlapped under the bars
                       xaxis=_hbar_xaxis(counts, "parameters", showticklabels=False),
                       yaxis=index_axis(shown, "component", autorange="reversed"))
