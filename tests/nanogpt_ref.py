"""nanoGPT's GPT written here, for tests: its parameter names (transformer.wte, transformer.h.N.attn.c_attn,
lm_head, ...) and its equations (pre-LN blocks, LayerNorm without bias, causal attention, exact GELU, tied
head), and its checkpoint files saved as nanoGPT's train.py and prepare.py save them."""

import math
import pickle

import torch
import torch.nn.functional as F
from torch import nn

# nanoGPT's shakespeare_char vocabulary: 65 symbols, newline and space first
SYMBOLS = sorted(set("\n !$&',-.3:;?ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"))
TEXT = "First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak."
ARGS = {"n_layer": 2, "n_head": 4, "n_embd": 64, "block_size": 128, "bias": False, "vocab_size": 65, "dropout": 0.0}


# ---------------------------------------------------------------------------- nanoGPT's shape, written here
class LayerNorm(nn.Module):
    def __init__(self, d, bias):
        super().__init__()
        self.weight = nn.Parameter(1 + 0.1 * torch.randn(d))
        self.bias = nn.Parameter(0.1 * torch.randn(d)) if bias else None

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)


class Attention(nn.Module):
    def __init__(self, a, mask_buffer):
        super().__init__()
        d = a["n_embd"]
        self.n_head = a["n_head"]
        self.c_attn = nn.Linear(d, 3 * d, bias=a["bias"])
        self.c_proj = nn.Linear(d, d, bias=a["bias"])
        if mask_buffer:  # nanoGPT registers its causal mask as `bias` where flash attention is missing
            n = a["block_size"]
            self.register_buffer("bias", torch.tril(torch.ones(n, n)).view(1, 1, n, n))

    def forward(self, x, out):
        B, T, d = x.shape
        qkv = out["attn.qkv"] = self.c_attn(x)
        q, k, v = (t.view(B, T, self.n_head, d // self.n_head).transpose(1, 2) for t in qkv.split(d, dim=2))
        out["attn.q"], out["attn.k"], out["attn.v"] = q, k, v
        scores = out["attn.scores"] = q @ k.transpose(-2, -1) / math.sqrt(k.shape[-1])
        mask = torch.ones(T, T, dtype=torch.bool).tril()
        pattern = out["attn.pattern"] = scores.masked_fill(~mask, float("-inf")).softmax(-1)
        z = out["attn.z"] = pattern @ v
        merged = out["attn.merged"] = z.transpose(1, 2).reshape(B, T, d)
        return self.c_proj(merged)


class Block(nn.Module):
    def __init__(self, a, mask_buffer):
        super().__init__()
        d = a["n_embd"]
        self.ln_1, self.ln_2 = LayerNorm(d, a["bias"]), LayerNorm(d, a["bias"])
        self.attn = Attention(a, mask_buffer)
        self.mlp = nn.ModuleDict(dict(c_fc=nn.Linear(d, 4 * d, bias=a["bias"]), gelu=nn.GELU(),
                                      c_proj=nn.Linear(4 * d, d, bias=a["bias"])))


class NanoGPT(nn.Module):
    """nanoGPT's GPT: its parameter names (transformer.wte, transformer.h.N.attn.c_attn, lm_head, ...)
    and its equations, recording each intermediate under the app's name."""

    def __init__(self, a, mask_buffer=False):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(a["vocab_size"], a["n_embd"]), wpe=nn.Embedding(a["block_size"], a["n_embd"]),
            h=nn.ModuleList(Block(a, mask_buffer) for _ in range(a["n_layer"])),
            ln_f=LayerNorm(a["n_embd"], a["bias"])))
        self.lm_head = nn.Linear(a["n_embd"], a["vocab_size"], bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # tied, as nanoGPT ties them
        for name, p in self.named_parameters():  # larger than GPT-2's init, so every term shows
            if name.endswith("weight") and p.dim() == 2:
                nn.init.normal_(p, 0.0, 0.2)

    def forward(self, idx):
        tr, out = self.transformer, {}
        T = idx.shape[1]
        tok, pos = tr.wte(idx), tr.wpe(torch.arange(T))
        out["embed.tok"], out["embed.pos"] = tok, pos
        x = out["embed.out"] = tok + pos
        for i, block in enumerate(tr.h):
            o = {"resid_pre": x}
            o["ln1.out"] = h = block.ln_1(x)
            x = o["resid_mid"] = x + (o.setdefault("attn.out", block.attn(h, o)))
            o["ln2.out"] = h = block.ln_2(x)
            pre = o["mlp.pre"] = block.mlp.c_fc(h)
            post = o["mlp.post"] = block.mlp.gelu(pre)
            o["mlp.out"] = block.mlp.c_proj(post)
            x = o["resid_post"] = x + o["mlp.out"]
            for name in ("resid_pre", "resid_mid", "resid_post"):
                if x.requires_grad and o[name].requires_grad:
                    o[name].retain_grad()
            out |= {f"blocks.{i}.{k}": v for k, v in o.items()}
        out["ln_f.out"] = x = tr.ln_f(x)
        out["logits"] = self.lm_head(x)
        return out


def vocab():
    return {s: i for i, s in enumerate(SYMBOLS)}


def save_like_train_py(model, path, compiled=False):
    """nanoGPT's train.py checkpoint: the raw model's state dict (a compiled one's keys carry _orig_mod.)."""
    state = model.state_dict()
    if compiled:
        state = {"_orig_mod." + k: v for k, v in state.items()}
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    torch.save({"model": state, "optimizer": opt.state_dict(), "model_args": dict(ARGS), "iter_num": 5000,
                "best_val_loss": torch.tensor(1.4697), "config": {"dataset": "shakespeare_char", "batch_size": 64,
                                                                  "compile": compiled, "learning_rate": 1e-3}}, path)


def save_meta(path):
    with open(path, "wb") as f:
        pickle.dump({"vocab_size": len(SYMBOLS), "itos": dict(enumerate(SYMBOLS)), "stoi": vocab()}, f)


def converted_folder(tmp, args=ARGS, seed=0, name="shakespeare-char"):
    """A nanoGPT model of `args` (random, seeded), saved as train.py saves it with its meta.pkl, and
    converted into tmp/name as a student would: (the folder, the module)."""
    from gpt2viz.model.convert import convert_nanogpt

    torch.manual_seed(seed)
    model = NanoGPT(args).eval()
    torch.save({"model": model.state_dict(), "optimizer": {}, "model_args": dict(args), "iter_num": 5000,
                "best_val_loss": torch.tensor(1.4697), "config": {}}, tmp / "ckpt.pt")
    save_meta(tmp / "meta.pkl")
    convert_nanogpt(tmp / "ckpt.pt", tmp / name, tmp / "meta.pkl")
    return tmp / name, model
