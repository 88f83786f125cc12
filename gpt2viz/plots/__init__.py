"""Plotly figure builders for the app: numpy arrays and labels in, `go.Figure` out.

A small package: `checks` (what the builders accept), `axes` (palette, tick labels, axes, margins,
titles), `heatmaps` (the one way to draw a heatmap), and one module per family of figure:
`attention`, `distributions`, `depth`, `bars`, `cache`, `vectors` (one position's d values),
`scatter` (two scores per head). Pages
import the builders from here.

Every builder is a pure function. It takes arrays (anything `np.asarray` accepts, so CPU torch
tensors too) with the batch axis already removed, checks the shapes and labels (raising a
`ValueError` that names the argument, the expected shape and the shape it got), and returns a
compact figure (height 200-450 px, small margins, short title, axis titles always set). It never
imports streamlit or torch.

Colours are chosen to work for colour-blind readers:
- sequential "Viridis" (attention probabilities, 0 to 1 fixed), which is perceptually uniform and
  readable under all three common colour-vision deficiencies and in greyscale;
- diverging "PuOr" (ColorBrewer purple-orange; raw attention scores, centred on 0), one of
  ColorBrewer's colour-blind-safe diverging schemes (orange = negative, purple = positive; turned
  round on a knock-out's Δ log p, so that on every effect map purple means "helps this token");
- categorical colours from the Okabe-Ito palette (blue #0072B2, orange #E69F00, vermillion
  #D55E00, sky blue #56B4E9, grey #999999), which stay distinct for protan, deutan and tritan
  readers; none is black or white, so lines show on the light and the dark theme;
- masked attention cells are neutral grey, outside every colour scale.
Numeric axes never use SI prefixes (μ is a symbol here: the mean), byte sizes are binary (KiB,
MiB: `costs.human_bytes`). No Plotly template is set: the app gives each figure its look (theme.py, light or dark);
every colour that carries meaning is set explicitly.

Tokens: a token can occur twice ("␣the" at 3 and at 9), and Plotly merges identical category
labels, so per-position axes are labelled "3·␣the" (absolute position, middle dot, token) and
horizontal bar charts use numeric axes with `ticktext`. Tokens are HTML-escaped, because Plotly
renders <b>, <br> and entities in labels and tokens like "<br>" or "&amp;" exist. Long sequences
(T up to 1024) stay usable: token axes leave it to plotly in the browser to show only the labels
that fit the chart's width (TICK_ANGLES), cell values are written into heatmaps only where they fit
a cell in an 800 px window (else hover only), and histograms are binned in numpy, not in the
browser. Text is sized for a projector: TICK_PX tick labels, TITLE_PX titles.
Axis titles, hover templates and masks follow the names in model/gpt2.py: B, T, P, L, d, nh, V.
"""

from .attention import attention_heatmap, attention_maps, heads_grid, token_lines
from .axes import (
           CHAR_PX,
           DIVERGING,
           LABEL_ALL,
           LABEL_THINNED,
           MASKED_GREY,
           MAX_TICKS,
           MIN_LABEL_PX,
           SEQUENTIAL,
           SUBTITLE_PX,
           TICK_ANGLES,
           TICK_CHARS,
           TICK_PX,
           TITLE_PX,
           fit_rows,
           kept_labels,
           position_labels,
)
from .bars import loss_per_token, param_breakdown, position_norms, position_values, top_neurons, topk_tokens
from .cache import cache_growth, kv_cache_diagram
from .compare import grouped_bars
from .depth import depth_bars, residual_norms
from .distributions import PERCENTILES, gelu_curve, histogram
from .heatmaps import lens_heatmap, mask_path, matrix_heatmap
from .scatter import head_scatter
from .vectors import heads_merged, layernorm_stages, sorted_products, stacked_vectors

__all__ = ["CHAR_PX", "DIVERGING", "MASKED_GREY", "MAX_TICKS", "PERCENTILES", "SEQUENTIAL", "SUBTITLE_PX", "TICK_CHARS",
           "TICK_ANGLES", "TICK_PX", "TITLE_PX", "LABEL_ALL", "LABEL_THINNED", "MIN_LABEL_PX",
           "fit_rows", "kept_labels", "position_labels",
           "attention_heatmap", "attention_maps", "cache_growth", "depth_bars", "gelu_curve", "heads_grid",
           "histogram", "kv_cache_diagram", "lens_heatmap", "loss_per_token", "mask_path", "matrix_heatmap",
           "param_breakdown", "position_norms", "position_values", "residual_norms", "top_neurons", "topk_tokens",
           "heads_merged", "layernorm_stages", "sorted_products", "token_lines", "stacked_vectors", "grouped_bars",
           "head_scatter"]
