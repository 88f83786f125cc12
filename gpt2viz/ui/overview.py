"""Data for the overview page: residual norms across depth, the next tokens."""

import torch

from ..analysis.lens import n_blocks
from ..model import ranking
from ..model.tokenizer import readable
from ..model.trace import Trace


def residual_norm_series(trace: Trace) -> tuple[list[str], torch.Tensor]:
    """The L2 norm of the residual stream at each depth, [n_points, T]."""
    n = n_blocks(trace)
    labels, rows = [], []
    for i in range(n):
        for point, short in (("in", "resid_pre"), ("mid", "resid_mid")):
            labels.append(f"block {i} {point}")
            rows.append(trace.get(short, i)[0].norm(dim=-1))
    labels.append("final")
    rows.append(trace.get("resid_post", n - 1)[0].norm(dim=-1))
    return labels, torch.stack(rows)  # [2n + 1, T]


def top_next_tokens(trace: Trace, k: int = 10, position: int = -1) -> tuple[list[float], list[str]]:
    logits = trace.at("logits", position)[0]  # [V]
    probs = torch.softmax(logits.double(), dim=-1)  # [V], float64: the digits shown are exact
    ids = ranking.ranked(logits, k)  # [k]: ties in token-id order, as every page ranks
    return probs[ids].tolist(), [readable(int(i)) for i in ids]
