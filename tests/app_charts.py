"""The charts an AppTest run drew, in the page's order, whichever element drew them: the app's own box
(an st.html element, gpt2viz/plots/chart_box.py) or Streamlit's st.plotly_chart (a chart that answers
clicks, the projector's first chart)."""

import json
from dataclasses import dataclass

from gpt2viz.plots import chart_box


@dataclass(frozen=True)
class Chart:
    spec: str  # the figure's JSON (Streamlit's as sent; a box's written again, its escapes undone)
    config: dict  # plotly's config
    streamlits: bool  # drawn by st.plotly_chart, not the app's box

    @property
    def figure(self) -> dict:
        return json.loads(self.spec)


def chart(el) -> Chart | None:
    """The chart `el` (an AppTest element) draws, or None."""
    kind = getattr(el, "type", "")
    if kind == "plotly_chart":
        return Chart(el.proto.spec, json.loads(el.proto.config), streamlits=True)
    if kind == "html" and (found := chart_box.drawn(el.proto.body)) is not None:
        return Chart(json.dumps(found[0], ensure_ascii=False), found[1], streamlits=False)
    return None


def kind(el) -> str:
    """The element's type, "chart" for a chart of either kind."""
    return "chart" if chart(el) is not None else getattr(el, "type", "")


def charts(node) -> list[Chart]:
    """Every chart below `node` (an AppTest or one of its blocks), top to bottom."""
    return [c for el in getattr(node, "_tree", node) if (c := chart(el)) is not None]
