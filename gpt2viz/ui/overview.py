"""Data for the overview page: residual norms across depth, the next tokens."""

import streamlit as st
import torch

from ..analysis.lens import n_blocks
from ..model import ranking
from ..model.tokenizer import readable
from ..model.trace import Trace
from ..teaching import page_text
from .text import code_span


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


def say_tie(logits: torch.Tensor, container=None) -> None:
    """Under a page's top token: where several tie for it (logits [V]), how many, and that token id orders them."""
    tied = ranking.tied_at_top(logits)
    if tied > 1:
        token = code_span(readable(ranking.top(logits)))
        (container or st).caption(":material/balance: " + page_text.tie_note(tied, token, ranking.TIE_NATS))
