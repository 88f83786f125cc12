"""The words under a chart are kept for the next session that draws the same figure (gpt2viz/ui/words.py):
what is kept is what chart_text says of that figure, another figure (or the same under another id) is said
anew, and the kept words stay within their bound."""

import plotly.graph_objects as go

from gpt2viz.teaching import chart_text
from gpt2viz.ui import words


def heatmap(z) -> dict:
    return go.Figure(go.Heatmap(z=z, hovertemplate="row %{y}, column %{x}: %{z:.3f}<extra></extra>")).to_dict()


def test_a_figure_said_again_gives_the_same_words_and_another_figure_its_own(monkeypatch):
    calls = []
    real = chart_text.figure_html
    monkeypatch.setattr(chart_text, "figure_html", lambda *a, **k: calls.append(a[1]) or real(*a, **k))
    monkeypatch.setattr(words, "_kept", type(words._kept)())
    a, b = heatmap([[1.0, 2.0], [3.0, 4.0]]), heatmap([[1.0, 2.0], [3.0, 5.0]])
    first = words.figure_html(a, "chart-a", False)
    assert first == real(a, "chart-a", folded=False, lazy=True)
    assert words.figure_html(heatmap([[1.0, 2.0], [3.0, 4.0]]), "chart-a", False) == first
    assert calls == ["chart-a"]  # the same figure, built again by another session: said once
    other = words.figure_html(b, "chart-a", False)
    assert "5.000" in other and other != first
    assert words.figure_html(a, "chart-b", False) == real(a, "chart-b", folded=False, lazy=True)
    assert words.figure_html(a, "chart-a", True) == real(a, "chart-a", folded=True, lazy=True)
    assert calls == ["chart-a", "chart-a", "chart-b", "chart-a"]


def test_the_kept_words_stay_within_their_bound(monkeypatch):
    monkeypatch.setattr(words, "_kept", type(words._kept)())
    monkeypatch.setattr(words, "_kept_chars", 0)
    monkeypatch.setattr(words, "KEPT_CHARS", 20_000)
    for i in range(60):
        words.figure_html(heatmap([[float(i), 1.0], [2.0, 3.0]]), "c", False)
        assert words._kept_chars == sum(map(len, words._kept.values())) <= words.KEPT_CHARS
    assert 0 < len(words._kept) < 60
