"""Plotly's cartesian bundle (spec/paths.PLOTLY_BUNDLE): the traces it draws. The app's chart box
(plots/chart_box.py), the handout and the lesson site (teaching/) ask it whether a figure draws with it."""

# the traces the bundle draws (its README; tests/test_chart_element.py reads them in the bundle itself)
TRACES = frozenset({"bar", "box", "contour", "heatmap", "histogram", "histogram2d", "histogram2dcontour", "image",
                    "pie", "scatter", "scatterternary", "violin"})


def draws(spec: dict) -> bool:
    """True if the bundle draws every trace of the figure `spec` (plotly's default type is scatter)."""
    return all(trace.get("type", "scatter") in TRACES for trace in spec.get("data") or ())
