"""What a run costs, next to the parameter counts: weight bytes, KV-cache bytes, trace bytes, FLOPs.

Plain arithmetic on a config and a run (B, T, P, L); every figure comes with its calculation as text
that evaluates to it (read "×" as multiplication). FLOPs count matrix multiplications only, two per
multiply-add, as this implementation computes them (the masked half of the attention scores
included); LayerNorm, softmax, GELU and the residual adds are element-wise and left out. A training
step is estimated at about three forward passes (the backward pass costs about two).
"""

import math
from dataclasses import dataclass

from .config import GPT2Config
from .schema import CACHED_MODES, Mode

DTYPE_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2}
RECORDED_BYTES = {"float32": 4, "bool": 1}  # what a trace stores: float32 values, bool dropout masks


@dataclass(frozen=True)
class Cost:
    name: str
    value: int
    calculation: str  # "2 × 12 × 1 × 12 × 1,001 × 64 × 4"
    symbolic: str = ""  # "2 · n_layer · B · nh · L · dh · bytes"

    def as_dict(self) -> dict:
        return {"name": self.name, "value": self.value, "calculation": self.calculation, "symbolic": self.symbolic}


def _product(name: str, factors: list[int], symbolic: str) -> Cost:
    return Cost(name, math.prod(factors), " × ".join(f"{f:,}" for f in factors), symbolic)


# ---------------------------------------------------------------------------- bytes
def weight_bytes(n_params: int) -> list[Cost]:
    """The weights in each storage type: parameters × bytes per value."""
    return [_product(dtype, [n_params, size], "parameters · bytes") for dtype, size in DTYPE_BYTES.items()]


def kv_cache_bytes(cfg: GPT2Config, B: int, L: int, dtype: str = "fp32") -> Cost:
    """Keys and values of every layer for L positions: 2 · n_layer · B · nh · L · dh · bytes."""
    return _product(f"KV cache ({dtype})", [2, cfg.n_layer, B, cfg.n_head, L, cfg.d_head, DTYPE_BYTES[dtype]],
                    "2 · n_layer · B · nh · L · dh · bytes")


def kv_cache_series(cfg: GPT2Config, Ls) -> tuple[list[int], list[int]]:
    """(L, fp32 KV-cache bytes at B = 1) for each key count in Ls: a cache growing step by step."""
    Ls = list(Ls)
    return Ls, [kv_cache_bytes(cfg, 1, L).value for L in Ls]


def trace_bytes(tensors) -> Cost:
    """Bytes of a recorded trace: every (shape, dtype) at 4 bytes a float32 value, 1 a bool."""
    counts = {dtype: 0 for dtype in RECORDED_BYTES}
    for shape, dtype in tensors:
        if dtype not in RECORDED_BYTES:
            raise ValueError(f"a trace records float32 and bool tensors, not {dtype}")
        counts[dtype] += math.prod(shape)
    terms = [(RECORDED_BYTES[k], n) for k, n in counts.items() if n]
    return Cost("trace", sum(b * n for b, n in terms), " + ".join(f"{b} × {n:,}" for b, n in terms) or "0",
                "4 · float32 values + 1 · mask values")


# ---------------------------------------------------------------------------- FLOPs
@dataclass(frozen=True)
class Flops:
    component: str
    per_instance: Cost
    instances: int

    @property
    def total(self) -> int:
        return self.per_instance.value * self.instances

    def as_dict(self) -> dict:
        return {"component": self.component, "instances": self.instances, "total": self.total,
                **self.per_instance.as_dict()}


def forward_flops(cfg: GPT2Config, B: int, T: int, L: int, T_out: int | None = None) -> list[Flops]:
    """Matmul FLOPs of one forward pass by component: T new positions reading L keys; T_out
    positions get logits (1 in prefill, T otherwise)."""
    d, n, V, m = cfg.n_embd, cfg.n_layer, cfg.vocab_size, cfg.d_mlp
    w = "4d" if cfg.standard_mlp else "d_mlp"  # the MLP width's symbol
    T_out = T if T_out is None else T_out
    return [
        Flops("block.attn.qkv", _product("block.attn.qkv", [2, B, T, d, 3 * d], "2 · B · T · d · 3d"), n),
        Flops("block.attn.heads", _product("block.attn.heads", [4, B, T, L, cfg.n_head, cfg.d_head],
                                           "4 · B · T · L · nh · dh (QKᵀ and pattern · V)"), n),
        Flops("block.attn.merge", _product("block.attn.merge", [2, B, T, d, d], "2 · B · T · d · d"), n),
        Flops("block.mlp.fc", _product("block.mlp.fc", [2, B, T, d, m], f"2 · B · T · d · {w}"), n),
        Flops("block.mlp.proj", _product("block.mlp.proj", [2, B, T, m, d], f"2 · B · T · {w} · d"), n),
        Flops("unembed", _product("unembed", [2, B, T_out, d, V], "2 · B · T_out · d · V"), 1),
    ]


def flops_summary(cfg: GPT2Config, mode: Mode, B: int, T: int, L: int) -> dict:
    """Forward FLOPs by component, in total and per computed token; a training step ≈ 3 × forward."""
    rows = forward_flops(cfg, B, T, L, T_out=1 if Mode.parse(mode) is Mode.PREFILL else T)
    forward = sum(r.total for r in rows)
    parts = " + ".join(f"{r.instances} × {r.per_instance.value:,}" if r.instances > 1 else f"{r.per_instance.value:,}"
                       for r in rows)
    out = {"components": [r.as_dict() for r in rows],
           "forward": Cost("forward", forward, parts, "Σ components × instances").as_dict(),
           "per_token": Cost("per token", round(forward / (B * T)), f"{forward:,} / ({B} × {T})",
                             "forward / (B · T)").as_dict()}
    if Mode.parse(mode) is Mode.TRAINING:
        out["training_step"] = Cost("training step ≈ 3 × forward", 3 * forward, f"3 × {forward:,}",
                                    "forward + backward ≈ 3 · forward").as_dict()
    return out


def decode_step_vs_full(cfg: GPT2Config, n: int, n_params: int) -> dict[str, Cost]:
    """Why decoding the last of n tokens is cheap: its one query reads L = n cached keys and values,
    against a full pass that computes all n positions again. FLOPs of both, the attention part of
    both, the fp32 cache the step reads and the fp32 weights that both read."""
    step, full = forward_flops(cfg, 1, 1, n), forward_flops(cfg, 1, n, n)
    heads = [next(r for r in rows if r.component == "block.attn.heads") for rows in (step, full)]
    attention = [Cost(name, h.total, f"{cfg.n_layer} × {h.per_instance.calculation}")
                 for name, h in zip(("decode attention", "full attention"), heads)]
    return {"decode": Cost("decode step", sum(r.total for r in step), f"T = 1, L = {n:,}"),
            "full": Cost("full pass", sum(r.total for r in full), f"T = L = {n:,}"),
            "decode_attention": attention[0], "full_attention": attention[1],
            "cache": kv_cache_bytes(cfg, 1, n - 1),
            "weights": weight_bytes(n_params)[0]}


# ---------------------------------------------------------------------------- one mode
def mode_costs(cfg: GPT2Config, mode: Mode, run: dict, tensors, n_params: int) -> dict:
    """Every cost of one run: weights, cache (prefill/decode), the recorded trace, FLOPs."""
    cached = Mode.parse(mode) in CACHED_MODES
    return {
        "weights": [c.as_dict() for c in weight_bytes(n_params)],
        "kv_cache": [kv_cache_bytes(cfg, run["B"], run["L"], dt).as_dict() for dt in ("fp32", "fp16")]
                    if cached else [],
        "trace": trace_bytes(tensors).as_dict(),
        "flops": flops_summary(cfg, mode, run["B"], run["T"], run["L"]),
    }


def human_bytes(n: int) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:,.1f} {unit}"
    return f"{n} B"


def format_costs(c: dict) -> str:
    """The costs of `mode_costs` as text, each with its arithmetic."""
    lines = ["costs"]
    for w in c["weights"]:
        lines.append(f"  weights {w['name']:5s} {w['calculation']} = {w['value']:,} bytes ({human_bytes(w['value'])})")
    for k in c["kv_cache"]:
        lines.append(f"  {k['name']}: {k['symbolic']} = {k['calculation']} = {k['value']:,} bytes "
                     f"({human_bytes(k['value'])})")
    if not c["kv_cache"]:
        lines.append("  KV cache: none in this mode (no cache is kept)")
    t = c["trace"]
    lines.append(f"  recorded trace: {t['calculation']} = {t['value']:,} bytes ({human_bytes(t['value'])})")
    f = c["flops"]
    lines.append("  forward FLOPs (matmuls, 2 per multiply-add):")
    for r in f["components"]:
        times = f" × {r['instances']} = {r['total']:,}" if r["instances"] > 1 else ""
        lines.append(f"    {r['component']:17s} {r['calculation']} = {r['value']:,}{times}")
    lines.append(f"    forward   {f['forward']['value']:,}")
    lines.append(f"    per token {f['per_token']['calculation']} ≈ {f['per_token']['value']:,}")
    if "training_step" in f:
        lines.append(f"    training step ≈ {f['training_step']['calculation']} = {f['training_step']['value']:,}")
    return "\n".join(lines)
