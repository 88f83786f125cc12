"""Attribution patching: the linear estimate of activation patching from one forward and one backward pass.

Activation patching (whatif.patch) runs the corrupt text B once per cell with one activation taken
from the clean text A's run. Its first-order Taylor estimate needs B's gradient alone: for the
metric m = logit_a − logit_b at the last position and an activation x,
    m(x_B + (x_A − x_B)) − m_B ≈ ∂m/∂x |_B · (x_A − x_B),
one dot product per cell: per (block, position) of resid_pre, and per head of attn.z (summed over the
head's positions and its dh values, as its patch replaces them all). Divided by m_A − m_B, as the
exact patching's restored fraction is. Where the model is far from linear between the two runs
(a saturated softmax that the patch un-saturates, direct and indirect effects that cancel, a LayerNorm
scale that moves) the estimate misses; the page sets it beside the exact grid to show where.
"""

from dataclasses import dataclass

import torch

from ..model.gpt2 import GPT2
from ..model.record import Recorder
from ..spec.schema import block_name
from .whatif import Patching, logit_diff, margins_measurable, patch_sources


@dataclass(frozen=True)
class Estimate:
    """The linear estimate of each cell's restored fraction, shaped as Patching's grids."""
    resid: torch.Tensor  # [n_layer, T]
    heads: torch.Tensor  # [n_layer, nh]
    clean_diff: float  # m_A
    corrupt_diff: float  # m_B

    @property
    def nbytes(self) -> int:
        return (self.resid.numel() + self.heads.numel()) * 4


def estimate(model: GPT2, clean_ids, corrupt_ids, answers: tuple[int, int]) -> Estimate:
    """∂m/∂x at B times (x_A − x_B), over m_A − m_B, for every cell of whatif.patch's two grids."""
    clean_ids, corrupt_ids = list(clean_ids), list(corrupt_ids)
    if len(clean_ids) != len(corrupt_ids):
        raise ValueError(f"patching needs texts of equal length in tokens: {len(clean_ids)} and {len(corrupt_ids)}")
    n = model.config.n_layer
    resid = [block_name("resid_pre", b) for b in range(n)]
    zs = [block_name("attn.z", b) for b in range(n)]
    source = patch_sources(model, clean_ids)
    rec = Recorder(names=(), keep_graph=(*resid, *zs))
    with torch.enable_grad():
        logits, _ = model(torch.tensor([corrupt_ids]), rec, last_only=True)  # [1, 1, V]
        m = logit_diff(logits[0, -1], answers)
        grads = torch.autograd.grad(m, [rec.live[x] for x in (*resid, *zs)])
    m_b = float(m.detach())
    m_a = float(logit_diff(source.at("logits", -1)[0], answers))
    gap = m_a - m_b
    nan = float("nan")
    with torch.no_grad():
        r = torch.stack([(g[0] * (source[x][0] - rec.live[x].detach()[0])).sum(-1)
                         for g, x in zip(grads[:n], resid)])  # [n_layer, T]
        h = torch.stack([(g[0] * (source[x][0] - rec.live[x].detach()[0])).sum((-1, -2))
                         for g, x in zip(grads[n:], zs)])  # [n_layer, nh]
        if not margins_measurable(m_a, m_b):
            r, h = torch.full_like(r, nan), torch.full_like(h, nan)
        else:
            r, h = r / gap, h / gap
    return Estimate(r.float(), h.float(), m_a, m_b)


@dataclass(frozen=True)
class Agreement:
    """How the estimate compares with the exact patching, over the cells of one grid."""
    correlation: float  # Pearson's, over the cells where both are finite (NaN where undefined)
    worst: tuple[int, int]  # the cell where |estimate − exact| is largest (row, column)
    exact: float  # there
    estimated: float  # there
    misses: int  # cells where |estimate − exact| > MISS
    cells: int


MISS = 0.1  # a miss: the estimate is off by more than a tenth of the whole effect (m_A − m_B)


def agreement(exact: torch.Tensor, estimated: torch.Tensor) -> Agreement:
    """The correlation, the worst cell and the count of misses of `estimated` against `exact` (same shape)."""
    if exact.shape != estimated.shape:
        raise ValueError(f"the grids differ in shape: {list(exact.shape)} and {list(estimated.shape)}")
    e, s = exact.double().flatten(), estimated.double().flatten()
    ok = torch.isfinite(e) & torch.isfinite(s)
    if not ok.any():
        return Agreement(float("nan"), (0, 0), float("nan"), float("nan"), 0, 0)
    miss = (s - e).abs().masked_fill(~ok, -1.0)
    i = int(miss.argmax())
    x, y = e[ok], s[ok]
    sx, sy = x.std(unbiased=False), y.std(unbiased=False)
    corr = float(((x - x.mean()) * (y - y.mean())).mean() / (sx * sy)) if x.numel() > 1 and sx > 0 and sy > 0 \
        else float("nan")
    cols = exact.shape[-1]
    return Agreement(corr, (i // cols, i % cols), float(e[i]), float(s[i]), int((miss > MISS).sum()), int(ok.sum()))


def report(p: Patching, est: Estimate) -> dict:
    """The CLI's `estimate` object: both grids, and per grid the correlation and the worst cell."""
    def finite(v: float):
        return None if v != v else round(float(v), 6)

    def grid(t: torch.Tensor) -> list:
        return [[finite(v) for v in row] for row in t.tolist()]
    out = {"resid_pre": grid(est.resid), "attn_z": grid(est.heads)}
    for key, exact, s in (("resid_pre", p.resid, est.resid), ("attn_z", p.heads, est.heads)):
        a = agreement(exact, s)
        out[f"{key}_agreement"] = {"correlation": finite(a.correlation), "worst": list(a.worst),
                                   "exact": finite(a.exact), "estimate": finite(a.estimated),
                                   "misses": a.misses, "cells": a.cells, "miss_above": MISS}
    return out
