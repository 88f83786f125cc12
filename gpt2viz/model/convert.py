"""`python -m gpt2viz convert nanogpt CKPT [--meta META] --out DIR`: a nanoGPT checkpoint as a weights folder.

This is the one place gpt2viz reads a pickle, and only on the user's own machine, on their own
files: the app and every server path read the folder this writes (safetensors and JSON).
- `ckpt.pt` (nanoGPT's train.py: {"model", "optimizer", "model_args", "iter_num", "best_val_loss",
  "config"}) is read with `torch.load(weights_only=True)`, which builds tensors and plain
  containers and refuses any other object.
- `meta.pkl` (the character vocabulary: vocab_size, itos, stoi) is read only after every opcode of
  it was checked to build dicts, lists, strings or integers: a pickle that would import or call
  anything is refused before one opcode runs.
- Both pickles are read opcode by opcode first (`pickle_budget`): one that would build an object of
  more than a million elements (a list fetched from the memo into the next list, over and over) or
  nest deeper than a vocabulary or a checkpoint does is refused before it is loaded; model_args is
  checked against the tensors the file holds before a model of its size is described or built; and
  no message formats more of a value from the file than a short prefix.
nanoGPT's names map to the Hugging Face GPT-2 layout: `transformer.` dropped (and the `_orig_mod.`
a compiled model's state dict carries), its Linear weights [out, in] transposed to Conv1D's
[in, out], the causal-mask buffers (`attn.bias`, present without flash attention) skipped, the
biases absent when bias=False, `lm_head.weight` kept only when it is not `wte` itself. nanoGPT's
GELU is the exact erf form (nn.GELU), so config.json says "gelu", and the model, the derived
tensors and the MLP page follow it.
"""

import io
import json
import os
import pickle
from pathlib import Path

import torch

from ..spec.config import GPT2Config
from .convert_budget import (  # noqa: F401 (the budgets, for tests and messages)
    CKPT_MAX_DEPTH,
    CKPT_MAX_NODES,
    CKPT_PICKLE_MAX_BYTES,
    META_MAX_BYTES,
    META_MAX_DEPTH,
    META_MAX_NODES,
    PLAIN_OPCODES,
    ConvertError,
    check_checkpoint_pickle,
    check_meta_bytes,
)
from .folder import CONFIG_FILE, MODEL_FILE, TOKENIZER_FILE
from .gpt2 import GPT2
from .tokenizer import GPT2_VOCABULARY
from .vocab import char_tokenizer_json
from .weights import WeightsError, save_safetensors

COMPILED_PREFIX = "_orig_mod."
MODEL_ARGS = ("n_layer", "n_head", "n_embd", "block_size", "vocab_size")
LINEAR_WEIGHTS = (".attn.c_attn.weight", ".attn.c_proj.weight", ".mlp.c_fc.weight", ".mlp.c_proj.weight")
MASK_BUFFER = ".attn.bias"  # nanoGPT's causal mask, a buffer [1, 1, block_size, block_size]
# ---------------------------------------------------------------------------- meta.pkl
def _short(value) -> str:
    """A value from a file, for a message: a number or a short string as written, anything else by its type.

    A structure from an untrusted file is never formatted whole: a small file can hold one whose
    repr is larger than any memory."""
    if isinstance(value, (bool, int, float)) or value is None:
        if isinstance(value, int) and abs(value) >= 10 ** 30:
            return f"an integer of {value.bit_length():,} bits"
        return repr(value)[:40]
    if isinstance(value, str):
        return repr(value[:40]) + ("..." if len(value) > 40 else "")
    return f"a {type(value).__name__}"


def _keys(mapping: dict) -> str:
    """A dict's first six keys in sorted order, each as _short writes it."""
    return "[" + ", ".join(sorted(_short(k) for k in mapping)[:6]) + "]"


class _PlainUnpickler(pickle.Unpickler):
    def find_class(self, module, name):  # never reached after the opcode check; kept as a second lock
        raise ConvertError(f"refused: the pickle asks for {str(module)[:40]}.{str(name)[:40]}")


def read_plain_pickle(path) -> object:
    """A pickle of dicts, lists, strings and integers only, within a size and depth budget; anything
    else refused, unrun, in one line."""
    path = Path(path)
    data = check_meta_bytes(path)
    try:
        return _PlainUnpickler(io.BytesIO(data)).load()
    except ConvertError:
        raise
    except Exception as e:  # plain opcodes in an order no pickler writes (a key that is a list, ...)
        first = str(e).splitlines()[0][:120] if str(e) else type(e).__name__
        raise ConvertError(f"{path.name} is not a pickle a vocabulary is saved as: {first}") from None


def read_meta(path) -> list[str]:
    """nanoGPT's meta.pkl: its symbols, in id order (itos), checked against stoi and vocab_size."""
    name = Path(path).name
    meta = read_plain_pickle(path)
    if not isinstance(meta, dict) or "itos" not in meta:
        found = (f"a dict with keys {_keys(meta)}" if isinstance(meta, dict)
                 else f"a {type(meta).__name__}")
        raise ConvertError(f"{name} is not nanoGPT's meta.pkl (vocab_size, itos, stoi): found {found}")
    itos = meta["itos"]
    if isinstance(itos, list):
        itos = dict(enumerate(itos))
    if not (isinstance(itos, dict) and itos and all(isinstance(k, int) for k in itos)):
        raise ConvertError(f"{name}: itos is not a map of ids to symbols")
    n = meta.get("vocab_size", len(itos))
    if not isinstance(n, int) or sorted(itos) != list(range(n)):
        raise ConvertError(f"{name}: itos has ids {min(itos)} to {max(itos)} ({len(itos)} of them), "
                           f"but vocab_size is {_short(n)}")
    symbols = [itos[i] for i in range(n)]
    bad = next((s for s in symbols if not (isinstance(s, str) and len(s) == 1)), None)
    if bad is not None:
        raise ConvertError(f"{name}: symbol {_short(bad)} is not one character; the converter reads character "
                           "vocabularies (nanoGPT's shakespeare_char kind)")
    stoi = meta.get("stoi")
    if stoi is not None and stoi != {s: i for i, s in enumerate(symbols)}:
        raise ConvertError(f"{name}: stoi is not the inverse of itos")
    return symbols


# ---------------------------------------------------------------------------- ckpt.pt
def read_checkpoint(path) -> dict:
    """nanoGPT's checkpoint dict, through torch.load(weights_only=True); one line if it is not one."""
    path = Path(path)
    if not path.is_file():
        raise ConvertError(f"no checkpoint at {path}")
    check_checkpoint_pickle(path)
    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # weights_only refuses other objects; not a torch file at all
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ConvertError(f"{path.name}: torch.load(weights_only=True) could not read it: {first[:200]}") from None
    if not isinstance(ckpt, dict):
        raise ConvertError(f"{path.name} is not nanoGPT's checkpoint: found a {type(ckpt).__name__}, not a dict "
                           "with model and model_args")
    if not isinstance(ckpt.get("model"), dict) or not isinstance(ckpt.get("model_args"), dict):
        tensors = sum(isinstance(v, torch.Tensor) for v in ckpt.values())
        found = (f"a state dict of {tensors} tensors without model_args" if tensors
                 else f"a dict with keys {_keys(ckpt)}")
        raise ConvertError(f"{path.name} is not nanoGPT's checkpoint (model, model_args, iter_num, ...): found {found}")
    return ckpt


def _model_args(args: dict, name: str) -> dict:
    for key in MODEL_ARGS:
        if not isinstance(args.get(key), int) or isinstance(args.get(key), bool) or args[key] < 1:
            raise ConvertError(f"{name}: model_args[{key!r}] is {_short(args.get(key))}, not a positive whole number")
    return args


def _short_shape(t: torch.Tensor) -> str:
    return str(list(t.shape)) if t.dim() <= 8 else f"of {t.dim()} dimensions"


def _check_sizes(args: dict, state: dict, name: str) -> None:
    """model_args against the tensors the file holds, before a model of that size is described or built:
    a size that no tensor carries (n_embd 10^9, n_layer 10^6, block_size 10^9) is refused here."""
    for key in ("wte.weight", "wpe.weight"):
        if key not in state or state[key].dim() != 2:
            raise ConvertError(f"{name}: its model has no two-dimensional transformer.{key}, so it is not "
                               "nanoGPT's GPT")
    (rows, d), positions = state["wte.weight"].shape, state["wpe.weight"].shape[0]
    blocks = {k.split(".")[1] for k in state if k.startswith("h.")}
    layers = len(blocks) if blocks == {str(i) for i in range(len(blocks))} else None
    found = {"n_embd": (d, f"wte.weight is [{rows:,}, {d:,}]"),
             "vocab_size": (rows, f"wte.weight is [{rows:,}, {d:,}]"),
             "block_size": (positions, f"wpe.weight has {positions:,} rows"),
             "n_layer": (layers, "the model has no blocks h.N" if not blocks
                         else f"the model has blocks h.0 to h.{len(blocks) - 1}" if layers
                         else f"the model's {len(blocks)} blocks are not numbered h.0, h.1, h.2, ...")}
    for key, (value, why) in found.items():
        if args[key] != value:
            raise ConvertError(f"{name}: model_args says {key} = {_short(args[key])}, but {why}")
    if args["n_head"] > d:
        raise ConvertError(f"{name}: model_args says n_head = {_short(args['n_head'])}, more heads than the "
                           f"{d:,} dimensions of a token's vector")


def to_hf_state(state: dict, name: str) -> tuple[dict[str, torch.Tensor], bool]:
    """nanoGPT's state dict in the Hugging Face layout, and whether lm_head is tied to wte."""
    bad = next((k for k in state if not isinstance(k, str)), None)
    if bad is not None:
        raise ConvertError(f"{name}: its model has a key that is {_short(bad)}, not a tensor's name")
    state = {k.removeprefix(COMPILED_PREFIX): v for k, v in state.items()}
    if "transformer.wte.weight" not in state:
        sample = ", ".join(sorted(state)[:3])
        raise ConvertError(f"{name}: its model has no transformer.wte.weight, so it is not nanoGPT's GPT "
                           f"(found {sample})")
    out = {}
    for key, t in state.items():
        if not isinstance(t, torch.Tensor):
            raise ConvertError(f"{name}: model[{_short(key)}] is a {type(t).__name__}, not a tensor")
        if t.numel() * t.element_size() > t.untyped_storage().nbytes() - t.storage_offset() * t.element_size():
            # a view repeating a few stored numbers (a zero stride) into a shape no memory holds
            raise ConvertError(f"{name}: model[{_short(key)}] has shape {_short_shape(t)}, more numbers than its "
                               f"file stores ({t.untyped_storage().nbytes():,} bytes)")
        if key.endswith(MASK_BUFFER) and key.count(".") == 4:  # transformer.h.N.attn.bias: the mask
            continue
        if key == "lm_head.weight":
            continue
        if not key.startswith("transformer."):
            raise ConvertError(f"{name}: tensor {_short(key)} is not part of nanoGPT's GPT")
        hf = key.removeprefix("transformer.")
        out[hf] = t.t().contiguous() if hf.endswith(LINEAR_WEIGHTS) else t
    head = state.get("lm_head.weight")
    tied = head is None or head is state["transformer.wte.weight"] or torch.equal(head, state["transformer.wte.weight"])
    if not tied:
        out["lm_head.weight"] = head
    return out, tied


def convert_nanogpt(ckpt_path, out_dir, meta_path=None) -> dict:
    """Write out_dir/model.safetensors, config.json and (with a meta.pkl) tokenizer.json; a summary back."""
    ckpt_path, out = Path(ckpt_path), Path(out_dir)
    symbols = read_meta(meta_path) if meta_path else None  # refused before the checkpoint is touched
    ckpt = read_checkpoint(ckpt_path)
    args = _model_args(ckpt["model_args"], ckpt_path.name)
    state, tied = to_hf_state(ckpt["model"], ckpt_path.name)
    _check_sizes(args, state, ckpt_path.name)
    bias = any(k.endswith(".bias") for k in state)
    if "bias" in args and bool(args["bias"]) != bias:
        raise ConvertError(f"{ckpt_path.name}: model_args says bias={args['bias']} but the model "
                           f"{'has' if bias else 'has no'} biases")
    dropout = args.get("dropout", 0.0)
    dropout = float(dropout) if isinstance(dropout, (int, float)) and 0 <= dropout < 1 else 0.0
    try:
        cfg = GPT2Config(out.name or "nanogpt", n_layer=args["n_layer"], n_head=args["n_head"], n_embd=args["n_embd"],
                         vocab_size=args["vocab_size"], n_positions=args["block_size"], dropout=dropout,
                         activation="gelu", bias=bias, tied=tied)
    except ValueError as e:
        raise ConvertError(f"{ckpt_path.name}: model_args: {e}") from None
    with torch.device("meta"):
        model = GPT2(cfg)
    want = {k: tuple(p.shape) for k, p in model.named_parameters()}
    for key in sorted(set(want) | set(state)):
        if key not in state:
            raise ConvertError(f"{ckpt_path.name}: missing tensor for {key} (model_args: {args['n_layer']} layers, "
                               f"d = {args['n_embd']})")
        if key not in want:
            raise ConvertError(f"{ckpt_path.name}: tensor {key} is not part of the GPT that model_args describes")
        if tuple(state[key].shape) != want[key]:
            raise ConvertError(f"{ckpt_path.name}: {key} has shape {list(state[key].shape)}, "
                               f"model_args gives {list(want[key])}")
    V = cfg.vocab_size
    vocabulary_size = len(symbols) if symbols else GPT2_VOCABULARY.size
    if vocabulary_size > V:
        hint = "" if symbols else ": give its meta.pkl with --meta"
        raise ConvertError(f"{ckpt_path.name}: the model has {V:,} token rows, fewer than the {vocabulary_size:,} "
                           f"ids of its vocabulary{hint}")
    model.load_state_dict(state, strict=True, assign=True)
    step = ckpt.get("iter_num")
    loss = ckpt.get("best_val_loss")
    metadata = {"source": f"nanoGPT {ckpt_path.name}" + (f" + {Path(meta_path).name}" if meta_path else ""),
                "step": str(int(step)) if isinstance(step, int) else "unknown",
                "converted_by": "python -m gpt2viz convert nanogpt"}
    if isinstance(loss, (torch.Tensor, float, int)):
        metadata["best_val_loss"] = f"{float(loss):.4f}"
    out.mkdir(parents=True, exist_ok=True)
    save_safetensors(model, out / MODEL_FILE, metadata)
    # safetensors writes its file 0600; a class server's user reads the folder as it reads config.json
    umask = os.umask(0)
    os.umask(umask)
    (out / MODEL_FILE).chmod(0o666 & ~umask)
    config = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_layer": cfg.n_layer,
              "n_head": cfg.n_head, "n_embd": cfg.n_embd, "n_positions": cfg.n_positions, "n_ctx": cfg.n_positions,
              "vocab_size": V, "n_inner": None, "activation_function": "gelu", "layer_norm_epsilon": 1e-5,
              "tie_word_embeddings": tied, "bias": bias, "resid_pdrop": dropout, "embd_pdrop": dropout,
              "attn_pdrop": dropout, "gpt2viz_source": metadata["source"], "gpt2viz_step": metadata["step"]}
    (out / CONFIG_FILE).write_text(json.dumps(config, indent=1) + "\n")
    tokenizer = out / TOKENIZER_FILE
    if symbols:
        tokenizer.write_text(json.dumps(char_tokenizer_json(symbols), ensure_ascii=False, indent=1) + "\n",
                             encoding="utf-8")
    elif tokenizer.exists():  # GPT-2's BPE is the folder's default: an old vocabulary must not linger
        tokenizer.unlink()
    return {"out": str(out), "config": cfg, "tied": tied, "bias": bias, "step": metadata["step"],
            "vocabulary": f"{len(symbols)} symbols" if symbols else "GPT-2's BPE (50,257 ids)",
            "parameters": sum(p.numel() for p in model.parameters())}


def check_loadable(path) -> None:
    """Raise a WeightsError if the folder just written would not open (a last check for the CLI)."""
    from .folder import load_folder

    try:
        load_folder(path)
    except WeightsError as e:
        raise ConvertError(f"the converted folder does not open: {e}") from None
