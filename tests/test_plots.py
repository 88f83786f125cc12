"""Figure builders: the attributes that carry meaning (trace types, z shapes, axis titles, tick and
hover labels, colour ranges, highlight colours) and the ValueErrors for bad input. No snapshots."""

import ast
import html
import json
import math
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest
import torch
import torch.nn.functional as F

from gpt2viz import plots

TOKENS = ["The", "␣cat", "␣saw", "␣the", "␣the", "<br>"]  # a repeat, and one that looks like HTML
T = len(TOKENS)


def causal_pattern(T: int, L: int, seed: int = 0) -> np.ndarray:
    """Softmax rows with the lower-right causal mask: exact zeros on future keys."""
    scores = np.random.default_rng(seed).normal(size=(T, L))
    scores[np.arange(L)[None, :] > (L - T) + np.arange(T)[:, None]] = -np.inf
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def colorscale(name: str):
    return go.Heatmap(colorscale=name).colorscale


def titles(fig: go.Figure) -> tuple[str, str]:
    return fig.layout.xaxis.title.text, fig.layout.yaxis.title.text


def test_package_imports_neither_streamlit_nor_torch():
    """No module of the package imports them, nor anything of gpt2viz outside it but costs (which
    imports only the config)."""
    for path in Path(plots.__file__).parent.glob("*.py"):
        tree = ast.parse(path.read_text())
        imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        imported |= {"." * node.level + (node.module or "") for node in ast.walk(tree)
                     if isinstance(node, ast.ImportFrom)}
        assert not {name.split(".")[0] for name in imported} & {"streamlit", "torch"}, path.name
        assert {name for name in imported if name.startswith("..")} <= {"..spec.costs"}, path.name


# ---------------------------------------------------------------------------- attention
def covered_cells(shape: dict, T: int, L: int, row_offset: int = 0) -> np.ndarray:
    """The cells [T, L] whose centres a path shape of axis-aligned rectangles covers."""
    import re
    covered = np.zeros((T, L), dtype=bool)
    for x0, y0, x1, y1 in re.findall(r"M([-\d.]+),([-\d.]+)H([-\d.]+)V([-\d.]+)H[-\d.]+Z", shape.path):
        rows = np.arange(T) + row_offset
        cols = np.arange(L)
        covered |= (((rows > float(y0)) & (rows < float(y1)))[:, None]
                    & ((cols > min(float(x0), float(x1))) & (cols < max(float(x0), float(x1))))[None, :])
    return covered


def test_attention_heatmap_full():
    pattern = causal_pattern(T, T)
    fig = plots.attention_heatmap(pattern, TOKENS, TOKENS, "head 0")
    (probs,) = fig.data
    assert probs.type == "heatmap" and np.array_equal(probs.z, pattern.astype(np.float32))  # every true value
    assert (probs.zmin, probs.zmax) == (0, 1) and probs.colorscale == colorscale(plots.SEQUENTIAL)
    assert titles(fig) == ("key", "query") and fig.layout.yaxis.autorange == "reversed"
    # repeated tokens stay apart: position·token, HTML escaped
    assert list(probs.x) == ["0·The", "1·␣cat", "2·␣saw", "3·␣the", "4·␣the", "5·&lt;br&gt;"]
    assert list(probs.y) == list(probs.x) and len(set(probs.x)) == T
    assert all(part in probs.hovertemplate for part in ("%{x}", "%{y}", "%{z:.3f}"))
    assert probs.texttemplate == "%{z:.2f}"  # short: values written in the cells
    (cover,) = fig.layout.shapes  # the future keys, covered in grey
    future = np.triu(np.ones((T, T), dtype=bool), k=1)
    assert np.array_equal(covered_cells(cover, T, T), future)
    assert cover.fillcolor == plots.MASKED_GREY and cover.layer == "above"
    assert "masked" in fig.layout.title.subtitle.text


@pytest.mark.parametrize("L", [4, 10, 16])
def test_cell_values_are_written_only_where_they_fit_a_phones_window(L):
    """Cell numbers readable or not written, never clipped or overlapping, in an 800 px window (half of it in
    one of two columns) and a phone's (where columns stack)."""
    pattern, scores = causal_pattern(L, L), np.random.default_rng(0).normal(size=(L, L))
    tokens = [f"t{i}" for i in range(L)]
    from gpt2viz.plots.heatmaps import CELL_CHAR_PX, NARROWEST_PX, PHONE_PLOT_PX

    fits = {share: min(share * NARROWEST_PX, PHONE_PLOT_PX) / L >= 4 * CELL_CHAR_PX + 6 for share in (1.0, 0.5)}
    for share, fit in fits.items():
        fig = plots.attention_heatmap(pattern, tokens, tokens, "h", share=share)
        assert (fig.data[0].texttemplate is not None) == fit
        assert not fit or fig.data[0].textfont.size >= 11  # readable, or not written
    maps = plots.attention_maps(scores, pattern, np.ones(L), tokens, tokens, "m")
    for trace, axis, chars in [(maps.data[0], maps.layout.xaxis, 5), (maps.data[1], maps.layout.xaxis2, 4)]:
        width = (axis.domain[1] - axis.domain[0]) * PHONE_PLOT_PX
        assert (trace.texttemplate is not None) == (width / L >= chars * CELL_CHAR_PX + 6)


def test_mask_path_covers_exactly_the_masked_cells():
    rng = np.random.default_rng(1)
    for _ in range(20):
        mask = rng.random((7, 9)) < 0.4
        path = plots.mask_path(mask, row_offset=3)
        assert np.array_equal(covered_cells(go.layout.Shape(type="path", path=path), 7, 9, row_offset=3), mask)
    assert plots.mask_path(np.zeros((3, 3), dtype=bool)) == ""


def test_attention_heatmap_decode_row_sits_at_position_P():
    P = 5
    fig = plots.attention_heatmap(causal_pattern(1, P + 1), ["␣dog"], TOKENS, "decode", query_offset=P)
    assert len(fig.data) == 1 and not fig.layout.shapes  # a decode query reads every key: nothing masked
    assert fig.data[0].z.shape == (1, P + 1) and list(fig.data[0].y) == ["5·␣dog"]


def test_attention_heatmap_long_sequence_keeps_the_rows_it_points_at_and_is_unannotated():
    """Beyond 32 tokens about 20 row labels, always with the last query; the keys left to the browser
    (as many as the window's width has room for, upright when they do not fit flat); no value written in
    cells."""
    n = 300
    tokens = [f"␣w{i}" for i in range(n)]
    pattern = causal_pattern(n, n)
    pattern[-1] = 0
    pattern[-1, 137] = 1
    fig = plots.attention_heatmap(pattern, tokens, tokens, "long")
    assert fig.data[0].texttemplate is None
    labels = plots.position_labels(tokens)
    assert labels[-1] in fig.layout.yaxis.tickvals
    assert fig.layout.yaxis.tickmode == "array" and len(fig.layout.yaxis.tickvals) <= plots.LABEL_THINNED + 2
    assert fig.layout.xaxis.tickmode == "auto" and fig.layout.xaxis.tickvals is None
    for axis in (fig.layout.xaxis, fig.layout.yaxis):
        assert axis.autotickangles == (0, -90)  # upright when they do not fit flat
    assert fig.layout.height <= 560


def category_axes(fig: go.Figure) -> list:
    return [fig.layout[name] for name in fig.layout if name.startswith(("xaxis", "yaxis"))
            and fig.layout[name].type == "category" and fig.layout[name].tickmode != "array"
            and fig.layout[name].showticklabels is not False]


def token_axes(fig: go.Figure) -> list:
    return [fig.layout[name] for name in fig.layout if name.startswith(("xaxis", "yaxis"))
            and fig.layout[name].type == "category" and fig.layout[name].tickmode == "array"
            and not str(fig.layout[name].ticktext[0]).startswith("h")]


@pytest.mark.parametrize("n", [6, 12, 32])
def test_every_query_of_a_heatmap_is_labelled_up_to_32_tokens_and_its_keys_fit_the_window(n):
    """Up to 32 tokens each query has its label (none dropped): shrunk to fit, never below 8 px, 13 px
    where the height has room. The keys (and the lens' positions) are as many as the window's width has
    room for, at 13 px (plotly's thinning): a fixed array of them overlapped in a phone's window."""
    tokens = [f"␣word{i}" for i in range(n)]
    pattern = causal_pattern(n, n)
    figures = [plots.attention_heatmap(pattern, tokens, tokens, "a"),
               plots.attention_heatmap(pattern[-1:], tokens[-1:], tokens, "d", query_offset=n - 1, share=0.5),
               plots.attention_maps(pattern, pattern, pattern[0], tokens, tokens, "m"),
               plots.lens_heatmap(np.full((3, n), 0.5), [["␣x"] * n] * 3, np.zeros((3, n)), list("abc"), tokens, "l")]
    for fig in figures:
        rows = token_axes(fig)
        if fig.layout.title.text != "l":
            assert rows == [fig.layout.yaxis], fig.layout.title.text
            assert len(fig.layout.yaxis.tickvals) == len(fig.data[0].y)
            assert plots.MIN_LABEL_PX <= fig.layout.yaxis.tickfont.size <= 13
        assert fig.layout.xaxis.tickmode == "auto" and not fig.layout.xaxis.nticks
        assert fig.layout.xaxis.tickvals is None and fig.layout.xaxis.tickfont.size == 13
    if n <= 12:
        assert plots.attention_heatmap(pattern, tokens, tokens, "a").layout.yaxis.tickfont.size == 13


def test_a_chart_that_fills_a_screen_leaves_its_rows_to_the_browser():
    """Presented, the first chart is as tall as the screen: its query rows at 13 px (times the
    presentation's scale), as many as fit, not shrunk for the smallest screen (7 px at 1920 x 1080)."""
    tokens = [f"␣word{i}" for i in range(10)]
    pattern = causal_pattern(10, 10)
    fig = plots.fit_rows(plots.attention_maps(pattern, pattern, pattern[0], tokens, tokens, "m"))
    assert fig.layout.yaxis.tickmode == "auto" and fig.layout.yaxis.tickvals is None
    assert fig.layout.yaxis.tickfont.size == 13
    grid = plots.heads_grid(np.stack([pattern] * 4), tokens, tokens, "g")
    before = grid.layout.yaxis.ticktext
    assert plots.fit_rows(grid).layout.yaxis.ticktext == before  # the grid names its heads, not its rows


def test_the_lens_writes_each_cells_token_cut_to_what_it_holds():
    tokens = [f"␣t{i}" for i in range(12)]
    fig = plots.lens_heatmap(np.full((3, 12), 0.5), [["␣everything"] * 12] * 3, np.zeros((3, 12)),
                             ["a", "b", "c"], tokens, "lens")
    assert list(fig.data[0].x) == plots.position_labels(tokens)  # hover names each; the browser writes what fits
    assert all(cell.endswith("…") and 2 <= len(cell) <= 5 for row in fig.data[0].text for cell in row)
    wide = plots.lens_heatmap(np.full((3, 200), 0.5), [["␣x"] * 200] * 3, np.zeros((3, 200)), ["a", "b", "c"],
                              ["␣t"] * 200, "lens")
    assert wide.data[0].text is None  # 2 px cells hold nothing


def test_every_other_token_axis_leaves_its_labels_to_the_browser():
    """Axes of positions or parts beside the heatmaps, and the keys of the grid of every head (a quarter of the
    width each): plotly's own thinning (tickmode auto, no count),
    long labels cut by an alias, whatever the length of the text."""
    for n in (6, 300):
        tokens = [f"␣word{i}" for i in range(n)]
        pattern = causal_pattern(n, n)
        figures = [plots.heads_grid(np.stack([pattern[-4:]] * 3), tokens[-4:], tokens, "g", query_offset=n - 4),
                   plots.position_norms(pattern, tokens, "n"), plots.loss_per_token(pattern[0, :-1], tokens, "l"),
                   plots.residual_norms(pattern[:3], DEPTH, tokens, "r"),
                   plots.matrix_heatmap(np.ones((2, n)), ["a", "b"], [str(i) for i in range(n)], "h", "v"),
                   plots.depth_bars(np.ones(n), [f"block {i} in" for i in range(n)], "d", "norm")]
        for fig in figures:
            axes = category_axes(fig)
            assert axes, fig.layout.title.text
            for axis in axes:
                assert axis.tickmode == "auto" and not axis.nticks and axis.tickvals is None, fig.layout.title.text
                assert axis.autotickangles == plots.TICK_ANGLES and axis.tickfont.size >= 13


@pytest.mark.parametrize("T, L", [(1, 6), (6, 6)])
def test_colour_bars_are_tall_enough_to_read(T, L):
    """Colour bars were about 60 px tall; at least 100 px of bar now, in decode too."""
    pattern = causal_pattern(T, L)
    q, k = TOKENS[L - T:L], TOKENS[:L]
    heat = plots.attention_heatmap(pattern, q, k, "h", query_offset=L - T)
    maps = plots.attention_maps(pattern, pattern, pattern[:, 0], q, k, "m", query_offset=L - T)

    def plot_px(fig):
        return fig.layout.height - fig.layout.margin.t - fig.layout.margin.b

    assert plot_px(heat) * (heat.data[0].colorbar.len or 1) >= 100
    for name in ("coloraxis", "coloraxis2", "coloraxis3"):
        assert plot_px(maps) * maps.layout[name].colorbar.len >= 100, name


def test_attention_heatmap_only_masks_exact_zeros_in_the_future():
    pattern = np.full((3, 3), 1 / 3)  # not causal: no cell is masked
    assert not plots.attention_heatmap(pattern, ["a"] * 3, ["a"] * 3, "t").layout.shapes


@pytest.mark.parametrize("args, message", [
    ((np.ones(3), ["a"], ["a"]), r"pattern must be 2-D \[T, L\], got shape \(3,\)"),
    ((np.ones((2, 3)), ["a"], ["a"] * 3), "query_tokens has 1 labels but the pattern has T = 2 query rows"),
    ((np.ones((2, 3)), ["a"] * 2, ["a"] * 2), "key_tokens has 2 labels but the pattern has L = 3 key columns"),
    ((np.full((2, 2), np.nan), ["a"] * 2, ["a"] * 2), "pattern has 4 non-finite values"),
    ((np.ones((2, 2)), "ab", ["a"] * 2), "query_tokens must be a list of strings"),
    ((np.ones((2, 2), dtype=bool), ["a"] * 2, ["a"] * 2), "pattern must be numeric"),
    ((np.ones((0, 2)), [], ["a"] * 2), "pattern is empty"),
])
def test_attention_heatmap_rejects(args, message):
    with pytest.raises(ValueError, match=message):
        plots.attention_heatmap(*args, "t")


@pytest.mark.parametrize("offset, message", [(2, r"got 2 \+ 2 > 3"), (-1, "query_offset must be >= 0"),
                                             (0.5, "query_offset must be an integer")])
def test_attention_heatmap_rejects_query_offset(offset, message):
    with pytest.raises(ValueError, match=message):
        plots.attention_heatmap(np.ones((2, 3)), ["a"] * 2, ["a"] * 3, "t", query_offset=offset)


def test_heads_grid_stacks_heads_in_columns_on_one_colour_scale():
    nh = 5
    patterns = np.stack([causal_pattern(T, T, seed=h) for h in range(nh)])
    fig = plots.heads_grid(patterns, TOKENS, TOKENS, "block 0", max_cols=2)
    left, right = fig.data  # 3 heads per column: 0-2 on the left, 3-4 on the right
    f32 = patterns.astype(np.float32)
    assert np.array_equal(left.z, f32[:3].reshape(3 * T, T)) and np.array_equal(right.z, f32[3:].reshape(2 * T, T))
    assert left.y[T + 2] == "head 1 · 2·␣saw" and right.y[0] == "head 3 · 0·The"
    assert all(t.coloraxis == "coloraxis" for t in fig.data)
    assert (fig.layout.coloraxis.cmin, fig.layout.coloraxis.cmax) == (0, 1)
    assert fig.layout.coloraxis.colorscale == colorscale(plots.SEQUENTIAL)
    assert list(fig.layout.yaxis.ticktext) == ["h0", "h1", "h2"]
    assert list(fig.layout.yaxis2.ticktext) == ["h3", "h4"]
    # the gap left of a column holds its "h11" labels in an 800 px window (they hid under the column before)
    from gpt2viz.plots.heatmaps import NARROWEST_PX

    gap = fig.layout.xaxis2.domain[0] - fig.layout.xaxis.domain[1]
    assert round(gap * NARROWEST_PX) >= 12 + plots.CHAR_PX * len("h11")
    assert fig.layout.yaxis2.range == (3 * T - 0.5, -0.5)  # the short column keeps the rows' scale
    assert fig.layout.xaxis.title.text == "key" and fig.layout.xaxis2.anchor == "y2"
    assert "%{y}" in left.hovertemplate and "%{x}" in left.hovertemplate and "%{z:.3f}" in left.hovertemplate
    covers = [s for s in fig.layout.shapes if s.type == "path"]
    future = np.triu(np.ones((T, T), dtype=bool), k=1)
    assert np.array_equal(covered_cells(covers[0], 3 * T, T), np.concatenate([future] * 3))
    assert np.array_equal(covered_cells(covers[1], 3 * T, T), np.concatenate([future] * 2 + [0 * future]))


@pytest.mark.parametrize("nh", [12, 8, 4, 1])
def test_heads_grid_columns_are_equally_wide_and_named_by_their_heads(nh):
    """A trial: the first column was 0.25 of the width and the others 0.15 (the gap taken from theirs), so a head's
    cells changed shape between columns; and the chart's sentence called its columns "panel 1", "panel 2"."""
    fig = plots.heads_grid(np.stack([causal_pattern(T, T)] * nh), TOKENS, TOKENS, "t")
    axes = [fig.layout[name] for name in fig.layout if name.startswith("xaxis")]
    domains = sorted(axis.domain for axis in axes if axis.domain)
    widths = [d[1] - d[0] for d in domains]
    assert max(widths) - min(widths) < 1e-9 and domains[0][0] == 0 and domains[-1][1] == pytest.approx(1)
    assert all(a[1] < b[0] for a, b in zip(domains, domains[1:]))  # a gap between neighbours
    rows = math.ceil(nh / min(4, nh))
    names = [t.name for t in fig.data]
    assert names[0] == ("head 0" if rows == 1 else f"heads 0 to {rows - 1}") and len(names) == math.ceil(nh / rows)


def test_heads_grid_rejects_bad_shapes_and_huge_grids(monkeypatch):
    with pytest.raises(ValueError, match=r"patterns must be 3-D \[nh, T, L\], got shape \(6, 6\)"):
        plots.heads_grid(causal_pattern(T, T), TOKENS, TOKENS, "t")
    monkeypatch.setattr(plots.attention, "MAX_GRID_CELLS", 100)
    with pytest.raises(ValueError, match=r"nh\*T\*L = 144 cells.*query_offset=T - n"):
        plots.heads_grid(np.ones((4, 6, 6)), TOKENS, TOKENS, "t")


def test_the_mask_edge_is_the_causal_staircase_between_masked_and_kept_cells():
    """The masked region's outline inside the map: under each row, the cells masked there and kept below; right
    of each kept run, the masked cells beside it; nothing where nothing is masked."""
    causal = np.triu(np.ones((3, 3), dtype=bool), k=1)
    assert plots.heatmaps.mask_edge(causal) == "M0.5,0.5H1.5M1.5,1.5H2.5M0.5,-0.5V0.5M1.5,0.5V1.5"
    assert plots.heatmaps.mask_edge(np.zeros((4, 4), dtype=bool)) == ""
    # decode: one query row over 3 cached keys and itself, nothing masked; a row of a prefix mask
    assert plots.heatmaps.mask_edge(np.array([[False, False, True, True]])) == "M1.5,-0.5V0.5"


def test_attention_maps_scores_pattern_and_output_norms_share_the_query_rows():
    scores = np.random.default_rng(0).normal(size=(T, T))
    mask = np.triu(np.ones((T, T), dtype=bool), k=1)
    scores[0, -1] = 100.0  # a huge masked score must not set the colour range
    pattern, norms = causal_pattern(T, T), np.arange(1.0, T + 1)
    fig = plots.attention_maps(scores, pattern, norms, TOKENS, TOKENS, "block 0 head 1", mask=mask)
    s, p, z = fig.data
    assert np.array_equal(s.z, scores.astype(np.float32))  # masked scores keep their value and hover
    assert np.array_equal(p.z, pattern.astype(np.float32)) and np.array_equal(z.z[:, 0], norms)
    assert list(s.y) == list(p.y) == list(z.y) == list(p.x)  # one row per query in all three
    assert (s.xaxis or "x", p.xaxis, z.xaxis) == ("x", "x2", "x3")
    assert {s.yaxis or "y", p.yaxis or "y", z.yaxis or "y"} == {"y"}
    axis = fig.layout.coloraxis
    assert axis.colorscale == colorscale(plots.DIVERGING) and axis.cmin == -axis.cmax
    assert axis.cmax == pytest.approx(np.abs(scores[~mask]).max(), rel=1e-6)
    assert (fig.layout.coloraxis2.cmin, fig.layout.coloraxis2.cmax) == (0, 1)
    assert fig.layout.coloraxis2.colorscale == colorscale(plots.SEQUENTIAL)
    veil, edge, grey = fig.layout.shapes
    assert np.array_equal(covered_cells(veil, T, T), mask) and 0 < veil.opacity < 1 and veil.xref == "x"
    assert edge.path == plots.heatmaps.mask_edge(mask) and edge.xref == "x" and edge.line.width > 0
    assert np.array_equal(covered_cells(grey, T, T), mask) and grey.fillcolor == plots.MASKED_GREY and grey.xref == "x2"
    assert "score %{z:.3f}" in s.hovertemplate and "attention %{z:.3f}" in p.hovertemplate and "‖z‖" in z.hovertemplate
    assert "−∞" in fig.layout.title.subtitle.text and "grey: masked" in fig.layout.title.subtitle.text
    assert fig.layout.title.text == "block 0 head 1"
    # the ‖z‖ strip has a colour scale of its own, from 0 to the largest norm
    strip = fig.layout.coloraxis3
    assert strip.showscale is not False and strip.colorbar.title.text == "‖z‖" and (strip.cmin, strip.cmax) == (0, T)
    scores_bar, p_bar, z_bar = (a.colorbar for a in (fig.layout.coloraxis, fig.layout.coloraxis2, strip))
    assert fig.layout.xaxis.domain[1] < scores_bar.x < fig.layout.xaxis2.domain[0]  # no bar over a panel
    assert fig.layout.xaxis2.domain[1] <= fig.layout.xaxis3.domain[0] < fig.layout.xaxis3.domain[1] < p_bar.x == z_bar.x
    assert z_bar.y + z_bar.len / 2 < p_bar.y - p_bar.len / 2  # stacked at the right edge, apart
    unmasked = plots.attention_maps(scores, np.full((T, T), 1 / T), norms, TOKENS, TOKENS, "no mask")
    assert not unmasked.layout.shapes


def unvalidated_builds():
    """Every heatmap figure (made the one way, without plotly.py's checks: plots.axes.figure), on
    masked and unmasked, short and long inputs."""
    scores = np.random.default_rng(1).normal(size=(T, T))
    mask = np.triu(np.ones((T, T), dtype=bool), k=1)
    patterns = np.stack([causal_pattern(T, T, seed=h) for h in range(5)])
    long = [f"token number {i}" for i in range(40)]
    yield plots.attention_maps(scores, patterns[0], np.arange(T), TOKENS, TOKENS, "masked", mask=mask)
    yield plots.attention_maps(scores, np.full((T, T), 1 / T), np.arange(T), TOKENS, TOKENS, "<b>no</b> mask")
    yield plots.attention_maps(np.zeros((1, T)), patterns[0, -1:], [2.0], TOKENS[-1:], TOKENS, "decode",
                               query_offset=T - 1, mask=np.zeros((1, T), dtype=bool))
    yield plots.heads_grid(patterns, TOKENS, TOKENS, "grid", max_cols=2)
    yield plots.attention_heatmap(patterns[0], TOKENS, TOKENS, "one head")
    yield plots.attention_heatmap(patterns[0, -1:], TOKENS[-1:], TOKENS, "decode", query_offset=T - 1)
    yield plots.matrix_heatmap(np.ones((2, 3)), ["W_QKV", "<b>"], ["0", "1", "2"], "grads", "norm")
    yield plots.heads_grid(np.full((3, 4, 40), 1 / 40), long[-4:], long, "long", query_offset=36)
    yield plots.attention_maps(scores, patterns[0], np.arange(T), TOKENS, TOKENS, "clickable", mask=mask,
                               clickable=True)


@pytest.mark.parametrize("index", range(9))
def test_unvalidated_figures_are_what_plotlys_checks_would_make(index):
    fig = list(unvalidated_builds())[index]
    checked = go.Figure(fig.to_dict())  # every value checked (and shorthands like line_width expanded)
    assert json.loads(pio.to_json(checked)) == json.loads(pio.to_json(fig))


def test_a_click_on_either_map_selects_its_cell_up_to_64_by_64_cells():
    """Heatmap cells cannot be selected: one invisible marker a cell of each map carries (i, j, value)."""
    scores = np.random.default_rng(2).normal(size=(T, T))
    pattern = causal_pattern(T, T)
    fig = plots.attention_maps(scores, pattern, np.arange(T), TOKENS, TOKENS, "m", clickable=True)
    heat, cells = fig.data[:3], fig.data[3:]
    assert [t.type for t in heat] == ["heatmap"] * 3 and [t.type for t in cells] == ["scatter"] * 2
    for trace, values, axis in zip(cells, (scores, pattern), ("x", "x2")):
        assert trace.xaxis == axis and trace.marker.opacity == 0 and len(trace.customdata) == T * T
        i, j, v = trace.customdata[T + 2]  # row 1, column 2
        assert (i, j) == (1, 2) and v == pytest.approx(float(values[1, 2]))
        assert trace.x[T + 2] == heat[0].x[2] and trace.y[T + 2] == heat[0].y[1]
    assert fig.layout.hoverdistance == -1
    assert len(plots.attention_maps(scores, pattern, np.arange(T), TOKENS, TOKENS, "m").data) == 3
    n = 65  # 65 x 65 cells: more than CLICK_CELLS, no overlay
    big = plots.attention_maps(np.zeros((n, n)), causal_pattern(n, n), np.ones(n), ["␣a"] * n, ["␣a"] * n, "big",
                               clickable=True)
    assert len(big.data) == 3 and plots.attention.CLICK_CELLS == 64 * 64


def test_attention_maps_decode_row():
    P = 5
    fig = plots.attention_maps(np.zeros((1, P + 1)), causal_pattern(1, P + 1), [2.0], ["␣dog"], TOKENS, "decode",
                               query_offset=P, mask=np.zeros((1, P + 1), dtype=bool))
    assert not fig.layout.shapes and list(fig.data[1].y) == ["5·␣dog"]


def test_attention_maps_rejects_mismatched_shapes():
    with pytest.raises(ValueError, match=r"must be \[T, L\], \[T, L\] and \[T\]"):
        plots.attention_maps(np.zeros((3, 3)), np.zeros((3, 4)), np.zeros(3), ["a"] * 3, ["a"] * 3, "t")


@pytest.mark.parametrize("mask, message", [(np.ones((T, T)), "mask must be boolean"),
                                           (np.ones((2, 2), dtype=bool), r"mask must have the scores' shape")])
def test_attention_maps_rejects_bad_masks(mask, message):
    with pytest.raises(ValueError, match=message):
        plots.attention_maps(np.zeros((T, T)), np.zeros((T, T)), np.zeros(T), TOKENS, TOKENS, "t", mask=mask)


# ---------------------------------------------------------------------------- distributions
def test_histogram_bins_in_numpy_and_reports_mean_and_std():
    values = np.random.default_rng(0).normal(2.0, 3.0, size=(40, 50)).astype(np.float32)
    fig = plots.histogram(values, "mlp.pre", "value", bins=20)
    bars = fig.data[0]
    assert bars.type == "bar" and len(bars.x) == 20 and bars.y.sum() == values.size
    assert titles(fig) == ("value", "count")
    subtitle = fig.layout.title.subtitle.text
    assert f"mean {values.mean(dtype=np.float64):.4g}" in subtitle
    assert f"std {values.std(dtype=np.float64):.4g}" in subtitle
    assert fig.layout.shapes[0].x0 == pytest.approx(values.mean(), rel=1e-5)  # the dashed mean line
    assert "count %{y:,}" in bars.hovertemplate


@pytest.mark.parametrize("values, bins, message", [([], 10, "values is empty"), ([1.0, np.inf], 10, "1 non-finite"),
                                                   ([1.0, 2.0], 0, "bins must be >= 1")])
def test_histogram_rejects(values, bins, message):
    with pytest.raises(ValueError, match=message):
        plots.histogram(values, "t", "x", bins=bins)


def test_gelu_curve_draws_both_gelus_every_pre_activation_and_the_percentiles():
    pre = np.random.default_rng(0).normal(size=(8, 1000)) * 3
    fig = plots.gelu_curve(pre, "GELU", x_range=(-4, 4))
    bars, tanh, erf, dots = fig.data
    grid = torch.tensor(tanh.x)
    assert np.allclose(tanh.y, F.gelu(grid, approximate="tanh").numpy(), atol=1e-6)
    assert np.allclose(erf.y, F.gelu(grid).numpy(), atol=1e-6) and erf.line.dash == "dash"
    # every pre-activation inside the range is in a bar; shares are of all 8,000
    inside = ((pre >= -4) & (pre <= 4)).sum()
    assert bars.yaxis == "y2" and bars.y.sum() * pre.size == pytest.approx(inside)
    assert int(bars.customdata[:, 2].sum()) == inside
    # the dots: percentiles of the input, on the tanh curve
    assert dots.mode == "markers" and len(dots.x) <= plots.PERCENTILES
    assert np.allclose(dots.x, np.percentile(pre, dots.customdata))
    assert np.allclose(dots.y, F.gelu(torch.tensor(dots.x), approximate="tanh").numpy(), atol=1e-6)
    assert list(fig.layout.xaxis.range) == [-4, 4] and titles(fig) == ("pre-activation x", "GELU(x)")
    outside = 1 - inside / pre.size
    assert f"{outside:.1%} outside [-4, 4]" in fig.layout.title.subtitle.text
    assert f"{(pre < 0).mean():.1%} negative" in fig.layout.title.subtitle.text


@pytest.mark.parametrize("x_range", [(1, 1), (0, np.inf), (1,), "ab"])
def test_gelu_curve_rejects_bad_ranges(x_range):
    with pytest.raises(ValueError, match="x_range must be two finite numbers"):
        plots.gelu_curve([0.0], "t", x_range=x_range)


# ---------------------------------------------------------------------------- per position
def test_position_norms():
    x = np.random.default_rng(0).normal(size=(T, 16))
    fig = plots.position_norms(x, TOKENS, "norms", offset=3)
    bars = fig.data[0]
    assert bars.type == "bar" and np.allclose(bars.y, np.linalg.norm(x, axis=1))
    assert bars.x[0] == "3·The" and "%{x}" in bars.hovertemplate and "%{y:.4g}" in bars.hovertemplate
    assert titles(fig) == ("position·token", "L2 norm ‖x‖₂")
    with pytest.raises(ValueError, match=r"x must be 2-D \[T, d\], got shape \(1, 6, 16\)"):
        plots.position_norms(x[None], TOKENS, "t")
    with pytest.raises(ValueError, match="tokens has 5 labels but x has T = 6 positions"):
        plots.position_norms(x, TOKENS[:5], "t")


DEPTH = ["embed", "block 0 mid", "block 0 out"]


def test_residual_norms_one_line_per_token():
    norms = np.arange(len(DEPTH) * T, dtype=float).reshape(len(DEPTH), T)
    fig = plots.residual_norms(norms, DEPTH, TOKENS, "resid")
    assert [t.name for t in fig.data] == [f"{i}·{tok}" for i, tok in enumerate(TOKENS[:5])] + ["5·&lt;br&gt;"]
    assert list(fig.data[2].y) == list(norms[:, 2]) and list(fig.data[0].x) == DEPTH
    assert len({t.line.color for t in fig.data}) == T  # coloured by position
    assert "%{fullData.name}" in fig.data[0].hovertemplate and "%{y:.2f}" in fig.data[0].hovertemplate
    assert titles(fig) == ("depth", "L2 norm ‖x‖₂") and fig.layout.showlegend is True
    as_dict = plots.residual_norms(dict(zip(DEPTH, norms)), None, TOKENS, "resid")
    assert [list(t.y) for t in as_dict.data] == [list(t.y) for t in fig.data]


def test_residual_norms_long_text_shows_mean_and_min_max_band():
    norms = np.random.default_rng(0).random((len(DEPTH), 100))
    tokens = [f"t{i}" for i in range(100)]
    upper, lower, mean = plots.residual_norms(norms, DEPTH, tokens, "resid").data
    assert np.allclose(upper.y, norms.max(axis=1)) and np.allclose(lower.y, norms.min(axis=1))
    assert lower.fill == "tonexty" and np.allclose(mean.y, norms.mean(axis=1))
    j = int(norms[0].argmax())
    assert upper.customdata[0] == f"{j}·t{j}" and "%{customdata}" in upper.hovertemplate


@pytest.mark.parametrize("norms, labels, message", [
    (np.ones((3, T)), None, "labels are required"),
    (np.ones((3, T)), DEPTH[:2], "labels has 2 labels but norms has n_points = 3 rows"),
    (np.ones((3, T)), ["a", "b", "a"], "labels must be unique, 'a' appears more than once"),
    ({"a": np.ones(T)}, ["b"], "pass labels=None with a dict"),
    ({"a": np.ones(T), "b": np.ones(T - 1)}, None, "every norms entry must have the same T"),
    (np.ones((3, T - 1)), DEPTH, "tokens has 6 labels but norms has T = 5 positions"),
])
def test_residual_norms_rejects(norms, labels, message):
    with pytest.raises(ValueError, match=message):
        plots.residual_norms(norms, labels, TOKENS, "t")


def test_top_neurons_overall_and_at_a_position():
    post = np.random.default_rng(0).normal(size=(T, 64))
    fig = plots.top_neurons(post, TOKENS, k=5)
    bars = fig.data[0]
    best = np.argsort(-post.mean(axis=0))[:5]
    assert list(bars.x) == [f"#{i}" for i in best] and np.allclose(bars.y, post.mean(axis=0)[best])
    assert [row[0] for row in bars.customdata] == list(best)
    assert "neuron %{customdata[0]}" in bars.hovertemplate and "%{y:.3f}" in bars.hovertemplate
    assert titles(fig) == ("neuron", "activation (GELU output)") and fig.layout.title.text == "Top 5 neurons"
    at = plots.top_neurons(post, TOKENS, k=3, position=-1, title="last").data[0]
    assert list(at.x) == [f"#{i}" for i in np.argsort(-post[-1])[:3]]
    assert at.customdata[0][1] == "at 5·&lt;br&gt;"


@pytest.mark.parametrize("k, position, message", [(65, None, "k must be <= the 64 neurons"),
                                                  (0, None, "k must be >= 1"),
                                                  (3, 6, r"position must be in \[0, 6\)")])
def test_top_neurons_rejects(k, position, message):
    with pytest.raises(ValueError, match=message):
        plots.top_neurons(np.ones((T, 64)), TOKENS, k=k, position=position)


def test_loss_per_token_labels_targets_and_contexts():
    loss = np.linspace(1.0, 5.0, T - 1)
    fig = plots.loss_per_token(loss, TOKENS, "loss")
    bars = fig.data[0]
    assert list(bars.x) == ["1·␣cat", "2·␣saw", "3·␣the", "4·␣the", "5·&lt;br&gt;"]
    assert bars.customdata[0] == "The (position 0)"
    assert bars.customdata[4] == "…␣cat␣saw␣the␣the (positions 0–4)"  # the last 4 tokens before position 5
    assert "predicting %{x}" in bars.hovertemplate and "from %{customdata}" in bars.hovertemplate
    assert f"perplexity {math.exp(loss.mean()):.4g}" in fig.layout.title.subtitle.text
    assert titles(fig) == ("target position·token", "cross-entropy (nats)")
    with pytest.raises(ValueError, match="tokens has 6 labels but per_token has T-1 = 3 losses, so T = 4"):
        plots.loss_per_token(loss[:3], TOKENS, "t")


# ---------------------------------------------------------------------------- bar charts
def test_topk_tokens_keeps_repeats_and_highlights_the_chosen_bar():
    labels = ["␣mat", "␣floor", "␣mat"]
    fig = plots.topk_tokens([0.5, 0.3, 0.1], labels, "next", highlight=1)
    bars = fig.data[0]
    assert bars.orientation == "h" and list(bars.x) == [0.5, 0.3, 0.1]
    assert list(fig.layout.yaxis.ticktext) == labels and fig.layout.yaxis.autorange == "reversed"
    colours = list(bars.marker.color)
    assert colours[1] != colours[0] == colours[2]
    assert bars.customdata[1][1] == "<br>(chosen)" and "%{customdata[0]}" in bars.hovertemplate
    assert titles(fig) == ("probability", "next token")
    # room for the value written after the longest bar, in the margin: whatever the chart's width
    assert fig.layout.xaxis.range[1] > 0.5 and fig.layout.margin.r >= 12 + plots.CHAR_PX * len("0.5")
    logits = plots.topk_tokens([-1.0, -2.0], ["a", "b"], "logits", x_title="logit")
    assert fig.layout.xaxis.range[0] == 0 and logits.layout.xaxis.range[0] < -2.0


@pytest.mark.parametrize("labels, highlight, message", [(["a"], None, "labels has 1 labels but values has k = 2"),
                                                        (["a", "b"], 2, r"highlight must be in \[0, 2\)")])
def test_topk_tokens_rejects(labels, highlight, message):
    with pytest.raises(ValueError, match=message):
        plots.topk_tokens([0.6, 0.4], labels, "t", highlight=highlight)


def test_param_breakdown_writes_exact_counts():
    fig = plots.param_breakdown(["wte", "wpe", "ln_f"], [38_597_376, 786_432, 1_536], "params")
    bars = fig.data[0]
    assert list(bars.text) == ["38,597,376", "786,432", "1,536"] and list(bars.x) == [38_597_376, 786_432, 1_536]
    assert fig.layout.title.subtitle.text == "total 39,385,344"
    assert list(fig.layout.yaxis.ticktext) == ["wte", "wpe", "ln_f"]
    assert "%{text} parameters" in bars.hovertemplate and titles(fig) == ("parameters", "component")


@pytest.mark.parametrize("counts, message", [([1.5, 2], "counts must be integers"), ([1, -2], "counts must be >= 0"),
                                             ([1], "labels has 2 labels but counts has 1 entries"),
                                             ([], "counts must be a non-empty 1-D list")])
def test_param_breakdown_rejects(counts, message):
    with pytest.raises(ValueError, match=message):
        plots.param_breakdown(["a", "b"], counts, "t")


# ---------------------------------------------------------------------------- KV cache
def test_kv_cache_diagram_compresses_a_long_cache():
    fig = plots.kv_cache_diagram(P=1000, T=1, n_layer=12, title="decode")
    cached, new = fig.data
    assert (cached.name, new.name) == ("read from cache", "computed now")
    assert list(cached.y) == list(range(12)) and list(new.y) == list(range(12))  # one block per layer
    assert cached.marker.color != new.marker.color and cached.text[0] == "0–999"
    assert list(fig.layout.xaxis.ticktext) == ["0–999", "1000"]
    assert new.x[0] / (cached.x[0] + new.x[0]) > 0.05  # the new position stays visible
    assert titles(fig) == ("position (blocks not to scale)", "layer")
    assert "position %{customdata}" in cached.hovertemplate and "read from the cache" in cached.hovertemplate


def test_kv_cache_diagram_small_and_empty_cache():
    fig = plots.kv_cache_diagram(P=4, T=2, n_layer=3, title="prefill")
    cached, new = fig.data
    assert len(cached.y) == 4 * 3 and len(new.y) == 2 * 3  # one cell per position and layer
    assert list(fig.layout.xaxis.ticktext) == ["0", "1", "2", "3", "4", "5"]
    assert fig.layout.xaxis.title.text == "position"
    (only,) = plots.kv_cache_diagram(P=0, T=5, n_layer=2, title="full").data
    assert only.name == "computed now"


@pytest.mark.parametrize("P, T, n_layer, message", [(-1, 1, 2, "P must be >= 0"), (3, 0, 2, "T must be >= 1"),
                                                    (3, 1, 1.5, "n_layer must be an integer")])
def test_kv_cache_diagram_rejects(P, T, n_layer, message):
    with pytest.raises(ValueError, match=message):
        plots.kv_cache_diagram(P, T, n_layer, "t")


def test_cache_growth_two_axes():
    fig = plots.cache_growth([5, 6, 7], [1_000, 2_000, 3_000_000], "growth")
    size, L = fig.data
    assert size.type == "bar" and size.yaxis == "y2" and list(size.y) == [1_000, 2_000, 3_000_000]
    assert L.type == "scatter" and list(L.y) == [5, 6, 7] and list(L.x) == [1, 2, 3]
    assert list(size.customdata) == ["1000 B", "2.0 KiB", "2.9 MiB"] and "%{y:,} bytes" in size.hovertemplate
    assert fig.layout.yaxis2.overlaying == "y" and fig.layout.yaxis2.title.text == "KV cache size"
    assert titles(fig) == ("decode step", "L (positions)")


@pytest.mark.parametrize("largest", [0, 1, 700, 737_280, 3_000_000, 5 * 2**30])
def test_byte_axes_are_binary_like_the_text_beside_them(largest):
    """The Modes page said 720.0 KiB beside a chart that said 700 kB. The bytes axis
    has ticks in the unit costs.human_bytes would write, never an SI prefix, up to the largest size."""
    from gpt2viz.spec.costs import human_bytes

    axis = plots.cache_growth([1, 2], [largest // 2, largest], "c").layout.yaxis2
    unit = human_bytes(largest).split()[-1]
    assert axis.tickformat is None and axis.ticksuffix is None and axis.tickvals[-1] >= largest
    assert all(text.endswith(" " + unit) for text in axis.ticktext), axis.ticktext
    assert len(axis.tickvals) <= 8 and list(axis.tickvals) == sorted(axis.tickvals)


def test_value_axes_write_tiny_numbers_without_si_prefixes():
    """Μ is the mean on the LayerNorm page; an axis must not write 2e-6 as "2μ"."""
    fig = plots.position_values([2e-6, -1e-6], ["a", "b"], "μ per position", "mean μ")
    assert fig.layout.yaxis.exponentformat == "power"
    assert plots.histogram(np.full(10, 1e-7), "h", "value").layout.xaxis.exponentformat == "power"


@pytest.mark.parametrize("steps, sizes, message", [([1, 2], [1], "steps has 2 entries but bytes_per_step has 1"),
                                                   ([1.0], [1], "steps must be integers"),
                                                   ([1], [-1], "bytes_per_step must be >= 0")])
def test_cache_growth_rejects(steps, sizes, message):
    with pytest.raises(ValueError, match=message):
        plots.cache_growth(steps, sizes, "t")


# ---------------------------------------------------------------------------- every builder
def test_every_figure_is_compact_with_titled_axes():
    pattern = causal_pattern(T, T)
    figures = [
        plots.attention_heatmap(pattern, TOKENS, TOKENS, "a"),
        plots.attention_maps(pattern, pattern, pattern[0], TOKENS, TOKENS, "s"),
        plots.histogram(pattern, "h", "p"),
        plots.gelu_curve(pattern, "g"),
        plots.position_norms(pattern, TOKENS, "n"),
        plots.residual_norms(pattern[:3], DEPTH, TOKENS, "r"),
        plots.top_neurons(pattern, TOKENS, k=2),
        plots.loss_per_token(pattern[0, :-1], TOKENS, "l"),
        plots.topk_tokens([0.5], ["a"], "k"),
        plots.param_breakdown(["a"], [1], "p"),
        plots.kv_cache_diagram(3, 1, 2, "kv"),
        plots.cache_growth([1], [1], "c"),
    ]
    for fig in figures:
        # 500: the toolbar has a strip above the title, and text and colour bars have projector sizes
        assert 200 <= fig.layout.height <= 500 and fig.layout.title.text
        assert fig.layout.xaxis.title.text and fig.layout.yaxis.title.text
        right_axis = "yaxis2" in fig.layout and fig.layout["yaxis2"].side == "right"  # room for its labels, title
        right_axis |= "coloraxis3" in fig.layout  # a colour bar at the right edge
        right_axis |= getattr(fig.data[0], "orientation", None) == "h"  # values written past the bars' ends
        assert fig.layout.margin.l <= 60 + plots.CHAR_PX * plots.TICK_CHARS
        assert fig.layout.margin.r <= (100 if right_axis else 30)


def test_heatmaps_size_their_margins_from_cut_tick_labels():
    """Heatmaps draw without automargin (it measured every label on every redraw): the margins
    come from the labels, which are cut to TICK_CHARS characters; hover keeps them whole."""
    long = ["␣" + "x" * 40, "&<b>" * 10] + TOKENS[2:]
    fig = plots.attention_heatmap(causal_pattern(T, T), long, long, "long labels")
    for axis in (fig.layout.xaxis, fig.layout.yaxis):
        assert axis.automargin is False
        assert set(axis.labelalias) == {fig.data[0].y[0], fig.data[0].y[1]}  # only the long ones are cut
        assert all(len(html.unescape(t)) <= plots.TICK_CHARS for t in axis.labelalias.values())
    shown = fig.layout.yaxis.labelalias[fig.data[0].y[1]]
    assert html.unescape(shown) == ("1·" + "&<b>" * 10)[: plots.TICK_CHARS - 1] + "…"
    assert "<" not in shown  # still escaped: plotly would render <b>
    assert fig.data[0].y[0] == "0·␣" + "x" * 40  # hover: the whole label
    assert fig.layout.margin.l >= 30 + plots.CHAR_PX * plots.TICK_CHARS
    # the browser may turn the key labels upright (plots.TICK_ANGLES): room for them below the plot
    assert fig.layout.margin.b >= 30 + plots.CHAR_PX * plots.TICK_CHARS


def test_titles_show_markup_in_tokens_as_text():
    fig = plots.topk_tokens([0.5, 0.2], ["<b>", "x"], "Next token after '<br>'")
    assert fig.layout.title.text == "Next token after '&lt;br&gt;'"


def test_matrix_heatmap_and_depth_bars():
    fig = plots.matrix_heatmap(np.ones((2, 3)), ["W_QKV", "W_O"], ["0", "1", "2"], "grads", "norm")
    assert fig.data[0].z.shape == (2, 3) and "norm" in fig.data[0].hovertemplate
    with pytest.raises(ValueError, match="row_labels"):
        plots.matrix_heatmap(np.ones((2, 3)), ["a"], ["0", "1", "2"], "t", "v")
    fig = plots.depth_bars([1.0, 2.0], ["embed", "attn 0"], "parts", "L2 norm")
    assert list(fig.data[0].x) == ["embed", "attn 0"] and fig.layout.xaxis.type == "category"


def test_lens_heatmap_shows_probabilities_tokens_and_the_chosen_position():
    from gpt2viz.plots import lens_heatmap

    probs = np.array([[0.1, 0.2, 0.3], [0.5, 0.6, 0.9]])
    fig = lens_heatmap(probs, [["a", "<b>", "c"], ["d", "e", "f"]], np.array([[3, 40, 0], [0, 1, 0]]),
                       ["block 0 in", "block 0 out"], ["x", "y", "z"], "lens", offset=5, chosen=1)
    heat = fig.data[0]
    assert heat.type == "heatmap" and (heat.zmin, heat.zmax) == (0, 1) and list(heat.x) == ["5·x", "6·y", "7·z"]
    assert list(heat.y) == ["block 0 in", "block 0 out"] and heat.text[0][1] == "&lt;b&gt;"
    assert heat.customdata[0][1] == ["&lt;b&gt;", 41] and "rank" in heat.hovertemplate  # rank 40 from 0: 41st
    (outline,) = fig.layout.shapes
    assert (outline.x0, outline.x1) == (0.5, 1.5)
    with pytest.raises(ValueError, match="final_ranks"):
        lens_heatmap(probs, [["a"] * 3] * 2, np.zeros((2, 2)), ["a", "b"], ["x", "y", "z"], "lens")


def test_one_decode_step_reads_as_step_1():
    """With one step the axis read 0.6…1.4; steps are whole numbers."""
    axis = plots.cache_growth([5], [1_000], "one step").layout.xaxis
    assert list(axis.tickvals) == [1] and tuple(axis.range) == (0.5, 1.5)
    many = plots.cache_growth(list(range(1, 101)), list(range(100, 10_100, 100)), "many").layout.xaxis
    assert len(many.tickvals) <= 16 and all(float(v).is_integer() for v in many.tickvals)
    assert "after" in plots.cache_growth([5], [1_000], "c").data[0].name


def test_top_neurons_of_one_position_is_no_mean_over_1_positions():
    one = plots.top_neurons(np.arange(8.0)[None, :], ["x"], k=3, offset=9)
    assert "mean over 1" not in one.layout.title.subtitle.text and "9·x" in one.layout.title.subtitle.text
    assert "mean over 2 positions" in plots.top_neurons(np.ones((2, 8)), ["x", "y"], k=3).layout.title.subtitle.text


def test_attention_maps_outline_marked_cells_of_the_rows_drawn():
    pattern = causal_pattern(T, T)
    fig = plots.attention_maps(np.zeros((T, T)), pattern, np.ones(T), TOKENS, TOKENS, "m", marks=[(3, 1), (4, 2)],
                               marks_note="outlined: the word after the earlier occurrence")
    rects = [s for s in fig.layout.shapes if s.type == "rect"]
    assert [(r.y0 + 0.5, r.x0 + 0.5, r.xref) for r in rects] == [(3, 1, "x2"), (4, 2, "x2")]
    assert "outlined: the word after the earlier occurrence" in fig.layout.title.subtitle.text
    decode = plots.attention_maps(np.zeros((1, T)), pattern[-1:], [1.0], TOKENS[-1:], TOKENS, "d",
                                  query_offset=T - 1, marks=[(3, 1), (T - 1, 2)])
    assert [(r.y0 + 0.5, r.x0 + 0.5) for r in decode.layout.shapes if r.type == "rect"] == [(0, 2)]




def test_titles_wrap_to_the_width_a_chart_is_drawn_at():
    """In one of two columns of an 800 px window a title such as "Before: next token
    after '␣because'" ran past the chart's edge and was cut. Given the narrowest width the chart is
    drawn at, the title takes as many lines as it needs and the plot moves down for them."""
    from gpt2viz.plots import theme

    fig = plots.topk_tokens([0.5, 0.2], ["a", "b"], "Before: next token after '␣because' and a little more")
    wide = theme.themed(fig, width_px=1000)
    narrow = theme.themed(fig, width_px=264)
    assert "<br>" not in wide.layout.title.text and wide.layout.margin.t == fig.layout.margin.t
    lines = narrow.layout.title.text.split(" <br>")
    assert len(lines) >= 2 and all(len(line) * theme.TITLE_CHAR_PX <= 264 for line in lines)
    assert " ".join(lines) == fig.layout.title.text
    extra = theme.TITLE_LINE_PX * (len(lines) - 1)
    assert narrow.layout.margin.t == fig.layout.margin.t + extra and narrow.layout.height == fig.layout.height + extra


def test_subtitles_wrap_too():
    from gpt2viz.plots import theme

    subtitle = "the model's own (greedy: before any temperature or top-k)"
    fig = plots.topk_tokens([0.5, 0.2], ["a", "b"], "Step 1", subtitle=subtitle)
    narrow = theme.themed(fig, width_px=264)
    lines = narrow.layout.title.subtitle.text.split(" <br>")
    assert len(lines) == 2 and " ".join(lines) == subtitle and narrow.layout.title.text == "Step 1"
    assert narrow.layout.margin.t == fig.layout.margin.t + theme.TITLE_LINE_PX


@pytest.mark.parametrize("n", [1, 2, 4])
def test_stacked_vectors_lay_out_their_panels_as_make_subplots_does(n):
    """plots.vectors lays the panels out from make_subplots' layout, made once per count of panels: the
    figure is the one make_subplots, add_trace and update_layout build (validated), title and labels escaped."""
    from plotly.subplots import make_subplots

    from gpt2viz.plots.axes import figure_layout
    from gpt2viz.plots.vectors import ROW_PX, ROW_TITLE_MARGIN, _bars, default_margin, stacked_vectors

    rows = [(f"<b>row {i}</b> & more", np.random.default_rng(i).normal(size=16)) for i in range(n)]
    fig = make_subplots(rows=n, cols=1, shared_xaxes=True, vertical_spacing=0.22 / n,
                        subplot_titles=[html.escape(label, quote=False) for label, _ in rows])
    for i, (label, v) in enumerate(rows, 1):
        fig.add_trace(_bars(v, name=label), row=i, col=1)
    fig.update_xaxes(title_text="feature", row=n, col=1)
    fig.update_annotations(font_size=plots.SUBTITLE_PX, x=0, xanchor="left")
    fig.update_layout(**figure_layout("A <title>", height=min(900, 110 + ROW_PX * n), bargap=0,
                                      margin=default_margin(**ROW_TITLE_MARGIN)))
    assert json.loads(stacked_vectors(rows, "A <title>", x_title="feature").to_json()) == json.loads(fig.to_json())
