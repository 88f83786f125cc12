"""Data for the overview page: the diagram rows, residual norms across depth, the next tokens."""

import torch

from ..components import ComponentTree
from ..lens import n_blocks
from ..schema import concrete
from ..tokenizer import readable
from ..trace import Trace

DIAGRAM = ["embed.tok", "embed.pos", "block.ln1", "block.attn", "block.ln2", "block.mlp", "ln_f", "unembed"]


def diagram_rows(cat: ComponentTree, values: dict, mode: str) -> list[dict]:
    rows = []
    for cid in DIAGRAM:
        c = cat[cid]
        out = c.shapes.get(mode, ())
        outs = [s for s in out if s.role == "out" and s.dtype != "bool"]
        shape = outs[-1] if outs else None
        name = f"{'×' + str(c.instances) + ' ' if c.instances > 1 else ''}{c.title}"
        rows.append({"id": cid, "title": name,
                     "shape": f"{shape.name.short} {concrete(shape.axes, values)}" if shape else "",
                     "params": f"{c.total:,} parameters" if c.total else "no parameters of its own"})
    return rows


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
    probs = torch.softmax(trace["logits"][0, position], dim=-1)  # [V]
    top = probs.topk(k)
    return top.values.tolist(), [readable(int(i)) for i in top.indices]
