"""GPT-2 hyperparameters: one frozen config and the named presets.

The sizes are those of the released checkpoints (openai/gpt-2 `hparams.json`, transformers
`GPT2Config`); `tiny` is ours, a 2-layer model with the full vocabulary for fast tests. A preset
that has a published checkpoint names its Hugging Face repository (`hf_repo`): adding a model size
is adding one line here.
Three switches cover the GPT-2-shaped models people train themselves (nanoGPT, minGPT): the MLP
width `n_inner` (transformers' name; default 4d), `bias` (nanoGPT's `bias=False` drops every Linear
and LayerNorm bias) and `tied` (False: a separate output matrix `lm_head.weight` [V, d]).
`custom_config` builds one from user input with range checks and one-line errors.
"""

from dataclasses import dataclass, field

# transformers' activation_function names a GPT-2-shaped model uses: the tanh GELU (GPT-2's, under both
# of its names) and the exact GELU (nanoGPT's nn.GELU)
ACTIVATIONS = ("gelu_new", "gelu_pytorch_tanh", "gelu")


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
    activation: str = "gelu_new"  # the tanh approximation of GELU; "gelu": the exact erf form (nanoGPT)
    n_inner: int | None = None  # MLP width; None means 4 · n_embd, as in every released GPT-2
    bias: bool = True  # False: no Linear or LayerNorm biases (nanoGPT's bias=False)
    tied: bool = True  # False: lm_head.weight [V, d] is a matrix of its own
    hf_repo: str | None = field(default=None, compare=False)  # where `gpt2viz download` fetches it

    def __post_init__(self):
        for name in ("n_layer", "n_head", "n_embd", "vocab_size", "n_positions", "d_mlp"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.n_embd % self.n_head:
            raise ValueError(f"n_embd {self.n_embd} is not divisible by n_head {self.n_head}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation {self.activation!r:.40} is not one of {', '.join(ACTIVATIONS)}")

    @property
    def d_head(self) -> int:
        return self.n_embd // self.n_head

    @property
    def d_mlp(self) -> int:
        return 4 * self.n_embd if self.n_inner is None else self.n_inner

    @property
    def standard_mlp(self) -> bool:
        """Whether the MLP is 4d wide (then shapes read `4d`, else `d_mlp`)."""
        return self.d_mlp == 4 * self.n_embd

    def variant(self) -> list[str]:
        """How this config departs from GPT-2's shape: ["d_mlp=1,000", "no biases", "untied head"]."""
        return ([] if self.standard_mlp else [f"d_mlp={self.d_mlp:,}"]) + \
            ([] if self.bias else ["no biases"]) + ([] if self.tied else ["untied head"]) + \
            (["exact GELU"] if self.exact_gelu else [])

    @property
    def exact_gelu(self) -> bool:
        """The erf GELU (nanoGPT's) instead of GPT-2's tanh approximation."""
        return self.activation == "gelu"

    def sizes(self) -> dict:
        """The numbers that determine the parameter count, as a custom config takes them."""
        return {"vocab_size": self.vocab_size, "n_positions": self.n_positions, "n_embd": self.n_embd,
                "n_layer": self.n_layer, "n_head": self.n_head, "n_inner": self.d_mlp, "bias": self.bias,
                "tied": self.tied}


PRESETS = {
    "gpt2": GPT2Config("gpt2", n_layer=12, n_head=12, n_embd=768, hf_repo="openai-community/gpt2"),
    "gpt2-medium": GPT2Config("gpt2-medium", n_layer=24, n_head=16, n_embd=1024,
                              hf_repo="openai-community/gpt2-medium"),
    "gpt2-large": GPT2Config("gpt2-large", n_layer=36, n_head=20, n_embd=1280, hf_repo="openai-community/gpt2-large"),
    "gpt2-xl": GPT2Config("gpt2-xl", n_layer=48, n_head=25, n_embd=1600, hf_repo="openai-community/gpt2-xl"),
    "distilgpt2": GPT2Config("distilgpt2", n_layer=6, n_head=12, n_embd=768, hf_repo="distilbert/distilgpt2"),
    "tiny": GPT2Config("tiny", n_layer=2, n_head=4, n_embd=64),
}


# What a custom config may ask for: wide enough for any published GPT-shaped model, small enough
# that a link cannot ask the page for absurd arithmetic.
LIMITS = {"vocab_size": 10_000_000, "n_positions": 10_000_000, "n_embd": 1_000_000, "n_layer": 10_000,
          "n_head": 100_000, "n_inner": 10_000_000}


def custom_config(vocab_size: int, n_positions: int, n_embd: int, n_layer: int, n_head: int,
                  n_inner: int | None = None, bias: bool = True, tied: bool = True,
                  name: str = "custom") -> GPT2Config:
    """Any GPT-2-shaped config, checked: a ValueError with one line says what is wrong."""
    given = {"vocab_size": vocab_size, "n_positions": n_positions, "n_embd": n_embd, "n_layer": n_layer,
             "n_head": n_head, "n_inner": n_inner}
    for key, value in given.items():
        if value is None:
            continue
        if value < 1:
            raise ValueError(f"{key} must be positive, got {value}")
        if value > LIMITS[key]:
            raise ValueError(f"{key} {value:,} is out of range (at most {LIMITS[key]:,})")
    if n_embd % n_head:
        raise ValueError(f"n_embd {n_embd} is not divisible by n_head {n_head}: each head gets d / nh dimensions")
    n_inner = None if n_inner == 4 * n_embd else n_inner  # one config, however the default is spelled
    return GPT2Config(name, n_layer=n_layer, n_head=n_head, n_embd=n_embd, vocab_size=vocab_size,
                      n_positions=n_positions, n_inner=n_inner, bias=bias, tied=tied)


def get_config(name: str) -> GPT2Config:
    """The preset called `name`; a ValueError that lists the choices otherwise."""
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown model {name!r}; choose one of {', '.join(PRESETS)}") from None
