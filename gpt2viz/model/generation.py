"""Choosing the next token: greedy, or sampled with temperature, top-k and top-p (nucleus) from a
seeded generator.

The distribution shown is the one sampled from: softmax(logits / temperature) restricted to the
k most likely tokens, then to the fewest most likely tokens whose probabilities add up to p, and
renormalised (temperature 0 means greedy).
"""

from dataclasses import dataclass, field

import torch

from . import ranking


def distribution(logits: torch.Tensor, temperature: float, top_k: int | None,
                 top_p: float | None = None) -> torch.Tensor:
    """The probabilities [V] a sampler draws from for logits [V], in float32 or, for float64 logits (a
    distribution shown to a learner, whose last digit must be exact), in float64. `top_p` (nucleus
    sampling, after top-k): keep the fewest most likely tokens whose probabilities reach p (at least one)."""
    if temperature < 0:
        raise ValueError(f"temperature must be 0 or more, got {temperature}")
    if top_k is not None and top_k < 1:
        raise ValueError(f"top-k must be at least 1, got {top_k}")
    if top_p is not None and not 0 < top_p <= 1:
        raise ValueError(f"top-p must be above 0 and at most 1, got {top_p}")
    dtype = torch.promote_types(logits.dtype, torch.float32)
    if temperature == 0:
        return torch.nn.functional.one_hot(torch.tensor(ranking.top(logits)), logits.shape[-1]).to(dtype)  # [V]
    if temperature == 1 and (top_k is None or top_k >= logits.shape[-1]) and (top_p is None or top_p >= 1):
        return torch.softmax(logits.to(dtype), dim=-1)  # [V]: softmax(logits) itself, the Output page's left chart
    scaled = (logits.to(dtype) - logits.max()) / temperature  # [V], max 0: no overflow at tiny temperatures
    if top_k is not None and top_k < scaled.shape[-1]:
        cutoff = scaled.topk(top_k).values[-1]
        scaled = scaled.masked_fill(scaled < cutoff, float("-inf"))
    probs = torch.softmax(scaled, dim=-1)  # [V]
    if top_p is None or top_p >= 1:
        return probs
    ordered, order = probs.sort(descending=True)  # [V] each
    before = ordered.cumsum(-1) - ordered  # [V]: what the more likely tokens already hold
    kept = torch.zeros_like(probs, dtype=torch.bool).scatter(-1, order, before < top_p)  # [V]; the first always
    nucleus = probs.masked_fill(~kept, 0)  # [V]
    return nucleus / nucleus.sum()  # [V]


@dataclass
class Sampler:
    """A `choose` for modes.generate: the same seed gives the same tokens."""
    temperature: float = 1.0
    top_k: int | None = None
    seed: int = 0
    top_p: float | None = None
    _generator: torch.Generator = field(init=False, repr=False)

    def __post_init__(self):
        distribution(torch.zeros(2), self.temperature, self.top_k, self.top_p)  # validate now, not mid-generation
        self._generator = torch.Generator().manual_seed(self.seed)

    def __call__(self, logits: torch.Tensor) -> int:
        probs = distribution(logits, self.temperature, self.top_k, self.top_p)
        return int(torch.multinomial(probs, 1, generator=self._generator))
