"""The dot product behind one attention score: s_ij = q_i · k_j / √dh, coordinate by coordinate.

A score is a sum of dh products q_i[c] k_j[c]: coordinates where the query and the key have the same
sign push the score up, the others pull it down, and the few largest products usually decide it.
Its weight in the pattern is its row's softmax: e^{s_ij} / Σ_{j'} e^{s_ij'} over the keys query i may
read, so the same score weighs much or little depending on the rest of its row.
"""

import math
from dataclasses import dataclass

import torch

from ..model.trace import Trace
from ..spec.schema import CACHED_MODES


@dataclass(frozen=True)
class ScoreParts:
    q: torch.Tensor  # [dh] query i of the head
    k: torch.Tensor  # [dh] key j of the head
    products: torch.Tensor  # [dh] q[c] · k[c]
    order: torch.Tensor  # [dh] coordinates, largest product first
    dot: float  # Σ products
    scaled: float  # dot / √dh: the score
    recorded: float  # the trace's own attn.scores[i, j] (the same number, float32 rounding aside)
    masked: bool  # key j lies after query i: the causal mask sets its score to −∞
    weight: float  # pattern[i, j]: the score's share of the row's softmax (0 when masked)
    rank: int  # 1 = the largest weight in the row
    readable: int  # the keys query i may read (the row's softmax runs over these)
    best_other: float | None  # the largest score among the other keys query i reads (None: it reads only j)

    @property
    def d_head(self) -> int:
        return self.q.numel()


def keys_name(trace: Trace) -> str:
    """Prefill and decode keep the keys read, the cache's and the new ones, in k_cache."""
    return "attn.k_cache" if trace.mode in CACHED_MODES else "attn.k"


def score_parts(trace: Trace, block: int, head: int, query: int, key: int) -> ScoreParts:
    """Query `query` (0 … T − 1, this step's) against key `key` (0 … L − 1) of one head."""
    if not 0 <= query < trace.T:
        raise ValueError(f"query must be between 0 and {trace.T - 1}, got {query}")
    if not 0 <= key < trace.L:
        raise ValueError(f"key must be between 0 and {trace.L - 1}, got {key}")
    q = trace.get("attn.q", block)[0, head, query].double()  # [dh]
    k = trace.get(keys_name(trace), block)[0, head, key].double()  # [dh]
    products = q * k  # [dh]
    dot = float(products.sum())
    scores = trace.get("attn.scores", block, head=head, queries=slice(query, query + 1))[0, 0]  # [L]
    pattern = trace.get("attn.pattern", block, head=head, queries=slice(query, query + 1))[0, 0]  # [L]
    readable = trace.P + query + 1  # lower-right causal mask: query i reads keys 0 … P + i
    weight = float(pattern[key])
    others = torch.cat([scores[:min(key, readable)], scores[key + 1:readable]])  # [readable − 1] or [readable]
    return ScoreParts(q, k, products, products.argsort(descending=True), dot, dot / math.sqrt(q.numel()),
                      float(scores[key]), key >= readable, weight, int((pattern > weight).sum()) + 1, readable,
                      float(others.max()) if others.numel() else None)
