"""Weights: GPT-2's seeded initialisation, and checked safetensors loading and saving.

A checkpoint is read in the Hugging Face layout (keys with or without `transformer.`, `lm_head`
tied to `wte`, the `h.N.attn.bias` / `attn.masked_bias` buffers recognised and skipped). The
header is parsed and checked before any tensor is read; the config is inferred from the shapes
(a file without biases is a bias-free config, nanoGPT's bias=False), or given by a folder's
config.json (folder.py). Pickle checkpoints (.bin, .pt) are refused: unpickling a file can run
arbitrary code. The one command that reads a pickle is the converter (`python -m gpt2viz convert
nanogpt`, convert.py), which a user runs locally on their own files; the app and every server
path read only safetensors and JSON.
"""

import functools
import json
import math
import os
import struct
from dataclasses import dataclass, field, replace
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file

from ..spec.config import ACTIVATIONS, PRESETS, GPT2Config
from .gpt2 import GPT2

DTYPE_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "F8_E4M3": 1, "F8_E5M2": 1, "I64": 8, "I32": 4,
               "I16": 2, "I8": 1, "U64": 8, "U32": 4, "U16": 2, "U8": 1, "BOOL": 1}
FLOAT_DTYPES = {"F64", "F32", "F16", "BF16"}
# gpt2-xl's header (580 tensors, with the `transformer.` prefix and the mask buffers) is about 80 KB;
# a 100 MiB header took 2.6 GB to parse
MAX_HEADER_BYTES = 2**20
BUFFER_SUFFIXES = (".attn.bias", ".attn.masked_bias")
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle")
HOW_TO_CONVERT = ("a nanoGPT ckpt.pt converts on your own machine with python -m gpt2viz convert nanogpt "
                  "ckpt.pt [--meta meta.pkl] --out DIR (then open DIR); otherwise load it yourself in a "
                  "trusted environment and write model.safetensors with safetensors.torch.save_file, or use "
                  "the model.safetensors the Hugging Face Hub publishes")


class WeightsError(ValueError):
    """A weights file that cannot be used; the message names the file or key at fault."""


# ---------------------------------------------------------------------------- header
@dataclass(frozen=True)
class HeaderEntry:
    key: str
    dtype: str
    shape: tuple[int, ...]
    start: int  # byte offsets into the data section
    end: int

    @property
    def numel(self) -> int:
        return math.prod(self.shape)


@dataclass(frozen=True)
class Header:
    path: str
    entries: dict[str, HeaderEntry]
    metadata: dict[str, str]
    file_size: int
    data_start: int  # where the data section begins: after the 8-byte length and the header


def _is_pickle(head: bytes) -> bool:
    """A pickle of protocol 2 to 5 (torch.save's own, or pickle.dump's), or torch's zip of one, from a
    file's first 9 bytes. A safetensors header of 640, 896, 1,152 or 1,408 bytes starts with the same two
    bytes (its length, little-endian: 80 02 ... 80 05); its length's high bytes are zero and its JSON
    starts at byte 8, which no pickle's opcodes give."""
    safetensors = head[3:8] == bytes(5) and head[8:9] == b"{"
    return head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05") and not safetensors \
        or head[:4] == b"PK\x03\x04"


def _refuse_pickle(path: Path, head: bytes) -> None:
    if path.suffix.lower() in PICKLE_SUFFIXES or _is_pickle(head):
        raise WeightsError(f"{path.name} is a PyTorch pickle checkpoint; the app and its commands never unpickle "
                           f"weights (loading a pickle can run any code). Use safetensors instead: {HOW_TO_CONVERT}")


def read_header(path) -> Header:
    """Parse and check a safetensors header without reading any tensor data."""
    path = Path(path)
    if not path.is_file():
        raise WeightsError(f"no weights file at {path}")
    size = path.stat().st_size
    with open(path, "rb") as f:
        _refuse_pickle(path, f.read(9))
        f.seek(0)
        head = f.read(8)
        if len(head) < 8:
            raise WeightsError(f"{path.name} is not a safetensors file: only {size} bytes")
        (n,) = struct.unpack("<Q", head)
        if n > size - 8:
            raise WeightsError(f"{path.name} is not a safetensors file, or is truncated: its header claims "
                               f"{n:,} bytes but the file has {size:,}")
        if n > MAX_HEADER_BYTES:
            raise WeightsError(f"{path.name}: its header claims {n:,} bytes, far more than a GPT-2 checkpoint's "
                               f"(gpt2-xl's is about 80 KB; at most {MAX_HEADER_BYTES:,} are read)")
        raw = f.read(n)
    header = _parse_json(path.name, raw)
    if not isinstance(header, dict):
        raise WeightsError(f"{path.name} is not a safetensors file: its header is not a JSON object")
    metadata = header.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict):
        raise WeightsError(f"{path.name}: its __metadata__ is not a JSON object")
    data_size = size - 8 - n
    entries = {}
    for key, e in header.items():
        entries[key] = _entry(path.name, key, e, data_size)
    return Header(str(path), entries, {str(k): str(v) for k, v in dict(metadata).items()}, size, 8 + n)


def _parse_json(file: str, raw: bytes):
    """The header's JSON, or a sentence: Python's own words (a RecursionError for deep nesting, the
    4,300-digit limit for a huge number) name nothing a student can act on."""
    try:
        return json.loads(raw)
    except RecursionError:
        raise WeightsError(f"{file} is not a safetensors file: its header nests lists or objects deeper than "
                           "any checkpoint does") from None
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise WeightsError(f"{file} is not a safetensors file: its header is not valid JSON") from None
    except ValueError:  # int('9' * 5000): over Python's limit on the digits of a number
        raise WeightsError(f"{file} is not a safetensors file: its header holds a number with thousands of "
                           "digits, larger than any tensor's size") from None


def _ints(value) -> bool:
    return isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in value)


def _entry(file: str, key: str, e, data_size: int) -> HeaderEntry:
    if not (isinstance(e, dict) and isinstance(e.get("dtype"), str) and _ints(e.get("shape"))
            and _ints(e.get("data_offsets")) and len(e["data_offsets"]) == 2):
        raise WeightsError(f"{file}: tensor {key!r} has a malformed header entry")
    dtype, shape, (start, end) = e["dtype"], tuple(e["shape"]), e["data_offsets"]
    if dtype not in DTYPE_BYTES:
        raise WeightsError(f"{file}: tensor {key!r} has unknown dtype {dtype!r}")
    if any(s < 0 for s in shape) or not (0 <= start <= end):
        raise WeightsError(f"{file}: tensor {key!r} has a negative shape or offset")
    if end - start != math.prod(shape) * DTYPE_BYTES[dtype]:
        raise WeightsError(f"{file}: tensor {key!r} declares shape {list(shape)} of {dtype} but spans "
                           f"{end - start:,} bytes")
    if end > data_size:
        raise WeightsError(f"{file} is truncated: tensor {key!r} needs bytes up to {end:,} of the data "
                           f"section, which has {data_size:,}")
    return HeaderEntry(key, dtype, shape, int(start), int(end))


# ---------------------------------------------------------------------------- keys and config
def canonical(key: str) -> str:
    return key.removeprefix("transformer.")


def split_keys(keys) -> tuple[dict[str, str], list[str], list[str]]:
    """(parameter name -> file key, buffer keys, lm_head keys) for a checkpoint's keys."""
    params, buffers, heads = {}, [], []
    for key in keys:
        name = canonical(key)
        if name.endswith(BUFFER_SUFFIXES):
            buffers.append(key)
        elif name.startswith("lm_head."):
            heads.append(key)
        else:
            if name in params:
                raise WeightsError(f"tensor {name!r} appears twice (with and without 'transformer.')")
            params[name] = key
    return params, buffers, heads


def fallback_n_head(n_embd: int) -> int:
    """Head count when nothing records it: the preset with this width (head size 64 across the GPT-2
    family), else head size 32 as in minGPT's small presets (gpt-micro: 128 wide, 4 heads)."""
    for cfg in PRESETS.values():
        if cfg.n_embd == n_embd:
            return cfg.n_head
    for d_head in (32, 16, 8):
        if n_embd % d_head == 0:
            return n_embd // d_head
    return 1


def infer_config(shapes: dict[str, tuple], n_head: int | None = None, name: str = "checkpoint") -> GPT2Config:
    """A config from parameter shapes (canonical names); n_head cannot be seen in shapes."""
    for key in ("wte.weight", "wpe.weight"):
        if key not in shapes:
            raise WeightsError(f"missing tensor {key!r}: this is not a GPT-2 checkpoint")
        if len(shapes[key]) != 2:
            raise WeightsError(f"tensor {key!r} has shape {list(shapes[key])}, expected 2 dimensions")
    (V, d), (n_pos, d2) = shapes["wte.weight"], shapes["wpe.weight"]
    if d != d2:
        raise WeightsError(f"tensor 'wpe.weight' is {d2} wide but 'wte.weight' is {d} wide")
    for size, what in ((d, "a width"), (n_pos, "a context"), (V, "a vocabulary")):
        if size < 1:
            raise WeightsError(f"the checkpoint has {what} of {size}: a GPT-2 has at least 1")
    layers = {int(k.split(".")[1]) for k in shapes if k.startswith("h.") and k.split(".")[1].isdigit()}
    if not layers:
        raise WeightsError("no transformer blocks (h.0.*) in the checkpoint")
    n_layer = max(layers) + 1
    if len(layers) != n_layer:  # also keeps a forged h.99999999 from building a huge model
        gap = next(i for i in range(n_layer) if i not in layers)  # at most len(layers) steps, never n_layer
        raise WeightsError(f"missing block h.{gap}.*: the blocks must be numbered 0 to {n_layer - 1}")
    n_head = n_head or fallback_n_head(d)
    if n_head < 1:
        raise WeightsError(f"the checkpoint says it has {n_head} heads: a GPT-2 has at least 1")
    if d % n_head:
        raise WeightsError(f"width {d} is not divisible by {n_head} heads")
    sizes = (n_layer, n_head, d, V, n_pos)
    matching = [p.name for p in PRESETS.values()
                if (p.n_layer, p.n_head, p.n_embd, p.vocab_size, p.n_positions) == sizes]
    if name in PRESETS and name not in matching:  # a file's own label is believed only if its shapes agree
        name = "checkpoint"
    if name == "checkpoint" and matching:
        name = matching[0]
    return GPT2Config(name, n_layer=n_layer, n_head=n_head, n_embd=d, vocab_size=V, n_positions=n_pos)


def expected_shapes(cfg: GPT2Config) -> dict[str, tuple[int, ...]]:
    with torch.device("meta"):
        model = GPT2(cfg)
    return {name: tuple(p.shape) for name, p in model.named_parameters()}


def check_shapes(cfg: GPT2Config, shapes: dict[str, tuple]) -> None:
    want = expected_shapes(cfg)
    missing = [k for k in want if k not in shapes]
    extra = [k for k in shapes if k not in want]
    if missing:
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        raise WeightsError(f"missing tensor {missing[0]!r}{more} for a {cfg.n_layer}-layer GPT-2 of width {cfg.n_embd}")
    if extra:
        more = f" and {len(extra) - 1} more" if len(extra) > 1 else ""
        raise WeightsError(f"unexpected tensor {extra[0]!r}{more}: not part of GPT-2")
    for key, shape in want.items():
        if tuple(shapes[key]) != shape:
            raise WeightsError(f"tensor {key!r} has shape {list(shapes[key])}, expected {list(shape)}")


def checkpoint_config(path, n_head: int | None = None, config: GPT2Config | None = None) -> GPT2Config:
    """The config of a safetensors checkpoint, from its header alone (no tensor read), checked as
    `load_safetensors` checks it: what a server needs to know before it builds the model."""
    return checked(Path(path), n_head, config)[0]


def checked(path: Path, n_head: int | None, config: GPT2Config | None):
    """(config, header, parameter name -> file key, buffer keys, lm_head keys, where n_head came from),
    every shape checked against the config."""
    header = read_header(path)
    params, buffers, heads = split_keys(header.entries)
    for key, file_key in params.items():
        if header.entries[file_key].dtype not in FLOAT_DTYPES:
            raise WeightsError(f"tensor {key!r} has dtype {header.entries[file_key].dtype}; weights must be "
                               "floating point (F32, F16, BF16 or F64)")
    source = "given"
    if n_head is None:
        n_head, source = _n_head_from(header, path)
    shapes = {k: header.entries[fk].shape for k, fk in params.items()}
    cfg = config or infer_config(shapes, n_head, name=header.metadata.get("model", "checkpoint"))
    if config is None and not has_biases(shapes):
        cfg = replace(cfg, bias=False)
    if config is None and header.metadata.get("activation") in ACTIVATIONS:  # as save_safetensors wrote it
        cfg = replace(cfg, activation=header.metadata["activation"])
    if not cfg.tied:  # an output matrix of its own: a parameter like the others
        if len(heads) != 1 or canonical(heads[0]) != "lm_head.weight":
            raise WeightsError("missing tensor 'lm_head.weight': the config unties the output matrix")
        params["lm_head.weight"], heads = heads[0], []
        shapes["lm_head.weight"] = header.entries[params["lm_head.weight"]].shape
    check_shapes(cfg, shapes)
    return cfg, header, params, buffers, heads, source


def _n_head_from(header: Header, path: Path) -> tuple[int | None, str]:
    if header.metadata.get("n_head", "").isdigit():
        return int(header.metadata["n_head"]), "file metadata"
    config_json = path.with_name("config.json")
    if config_json.is_file():
        try:
            cfg = json.loads(config_json.read_text())
            return int(cfg.get("n_head", cfg.get("num_attention_heads"))), "config.json beside the file"
        except (ValueError, TypeError, OSError):
            pass
    return None, "assumed from the width (not recorded in the file)"


# ---------------------------------------------------------------------------- loading
@dataclass(frozen=True)
class Loaded:
    model: GPT2
    path: str
    n_head_source: str
    buffers: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def has_biases(shapes: dict[str, tuple]) -> bool:
    """Whether a checkpoint carries GPT-2's biases; a file with none of them is a bias-free model
    (nanoGPT's bias=False), one with some missing stays an error that names the first."""
    return any(k.endswith(".bias") for k in shapes)


def load_safetensors(path, n_head: int | None = None, config: GPT2Config | None = None) -> Loaded:
    """A checked GPT-2 from a safetensors file; WeightsError names what is wrong. `config` (a
    folder's config.json) replaces what the shapes alone would say: every shape is still checked."""
    path = Path(path)
    cfg, _, params, buffers, heads, source = checked(path, n_head, config)
    state = {}
    try:
        with safe_open(str(path), framework="pt") as f:
            for key, file_key in params.items():
                t = f.get_tensor(file_key).float()
                if not torch.isfinite(t).all():
                    raise WeightsError(f"tensor {key!r} contains NaN or infinite values")
                state[key] = t
            notes = _check_lm_head(f, heads, state)
    except SafetensorError as e:
        raise WeightsError(f"{path.name} is corrupt: {str(e).splitlines()[0]}") from None
    with torch.device("meta"):
        model = GPT2(cfg)
    model.load_state_dict(state, strict=True, assign=True)
    return Loaded(model.eval(), str(path), source, buffers, notes)


def _check_lm_head(f, heads: list[str], state: dict) -> list[str]:
    notes = []
    for key in heads:
        if canonical(key) != "lm_head.weight":
            raise WeightsError(f"unexpected tensor {key!r}: GPT-2's output layer has no bias")
        if not torch.equal(f.get_tensor(key).float(), state["wte.weight"]):
            raise WeightsError(f"tensor {key!r} differs from 'wte.weight': GPT-2 ties the output matrix "
                               "to the token embedding, and this checkpoint does not")
        notes.append(f"{key} is a copy of wte.weight (tied), not loaded separately")
    return notes


def save_safetensors(model: GPT2, path, extra_metadata: dict | None = None) -> None:
    """Write the model in the Hugging Face layout (no prefix, no buffers, lm_head only when untied),
    with the head count and the activation in the metadata so it can be read back exactly."""
    cfg = model.config
    meta = {"format": "pt", "model": cfg.name, "n_head": str(cfg.n_head), "activation": cfg.activation,
            **(extra_metadata or {})}
    save_file({k: v.detach().contiguous() for k, v in model.state_dict().items()}, str(path), metadata=meta)


# ---------------------------------------------------------------------------- sizes
@functools.lru_cache(maxsize=16)  # asked on every rerun: building even a meta gpt2-xl takes tens of ms
def meta_model(cfg: GPT2Config) -> GPT2:
    """A model of this config with its shapes and no values (nothing allocated)."""
    with torch.device("meta"):
        return GPT2(cfg)


def params_bytes(cfg: GPT2Config) -> int:
    """What a model of this config holds in float32, from its shapes alone."""
    return 4 * sum(p.numel() for p in meta_model(cfg).parameters())


# ---------------------------------------------------------------------------- initialisation
@torch.no_grad()
def init_weights(model: GPT2, seed: int) -> GPT2:
    """GPT-2's initialisation: normal(0, 0.02) for embeddings and projections, 0.02/sqrt(2 n_layer)
    for the two residual projections (attn.c_proj, mlp.c_proj), zero biases, LayerNorm 1 and 0."""
    g = torch.Generator().manual_seed(seed)
    resid_std = 0.02 / math.sqrt(2 * model.config.n_layer)
    for name, p in model.named_parameters():
        if ".ln_" in name or name.startswith("ln_f."):
            p.fill_(1.0 if name.endswith("weight") else 0.0)
        elif name.endswith("bias"):
            p.zero_()
        else:
            p.normal_(0.0, resid_std if name.endswith("c_proj.weight") else 0.02, generator=g)
    return model


def random_model(cfg: GPT2Config, seed: int = 0) -> GPT2:
    return init_weights(GPT2(cfg), seed).eval()


# ---------------------------------------------------------------------------- Hugging Face cache
@dataclass(frozen=True)
class CachedCheckpoint:
    name: str  # gpt2, gpt2-medium, ...
    path: str


def hf_hub_dir(env=os.environ) -> Path:
    if env.get("HF_HUB_CACHE"):
        return Path(env["HF_HUB_CACHE"])
    home = env.get("HF_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "huggingface")
    return Path(home) / "hub"


def find_hf_checkpoints(env=os.environ) -> list[CachedCheckpoint]:
    """GPT-2 `model.safetensors` files in the Hugging Face cache, newest snapshot (refs/main) first."""
    hub = hf_hub_dir(env)
    published = [cfg.hf_repo.split("/") for cfg in PRESETS.values() if cfg.hf_repo]  # [owner, name]
    owners, names = {owner for owner, _ in published}, tuple(name for _, name in published)
    found = []
    for repo in sorted(hub.glob("models--*")):
        parts = repo.name.split("--")[1:]
        owner_ok = len(parts) == 1 or (len(parts) == 2 and parts[0] in owners)
        if not owner_ok or not parts[-1].startswith(names):
            continue
        snapshots = repo / "snapshots"
        ref = repo / "refs" / "main"
        order = [ref.read_text().strip()] if ref.is_file() else []
        for snap in order + sorted(p.name for p in snapshots.glob("*")):
            file = snapshots / snap / "model.safetensors"
            if file.is_file():
                found.append(CachedCheckpoint(parts[-1], str(file)))
                break
    return found


# ---------------------------------------------------------------------------- transformers
def hf_config(cfg: GPT2Config):
    """transformers' GPT2Config of these sizes, with eager attention (the fused kernels hide the
    attention weights). transformers is only needed here: it is not a dependency of gpt2viz."""
    from transformers import GPT2Config as HFConfig

    return HFConfig(vocab_size=cfg.vocab_size, n_positions=cfg.n_positions, n_embd=cfg.n_embd, n_layer=cfg.n_layer,
                    n_head=cfg.n_head, n_inner=cfg.d_mlp, activation_function=cfg.activation,
                    layer_norm_epsilon=cfg.layer_norm_epsilon, resid_pdrop=cfg.dropout, embd_pdrop=cfg.dropout,
                    attn_pdrop=cfg.dropout, tie_word_embeddings=cfg.tied, attn_implementation="eager")


@torch.no_grad()
def to_transformers(model: GPT2):
    """transformers' GPT2LMHeadModel (eager attention, eval mode) holding a copy of `model`'s weights:
    every tensor by its checkpoint name, shapes checked. Both keep Conv1D's [in, out] layout, so
    nothing is transposed. A config without biases gets zero biases (the same function)."""
    from transformers import GPT2LMHeadModel

    hf = GPT2LMHeadModel(hf_config(model.config)).eval()
    ours = dict(model.named_parameters())
    theirs = dict(hf.transformer.named_parameters()) | {"lm_head.weight": hf.lm_head.weight}
    if model.config.tied:
        del theirs["lm_head.weight"]  # transformers ties it to wte, as GPT-2 does
    for name, p in theirs.items():
        if name in ours:
            if p.shape != ours[name].shape:
                raise WeightsError(f"{name}: transformers expects {list(p.shape)}, "
                                   f"gpt2viz has {list(ours[name].shape)}")
            p.copy_(ours[name])
        elif name.endswith(".bias") and not model.config.bias:
            p.zero_()
        else:
            raise WeightsError(f"transformers' GPT-2 has {name!r}, which gpt2viz's model lacks")
    unused = set(ours) - set(theirs)
    if unused:
        raise WeightsError(f"gpt2viz's {sorted(unused)[0]!r} has no place in transformers' GPT-2")
    return hf
