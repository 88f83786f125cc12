"""GPT-2 hyperparameters: one frozen config and the named presets.

The sizes are those of the released checkpoints (openai/gpt-2 `hparams.json`, transformers
`GPT2Config`); `tiny` is ours, a 2-layer model with the full vocabulary for fast tests. A preset
that has a published checkpoint names its Hugging Face repository (`hf_repo`): adding a model size
is adding one line here.
"""

from dataclasses import dataclass, field


@dataclass(frozen=True)
class GPT2Config:
    name: str
    n_layer: int
    n_head: int
    n_embd: int
    vocab_size: int = 50257
    n_positions: int = 1024
    layer_norm_epsilon: float = 1e-5
    dropout: float = 0.1  # embd_pdrop = attn_pdrop = resid_pdrop in every released config
    activation: str = "gelu_new"  # the tanh approximation of GELU
    hf_repo: str | None = field(default=None, compare=False)  # where `gpt2viz download` fetches it

    def __post_init__(self):
        for name in ("n_layer", "n_head", "n_embd", "vocab_size", "n_positions"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.n_embd % self.n_head:
            raise ValueError(f"n_embd {self.n_embd} is not divisible by n_head {self.n_head}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")

    @property
    def d_head(self) -> int:
        return self.n_embd // self.n_head

    @property
    def d_mlp(self) -> int:
        return 4 * self.n_embd


PRESETS = {
    "gpt2": GPT2Config("gpt2", n_layer=12, n_head=12, n_embd=768, hf_repo="openai-community/gpt2"),
    "gpt2-medium": GPT2Config("gpt2-medium", n_layer=24, n_head=16, n_embd=1024,
                              hf_repo="openai-community/gpt2-medium"),
    "gpt2-large": GPT2Config("gpt2-large", n_layer=36, n_head=20, n_embd=1280, hf_repo="openai-community/gpt2-large"),
    "gpt2-xl": GPT2Config("gpt2-xl", n_layer=48, n_head=25, n_embd=1600, hf_repo="openai-community/gpt2-xl"),
    "distilgpt2": GPT2Config("distilgpt2", n_layer=6, n_head=12, n_embd=768, hf_repo="distilbert/distilgpt2"),
    "tiny": GPT2Config("tiny", n_layer=2, n_head=4, n_embd=64),
}


def get_config(name: str) -> GPT2Config:
    """The preset called `name`; a ValueError that lists the choices otherwise."""
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown model {name!r}; choose one of {', '.join(PRESETS)}") from None
