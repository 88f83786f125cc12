"""plots.theme: the app's look written into a figure (no template), and the data digest that lets
Plotly skip a second drawing of an unchanged chart."""

import json

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest

from gpt2viz import plots
from gpt2viz.plots import theme

TOKENS = [f"t{i}" for i in range(6)]


def maps(seed: int = 0) -> go.Figure:
    rng = np.random.default_rng(seed)
    scores = rng.normal(size=(6, 6))
    mask = np.triu(np.ones((6, 6), dtype=bool), 1)
    pattern = np.where(mask, 0.0, np.exp(scores))
    pattern /= pattern.sum(1, keepdims=True)
    return plots.attention_maps(scores, pattern, rng.random(6), TOKENS, TOKENS, "maps", mask=mask)


def spec(fig: go.Figure) -> dict:
    return json.loads(pio.to_json(fig, validate=False))


def test_no_template_and_every_value_passes_plotly_validation():
    themed = theme.themed(maps())
    layout = spec(themed)["layout"]
    assert layout.get("template") is None  # absent or null: nothing for the browser to rebuild
    rebuilt = go.Figure(themed.to_dict())  # validates every property: raises on a wrong one
    rebuilt.layout.template = None  # (validated: removed, rather than null)
    layout.pop("template", None)
    assert spec(rebuilt) == dict(spec(themed), layout=layout)


def test_the_builders_values_win_and_unset_ones_get_the_look():
    fig = maps()
    fig.layout.xaxis.tickfont.size = 15
    assert fig.layout.xaxis.tickfont.color is None
    themed = theme.themed(fig)
    assert themed.layout.xaxis.tickfont.size == 15  # the builder's
    assert themed.layout.xaxis.tickfont.color == theme.LIGHT.text  # the look's
    assert themed.layout.title.font.size == fig.layout.title.font.size
    assert themed.layout.title.font.color == theme.LIGHT.heading
    assert fig.layout.xaxis.tickfont.color is None  # the original is left alone


@pytest.mark.parametrize("dark,palette", [(False, theme.LIGHT), (True, theme.DARK)])
def test_light_and_dark(dark, palette):
    layout = spec(theme.themed(maps(), dark=dark))["layout"]
    assert layout["font"]["color"] == palette.text
    assert layout["hoverlabel"]["bgcolor"] == palette.hover_bg
    assert layout["paper_bgcolor"] == palette.page  # opaque, the page's own colour: a saved SVG is not see-through
    for name in ("xaxis", "xaxis2", "xaxis3", "yaxis"):  # every axis the figure has
        assert layout[name]["tickfont"]["color"] == palette.text, name
    for name in ("coloraxis", "coloraxis2"):
        assert layout[name]["colorbar"]["tickfont"]["color"] == palette.text, name


def test_axes_only_a_trace_names_are_styled_too():
    fig = go.Figure([go.Scatter(y=[1, 2]), go.Bar(y=[3], xaxis="x2", yaxis="y2")])
    layout = spec(theme.themed(fig, dark=True))["layout"]
    assert {"xaxis", "yaxis", "xaxis2", "yaxis2"} <= set(layout)
    assert layout["yaxis2"]["gridcolor"] == theme.DARK.grid


def test_a_trace_colour_bar_of_its_own_is_styled():
    fig = plots.attention_heatmap(np.eye(3), TOKENS[:3], TOKENS[:3], "p")
    bar = spec(theme.themed(fig))["data"][0]["colorbar"]
    assert bar["thickness"] == 14 and bar["tickfont"]["color"] == theme.LIGHT.text


def test_datarevision_follows_the_data():
    a, b, c = (theme.themed(f) for f in (maps(0), maps(0), maps(1)))
    assert a.layout.datarevision == b.layout.datarevision
    assert a.layout.datarevision != c.layout.datarevision
    d = maps(0)
    d.data[1].z = np.asarray(d.data[1].z).copy()
    d.data[1].z[5, 0] += 1e-6  # one cell of one map, a little
    assert theme.themed(d).layout.datarevision != a.layout.datarevision
    e = maps(0)
    e.data[0].x = ["other"] + list(e.data[0].x[1:])  # a label
    assert theme.themed(e).layout.datarevision != a.layout.datarevision


def test_vectors_go_as_plain_lists_and_maps_stay_binary():
    """Plotly.react treats a typed array of new identity as new data even with an unchanged
    datarevision (a second drawing on every mount): 1-D arrays go as lists, same values."""
    x = np.array([0.1, 0.2, 0.3], dtype=np.float32)
    fig = go.Figure([go.Bar(x=x, y=np.arange(3), marker=dict(color=np.array([1.0, 2.0, 3.0]))),
                     go.Heatmap(z=np.eye(3, dtype=np.float32), xaxis="x2")])
    bar, heat = spec(theme.themed(fig))["data"]
    assert bar["x"] == x.tolist() and bar["y"] == [0, 1, 2] and bar["marker"]["color"] == [1.0, 2.0, 3.0]
    assert "bdata" in heat["z"]  # [rows, cols]: Plotly reads it as an Array of rows


def every_figure() -> list[go.Figure]:
    rng = np.random.default_rng(0)
    pattern = np.tril(rng.random((6, 6)) + 0.1)
    pattern /= pattern.sum(1, keepdims=True)
    grid = np.stack([pattern] * 4)
    return [maps(), plots.attention_heatmap(pattern, TOKENS, TOKENS, "p"), plots.heads_grid(grid, TOKENS, TOKENS, "g"),
            plots.histogram(pattern, "h", "v"), plots.gelu_curve(pattern, "g"),
            plots.position_norms(pattern, TOKENS, "n"),
            plots.residual_norms(pattern[:3], ["a", "b", "c"], TOKENS, "r"), plots.top_neurons(pattern, TOKENS, k=3),
            plots.loss_per_token(pattern[0, :-1], TOKENS, "l"), plots.topk_tokens([0.5, 0.2], ["a", "b"], "k"),
            plots.param_breakdown(["a", "b"], [3, 4], "p"), plots.kv_cache_diagram(40, 1, 4, "kv"),
            plots.cache_growth([1, 2], [10, 20], "c"), plots.depth_bars([1.0, 2.0], ["a", "b"], "d", "n"),
            plots.matrix_heatmap(np.ones((2, 3)), ["a", "b"], ["0", "1", "2"], "m", "v"),
            plots.stacked_vectors([("a", np.ones(8)), ("b", np.ones(8))], "s"),
            plots.heads_merged(np.ones((2, 4)), np.ones(8), "hm")]


def font_sizes(node, path: str = "") -> list[tuple[str, float]]:
    """(path, size) of every font size set in a plotly JSON dict."""
    found = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("font", "tickfont", "textfont") and isinstance(value, dict) and "size" in value:
                found.append((f"{path}.{key}", value["size"]))
            found += font_sizes(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, item in enumerate(node):
            found += font_sizes(item, f"{path}[{i}]")
    return found


def test_every_text_is_readable_from_the_back_row():
    """Sized for a projector. Tick and token labels, legends, colour bars and notes at
    least 13 px, titles at least 18 px, in every figure as drawn (builder and look together); only
    values written into heatmap cells and bars may be smaller, and not below 11 px."""
    assert theme.TICK_PX >= 13 and theme.TITLE_PX >= 18
    for fig in every_figure():
        themed = spec(theme.themed(fig))
        layout = themed["layout"]
        assert layout["title"]["font"]["size"] >= 18, layout["title"]["text"]
        sizes = font_sizes(themed)
        assert any(path.endswith("tickfont") for path, _ in sizes)
        for path, size in sizes:
            smallest = 11 if path.endswith("textfont") else 13
            assert size >= smallest, (layout["title"]["text"], path, size)


def test_the_toolbar_shows_on_hover_only():
    """Plotly's toolbar covered chart titles and legends; it shows on hover now."""
    assert theme.CONFIG["displayModeBar"] == "hover" and theme.CONFIG["displaylogo"] is False


@pytest.mark.parametrize("font_scale", [1.0, 1.5])
def test_a_chart_reaches_streamlit_framed_as_its_dict_says_with_no_template(font_scale):
    """ui.anatomy.plot frames a chart's dict in place and hands it to st.plotly_chart as a DrawnFigure,
    which st.plotly_chart neither validates nor copies: the JSON is the validating build's, presented
    charts too (they carried plotly.py's default template when built again as a go.Figure)."""
    import plotly.tools

    from gpt2viz.ui.anatomy import DrawnFigure, framed, framed_spec
    fig = maps()
    drawn = framed_spec(fig.to_dict(), "random gpt2 · block 0", font_scale=font_scale, width_px=700)
    assert plotly.tools.return_figure_from_figure_or_data(DrawnFigure(drawn), validate_figure=True) is drawn
    sent = json.loads(pio.to_json(drawn, validate=False))
    assert sent["layout"]["template"] is None
    go.Figure(sent)  # every value passes plotly's validation
    built = spec(framed(fig, "random gpt2 · block 0", font_scale=font_scale, width_px=700))
    built["layout"]["template"] = None
    assert built == sent
