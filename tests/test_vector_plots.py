"""One position's vectors: the figures carry the values they were given, checked and labelled."""

import numpy as np
import pytest

from gpt2viz.plots import vectors as vp


def test_layernorm_stages_centre_and_scale_the_vector():
    rng = np.random.default_rng(0)
    x = rng.normal(2.0, 3.0, 768).astype(np.float32)
    normalized = (x - x.mean()) / np.sqrt(x.var() + 1e-5)
    fig = vp.layernorm_stages(x, normalized, normalized * 1.0 + 0.0, 1e-5, "LayerNorm 1 · block 0 · position 9")
    bars = [t for t in fig.data if t.type == "bar"]
    assert len(bars) == 4 and all(len(b.y) == 768 for b in bars)
    np.testing.assert_allclose(bars[1].y, x - x.mean(), rtol=1e-6)
    assert abs(float(np.mean(bars[1].y))) < 1e-4 and abs(float(np.var(bars[2].y)) - 1) < 1e-3
    titles = [a.text for a in fig.layout.annotations]
    assert titles[0].startswith(f"entering: x   (μ = {x.mean():.3g}") and titles[3].startswith("out: g ⊙ scaled + b")


def test_heads_merged_lays_the_heads_side_by_side():
    z = np.arange(12 * 64, dtype=np.float32).reshape(12, 64)
    fig = vp.heads_merged(z, z.reshape(-1), "Merge · block 0")
    heat, bars = fig.data
    assert np.asarray(heat.z).shape == (12, 64) and list(heat.y) == [f"h{h}" for h in range(12)]
    assert len(bars.y) == 768 and bars.y[64] == z[1, 0]
    assert bars.marker.color[63] != bars.marker.color[64]  # a new head, a new colour
    with pytest.raises(ValueError, match="merged must be"):
        vp.heads_merged(z, np.zeros(700), "x")


def test_stacked_vectors_checks_every_row():
    with pytest.raises(ValueError, match=r"rows\[1\] has 3 values"):
        vp.stacked_vectors([("a", np.zeros(4)), ("b", np.zeros(3))], "t")
    with pytest.raises(ValueError, match="non-finite"):
        vp.stacked_vectors([("a", np.array([1.0, np.nan]))], "t")
