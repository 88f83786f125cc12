"""Attention figures: one head's pattern, every head of a block, and one head's scores, pattern
and output norm side by side; the token view of one query's lines to the keys it reads."""

import math
from collections.abc import Sequence

import numpy as np
from plotly.graph_objects import Figure

from . import checks
from .axes import (
    DIVERGING,
    GREYS,
    MASKED_GREY,
    SEQUENTIAL,
    SUBTITLE_PX,
    TICK_PX,
    VERMILLION,
    across_axis,
    category_axis,
    escape,
    figure,
    figure_layout,
    fixed_margins,
    position_labels,
    token_axis,
    top_margin,
)
from .heatmaps import (
    MASK_EDGE,
    MASK_VEIL,
    NARROWEST_PX,
    PHONE_PLOT_PX,
    annotate,
    colorscale,
    future_zeros,
    heatmap,
    mask_cover,
    mask_edge,
    mask_path,
)

MAX_GRID_CELLS = 4_000_000  # heads_grid: nh*T*L above this would ship tens of MB to the browser

# One heatmap trace per map, every cell's true value in it; masked cells are covered by a shape
# (one SVG path of row runs), which costs the browser a fraction of a second trace of T x L cells.
_CELL = "query %{y}<br>key %{x}<br>"

# attention_maps' panels (parts of the width): the scores and their colour bar, then the pattern
# with the ‖z‖ strip beside its rows, and their two colour bars stacked at the right edge
SCORES, PATTERN, NORMS = (0.0, 0.36), (0.50, 0.83), (0.85, 0.885)

MASKED_NOTE = "grey: masked (a future key), probability exactly 0"
MARK_LINE = dict(color="#d62728", width=2)  # outlined cells: where a head is expected to look

CLICK_CELLS = 64 * 64  # attention_maps' clickable overlay: one invisible marker a cell of each map, up to this
# many cells (a map of 128 x 128 would put 32,768 markers in the page, drawn on every change of view)

MIN_PLOT_PX = 160  # plot height of a heatmap at least: its colour bar is as tall
MIN_MAPS_PX = 280  # attention_maps' plot height at least: two colour bars share it


def _attention_axes(T: int, L: int, query_tokens, key_tokens, query_offset) -> tuple[list, list]:
    """(query labels, key labels) after checking counts and that queries fall within the keys."""
    query_offset = checks.integer(query_offset, "query_offset", 0)
    if query_offset + T > L:
        raise ValueError(f"query_offset + T must be <= L (query i sits at key position "
                         f"query_offset + i): got {query_offset} + {T} > {L}")
    queries = checks.labels(query_tokens, T, "query_tokens", f"the pattern has T = {T} query rows")
    keys = checks.labels(key_tokens, L, "key_tokens", f"the pattern has L = {L} key columns")
    return position_labels(queries, query_offset), position_labels(keys)


def pointed_cells(pattern: np.ndarray, query_offset: int, marks=()) -> tuple[set[int], set[int]]:
    """(keys, query rows) whose labels a long pattern [T, L] keeps: the last query (the one a
    decode step or a prediction is about), the key it gives the most weight (its argmax), in decode
    the new token's own key, and the cells `marks` outlines (query positions absolute)."""
    T, L = pattern.shape
    keys, rows = {int(np.argmax(pattern[-1]))}, {T - 1}
    if T == 1:
        keys.add(L - 1)
    for q, k in marks:
        if 0 <= q - query_offset < T and 0 <= k < L:
            rows.add(q - query_offset)
            keys.add(k)
    return keys, rows


def _token_axes(xlabels: list[str], ylabels: list[str], top: int, plot_px: int, max_height: int,
                pointed: tuple[set[int], set[int]]) -> tuple[dict, dict, dict, int]:
    """(xaxis, yaxis, margin, height) of a key x query heatmap: the keys as many as the window's width
    has room for (across_axis), the queries every one up to LABEL_ALL (kept_labels beyond, with the
    pointed rows), their font sized for the plot height left under max_height."""
    xaxis = across_axis(xlabels, "key")
    rough = fixed_margins(xaxis, category_axis(ylabels, "query"), top, xlabels, ylabels)[2]
    plot_px = min(plot_px, max_height - rough["t"] - rough["b"])
    yaxis = token_axis(ylabels, "query", plot_px, pointed[1], autorange="reversed")
    xaxis, yaxis, margin = fixed_margins(xaxis, yaxis, top, xlabels, ylabels)
    return xaxis, yaxis, margin, margin["t"] + margin["b"] + plot_px


def _heatmap_layout(title: str, ylabels: list[str], xlabels: list[str],
                    pointed: tuple[set[int], set[int]], subtitle: str | None = None, **extra) -> dict:
    # at least MIN_PLOT_PX of plot, so that a decode row's colour bar stays readable
    xaxis, yaxis, margin, height = _token_axes(xlabels, ylabels, top_margin(subtitle),
                                               max(MIN_PLOT_PX, 20 * len(ylabels)), 560, pointed)
    return figure_layout(title, height=height, subtitle=subtitle, xaxis=xaxis, yaxis=yaxis, margin=margin, **extra)


def attention_heatmap(pattern, query_tokens: Sequence[str], key_tokens: Sequence[str], title: str,
                      query_offset: int = 0, share: float = 1.0) -> Figure:
    """One head's attention pattern [T, L]: rows are queries (absolute positions query_offset + i),
    columns keys 0..L-1, colour the probability on a fixed 0-1 scale. FULL: T = L, offset 0.
    DECODE: T = 1, L = P + 1, query_offset = P. Masked cells (future keys, exactly 0) are covered
    in grey; their hover still says 0. `share`: the part of the page's width the chart gets (0.5
    in one of two columns), for writing values into cells only where they fit."""
    pattern = checks.array(pattern, "pattern", "T, L")
    T, L = pattern.shape
    ylabels, xlabels = _attention_axes(T, L, query_tokens, key_tokens, query_offset)
    probs = heatmap(pattern, xlabels, ylabels, _CELL + "attention %{z:.3f}", colorscale=colorscale(SEQUENTIAL),
                    zmin=0, zmax=1, colorbar=dict(title=dict(text="p"), thickness=14))
    annotate(probs, T, L, min(share * NARROWEST_PX, PHONE_PLOT_PX))  # a phone stacks columns
    cover = mask_cover(mask_path(future_zeros(pattern, query_offset)), fillcolor=MASKED_GREY)
    return figure([probs], _heatmap_layout(title, ylabels, xlabels, pointed_cells(pattern, query_offset),
                                           subtitle=MASKED_NOTE if cover else None,
                                           **({"shapes": cover} if cover else {})))


def heads_grid(patterns, tokens_q: Sequence[str], tokens_k: Sequence[str], title: str,
               max_cols: int = 4, query_offset: int = 0) -> Figure:
    """Every head's pattern [nh, T, L] on one shared 0-1 colour scale: up to max_cols columns, each
    one heatmap of its heads stacked (head h in column h // rows), separated by white lines; the
    y axis names the heads, hover names head, query, key and probability. At most MAX_GRID_CELLS
    cells: for long texts pass the last n queries, patterns[:, -n:], tokens_q[-n:], with
    query_offset = T - n."""
    patterns = checks.array(patterns, "patterns", "nh, T, L")
    nh, T, L = patterns.shape
    if patterns.size > MAX_GRID_CELLS:
        raise ValueError(f"heads_grid would draw nh*T*L = {patterns.size:,} cells, more than "
                         f"{MAX_GRID_CELLS:,}: pass fewer query rows (patterns[:, -n:], "
                         f"tokens_q[-n:], query_offset=T - n)")
    ylabels, xlabels = _attention_axes(T, L, tokens_q, tokens_k, query_offset)
    cols = min(checks.integer(max_cols, "max_cols", 1), nh)
    rows = math.ceil(nh / cols)  # heads per column
    cols = math.ceil(nh / rows)
    masked = [future_zeros(p, query_offset) for p in patterns]
    data, layout = [], dict(shapes=[])
    gap = 0.1  # of the width, between columns: room for the next column's "h11" labels at 800 px
    width = (1 - gap * (cols - 1)) / cols if cols > 1 else 1.0  # every column as wide: its cells the same shape
    for c in range(cols):
        heads = range(c * rows, min(nh, (c + 1) * rows))
        s = "" if c == 0 else str(c + 1)
        y = [f"head {h} · {label}" for h in heads for label in ylabels]
        named = f"heads {heads.start} to {heads.stop - 1}" if len(heads) > 1 else f"head {heads.start}"
        data.append(heatmap(patterns[heads.start: heads.stop].reshape(-1, L), xlabels, y,
                            "%{y}<br>key %{x}<br>attention %{z:.3f}", coloraxis="coloraxis",
                            xaxis=f"x{s}", yaxis=f"y{s}", name=named))  # the column, as the chart's sentence calls it
        middle = [y[r * T + T // 2] for r in range(len(heads))]
        xaxis, yaxis, margin = fixed_margins(
            # the browser thins its keys: a column a quarter of the width has no room for 13 px labels of
            # every key, and a smaller type is too small for the back row
            category_axis(xlabels, "key"),
            # "h3", as the diagram's boxes: "head 3" did not fit the gap between columns in an 800 px
            # window and hid under the column to its left
            dict(type="category", tickmode="array", tickvals=middle, ticktext=[f"h{h}" for h in heads],
                 tickfont=dict(size=TICK_PX), range=[rows * T - 0.5, -0.5]), top_margin("subtitle"), xlabels, y)
        left = c * (width + gap)
        layout[f"xaxis{s}"] = dict(xaxis, anchor=f"y{s}", domain=[left, min(1.0, left + width)])
        layout[f"yaxis{s}"] = dict(yaxis, anchor=f"x{s}")
        path = "".join(mask_path(masked[h], r * T) for r, h in enumerate(heads))
        layout["shapes"] += mask_cover(path, f"x{s}", f"y{s}", fillcolor=MASKED_GREY)
        layout["shapes"] += [dict(type="line", xref=f"x{s} domain", yref=f"y{s}", x0=0, x1=1, y0=r * T - 0.5,
                                  y1=r * T - 0.5, line=dict(color="white", width=3)) for r in range(1, len(heads))]
    row_px = max(min(170, 70 + 12 * T), 120 if rows == 1 else 0)  # one row (decode): room for the colour bar
    if not layout["shapes"]:
        del layout["shapes"]  # as plotly.py's checks leave an empty list
    return figure(data, dict(layout, **figure_layout(
        title, height=margin["t"] + margin["b"] + rows * row_px, margin=margin,
        subtitle=MASKED_NOTE if any(m.any() for m in masked) else None,
        coloraxis=dict(colorscale=colorscale(SEQUENTIAL), cmin=0, cmax=1,
                       colorbar=dict(title=dict(text="p"), thickness=14, len=1, lenmode="fraction")))))


def attention_maps(scores, pattern, z_norms, query_tokens: Sequence[str], key_tokens: Sequence[str],
                   title: str, query_offset: int = 0, mask=None, marks=(), marks_note: str = "",
                   clickable: bool = False) -> Figure:
    """One head, one figure, one row per query: the raw scores q·k/sqrt(dh) [T, L] (diverging,
    centred on 0, range set by the cells `mask` keeps; masked cells faded (MASK_VEIL), their hover
    keeps the score), the softmax pattern [T, L] (0-1; masked cells, exactly 0, in grey) and the
    norm of the head's output z for each query [T] (a strip beside the pattern). One figure rather
    than three: each Plotly chart costs the browser a fixed part of a redraw. `marks`: (query
    position, key) cells to outline on the pattern (query positions absolute, as query_offset
    counts them; cells outside the rows drawn are left out), said in the subtitle by `marks_note`."""
    scores, pattern = checks.array(scores, "scores", "T, L"), checks.array(pattern, "pattern", "T, L")
    z_norms = checks.array(z_norms, "z_norms", "T")
    T, L = scores.shape
    if pattern.shape != scores.shape or z_norms.shape != (T,):
        raise ValueError(f"scores {scores.shape}, pattern {pattern.shape} and z_norms {z_norms.shape} "
                         f"must be [T, L], [T, L] and [T]")
    ylabels, xlabels = _attention_axes(T, L, query_tokens, key_tokens, query_offset)
    mask = np.zeros((T, L), dtype=bool) if mask is None else checks.mask(mask, scores.shape)
    kept_cells = scores[~mask] if (~mask).any() else scores
    bound = float(np.abs(kept_cells).max()) or 1.0  # symmetric around 0; 1 if all scores are 0
    traces = [
        heatmap(scores, xlabels, ylabels, _CELL + "score %{z:.3f}", coloraxis="coloraxis"),
        heatmap(pattern, xlabels, ylabels, _CELL + "attention %{z:.3f}", coloraxis="coloraxis2", xaxis="x2"),
        heatmap(z_norms[:, None], ["‖z‖"], ylabels, "query %{y}<br>‖z‖₂ = ‖H_h‖₂ = %{z:.4g}",
                coloraxis="coloraxis3",
                xaxis="x3"),
    ]
    kept = (~mask).sum(1)  # [T]: each query's unmasked keys; a causal mask keeps a row's first ones
    if mask.any() and np.array_equal(mask, np.arange(L)[None, :] >= kept[:, None]):
        traces[0]["meta"] = {"kept_per_row": kept.tolist()}  # its sentence reads these alone (chart_text)
    for trace, ((left, right), chars) in zip(traces, [(SCORES, 5), (PATTERN, 4)]):  # scores may be "-0.04"
        annotate(trace, T, L, (right - left) * PHONE_PLOT_PX, chars)
    if clickable and T * L <= CLICK_CELLS:
        traces += [cell_markers(scores, xlabels, ylabels, "x", "score"),
                   cell_markers(pattern, xlabels, ylabels, "x2", "attention")]
    veil = mask_cover(mask_path(mask), **MASK_VEIL)
    if veil and (edge := mask_edge(mask)):
        veil.append(dict(type="path", path=edge, xref="x", yref="y", line=MASK_EDGE, layer="above"))
    grey = mask_cover(mask_path(future_zeros(pattern, query_offset)), "x2", fillcolor=MASKED_GREY)
    # the title, a subtitle when something is veiled, then the panels' own titles above them
    outlined = _outlines(marks, query_offset, T, L)
    top = top_margin("subtitle") + (SUBTITLE_PX + 12 if veil or grey or outlined else 0)  # panel titles under the title
    # in decode (one query row) too, the two stacked colour bars are MIN_MAPS_PX * 0.47 px tall each
    pointed = pointed_cells(pattern, query_offset, marks)
    xaxis, yaxis, margin, height = _token_axes(xlabels, ylabels, top, max(MIN_MAPS_PX, 20 * T), 600, pointed)
    # three panels, each with its colour bar to its right: short panel titles, so that nothing
    # overlaps in an 800 px window; what the veils mean goes into the subtitle
    bar = dict(thickness=12, xanchor="left", xpad=2, ypad=0, nticks=4, tickfont=dict(size=TICK_PX),
               title=dict(side="top"))
    panels = {"xaxis": (xaxis, SCORES), "xaxis2": (xaxis, PATTERN),
              "xaxis3": (dict(type="category", automargin=False, showticklabels=False), NORMS)}
    layout = {name: dict(axis, domain=list(domain), anchor="y") for name, (axis, domain) in panels.items()}
    edge = NORMS[1] + 0.02
    for name, scale, limits, (x, y, length), text in [
            ("coloraxis", DIVERGING, (-bound, bound), (SCORES[1] + 0.01, 0.42, 0.85), "score"),
            ("coloraxis2", SEQUENTIAL, (0, 1), (edge, 0.76, 0.47), "p"),
            ("coloraxis3", GREYS, (0, float(z_norms.max()) or 1.0), (edge, 0.235, 0.47), "‖z‖")]:
        layout[name] = dict(colorscale=colorscale(scale), cmin=limits[0], cmax=limits[1],
                            colorbar=dict(bar, x=x, y=y, len=length, title=dict(bar["title"], text=text)))
    # as short as a panel in a phone's window (60 px) holds: the colour bars say what the colours are
    notes = [("scores", SCORES[0]), ("pattern", PATTERN[0]), ("‖z‖", NORMS[0])]
    layout["annotations"] = [dict(text=escape(text), x=x, xref="paper", xanchor="left", y=1.0, yref="paper",
                                  yanchor="bottom", showarrow=False, font=dict(size=SUBTITLE_PX))
                             for text, x in notes]
    overlaid = [what for what, shown in [("faded: masked, −∞ before the softmax", veil),
                                         ("grey: masked, exactly 0", grey)] if shown]
    if outlined:
        overlaid.append(marks_note or "outlined: marked cells")
    if veil or grey or outlined:
        layout["shapes"] = veil + grey + outlined
    if len(traces) > 3:  # a click anywhere in a cell reaches its marker, whatever the cell's size
        layout["hoverdistance"] = -1
    return figure(traces, dict(layout, **figure_layout(
        title, height=height, subtitle=" · ".join(overlaid) or None,
        margin=dict(margin, r=56),
        yaxis=yaxis)))


def cell_markers(values: np.ndarray, xlabels: list[str], ylabels: list[str], xaxis: str, what: str) -> dict:
    """One invisible, selectable marker at the centre of each cell of a [T, L] map on axes (xaxis, y),
    customdata [i, j, value]: what a click on a cell selects, as Streamlit's on_select reports it."""
    T, L = values.shape
    rows, cols = np.divmod(np.arange(T * L), L)
    hidden = dict(marker=dict(opacity=0))
    cells = [[int(i), int(j), float(v)] for i, j, v in zip(rows, cols, values.ravel())]
    return dict(type="scatter", mode="markers", x=[xlabels[j] for j in cols], y=[ylabels[i] for i in rows],
                xaxis=xaxis, yaxis="y", showlegend=False, marker=dict(size=10, opacity=0), selected=hidden,
                unselected=hidden, customdata=cells,
                hovertemplate=_CELL + what + " %{customdata[2]:.3f}<extra></extra>")


def _outlines(marks, query_offset: int, T: int, L: int) -> list[dict]:
    """One outline rectangle per marked (query position, key) cell of the pattern panel in the rows drawn."""
    cells = [(q - query_offset, k) for q, k in marks if 0 <= q - query_offset < T and 0 <= k < L]
    return [dict(type="rect", xref="x2", yref="y", x0=k - 0.5, x1=k + 0.5, y0=i - 0.5, y1=i + 0.5,
                 line=MARK_LINE, layer="above") for i, k in cells]


LINES_ROW_PX = 22  # token_lines: height of one token's row


def token_lines(weights, query_tokens: Sequence[str], key_tokens: Sequence[str], query: int, title: str,
                query_offset: int = 0) -> Figure:
    """The token view of BertViz and CircuitsVis for one query: the queries on the left, the keys on the
    right, and a line from query `query` (an index into query_tokens) to every key it reads, as thick
    and as opaque as the weight it gives that key. `weights` [L]: the query's row of the pattern."""
    w = checks.array(weights, "weights", "L")
    L = w.size
    keys = checks.labels(key_tokens, L, "key_tokens", f"weights has L = {L} entries")
    queries = list(query_tokens)
    i = checks.index(query, len(queries), "query")
    n = max(L, len(queries))
    y_q, y_k = np.arange(len(queries)) + query_offset, np.arange(L)  # absolute positions, top to bottom
    lines = [dict(type="scatter", x=[0, 1], y=[y_q[i], y_k[j]], mode="lines", hoverinfo="skip", showlegend=False,
                  line=dict(color=VERMILLION, width=0.5 + 9 * float(w[j])), opacity=0.15 + 0.85 * float(w[j]))
             for j in range(L) if w[j] > 0]
    words = [dict(type="scatter", x=[0] * len(queries), y=y_q, mode="text", text=[escape(t) for t in queries],
                  textposition="middle left", showlegend=False, hoverinfo="skip", textfont=dict(size=TICK_PX)),
             dict(type="scatter", x=[0], y=[y_q[i]], mode="markers", showlegend=False, hoverinfo="skip",
                  marker=dict(size=9, color=VERMILLION)),  # the query whose lines are drawn
             dict(type="scatter", x=[1] * L, y=y_k, mode="text+markers", text=[escape(t) for t in keys],
                  textposition="middle right", showlegend=False, marker=dict(size=4, color=MASKED_GREY),
                  textfont=dict(size=TICK_PX),
                  customdata=w, hovertemplate="key %{y}: %{text}<br>weight %{customdata:.3f}<extra></extra>")]
    axis = dict(visible=False, range=[-0.8, 1.8])
    return figure(lines + words, figure_layout(title, height=min(900, 120 + LINES_ROW_PX * n), xaxis=axis,
                                               yaxis=dict(visible=False, autorange="reversed")))
