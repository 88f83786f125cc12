"""The class vote's spread: the count per choice in each round side by side, or a histogram of the
numbers given; after the reveal, the right answer marked in words on its label (and by a line for a
number), never by colour alone."""

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from .axes import BLUE, VERMILLION, default_margin, escape, value_axis, with_layout

ROUND_COLOURS = (BLUE, VERMILLION)  # the first vote, the second (Okabe-Ito: apart under colour blindness)
HEIGHT = 360  # under the question on the first screen of a 1280x720 projector
BINS = 12
FONT_PX = 16  # the choices and counts, read from the back of a room
WRAP = 22  # characters of a choice per line (a choice has at most 80)


def wrapped(text: str, width: int = WRAP) -> str:
    """A choice on lines of about `width` characters, broken at spaces (<br>), whole: never cut."""
    lines, line = [], ""
    for word in text.split(" "):
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return "<br>".join([*lines, line])


def choice_spread(choices: Sequence[str], rounds: Sequence[Sequence[int]], answer: int | None,
                  title: str = "The class's answers") -> go.Figure:
    """Counts per choice, one group of bars per choice, a bar per round; `answer` (after the reveal) adds
    "✓ " before that choice's label."""
    labels = [wrapped(("✓ " if i == answer else "") + escape(c)) for i, c in enumerate(choices)]
    fig = go.Figure()
    for r, counts in enumerate(rounds):
        total = sum(counts) or 1
        fig.add_bar(x=labels, y=list(counts), name=f"vote {r + 1}", marker_color=ROUND_COLOURS[r % 2],
                    text=[f"{c} ({100 * c / total:.0f}%)" for c in counts], textposition="outside",
                    textfont=dict(size=FONT_PX),
                    hovertemplate="%{x}: %{y} answers<extra>vote " + str(r + 1) + "</extra>")
    top = max((max(c) for c in rounds if len(c)), default=0)
    return with_layout(fig, title, HEIGHT, xaxis=dict(type="category", title=dict(text="choice"), automargin=True,
                                                      tickfont=dict(size=FONT_PX)),
                       yaxis=value_axis("answers", rangemode="tozero", range=[0, max(1, top) * 1.25],
                                        dtick=max(1, round(top / 5))),
                       barmode="group", showlegend=len(rounds) > 1, margin=default_margin())


def number_spread(rounds: Sequence[Sequence[float]], answer: float | None,
                  title: str = "The class's answers") -> go.Figure:
    """A histogram of the numbers given, a colour per round; after the reveal a line at the answer."""
    values = [v for r in rounds for v in r]
    lo, hi = (min(values), max(values)) if values else (0.0, 1.0)
    if answer is not None:
        lo, hi = min(lo, answer), max(hi, answer)
    edges = np.linspace(lo, hi if hi > lo else lo + 1, BINS + 1)
    fig = go.Figure()
    for r, vals in enumerate(rounds):
        counts, _ = np.histogram(vals, bins=edges)
        fig.add_bar(x=(edges[:-1] + edges[1:]) / 2, y=counts, width=float(edges[1] - edges[0]) * 0.9,
                    name=f"vote {r + 1}", marker_color=ROUND_COLOURS[r % 2], opacity=0.8,
                    hovertemplate="about %{x:,.4g}: %{y} answers<extra>vote " + str(r + 1) + "</extra>")
    if answer is not None:
        fig.add_vline(x=answer, line_dash="dash", line_color="#2F2D2B",
                      annotation_text=f"right answer {answer:,.15g}", annotation_position="top")
    return with_layout(fig, title, HEIGHT, xaxis=value_axis("the number given"),
                       yaxis=value_axis("answers", rangemode="tozero"), barmode="overlay",
                       showlegend=len(rounds) > 1, margin=default_margin())
