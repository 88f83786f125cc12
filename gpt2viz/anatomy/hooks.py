"""Names that travel: the TransformerLens hook name of each recorded tensor, and its layout there.
A reader arriving from TransformerLens can ask a run for
`blocks.3.attn.hook_z` and get what TransformerLens' `run_with_cache` would hold, and `trace --out
FILE --hook-names` saves a trace under those names.

Where the layouts differ (said in `HOOKS`): TransformerLens keeps q, k, v and z as
[batch, pos, head, d_head], where the app keeps heads before positions [B, nh, T, dh]; its
`hook_attn_scores` are masked (−inf above the diagonal), where the app records the scores before the
mask; its `hook_scale` is √(σ² + ε), where the app records σ²; its `hook_pos_embed` has a batch axis.
Names without a hook (the qkv projection, the LayerNorms' mean and out, the dropout masks, logits,
the loss, gradients) keep the app's name.
"""

import re
from collections.abc import Callable

import torch

from ..model.gpt2 import causal_mask
from ..spec.schema import block_name

_HEAD_MAJOR = {"attn.q": "attn.hook_q", "attn.k": "attn.hook_k", "attn.v": "attn.hook_v", "attn.z": "attn.hook_z"}
_SAME = {"resid_pre": "hook_resid_pre", "resid_mid": "hook_resid_mid", "resid_post": "hook_resid_post",
         "ln1.normalized": "ln1.hook_normalized", "ln2.normalized": "ln2.hook_normalized",
         "attn.pattern": "attn.hook_pattern", "attn.out": "hook_attn_out", "mlp.out": "hook_mlp_out",
         "mlp.pre": "mlp.hook_pre", "mlp.post": "mlp.hook_post"}
_SCALE = {"ln1.var": "ln1.hook_scale", "ln2.var": "ln2.hook_scale"}
_BLOCK = re.compile(r"blocks\.(\d+)\.(.+)")

# the app's short name -> (hook's short name, what differs): the table the README and glossary show
HOOKS = {**{k: (v, "") for k, v in _SAME.items()},
         **{k: (v, "[batch, pos, head, d_head]: positions before heads") for k, v in _HEAD_MAJOR.items()},
         "attn.scores": ("attn.hook_attn_scores", "masked: −inf above the diagonal (the app's are before the mask)"),
         **{k: (v, "√(σ² + ε), the app's σ²") for k, v in _SCALE.items()}}


def _top(name: str, eps: float) -> tuple[str, Callable] | None:
    same = lambda t: t  # noqa: E731
    return {"embed.tok": ("hook_embed", same),
            "embed.pos": ("hook_pos_embed", lambda t: t.unsqueeze(0)),  # [T, d] -> [1, T, d]
            "ln_f.normalized": ("ln_final.hook_normalized", same),
            "ln_f.var": ("ln_final.hook_scale", lambda t: (t + eps).sqrt())}.get(name)


def to_hook(name: str, tensor: torch.Tensor, eps: float, P: int = 0) -> tuple[str, torch.Tensor]:
    """(hook name, tensor in TransformerLens' layout) of a recorded name; the name itself when it has
    no hook. `eps`: the LayerNorms' ε; `P`: cached positions before the run's queries (decode)."""
    top = _top(name, eps)
    if top is not None:
        return top[0], top[1](tensor)
    m = _BLOCK.fullmatch(name)
    if m is None:
        return name, tensor
    prefix, short = block_name("", int(m.group(1))), m.group(2)
    if short in _SAME:
        return prefix + _SAME[short], tensor
    if short in _HEAD_MAJOR:
        return prefix + _HEAD_MAJOR[short], tensor.transpose(1, 2)  # [B, nh, T, dh] -> [B, T, nh, dh]
    if short in _SCALE:
        return prefix + _SCALE[short], (tensor + eps).sqrt()
    if short == "attn.scores":
        T, L = tensor.shape[-2:]
        future = causal_mask(T, L).to(tensor.device)  # [T, L], True where a query may not read the key
        return prefix + "attn.hook_attn_scores", tensor.masked_fill(future, float("-inf"))
    return name, tensor


def from_hook(hook: str) -> str | None:
    """The recorded name a hook name comes from (None: not a hook name)."""
    for ours, (theirs, _) in HOOKS.items():
        m = re.fullmatch(r"blocks\.(\d+)\." + re.escape(theirs), hook)
        if m:
            return block_name(ours, int(m.group(1)))
    top = {"hook_embed": "embed.tok", "hook_pos_embed": "embed.pos", "ln_final.hook_normalized": "ln_f.normalized",
           "ln_final.hook_scale": "ln_f.var"}
    return top.get(hook)


def save_as_hooks(trace, path, eps: float) -> list[str]:
    """Write a trace's tensors under their hook names, in TransformerLens' layouts, each its own copy (a plain
    safetensors file, not loadable as a gpt2viz trace); returns the names written, in order."""
    from safetensors.torch import save_file

    out = dict(to_hook(n, trace[n], eps, trace.P) for n in trace.names)
    save_file({k: v.detach().clone(memory_format=torch.contiguous_format) for k, v in out.items()}, str(path),
              metadata={"format": "transformerlens-hooks", "model": trace.model, "mode": trace.mode.value})
    return list(out)
