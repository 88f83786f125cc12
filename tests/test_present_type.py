"""Presentation mode's chart type (ui/present.scaled_fonts), on figures' JSON: every size 1.4 times larger and none
below the page's presented body text (BODY_PX); a token axis whose labels were fitted to a smaller size left to the
browser; a row chart made tall enough for its labels; nothing changed when the type is not scaled."""

import plotly.graph_objects as go

from gpt2viz.plots.axes import LABEL_PITCH, short
from gpt2viz.ui.present import BODY_PX, FONT_SCALE, caption_scale, scaled_fonts


def figure(height=300, rows=3):
    labels = [f"{i}·token number {i}" for i in range(rows)]
    return go.Figure(go.Bar(x=list(range(rows)), y=labels, orientation="h", text=[str(i) for i in range(rows)],
                            textfont=dict(size=11)),
                     dict(height=height, title=dict(text="t", font=dict(size=18)), font=dict(size=13),
                          margin=dict(t=90, b=60),
                          yaxis=dict(type="category", tickmode="array", tickvals=labels,
                                     ticktext=[short(s) for s in labels], tickfont=dict(size=13))))


def test_every_size_is_scaled_and_none_is_below_the_body_text():
    spec = scaled_fonts(figure(), FONT_SCALE).to_dict()
    assert spec["layout"]["title"]["font"]["size"] == round(18 * FONT_SCALE, 1)  # 25.2: scaled
    assert spec["layout"]["font"]["size"] == BODY_PX  # 13 x 1.4 = 18.2, raised to the body's 20
    assert spec["data"][0]["textfont"]["size"] == BODY_PX  # 11 x 1.4 = 15.4
    assert spec["data"][0]["constraintext"] == "none"  # a bar's value is not shrunk to the bar
    assert spec["layout"]["yaxis"]["tickmode"] == "auto" and spec["layout"]["yaxis"].get("tickvals") is None
    assert caption_scale(FONT_SCALE) * 11 >= BODY_PX and caption_scale(1) == 1


def test_a_row_chart_grows_to_give_each_label_its_room():
    fig = figure(height=200, rows=8)
    fig.update_yaxes(type=None, tickmode="array")  # an index axis: its labels stay
    spec = scaled_fonts(fig, FONT_SCALE).to_dict()["layout"]
    plot_px = spec["height"] - spec["margin"]["t"] - spec["margin"]["b"]
    assert spec["height"] > 200 and plot_px >= 8 * LABEL_PITCH * BODY_PX - 1


def test_nothing_changes_unscaled():
    fig = figure()
    assert scaled_fonts(fig, 1.0).to_dict() == fig.to_dict()


def test_a_chart_keeps_its_plot_area_as_its_margins_grow():
    fig = figure(height=300, rows=2)
    fig.update_yaxes(type=None, tickmode="array")
    before = 300 - 90 - 60
    spec = scaled_fonts(fig, FONT_SCALE).to_dict()["layout"]
    assert spec["margin"]["t"] > 90 and spec["height"] - spec["margin"]["t"] - spec["margin"]["b"] == before


def test_a_panels_rows_get_their_room_in_its_share_of_the_plot():
    """Presented, the decode page's map of 12 heads (the upper panel of two) gives each head's label its room,
    and the gap between the panels, a share of the plot area, is no smaller than before (the lower panel's title
    lay on the map's tick labels)."""
    import numpy as np

    from gpt2viz.plots import heads_merged

    fig = heads_merged(np.zeros((12, 64)), np.zeros(768), "t")
    layout = fig.to_dict()["layout"]
    spec = scaled_fonts(fig, FONT_SCALE).to_dict()["layout"]
    plot = spec["height"] - spec["margin"]["t"] - spec["margin"]["b"]
    low, high = spec["yaxis"]["domain"]
    assert plot * (high - low) >= 12 * LABEL_PITCH * BODY_PX - 1
    gap = spec["yaxis"]["domain"][0] - spec["yaxis2"]["domain"][1]
    assert plot * gap >= (layout["height"] - layout["margin"]["t"] - layout["margin"]["b"]) * gap
