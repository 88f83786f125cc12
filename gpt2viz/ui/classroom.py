"""Data for the classroom pages: generation steps, training internals, the logit lens table."""

import math
from dataclasses import dataclass

import torch

from ..analysis.lens import LensRow
from ..model import ranking
from ..model.generation import distribution
from ..model.modes import Generation
from ..model.tokenizer import readable
from ..model.trace import Trace
from ..spec import costs
from ..spec.config import GPT2Config
from ..spec.schema import block_name

TRAINING_NEEDS = ("loss*", "*dropout_mask", "grad.h.*.weight", "grad.blocks.*.resid_pre")
# each row: one parameter's gradient (its .weight): a matrix, or a LayerNorm's gain g (its bias b, as every bias, apart)
GRAD_PARTS = [("ln_1", "ln_1 g"), ("attn.c_attn", "W_QKV"), ("attn.c_proj", "W_O"), ("ln_2", "ln_2 g"),
              ("mlp.c_fc", "W_fc"), ("mlp.c_proj", "W_proj")]
DROPOUT_SITES = [("attn.pattern_dropout_mask", "attention pattern"), ("attn.out_dropout_mask", "Δattn"),
                 ("mlp.out_dropout_mask", "Δmlp")]


def generation_rows(gen: Generation, cfg: GPT2Config, temperature: float, top_k: int | None,
                    top_p: float | None = None) -> list[dict]:
    rows = []
    for i, (trace, chosen) in enumerate(zip(gen.traces, gen.ids)):  # steps count from 1, as the charts do
        p_chosen = trace.memo(("p(chosen)", chosen, temperature, top_k, top_p),
                              lambda t=trace, c=chosen: float(shown_distribution(t, temperature, top_k, top_p)[c]))
        rows.append({"step": i + 1, "reads token": trace.tokens[-1], "P (cached)": trace.P, "L (keys)": trace.L,
                     "KV cache after the step (fp32)": costs.human_bytes(costs.kv_cache_bytes(cfg, 1, trace.L).value),
                     "chosen": readable(chosen), "p(chosen)": f"{p_chosen:.4g}"})  # 1.861e-05, not 0.0000
    return rows


def shown_distribution(trace: Trace, temperature: float, top_k: int | None,
                       top_p: float | None = None) -> torch.Tensor:
    """What the page shows as probabilities [V]: the distribution sampled from, or, for greedy
    decoding (temperature 0, a one-hot choice), the model's own softmax."""
    logits = trace.at("logits", -1)[0]  # [V]
    sampled = temperature > 0
    return distribution(logits, temperature if sampled else 1.0, top_k if sampled else None,
                        top_p if sampled else None)


def distribution_label(temperature: float, top_k: int | None, top_p: float | None = None) -> str:
    """Which probabilities `shown_distribution` gives: before or after temperature, top-k and top-p."""
    if temperature <= 0:
        return "the model's own (greedy: before any temperature, top-k or top-p)"
    cuts = ([f"temperature {temperature:g}"] + ([f"top-k {top_k}"] if top_k else [])
            + ([f"top-p {top_p:g}"] if top_p else []))
    said = cuts[0] if len(cuts) == 1 else ", ".join(cuts[:-1]) + " and " + cuts[-1]
    return f"after {said}: what was sampled from"


def step_choices(trace: Trace, chosen: int, temperature: float, top_k: int | None, k: int = 10,
                 top_p: float | None = None):
    """(probabilities, labels, index of the chosen token) of the k most likely tokens, and of the
    chosen one when sampling picked a token outside them. Computed once per step trace and choice: a
    distribution over the vocabulary, sorted for top-p, took a generation's page ~0.1 s a view."""
    def choices():
        probs = shown_distribution(trace, temperature, top_k, top_p)  # [V]
        ids = ranking.ranked(probs.log(), k).tolist()  # ties in token-id order, as every page ranks
        if chosen not in ids:  # a sampled token from further down: show it too, last
            ids.append(chosen)
        return tuple(probs[ids].tolist()), tuple(readable(i) for i in ids), ids.index(chosen)

    return trace.memo(("step choices", chosen, temperature, top_k, top_p, k), choices)


def loss_summary(trace: Trace) -> dict[str, str]:
    loss = float(trace["loss"])
    return {"Mean loss": f"{loss:.4f}", "Perplexity e^loss": f"{math.exp(loss):,.1f}",
            "Predictions": f"{trace['loss.per_token'].shape[-1]}"}


def gradient_norms(norms: dict[str, float], n_layer: int) -> torch.Tensor:
    """‖∂loss/∂W‖ for each block component (rows, GRAD_PARTS order) and block (columns), from the
    norm of each parameter's gradient by its name (h.3.attn.c_attn.weight; see TrainingNorms)."""
    return torch.tensor([[norms[f"h.{i}.{part}.weight"] for i in range(n_layer)]
                         for part, _ in GRAD_PARTS])  # [6, n_layer]


class TrainingNorms(dict):
    """What a training run hands each parameter's gradient to (modes.run's on_grad): its norm, by name.
    The run then holds one block's gradients at a time, not all of them."""

    def __call__(self, name: str, grad: torch.Tensor) -> None:
        self[name] = float(grad.norm())


def stream_gradient_norms(trace: Trace, n_layer: int) -> list[float]:
    return [float(trace["grad." + block_name("resid_pre", i)].norm()) for i in range(n_layer)]


def dropout_rows(trace: Trace, n_layer: int, p: float) -> list[dict]:
    rows = []
    if "embed.dropout_mask" in trace:
        rows.append(_dropout_row("embeddings", "—", trace["embed.dropout_mask"], p))
    for i in range(n_layer):
        for short, site in DROPOUT_SITES:
            rows.append(_dropout_row(site, str(i), trace.get(short, i), p))
    return rows


def _dropout_row(site: str, block: str, mask: torch.Tensor, p: float) -> dict:
    dropped = 1 - mask.float().mean().item()
    return {"site": site, "block": block, "shape": str(list(mask.shape)), "values": f"{mask.numel():,}",
            "dropped": f"{dropped:.2%}", "expected": f"{p:.0%}"}


@dataclass(frozen=True)
class TrainingSummary:
    """What the Training page shows of a training run, kept in the trace cache instead of the run's
    trace: the page reads the gradient of every weight (340 MiB on gpt2) only as one norm each, and
    in a class those gradients pushed the other students' traces out of the cache."""
    tokens: tuple[str, ...]  # of the text, readable
    loss: dict[str, str]  # loss_summary
    loss_per_token: torch.Tensor  # [T-1]
    dropout: list[dict]  # dropout_rows; none with dropout off
    weight_grad_norms: torch.Tensor  # [6, n_layer], GRAD_PARTS order
    stream_grad_norms: list[float]  # [n_layer]

    @property
    def nbytes(self) -> int:  # the tensors; the rows and strings are a few KiB
        return 4 * (self.loss_per_token.numel() + self.weight_grad_norms.numel() + len(self.stream_grad_norms))


def training_summary(trace: Trace, norms: dict[str, float], n_layer: int, p: float, dropout: bool) -> TrainingSummary:
    """The page's numbers from the run of TRAINING_NEEDS that handed its parameters' gradients to `norms`."""
    return TrainingSummary(trace.tokens, loss_summary(trace), trace["loss.per_token"][0].clone(),
                           dropout_rows(trace, n_layer, p) if dropout else [], gradient_norms(norms, n_layer),
                           stream_gradient_norms(trace, n_layer))


def lens_rows(rows: list[LensRow]) -> list[dict]:
    return [{"depth": r.label, "top token": readable(r.top_ids[0]), "p(top)": f"{r.top_probs[0]:.4f}",
             "next four": " · ".join(readable(i) for i in r.top_ids[1:]),
             "final prediction's rank (1: the top)": r.final_rank + 1, "p(final prediction)": f"{r.final_prob:.4f}"}
            for r in rows]


def part_norms(d, position: int = -1) -> list[float]:
    """The L2 norm of each part of a decomposition at one position (index into its T)."""
    return d.parts[:, position].norm(dim=-1).tolist()
