"""The vocabulary of the whole project, torch-free: the modes, the shape symbols and their algebra,
the parameter names, and every recorded name with its shape in each mode.

Shapes use one symbol set: B batch, T positions computed, P positions cached, L = P + T keys read,
d width, nh heads, dh = d / nh, V vocabulary, n_ctx context (openai/gpt-2's name). The recorded names
and their order mirror `model/gpt2.py` and `model/modes.py` (tests run the model and hold them equal, and
tests/golden/ lists them per mode). Importing this module never imports torch (a test says so).

Dropout (TRAINING with dropout > 0): each `*_dropout_mask` is the keep-mask drawn for one dropout.
`embed.out` and `attn.pattern` are recorded BEFORE their dropout (resid_pre of block 0 is
embed.out × embed.dropout_mask / (1 − p); attn.z is the dropped pattern @ v), while `attn.out` and
`mlp.out` are recorded AFTER theirs (they are the updates the block adds to the stream). Every other
name is recorded where no dropout applies. With dropout off (the other modes, or `dropout=False`)
the masks are not recorded and every name holds as written.
"""

import re
from collections.abc import Mapping
from enum import Enum

from .config import GPT2Config


class Mode(str, Enum):
    """The four execution modes (see modes.py)."""
    FULL = "full"
    TRAINING = "training"
    PREFILL = "prefill"
    DECODE = "decode"

    @classmethod
    def parse(cls, value) -> "Mode":
        try:
            return cls(str(value.value if isinstance(value, Mode) else value).lower())
        except ValueError:
            raise ValueError(f"unknown mode {value!r}; choose one of {', '.join(m.value for m in cls)}") from None


MODES = tuple(m.value for m in Mode)  # full, training, prefill, decode
CACHED_MODES = (Mode.PREFILL, Mode.DECODE)  # the modes that keep a KV cache


def block_name(short: str, b: int) -> str:
    """The recorded name of `short` in block b: block_name("attn.z", 3) == "blocks.3.attn.z"."""
    return f"blocks.{b}.{short}"


# ---------------------------------------------------------------------------- symbols and axes
AXIS_NAMES = {"B": "batch", "T": "positions", "L": "keys", "P": "cached", "T-1": "targets"}
_AXIS = re.compile(r"^(\d*)([A-Za-z_]*)(?:-(\d+))?$")


def dims(cfg: GPT2Config, B: int = 1, T: int = 1, P: int = 0, L: int | None = None) -> dict[str, int]:
    """The value of every symbol for a config and a run (L defaults to P + T)."""
    return {"B": B, "T": T, "P": P, "L": P + T if L is None else L, "d": cfg.n_embd, "nh": cfg.n_head,
            "dh": cfg.d_head, "V": cfg.vocab_size, "n_ctx": cfg.n_positions, "d_mlp": cfg.d_mlp}


def for_config(axes: tuple[str, ...], cfg: GPT2Config) -> tuple[str, ...]:
    """The tables write the MLP width as `4d`; a config with another width (n_inner) reads `d_mlp`."""
    return axes if cfg.standard_mlp else tuple("d_mlp" if a == "4d" else a for a in axes)


def axis_value(axis: str, values: Mapping[str, int]) -> int:
    """Evaluate one axis: a symbol (`dh`), a multiple (`3d`), an offset (`T-1`) or a number (`1`)."""
    m = _AXIS.match(axis)
    if not m or not (m.group(1) or m.group(2)):
        raise ValueError(f"malformed axis {axis!r}")
    coef, sym, minus = m.groups()
    base = values[sym] if sym else 1
    return (int(coef) if coef else 1) * base - (int(minus) if minus else 0)


def concrete(axes: tuple[str, ...], values: Mapping[str, int]) -> list[int]:
    return [axis_value(a, values) for a in axes]


def symbolic(axes: tuple[str, ...]) -> str:
    return "[" + ", ".join(axes) + "]"


def labelled(axes: tuple[str, ...], cfg: GPT2Config, mode) -> str:
    """`[B batch, T positions, 768 d]`: run axes by symbol and name, model axes by value and symbol."""
    mode, values = Mode.parse(mode), dims(cfg)
    parts = []
    for a in axes:
        if a == "T" and mode is Mode.DECODE:
            parts.append("1 T (the new position)")
        elif a == "L" and mode is Mode.DECODE:
            parts.append("L = P + 1 keys")
        elif a in AXIS_NAMES:
            parts.append(f"{a} {AXIS_NAMES[a]}")
        elif a.isdigit():
            parts.append(a)
        else:
            parts.append(f"{axis_value(a, values):,} {a}")
    return "[" + ", ".join(parts) + "]"


# ---------------------------------------------------------------------------- a run's B, T, P, L
def run_dims(cfg: GPT2Config, mode, B: int = 1, T: int | None = None, P: int | None = None) -> dict[str, int]:
    """B, T, P, L of a run, with the defaults and checks of `gpt2viz shapes`.

    FULL/TRAINING: T tokens (default 8), no cache, L = T. PREFILL: a prompt of T tokens (default 8) into
    an empty cache (P = 0), which then holds L = T positions. DECODE: one new token (T = 1) after P cached
    ones (default 7), L = P + 1."""
    mode = Mode.parse(mode)
    if B < 1:
        raise ValueError(f"batch B must be at least 1, got {B}")
    if T is not None and T < 1:
        raise ValueError(f"T (tokens) must be at least 1, got {T}")
    if P is not None and P < 0:
        raise ValueError(f"P (past) must be 0 or more, got {P}")
    if mode in (Mode.FULL, Mode.TRAINING):
        if P:
            raise ValueError(f"{mode.value} mode has no KV cache: P (--past) applies to prefill and decode only")
        T, P = (8 if T is None else T), 0
        if mode is Mode.TRAINING and T < 2:
            raise ValueError("training needs T >= 2 tokens: each position predicts the next one")
        L = T
    elif mode is Mode.PREFILL:
        if P:
            raise ValueError(f"prefill starts from an empty cache (P = 0) and computes the whole prompt: "
                             f"give its length as T (--tokens), not P={P}")
        T, P = (8 if T is None else T), 0
        L = T
    else:
        if T not in (None, 1):
            raise ValueError(f"decode computes exactly one new position: T must be 1, got {T}")
        T, P = 1, (7 if P is None else P)
        L = P + 1
    if cfg.n_positions < L:
        raise ValueError(f"P + T = {L:,} positions exceed {cfg.name}'s context of {cfg.n_positions:,}")
    return {"B": B, "T": T, "P": P, "L": L}


def text_dims(cfg: GPT2Config, n_tokens: int, mode) -> dict[str, int]:
    """Every symbol's value for one text of n_tokens run in `mode` (B = 1): the whole text in FULL,
    TRAINING and PREFILL; in DECODE its last token after the n_tokens − 1 before it."""
    decode = Mode.parse(mode) is Mode.DECODE
    run = run_dims(cfg, mode, 1, T=None if decode else n_tokens, P=n_tokens - 1 if decode else None)
    return dims(cfg, run["B"], run["T"], run["P"], run["L"])


# ---------------------------------------------------------------------------- parameters
# Every parameter by checkpoint name (block ones without their `h.{i}.` prefix), in model order.
TOP_PARAMS = {"wte.weight": ("V", "d"), "wpe.weight": ("n_ctx", "d")}
BLOCK_PARAMS = {
    "ln_1.weight": ("d",), "ln_1.bias": ("d",),
    "attn.c_attn.weight": ("d", "3d"), "attn.c_attn.bias": ("3d",),
    "attn.c_proj.weight": ("d", "d"), "attn.c_proj.bias": ("d",),
    "ln_2.weight": ("d",), "ln_2.bias": ("d",),
    "mlp.c_fc.weight": ("d", "4d"), "mlp.c_fc.bias": ("4d",),
    "mlp.c_proj.weight": ("4d", "d"), "mlp.c_proj.bias": ("d",),
}
FINAL_PARAMS = {"ln_f.weight": ("d",), "ln_f.bias": ("d",)}
UNTIED_PARAMS = {"lm_head.weight": ("V", "d")}  # only when the config unties the output matrix
_BLOCK_KEY = re.compile(r"^h\.(\d+)\.(.+)$")


def has_parameter(name: str, cfg: GPT2Config) -> bool:
    """Whether `cfg` has this parameter: biases need `bias`, lm_head needs an untied head."""
    if name in UNTIED_PARAMS:
        return not cfg.tied
    return cfg.bias or not name.endswith(".bias")


def parameter_names(cfg: GPT2Config) -> list[str]:
    """Every parameter's checkpoint name, in the order of `GPT2.named_parameters()`."""
    blocks = [f"h.{i}.{k}" for i in range(cfg.n_layer) for k in BLOCK_PARAMS]
    return [n for n in (*TOP_PARAMS, *blocks, *FINAL_PARAMS, *UNTIED_PARAMS) if has_parameter(n, cfg)]


def parameter_axes(name: str) -> tuple[str, ...]:
    """Symbolic shape of a parameter given its checkpoint name (`h.3.mlp.c_fc.weight` -> (d, 4d))."""
    m = _BLOCK_KEY.match(name)
    table, key = (BLOCK_PARAMS, m.group(2)) if m else ({**TOP_PARAMS, **FINAL_PARAMS, **UNTIED_PARAMS}, name)
    if key not in table:
        raise ValueError(f"{name!r} is not a GPT-2 parameter name")
    return table[key]


# ---------------------------------------------------------------------------- recorded names
# Short names in execution order (model/gpt2.py); MASKS only in TRAINING with dropout > 0, CACHE only in
# PREFILL and DECODE. Each name's side of its dropout: see the module docstring.
TOP_NAMES = ("embed.tok", "embed.pos", "embed.out", "embed.dropout_mask")
BLOCK_NAMES = (
    "resid_pre", "ln1.mean", "ln1.var", "ln1.normalized", "ln1.out",
    "attn.qkv", "attn.q", "attn.k", "attn.v", "attn.k_cache", "attn.v_cache", "attn.scores", "attn.pattern",
    "attn.pattern_dropout_mask", "attn.z", "attn.merged", "attn.out_dropout_mask", "attn.out", "resid_mid",
    "ln2.mean", "ln2.var", "ln2.normalized", "ln2.out",
    "mlp.pre", "mlp.post", "mlp.out_dropout_mask", "mlp.out", "resid_post",
)
FINAL_NAMES = ("ln_f.mean", "ln_f.var", "ln_f.normalized", "ln_f.out", "logits")
LOSS_NAMES = ("loss.per_token", "loss")
GRAD_STREAMS = ("resid_pre", "resid_mid", "resid_post")
MASKS = frozenset({"embed.dropout_mask", "attn.pattern_dropout_mask", "attn.out_dropout_mask",
                   "mlp.out_dropout_mask"})
CACHE = frozenset({"attn.k_cache", "attn.v_cache"})
# Pure functions of other recorded names: a trace derives them per block on demand (derive.py)
# and never stores them, but decode's one row of scores and pattern (DECODE_STORES). VIEWS share
# the storage of a name before them (q, k, v of attn.qkv; merged of z where the fused attention
# ran, every mode but TRAINING).
DERIVED = frozenset({"resid_mid", "attn.scores", "attn.pattern", "mlp.post"}
                    | {f"{ln}.{part}" for ln in ("ln1", "ln2", "ln_f") for part in ("normalized", "out")})
VIEWS = frozenset({"attn.q", "attn.k", "attn.v", "attn.merged"})
DECODE_STORES = frozenset({"attn.scores", "attn.pattern"})  # one query row: stored, not derived (derived_in)


def derived_in(short: str, mode) -> bool:
    """Whether a trace of `mode` derives `short` instead of storing it: the DERIVED names in every
    mode (but DECODE's scores and pattern, below), and FULL's and TRAINING's logits, from the final
    LayerNorm's output when a page reads them (a third of a full run's work and a quarter of its
    bytes on gpt2; most pages read one position),
    and TRAINING's loss from the same products (a run with a backward pass computes its loss, and
    stores it: modes.run). PREFILL and DECODE compute one position's logits. DECODE stores its one row
    of scores and pattern [B, nh, 1, L]: a 64th of the keys they would derive from on gpt2, which a
    generation's every step kept for them."""
    mode = Mode.parse(mode)
    if mode is Mode.DECODE and short in DECODE_STORES:
        return False
    return short in DERIVED or (short == "logits" and mode in (Mode.FULL, Mode.TRAINING)) \
        or (short in LOSS_NAMES and mode is Mode.TRAINING)


NOT_RECORDED = frozenset({"ids", "positions"})  # inputs the pages name, never recorded
TOP_LEVEL = frozenset(TOP_NAMES + FINAL_NAMES + LOSS_NAMES) | NOT_RECORDED

BTd, BT1, BnhTdh = ("B", "T", "d"), ("B", "T", "1"), ("B", "nh", "T", "dh")
SHAPES = {  # short name -> symbolic axes (the same in every mode unless MODE_SHAPES says otherwise)
    "ids": ("B", "T"), "positions": ("T",),
    "embed.tok": BTd, "embed.pos": ("T", "d"), "embed.out": BTd, "embed.dropout_mask": BTd,
    "resid_pre": BTd, "resid_mid": BTd, "resid_post": BTd,
    "attn.qkv": ("B", "T", "3d"), "attn.q": BnhTdh, "attn.k": BnhTdh, "attn.v": BnhTdh,
    "attn.k_cache": ("B", "nh", "L", "dh"), "attn.v_cache": ("B", "nh", "L", "dh"),
    "attn.scores": ("B", "nh", "T", "L"), "attn.pattern": ("B", "nh", "T", "L"),
    "attn.pattern_dropout_mask": ("B", "nh", "T", "L"), "attn.z": BnhTdh, "attn.merged": BTd,
    "attn.out_dropout_mask": BTd, "attn.out": BTd,
    "mlp.pre": ("B", "T", "4d"), "mlp.post": ("B", "T", "4d"), "mlp.out_dropout_mask": BTd, "mlp.out": BTd,
    "logits": ("B", "T", "V"), "loss.per_token": ("B", "T-1"), "loss": (),
}
for _ln in ("ln1", "ln2", "ln_f"):
    SHAPES |= {f"{_ln}.mean": BT1, f"{_ln}.var": BT1, f"{_ln}.normalized": BTd, f"{_ln}.out": BTd}
MODE_SHAPES = {("logits", Mode.PREFILL): ("B", "1", "V")}  # prefill keeps the last position only
DTYPES = {"ids": "int64", "positions": "int64"} | {m: "bool" for m in MASKS}


def recorded_in(short: str, cfg: GPT2Config, mode, dropout: bool = True) -> bool:
    """Whether the model records `short` in `mode` (masks need dropout on and > 0, caches need a cache)."""
    mode = Mode.parse(mode)
    if short in MASKS:
        return mode is Mode.TRAINING and dropout and cfg.dropout > 0
    if short in CACHE:
        return mode in CACHED_MODES
    if short in LOSS_NAMES:
        return mode is Mode.TRAINING
    return short in SHAPES and short not in NOT_RECORDED


def short_axes(short: str, mode) -> tuple[str, ...]:
    return MODE_SHAPES.get((short, Mode.parse(mode)), SHAPES[short])


def recorded(cfg: GPT2Config, mode, dropout: bool = True) -> list[tuple[str, tuple[str, ...], str]]:
    """(full name, symbolic axes, dtype) of every tensor the model records in `mode`, in order
    (`dropout` False: a TRAINING run with dropout off, which records no masks)."""
    mode = Mode.parse(mode)

    def axes(short):
        return for_config(short_axes(short, mode), cfg)

    out = [(n, axes(n), DTYPES.get(n, "float32")) for n in TOP_NAMES if recorded_in(n, cfg, mode, dropout)]
    for i in range(cfg.n_layer):
        out += [(block_name(n, i), axes(n), DTYPES.get(n, "float32"))
                for n in BLOCK_NAMES if recorded_in(n, cfg, mode, dropout)]
    out += [(n, axes(n), "float32") for n in FINAL_NAMES]
    if mode is Mode.TRAINING:
        out += [(n, SHAPES[n], "float32") for n in LOSS_NAMES]
        out += [(f"grad.{p}", for_config(parameter_axes(p), cfg), "float32") for p in parameter_names(cfg)]
        out += [("grad." + block_name(s, i), BTd, "float32") for i in range(cfg.n_layer) for s in GRAD_STREAMS]
    return out


def recorded_names(cfg: GPT2Config, mode, dropout: bool = True) -> list[str]:
    return [name for name, _, _ in recorded(cfg, mode, dropout)]


def owns_storage(name: str, cfg: GPT2Config, mode, P: int = 1, dropout: bool = True) -> bool:
    """Whether a trace of everything holds `name` in bytes of its own: not derived, not a view, not
    the same tensor as a name before it (a block's resid_pre is the last one's resid_post, and so
    are their gradients; block 0's is embed.out unless training drops it; the caches are the step's
    k and v unless decode appends them to P > 0 cached positions)."""
    mode = Mode.parse(mode)
    if name.startswith("grad.blocks."):
        return not name.endswith(".resid_pre") or name == "grad." + block_name("resid_pre", 0)
    short = name.split(".", 2)[2] if name.startswith("blocks.") else name
    if short in LOSS_NAMES:  # a training trace of everything runs a backward pass: it stores the loss it made
        return True
    if derived_in(short, mode) or (short in VIEWS and not (short == "attn.merged" and mode is Mode.TRAINING)):
        return False
    if short == "resid_pre":
        return name == block_name("resid_pre", 0) and recorded_in("embed.dropout_mask", cfg, mode, dropout)
    return short not in CACHE or (mode is Mode.DECODE and P > 0)


def stored(cfg: GPT2Config, mode, P: int = 1, dropout: bool = True) -> list[tuple[str, tuple[str, ...], str]]:
    """The entries of `recorded` whose bytes a trace of everything holds, each once (P: the
    positions cached before the step)."""
    return [e for e in recorded(cfg, mode, dropout) if owns_storage(e[0], cfg, mode, P, dropout)]
