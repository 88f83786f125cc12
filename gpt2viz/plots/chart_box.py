"""The app's own chart box, as HTML: a box that holds a finished figure's JSON, which assets/charts.js draws
in the browser with Plotly's cartesian bundle (spec/paths.PLOTLY_BUNDLE); ui/chart_element.py says where it
stands in for st.plotly_chart, and why. Pure: no streamlit import (the lesson site reads boxes back too).

The figure is JSON in an attribute, never markup. The attribute is single-quoted, and `<`, `>`, `&` and `'`
occur in JSON only inside strings, where they are written as JSON escapes: nothing in it can end it or be
read as an entity or a tag (a token of the student's text is in a chart's labels, and the sanitiser
Streamlit runs over st.html drops an attribute that holds "-->" or "]>"), and it needs no HTML escaping."""

import html
import json
import re

import orjson
import plotly.io as pio

CLASS = "gpt2viz-chart"
ATTRIBUTE = "data-gpt2viz-chart"
DEFAULT_HEIGHT_PX = 450  # plotly's height for a figure whose layout sets none
_FOUND = re.compile(rf"<div class=\"{CLASS}\"[^>]* {ATTRIBUTE}='([^']*)'")


def element_html(spec: dict, config: dict, labelled_by: str | None = None) -> str:
    """The chart's box: `spec` (a figure's plotly dict) drawn with `config` (plotly's), reserving its
    height before it is drawn; `labelled_by`: the id of the sentence that names it (ui/words.py)."""
    figure = pio.to_json(spec, validate=False)  # as st.plotly_chart writes it (orjson where installed)
    payload = '{"config":' + orjson.dumps(config).decode() + ',"figure":' + figure + "}"
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("'", "\\u0027")):
        payload = payload.replace(char, escaped)  # inside a JSON string, where a JSON escape means the same
    height = (spec.get("layout") or {}).get("height") or DEFAULT_HEIGHT_PX
    named = f' role="figure" aria-labelledby="{html.escape(labelled_by)}"' if labelled_by else ""
    return (f'<div class="{CLASS}"{named} style="height:{float(height):g}px" '
            f"{ATTRIBUTE}='{payload}'></div>")


def drawn(body: str) -> tuple[dict, dict] | None:
    """(figure, config) of a chart's box in `body` (an st.html element's), or None if it holds none."""
    found = _FOUND.search(body)
    if found is None:
        return None
    payload = json.loads(found.group(1))
    return payload["figure"], payload["config"]
