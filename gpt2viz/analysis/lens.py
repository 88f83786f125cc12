"""Reading the residual stream: the logit lens and the stream's decomposition into its updates.

Logit lens: the prediction the stream would give if the model stopped at a block, read as
ln_f(x) W_Eᵀ, with ln_f's mean and variance recomputed from x at that depth (its gain and bias are
the final ones). At the last depth it is exactly the model's logits.

Decomposition: the stream entering block b is the embedding plus every earlier update,
x_b = x₀ + Σ_{i<b} (Δattn_i + Δmlp_i); in training, x₀ is the embedding after dropout.
"""

from dataclasses import dataclass

import torch

from ..model import ranking
from ..model.gpt2 import GPT2, normalize, scale_shift
from ..model.trace import Trace
from ..spec.schema import Mode, block_name


def n_blocks(trace: Trace) -> int:
    """How many blocks recorded their input stream."""
    return sum(1 for name in trace.names if name.startswith("blocks.") and name.endswith(".resid_pre"))


def depth_points(trace: Trace) -> list[tuple[str, str]]:
    """(label, trace name) of every residual stream point in depth order, ending after the last block."""
    n = n_blocks(trace)
    points = [(f"block {i} in", block_name("resid_pre", i)) for i in range(n)]
    return points + [(f"block {n - 1} out", block_name("resid_post", n - 1))]


def final_layernorm(model: GPT2, x: torch.Tensor) -> torch.Tensor:
    """ln_f applied to x [..., d] with statistics computed from x itself."""
    ln = model.ln_f
    mean = x.mean(-1, keepdim=True)  # [..., 1]
    var = (x - mean).pow(2).mean(-1, keepdim=True)  # [..., 1]
    return scale_shift(normalize(x, mean, var, ln.eps), ln.weight, ln.bias)  # [..., d]; no bias in a bias-free model


@dataclass(frozen=True)
class LensRow:
    label: str
    top_ids: list[int]  # the k most likely next tokens at this depth
    top_probs: list[float]
    final_rank: int  # rank at this depth of the model's final top token (0 = top)
    final_prob: float  # probability at this depth of the model's final top token


def lens_probs(model: GPT2, x: torch.Tensor) -> torch.Tensor:
    """The lens' next-token probabilities [..., V] of streams x [..., d], in float64: the page prints
    them, and a float32 softmax over 50,257 tokens rounds their last digit."""
    return torch.softmax((final_layernorm(model, x) @ model.wte.weight.T).double(), -1)  # [..., V]


@torch.no_grad()
def logit_lens(model: GPT2, trace: Trace, position: int = -1, k: int = 5) -> list[LensRow]:
    """The next-token prediction read from every depth at one position of the trace. The final
    prediction is the model's: its logits, or where prefill kept only the last position's, the
    lens at the last depth (the same computation)."""
    points = depth_points(trace)
    x = torch.stack([trace[name][0, position] for _, name in points])  # [n_points, d]
    probs = lens_probs(model, x)  # [n_points, V]: one pass over wte
    last = position in (-1, trace.T - 1)
    final = ranking.top(trace.at("logits", -1 if trace.mode is Mode.PREFILL else position)[0]) \
        if last or trace.mode is not Mode.PREFILL else ranking.top(probs[-1].log())
    log_p = probs.log()  # [n_points, V]
    top = ranking.ranked(log_p, k)  # [n_points, k]
    ranks = ranking.rank(log_p, torch.full(log_p.shape[:1], final)) - 1  # [n_points], 0 = tied for the top
    return [LensRow(label, ids, values, int(r), float(p))
            for (label, _), ids, values, r, p in zip(points, top.tolist(), probs.gather(-1, top).tolist(),
                                                     ranks, probs[:, final])]


LENS_WINDOW = 12  # positions the depth × position chart shows: each cell keeps its token readable at 800 px,
# and the cost stays small: on gpt2, 13 depths × 12 positions against the token table took 5.1 s
# with this machine's 2 cores at load 15 (24 positions: 8.5 s)


LENS_ROWS = 48  # rows (depth × position) the grid unembeds in one product: on gpt2, 0.17 s less than a depth a product
# for 60-75 MiB more at the peak (261-269 against 187-202 MiB in a fresh process after a 256-token run, most of
# both the matrix library's working copy of W_U): their float32 logits, the float64 copy and its softmax


def lens_window(position: int, T: int, width: int = LENS_WINDOW) -> tuple[int, int]:
    """(first, last) positions of the chart: `width` of them ending at `position`, or the first
    `width` when it is among them."""
    first = max(0, position - width + 1)
    return first, min(T - 1, first + width - 1)


@dataclass(frozen=True)
class LensGrid:
    """The lens at every depth (rows) and positions first..last (columns)."""
    labels: list[str]  # depth points, "block 0 in" ... "block n-1 out"
    first: int  # index of the first column in the trace's T positions
    top_ids: torch.Tensor  # [n_points, n]: the most likely next token at each depth and position
    top_probs: torch.Tensor  # [n_points, n]: its probability
    final_ranks: torch.Tensor  # [n_points, n]: rank of the model's own prediction there (0 = top)


@torch.no_grad()
def lens_grid(model: GPT2, trace: Trace, first: int, last: int) -> LensGrid:
    """The logit lens over positions first..last of the trace (indices into its T), a few depths at a
    time (LENS_ROWS rows of [V] a product, or one depth's positions where they are more). The model's
    prediction at each position is the lens at the last depth: exactly its logits, also where prefill
    kept only the last position's."""
    points = depth_points(trace)
    x = torch.stack([trace[name][0, first:last + 1] for _, name in points])  # [n_points, n, d]
    at_last = lens_probs(model, x[-1])  # [n, V]: the last depth's, read twice (once per depth took 1/14 more)
    final = ranking.ranked(at_last.log(), 1)[:, 0]  # [n]
    ids, probs, ranks = [], [], []
    for p in _depths_probs(model, x[:-1], at_last):  # [n, V] each, then the last depth's
        log_p = p.log()  # [n, V]
        leader = ranking.ranked(log_p, 1)  # [n, 1]
        ids.append(leader[:, 0])
        probs.append(p.gather(-1, leader)[:, 0])
        ranks.append(ranking.rank(log_p, final) - 1)  # [n], 0 = tied for the top
    return LensGrid([label for label, _ in points], first, torch.stack(ids), torch.stack(probs), torch.stack(ranks))


def _depths_probs(model: GPT2, x: torch.Tensor, at_last: torch.Tensor):
    """The lens' probabilities [n, V] of each depth of x [n_depths, n, d], then `at_last`: several depths
    in one product of LENS_ROWS rows at most, which the matrix library computes faster a row than 12 at
    a time: on gpt2, 13 depths × 12 positions took 0.51 s one depth at a time and 0.36 s this way (one
    core of this project's machine; 0.31 s in one product of all 156 rows, three times the memory)."""
    n, d = x.shape[1], x.shape[2]
    per = max(1, LENS_ROWS // max(n, 1))  # depths a product
    for a in range(0, len(x), per):
        chunk = x[a:a + per]  # [k, n, d]
        yield from lens_probs(model, chunk.reshape(-1, d)).unflatten(0, (len(chunk), n))  # k × [n, V]
    yield at_last


@dataclass(frozen=True)
class Decomposition:
    labels: list[str]  # "embed", "attn 0", "mlp 0", ...
    parts: torch.Tensor  # [n_parts, n, d], at the n positions asked for
    recorded: torch.Tensor  # [n, d], the stream entering the block there
    max_abs_error: float  # |Σ parts − recorded| at those positions, float rounding only


def decompose(trace: Trace, block: int, positions: slice = slice(None)) -> Decomposition:
    """The stream entering `block` (resid_pre; pass n_layer for the output of the last block)
    as the embedding plus each earlier Δattn and Δmlp, at `positions` (all by default). A page that
    charts one position asks for it alone: all 1,024 of them stack 25 [T, d] parts, 75 MiB on gpt2."""
    n = len(depth_points(trace)) - 1
    if not 0 <= block <= n:
        raise ValueError(f"block must be between 0 and {n}, got {block}")
    labels, parts = ["embed"], [trace.get("resid_pre", 0)[0, positions]]  # x₀ as it entered block 0
    for i in range(block):
        labels += [f"attn {i}", f"mlp {i}"]
        parts += [trace.get("attn.out", i)[0, positions], trace.get("mlp.out", i)[0, positions]]
    recorded = (trace.get("resid_pre", block) if block < n else trace.get("resid_post", n - 1))[0, positions]
    stacked = torch.stack(parts)  # [1 + 2·block, n, d]
    return Decomposition(labels, stacked, recorded, float((stacked.sum(0) - recorded).abs().max()))
