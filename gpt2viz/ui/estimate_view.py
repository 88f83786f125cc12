"""Compare and patch's attribution patching: the linear estimate (analysis/estimate.py), cached beside
the exact patching, drawn as its two grids and a scatter against the exact cells, with the sentences
of teaching/estimate_text.py."""

import streamlit as st

from .. import plots
from ..analysis.estimate import Estimate, agreement, estimate
from ..analysis.whatif import Patching
from ..spec.schema import Mode
from ..teaching import estimate_text
from .anatomy import plot
from .cache import run_bytes, trace_cache
from .state import Selection
from .working import working


def estimated(sel: Selection, ids_b: tuple[int, ...], answers: tuple[int, int]) -> Estimate:
    key = ("estimate", sel.weights.key, sel.ids, ids_b, answers)
    with working("One forward and one backward pass of B…") as progress:
        return trace_cache().get_or_compute(
            key, lambda: estimate(sel.weights.model, sel.ids, ids_b, answers), progress=progress,
            estimate=run_bytes(sel.weights, max(2, len(ids_b)), Mode.TRAINING, ("logits",), backward=True,
                               dropout=False))  # a training run's bytes: its estimate asks for 2 tokens at least


def beside(sel: Selection, ids_b: tuple[int, ...], tokens_b, answers: tuple[int, int], p: Patching) -> None:
    """The estimate's grids, the scatter of estimate against exact, and where they agree and where not."""
    e = estimated(sel, ids_b, answers)
    cfg = sel.config
    st.markdown(estimate_text.intro())
    blocks = [f"block {i}" for i in range(cfg.n_layer)]
    positions = [f"{i}·{t}" for i, t in enumerate(tokens_b)]
    plot(plots.matrix_heatmap(e.resid, blocks, positions, "Linear estimate: resid_pre at (block, position)",
                              "estimated", x_title="position·token of B", y_title="block", signed=True))
    plot(plots.matrix_heatmap(e.heads, blocks, [f"head {h}" for h in range(cfg.n_head)],
                              "Linear estimate: one head's attn.z", "estimated", x_title="head", y_title="block",
                              signed=True))
    names = [f"block {b}, position {positions[t]}" for b in range(cfg.n_layer) for t in range(len(positions))]
    names += [f"head {b}.{h}" for b in range(cfg.n_layer) for h in range(cfg.n_head)]
    groups = ["resid_pre (block, position)"] * p.resid.numel() + ["attn.z (head)"] * p.heads.numel()
    plot(plots.estimate_scatter([*p.resid.flatten().tolist(), *p.heads.flatten().tolist()],
                                [*e.resid.flatten().tolist(), *e.heads.flatten().tolist()], names, groups,
                                "Each cell: the estimate against the exact patching"))
    for grid, exact, est, name in (("the residual stream's grid", p.resid, e.resid, _resid_cell(positions)),
                                   ("the heads' grid", p.heads, e.heads, lambda b, h: f"head {b}.{h}")):
        a = agreement(exact, est)
        st.markdown(estimate_text.agreement_sentence(grid, a, name(*a.worst)))
    st.caption(estimate_text.why())


def _resid_cell(positions: list[str]):
    return lambda b, t: f"block {b}, position {positions[t]}" if t < len(positions) else f"block {b}"
