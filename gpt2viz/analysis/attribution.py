"""Direct logit attribution: which component wrote the answer's logit at one position.

The final stream at position P is a sum of parts, each added to the stream once:
    x = embed + Σ_b (Σ_h head_{b,h} + bias_b + mlp_b)
with embed = wte[token at P] + wpe[P], head_{b,h} = z_{b,h} W_O[h·dh:(h+1)·dh] (the head's rows of the
output projection, without its bias), bias_b = b_O (that projection's bias, added once per block) and
mlp_b = Δmlp (the MLP's whole output, its own bias included).

The final LayerNorm is linear in x once its scale σ = √(var(x) + ε) is frozen at the run's value, and
its centring distributes over the parts (the mean of a sum is the sum of the means), so the answer's
logit splits exactly into one term per part plus the LayerNorm bias's:
    logit_A = Σ_c ((c − mean(c)) / σ) · (g ⊙ u) + β · u,    u = W_U[A] (− W_U[B] against a second answer)
as TransformerLens's `apply_ln_to_stack` does it. What this measures is the direct effect only: a head
whose output later heads read (a previous-token head feeding an induction head) gets credit here for
what it writes straight to the unembedding, not for what it makes the later heads do; a knock-out
(whatif.py) measures that total effect.

The rows are computed in float64 from the run's float32 tensors, so their sum differs from the run's
logit by the float32 rounding of the forward pass alone (the `residual`).
"""

from dataclasses import dataclass

import torch

from ..model import ranking
from ..model.gpt2 import GPT2
from ..model.modes import run
from ..model.tokenizer import TextError, decode, encode, readable
from ..model.trace import Trace
from ..spec.schema import Mode, block_name

# what a run must record for an attribution (the page's restricted recording asks for these)
NEEDS = ("blocks.*.attn.z", "blocks.*.mlp.out", "ln_f.var", "logits")


def head_name(block: int, head: int) -> str:
    return block_name(f"attn.head.{head}", block)


def component_names(cfg) -> list[str]:
    """Every row's name, in the order the parts reach the stream; no bias rows without biases."""
    names = ["embed"]
    for b in range(cfg.n_layer):
        names += [head_name(b, h) for h in range(cfg.n_head)]
        names += [block_name("attn.bias", b)] if cfg.bias else []
        names.append(block_name("mlp", b))
    return names + (["ln_f.bias"] if cfg.bias else [])


def one_token(text: str, what: str = "answer") -> int:
    """The id of a one-token string such as " after"; ValueError (one line) for anything else."""
    try:
        ids = encode(text)
    except TextError as e:
        raise ValueError(f"{what}: {e}") from None
    if len(ids) != 1:
        shown = " + ".join(repr(readable(i)) for i in ids)
        raise ValueError(f"{what} {text!r} is {len(ids)} tokens ({shown}); give one token, such as ' after'")
    return ids[0]


def unembedding(model: GPT2, answer: int, versus: int | None = None) -> torch.Tensor:
    """u = W_U[answer] (− W_U[versus]) [d]: the token table's rows when tied, lm_head's when not."""
    w_u = model.wte.weight if model.config.tied else model.lm_head.weight  # [V, d]
    u = w_u[answer].double()  # [d]
    return u if versus is None else u - w_u[versus].double()  # [d]


@torch.no_grad()
def components(model: GPT2, trace: Trace, position: int) -> torch.Tensor:
    """The parts of the final stream at `position` [n_rows, d] (float64), in component_names' order
    but for ln_f.bias, which is not part of the stream."""
    cfg = model.config
    nh, dh, d = cfg.n_head, cfg.d_head, cfg.n_embd
    token = trace.token_ids[position]
    parts = [(model.wte.weight[token] + model.wpe.weight[position]).double()[None]]  # [1, d]
    for b, block in enumerate(model.h):
        z = trace.get("attn.z", b)[0, :, position].double()  # [nh, dh]
        w_o = block.attn.c_proj.weight.double().view(nh, dh, d)  # [nh, dh, d]: head h's rows of W_O
        parts.append(torch.einsum("hk,hkd->hd", z, w_o))  # [nh, d]
        if cfg.bias:
            parts.append(block.attn.c_proj.bias.double()[None])  # [1, d]
        parts.append(trace.get("mlp.out", b)[0, position].double()[None])  # [1, d]
    return torch.cat(parts)  # [n_rows, d]


@dataclass(frozen=True)
class Attribution:
    """Every component's direct contribution to the target at one position."""
    names: tuple[str, ...]  # component_names
    values: torch.Tensor  # [n_rows] float64, in names' order
    target: float  # the run's logit of answer (minus versus's) at position
    answer: int
    versus: int | None
    position: int
    model: str
    n_layer: int
    n_head: int

    @property
    def residual(self) -> float:
        """Σ rows − target: the forward pass's float32 rounding, nothing else."""
        return float(self.values.sum()) - self.target

    @property
    def nbytes(self) -> int:  # the page keeps it in the trace cache, which counts bytes
        return self.values.numel() * 8

    def value(self, name: str) -> float:
        return float(self.values[self.names.index(name)])

    def heads(self) -> torch.Tensor:
        """The head rows as a grid [n_layer, nh]."""
        idx = [self.names.index(head_name(b, h)) for b in range(self.n_layer) for h in range(self.n_head)]
        return self.values[idx].view(self.n_layer, self.n_head)  # [n_layer, nh]

    def others(self) -> list[tuple[str, float]]:
        """Every row that is not a head: embed, attention biases, MLPs, ln_f.bias."""
        return [(n, float(v)) for n, v in zip(self.names, self.values) if ".attn.head." not in n]

    def top_heads(self, k: int = 3) -> list[tuple[int, int, float]]:
        """The k heads that add most to the target, as (block, head, value), largest first."""
        grid = self.heads()
        order = grid.flatten().argsort(descending=True)[:k]
        return [(int(i) // self.n_head, int(i) % self.n_head, float(grid.flatten()[i])) for i in order]

    def report(self) -> dict:
        """The CLI's JSON and the API's dict."""
        return {"target": self.target,
                "rows": [{"component": n, "value": float(v)} for n, v in zip(self.names, self.values)],
                "residual": self.residual, "answer": decode([self.answer]),  # as typed: " after"
                "versus": None if self.versus is None else decode([self.versus]),
                "position": self.position, "model": self.model}


def check_position(position: int | None, T: int) -> int:
    """A 0-based token index (default: the last), checked against the text's T tokens."""
    if position is None:
        return T - 1
    if not 0 <= position < T:
        raise ValueError(f"position must be a token index between 0 and {T - 1}, got {position}")
    return position


@torch.no_grad()
def attribute(model: GPT2, trace: Trace, answer: int | None = None, versus: int | None = None,
              position: int | None = None) -> Attribution:
    """Direct logit attribution of a FULL run without dropout at `position` (default: the last) to
    `answer` (default: the top prediction there), or to answer − versus."""
    if trace.mode is not Mode.FULL:
        raise ValueError(f"attribution reads a full-mode run, not {trace.mode.value}")
    cfg = model.config
    position = check_position(position, trace.T)
    logits = trace.at("logits", position)[0]  # [V]
    answer = ranking.top(logits) if answer is None else answer
    for token in (answer, versus):
        if token is not None and not 0 <= token < cfg.vocab_size:
            raise ValueError(f"token id {token} is not in the vocabulary of {cfg.vocab_size:,}")
    u = unembedding(model, answer, versus)  # [d]
    ln = model.ln_f
    sigma = (trace["ln_f.var"][0, position].double() + ln.eps).sqrt()  # [1]: the run's scale at P
    parts = components(model, trace, position)  # [n_rows, d]
    centred = (parts - parts.mean(-1, keepdim=True)) / sigma  # [n_rows, d]
    values = centred @ (ln.weight.double() * u)  # [n_rows]
    if ln.bias is not None:
        values = torch.cat([values, (ln.bias.double() @ u)[None]])  # [n_rows + 1]
    target = logits[answer] - (0 if versus is None else logits[versus])
    return Attribution(tuple(component_names(cfg)), values, float(target), answer, versus, position,
                       trace.model, cfg.n_layer, cfg.n_head)


def attribute_text(model: GPT2, ids, answer: int | None = None, versus: int | None = None,
                   position: int | None = None) -> Attribution:
    """Run `ids` in full mode (recording only what attribution reads) and attribute."""
    ids = list(ids)
    check_position(position, len(ids))
    return attribute(model, run(model, ids, Mode.FULL, names=NEEDS), answer, versus, position)


# ---------------------------------------------------------------------------- beside the knock-outs
@dataclass(frozen=True)
class Comparison:
    """Direct attribution beside a knock-out sweep of every head ([n_layer, nh], the change in the
    answer's log-probability with that head zeroed: negative = the head helped)."""
    direct: list[tuple[int, int, float, float]]  # the top heads by attribution: (block, head, attribution, knock-out)
    knockout_top: tuple[int, int, float, float]  # the head whose knock-out costs most (same fields)
    indirect: list[tuple[int, int, float, float]]  # heads the knock-out needs that write almost nothing directly
    heads_moved: float = float("nan")  # the sum of every head's |attribution| (not only the top k): 0, none writes

    @property
    def agree(self) -> bool:
        """The head with the largest direct share is the one whose knock-out costs most."""
        return self.direct[0][:2] == self.knockout_top[:2]

    def knockout_order(self) -> list[tuple[int, int, float, float]]:
        """The top writers in the knock-out's order (costliest first)."""
        return sorted(self.direct, key=lambda r: r[3])


INDIRECT_SHARE = 0.1  # writing less than this share of the top head's attribution counts as "almost nothing"


def compare(attr: Attribution, knock: torch.Tensor, k: int = 4) -> Comparison:
    """Set the attribution's top k heads beside what knocking each head out cost (`knock`: [n_layer, nh])."""
    grid = attr.heads()  # [n_layer, nh]

    def row(b: int, h: int) -> tuple[int, int, float, float]:
        return b, h, float(grid[b, h]), float(knock[b, h])
    direct = [row(b, h) for b, h, _ in attr.top_heads(k)]
    flat = int(knock.flatten().argmin())
    top = row(flat // attr.n_head, flat % attr.n_head)
    floor = INDIRECT_SHARE * max(direct[0][2], 0.0)
    costly = knock.flatten().argsort()[:k].tolist()  # [k] the costliest knock-outs
    indirect = [row(i // attr.n_head, i % attr.n_head) for i in costly]
    indirect = [r for r in indirect if r[3] < 0 and r[2] < floor and abs(r[3]) >= abs(direct[0][3])]
    return Comparison(direct, top, indirect, float(grid.abs().sum()))
