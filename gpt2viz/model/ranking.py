"""Which token comes first: one order for every page, every mode and every machine.

Many pages read the top of the next-token distribution: the Output page's bars and worked example,
the Overview's bars, greedy generation, an exercise's answer, the logit lens, What if, Attribution,
Paths. They all read it here, so that they agree.

Two tokens whose logits differ by less than `TIE_NATS` are a tie: their probabilities differ by less
than 0.01 %, and which of them float32 arithmetic puts higher depends on the code path (a full run and
a decode step round differently) and on the CPU (MKL blocks its sums by the vector width). The demo
model, for one, gives 49,957 tokens it never saw in training the same logit up to 5e-7. So the order
is: every token tied with the top one first, in token-id order; then the rest from the highest logit
down, equal values in token-id order (a stable sort: `torch.topk` leaves the order of equal values
unspecified). The first of that order is the same on any machine and in any mode, unless a token's
logit lies within rounding of the tie's edge.

Each function takes logits or log-probabilities (the same differences); a page that holds
probabilities passes their log.
"""

import torch

TIE_NATS = 1e-4  # logits closer than this to the top one tie with it: probabilities within 0.01 %


def _tied(logits: torch.Tensor) -> torch.Tensor:
    top = logits.max(dim=-1, keepdim=True).values  # [..., 1]
    return logits >= top - TIE_NATS  # [..., V]


def _no_nan(logits: torch.Tensor) -> torch.Tensor:
    """NaN ranks last, as −inf: a NaN would make the top NaN and every comparison false."""
    return logits.nan_to_num(nan=float("-inf"), posinf=float("inf"), neginf=float("-inf"))


def ranked(logits: torch.Tensor, k: int) -> torch.Tensor:
    """[..., V] -> [..., k]: the ids of the k first tokens (k at most V)."""
    rows = _no_nan(logits).reshape(-1, logits.shape[-1])  # [n, V]
    if k == 1:  # the first of each row at once (the logit lens asks 13 depths × 12 positions): the tie's lowest id
        return _tied(rows).to(torch.uint8).argmax(-1, keepdim=True).reshape(*logits.shape[:-1], 1)  # [..., 1]
    return torch.stack([_first(row, k) for row in rows]).reshape(*logits.shape[:-1], k)  # [..., k]


def _first(row: torch.Tensor, k: int) -> torch.Tensor:
    """[V] -> [k], without sorting all V (a sort of 50,257 takes 10-35 ms, topk 0.2)."""
    tied = _tied(row)  # [V]
    ids = tied.nonzero().squeeze(-1)  # [n_tied], ascending: token-id order
    if len(ids) >= k:
        return ids[:k]
    rest = row.masked_fill(tied, float("-inf"))  # [V]
    edge = rest.topk(k - len(ids)).values[-1]  # the last value the k first reach
    near = (~tied & (rest >= edge)).nonzero().squeeze(-1)  # [m], ascending: from there up, ties at the edge too
    # (~tied: where fewer than k are finite, the edge is −inf, and the tied, masked to −inf, would come again)
    by_value = torch.sort(rest[near], descending=True, stable=True).indices  # [m]: equal values keep id order
    return torch.cat([ids, near[by_value][:k - len(ids)]])  # [k]


def top(logits: torch.Tensor) -> int:
    """[V] -> the first token's id: the lowest id among those tied with the top."""
    return int(_tied(_no_nan(logits)).to(torch.uint8).argmax())  # argmax: the first of the equal maxima


def tied_at_top(logits: torch.Tensor) -> int:
    """[V] -> how many tokens tie for the top (1: one token is first on its own)."""
    return int(_tied(_no_nan(logits)).sum())


def rank(logits: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """logits [..., V], ids [...] -> [...]: each token's place counted from 1, as a tie counts it: one
    more than the tokens whose logits exceed its own by more than TIE_NATS (the top's tie all rank 1:
    written as x − TIE_NATS, the same rounding as the tie's edge)."""
    logits = _no_nan(logits)
    own = logits.gather(-1, ids[..., None])  # [..., 1]
    return 1 + (logits - TIE_NATS > own).sum(-1)  # [...]
