"""Every chart's sentence and numbers (teaching/chart_text.py) on the corpus: the figures every page
draws on random weights, the demo model's, a 1-token text, a repeated text, a text at the end of the
tiny model's context, in the four modes. Each fact the sentence states is recomputed here by brute
force from the figure's own data, point by point: the highest and lowest printed value and how many
points print it, the point named at each, the count below zero, "every one is" only where every
point prints the same, an attention map's rows by where their largest weight falls. The numbers'
table says every value as the chart's hover does, and every text in it is escaped."""

import json
import re

import numpy as np
import pytest
from app_charts import charts
from streamlit.testing.v1 import AppTest

from gpt2viz.spec import bundle
from gpt2viz.spec.pages import BY_URL, PAGES
from gpt2viz.teaching import chart_text as ct
from gpt2viz.teaching.prompts import DEMO_REPEAT

LONG = " ".join(["the cat sat on the mat and looked at the dog"] * 94)  # about 1,000 tokens
CHART_PAGES = [row.url for row in PAGES if row.charts]
# (pages, query parameters): every page on random weights in two modes and a 1-token text; the pages of
# maps and heads on the demo model's repeat, and at the end of the context
CORPUS = [(CHART_PAGES, {}), (CHART_PAGES, {"mode": "decode", "text": "Hi"}),
          (["attention", "heads", "overview", "training", "lens"], {"mode": "train", "text": "Hi"}),
          (["attention", "heads", "attribution", "whatif", "patch"], {"weights": "demo", "text": DEMO_REPEAT}),
          (["attention", "overview", "block", "mlp"], {"mode": "prefill", "text": LONG})]


def figures(url: str, params: dict) -> list[dict]:
    at = AppTest.from_file("../app.py", default_timeout=300)
    for key, value in {"model": "tiny", **params}.items():
        at.query_params[key] = str(value)
    at.run()
    at.switch_page(BY_URL[url].file)
    at.run()
    assert not at.exception, at.exception[0].value
    return [c.figure for c in charts(at)]


def brute(group: list[ct.Series]) -> dict:
    """Every point's printed value, its label and its number, one by one."""
    points = []
    for s in group:
        var, fmt = s.value
        for point in np.ndindex(*s.shape):
            if s.kept_per_row is not None and point[1] >= s.kept_per_row[point[0]]:  # masked: veiled, not said
                continue
            raw = s.get(var, point)
            try:
                x = float(raw)
            except (TypeError, ValueError):
                continue
            if np.isfinite(x):
                points.append((x, ct._formatted(x, fmt), s, point))
    return points


def check(spec: dict) -> None:
    said = ct.sentence(spec)
    for group, f in ct.facts(spec):
        if f.placed is not None:
            assert f.n == sum(s.shape[0] for s in group)
            continue
        points = brute(group)
        assert f.n == len(points)
        assert f.scope in said
        if not points:
            continue
        hi = max(points, key=lambda p: p[0])
        lo = min(points, key=lambda p: p[0])
        if f.every is not None:
            assert {p[1] for p in points} == {f.every}, (said, f.every)
            continue
        assert len({p[1] for p in points}) > 1
        for (printed, count, where), extreme in ((f.highest, hi), (f.lowest, lo)):
            assert printed == extreme[1], (said, printed, extreme[1])
            assert count == sum(p[1] == printed for p in points), (said, printed)
            named = [p for p in points if p[1] == printed]
            labels = {", ".join(x for x in (p[2].name if len(group) > 1 else "", p[2].label(p[3])) if x)
                      for p in named}
            assert where in labels, (where, labels)
            assert f"{printed} at" in said
        assert f.below == sum(p[1].startswith("-") for p in points), said
        if 0 < f.below < f.n:
            assert f"{f.below:,} of {f.n:,} " in said
        if f.rows is not None:
            check_rows(group[0], f.rows)
            assert "largest weight" in said


def check_rows(s: ct.Series, rows: dict) -> None:
    """Each row's largest weight, found by formatting every cell of the row."""
    fmt = s.value[1]
    want = dict.fromkeys(rows, 0)
    z = s.values()
    for r, ylabel in enumerate(s.data["y"]):
        cells = [(ct._formatted(float(v), fmt), c) for c, v in enumerate(z[r]) if np.isfinite(v)]
        if not cells:
            continue
        top = max(cells, key=lambda t: float(t[0].rstrip("%").replace(",", "")))[0]
        at = [c for p, c in cells if p == top]
        if len(at) > 1:
            want["tie"] += 1
            continue
        q, k = int(re.match(r"\d+", str(ylabel)).group()), int(re.match(r"\d+", str(s.data["x"][at[0]])).group())
        want["itself" if k == q else "the first token" if k == 0 else
             "the token before it" if k == q - 1 else "another token"] += 1
    assert want == rows


def check_numbers(spec: dict) -> None:
    """The tables: one per described trace; in a map's, the first row's cells say its values as the
    chart's hover prints them."""
    page = ct.numbers_html(spec)
    kinds = ct.series(spec)
    tables = page.split("<table>")[1:]
    assert len(tables) == len(kinds)
    for s, table in zip(kinds, tables):
        if s.kind != "map" or s.value[0] != "z":
            continue
        first_row = re.search(r"<tbody><tr>(.*?)</tr>", table).group(1)
        cells = re.findall(r"<td>(.*?)</td>", first_row)
        values = s.values()[0][:ct.TABLE_COLUMNS]
        assert len(cells) == len(values)
        for cell, v in zip(cells, values):
            assert (cell == "") if not np.isfinite(v) else cell.endswith(ct._formatted(float(v), s.value[1])), cell


@pytest.mark.parametrize("pages,params", CORPUS, ids=["random", "decode-1-token", "train-1-token", "demo-repeat",
                                                      "long-prefill"])
def test_every_chart_sentence_holds(pages, params):
    seen = 0
    for url in pages:
        for spec in figures(url, params):
            assert bundle.draws(spec), url  # Plotly's cartesian bundle draws it (spec/bundle.py)
            check(spec)
            check_numbers(spec)
            seen += 1
    assert seen >= len(pages)


def test_quantifiers_on_made_up_charts():
    """The edges the pages rarely reach: one bar, every bar equal, ties, a masked map, no values."""
    def bars(values, labels=None):
        return {"data": [{"type": "bar", "x": labels or [f"t{i}" for i in range(len(values))], "y": values,
                          "hovertemplate": "token %{x}<br>loss %{y:.3f}<extra></extra>"}],
                "layout": {"title": {"text": "Loss"}}}
    assert ct.sentence(bars([1.0])) == "Loss. The chart draws loss at 1 bar: 1.000."
    assert "every one is 2.000" in ct.sentence(bars([2.0, 2.0001, 1.9999]))
    tie = ct.sentence(bars([3.0, 1.0, 3.0004]))
    assert "highest 3.000 at 2 bars, among them token t0" in tie and "lowest 1.000 at token t1" in tie
    assert "1 of 3 is below zero" in ct.sentence(bars([-1.0, 2.0, 0.5]))
    assert "below zero" not in ct.sentence(bars([-0.0001, 2.0, 0.5]))  # prints as 0.000
    masked = {"data": [{"type": "heatmap", "z": [[1.0, None], [0.25, 0.75]], "x": ["0·a", "1·b"], "y": ["0·a", "1·b"],
                        "hovertemplate": "query %{y}<br>key %{x}<br>attention %{z:.2f}<extra></extra>"}],
              "layout": {"title": {"text": "A head"}}}
    said = ct.sentence(masked)
    assert "2 rows by 2 columns (3 cells drawn)" in said
    assert "Each row's largest weight falls on itself in 2 of its 2 rows" in said
    check(masked)
    assert ct.sentence({"data": [], "layout": {}}) == "A chart. It draws no values."
    assert ct.sentence(bars([float("nan")])) .endswith("nothing drawn.")


def test_every_text_in_the_words_and_numbers_is_escaped():
    hostile = "<script>alert(1)</script><img src=x onerror=alert(2)>"
    spec = {"data": [{"type": "bar", "x": [hostile, "b"], "y": [1.0, 2.0], "name": hostile,
                      "hovertemplate": "token %{x}<br>" + hostile + " %{y:.2f}<extra></extra>"}],
            "layout": {"title": {"text": hostile}}}
    out = ct.figure_html(spec, 'x" onmouseover="alert(3)', folded=True)
    assert "<script" not in out and "<img" not in out and '" onmouseover' not in out
    assert "&lt;script&gt;" in out
    built = {"data": [{"type": "heatmap", "z": [[1.0]], "x": ["0·&lt;b&gt;"], "y": ["0·&lt;b&gt;"],
                       "hovertemplate": "query %{y}<br>key %{x}<br>attention %{z:.2f}<extra></extra>"}],
             "layout": {"title": {"text": "A &lt;b&gt; head"}}}  # a builder's label, escaped for plotly
    assert "&amp;lt;" not in ct.figure_html(built, "y") and "0·&lt;b&gt;</th>" in ct.figure_html(built, "y")
    assert ct.sentence(built).startswith("A <b> head.")  # said as text: escaped once, where it is written
    lazy = ct.figure_html(spec, "x", lazy=True)  # the table escaped once more, inside an attribute
    assert "<script" not in lazy and "<img" not in lazy and "<table" not in lazy
    held = re.search(r'data-numbers="([^"]*)"', lazy).group(1)
    assert "<" not in held and "&amp;lt;script&amp;gt;" in held


def test_a_large_map_is_said_whole_and_shown_in_part():
    z = np.random.default_rng(0).random((300, 300))
    z[5, 7], z[9, 11] = 2.0, -1.0
    spec = {"data": [{"type": "heatmap", "z": z.tolist(), "x": list(range(300)), "y": list(range(300)),
                      "hovertemplate": "row %{y}<br>column %{x}<br>value %{z:.4f}<extra></extra>"}],
            "layout": {"title": {"text": "Big"}}}
    said = ct.sentence(spec)
    assert "highest 2.0000 at row 5, column 7; lowest -1.0000 at row 9, column 11" in said
    page = ct.numbers_html(spec)
    assert f"the first {ct.TABLE_ROWS} of 300 rows and the first {ct.TABLE_COLUMNS} of 300 columns" in page
    assert page.count("<tr>") == ct.TABLE_ROWS + 1


@pytest.mark.parametrize("template,z", [
    ("query %{y}<br>key %{x}<br>attention %{z:.3f}<extra></extra>", [[0.5, None], [float("inf"), -0.0001]]),
    ("%{y} · %{x}<br>= %{z:,.2f} units", np.array([[1234.5, float("nan")], [-2.0, 3.0]], dtype=np.float32)),
    ("value %{z:.1%}", [[0.25, True], [1, -0.5]]),
    ("value %{z}", np.array([[3, 40000], [-7, 0]])),
    ("value &lt;b&gt; %{z:.2f}", [[1.0, 2.0], [3.0, 4.0]]),  # words with an entity: said cell by cell
    ("value %{z:.2f}", [["0.5", 1.0], [2.0, 3.0]]),  # a string among the numbers: printed as it is
    ("value %{z:>8.2f}", [[1.0, 2.0], [3.0, 4.0]]),  # a format that pads with spaces
])
def test_a_maps_cells_read_as_its_hover_reads_each(template, z):
    """A map's table is filled from the words around its value, read once (`_value_frame`), where that
    gives every cell the same text as reading the hover cell by cell; the rest are read cell by cell."""
    spec = {"data": [{"type": "heatmap", "z": z, "x": ["0·a", "1·b"], "y": ["0·a", "1·b"],
                      "hovertemplate": template}], "layout": {"title": {"text": "A map"}}}
    (s,) = ct.series(spec)
    seg = next(g for g in s.segments if ct._has(g.template, s.value[0]))
    framed = ct._table_rows(s)

    def cell(r, c):  # the hover's line read at this cell, its header dropped where it starts the line
        text = s.say(seg.template, (r, c))
        return "" if ct._number(s.get("z", (r, c))) is None else \
            text[len(seg.header):].lstrip(" =:") if text.startswith(seg.header) else text
    assert framed[1] == [[str(s.data["y"][r])] + [cell(r, c) for c in range(2)] for r in range(2)]
    read_once = not any(w in template for w in ("&lt;", ">8")) and not isinstance(z[0][0], str)
    assert (ct._value_frame(s, seg) is not None) == read_once


def test_a_map_whose_value_line_has_another_format_than_its_last_is_read_cell_by_cell():
    """The table says the value as the first hover line that holds it; read once only where that line's format
    is the trace's (`attention %{z:.3f}<br>share %{z:.1%}`: 0.500, not 50.0%)."""
    spec = {"data": [{"type": "heatmap", "z": [[0.5, 0.25], [1.0, 0.0]], "x": ["a", "b"], "y": ["c", "d"],
                      "hovertemplate": "attention %{z:.3f}<br>share %{z:.1%}"}], "layout": {}}
    (s,) = ct.series(spec)
    seg = next(g for g in s.segments if ct._has(g.template, "z"))
    assert ct._value_frame(s, seg) is None
    assert ct._table_rows(s)[1][0][1:] == ["0.500", "0.250"]


def test_the_scores_sentence_reads_the_unmasked_cells_alone():
    """The attention page's scores map draws a future key's raw score under a veil (its hover keeps it); the
    sentence said "highest 21.359 at query 8, key 11" of such a cell, and counted it below zero (a trial)."""
    from gpt2viz.plots.attention import attention_maps

    T = 6
    scores = np.random.default_rng(0).normal(size=(T, T)).astype(np.float32)
    mask = np.triu(np.ones((T, T), dtype=bool), 1)  # query i sees keys 0..i
    scores[1, 4], scores[2, 5] = 50.0, -50.0  # the extremes, both masked
    pattern = np.where(mask, 0.0, 1.0) / np.arange(1, T + 1)[:, None]
    spec = attention_maps(scores, pattern, np.ones(T), list("abcdef"), list("abcdef"), "t", mask=mask).to_dict()
    said = ct.sentence(spec)
    kept = scores[~mask]
    assert f"({int((~mask).sum()):,} unmasked cells)" in said and "50.000" not in said, said
    assert f"highest {kept.max():.3f}" in said and f"lowest {kept.min():.3f}" in said, said
    assert f"{int((kept < 0).sum()):,} of {int((~mask).sum()):,} are below zero" in said, said
    check(spec)


def test_one_bar_or_point_is_counted_in_the_singular():
    """"at 1 bars" and "at 1 points" on the Generation page at the end of the context (a trial)."""
    import plotly.graph_objects as go

    bar = go.Figure(go.Bar(x=["a"], y=[0.5], hovertemplate="%{x}: %{y:.3f}<extra></extra>")).to_dict()
    line = go.Figure(go.Scatter(x=[1], y=[0.5], mode="lines", hovertemplate="%{x}: %{y:.3f}<extra></extra>")).to_dict()
    assert "at 1 bar:" in ct.sentence(bar) and "at 1 point:" in ct.sentence(line)
    assert "at 2 bars" in ct.sentence(go.Figure(go.Bar(x=["a", "b"], y=[0.5, 0.25],
                                                       hovertemplate="%{x}: %{y:.3f}<extra></extra>")).to_dict())


def test_a_bar_named_by_its_place_reads_its_labels_markup():
    """A class vote's chart said "lowest 0 at x = no<br>&lt;b&gt;x&lt;/b&gt;" for the choice "no <b>x</b>" (its label
    escaped and wrapped for plotly): a trial."""
    import plotly.graph_objects as go

    spec = go.Figure(go.Bar(x=["yes", "no<br>&lt;b&gt;x&lt;/b&gt; &amp; p &lt; 0.5"], y=[3, 0],
                            hovertemplate="%{y} votes<extra></extra>")).to_dict()
    said = ct.sentence(spec)
    assert "x = no <b>x</b> & p < 0.5" in said and "&lt;" not in said and "<br>" not in said, said
    assert "&lt;b&gt;" in ct.figure_html(spec, "v", folded=False)  # escaped once, for the page


def test_a_trace_named_as_its_quantity_is_said_once():
    """The Block page's stream: "It also draws = x′ₙ (resid_mid): x′ₙ (resid_mid) at 768 bars"."""

    import torch

    from gpt2viz import plots
    from gpt2viz.teaching import chart_text

    fig = plots.stacked_vectors([(label, torch.ones(4)) for label in ("xₙ (resid_pre)", "+ Δattn (attn.out)",
                                                                      "= x′ₙ (resid_mid)")], "t")
    said = chart_text.sentence(json.loads(fig.to_json()))
    assert "It also draws Δattn (attn.out) at 4 bars" in said and "It also draws x′ₙ (resid_mid) at 4 bars" in said
    assert "): " not in said.split(". ", 1)[1], said


def test_a_histograms_table_holds_every_bin_its_sentence_can_name():
    """A trial's Output page: "highest 49,957 at [5.464, 5.579)", a bin past the table's first 64 of 80."""

    import numpy as np

    from gpt2viz import plots
    from gpt2viz.teaching import chart_text as ct

    values = np.concatenate([np.linspace(0, 1, 1000), np.full(5000, 2.0)])  # the tallest bin the last
    spec = json.loads(plots.histogram(values, "logits", "logit").to_json())
    said = ct.sentence(spec)
    assert "highest 5,000" in said, said
    _, rows, total = ct._table_rows(ct.series(spec)[0])
    assert len(rows) == total == 80, (len(rows), total)
