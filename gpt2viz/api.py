"""The Python surface for notebooks: the app's numbers in a few calls.

    import gpt2viz
    model = gpt2viz.load("demo")                     # "gpt2" (random, seed 0), "random:gpt2-medium:seed=3",
                                                     # "demo", a model.safetensors, or a folder with its
                                                     # config.json and tokenizer.json (convert nanogpt)
    run = model.run(" people play one good game people play", mode="full")
    run["blocks.1.attn.pattern"]                     # a torch tensor, named as in the app
    run.shape("blocks.1.attn.z")                     # ('[B, nh, T, dh]', (1, 4, 7, 32))
    gpt2viz.attention_figure(run, block=1, head=1)   # a plotly figure (inline in Jupyter)
    gpt2viz.parameters("gpt2").rows()                    # the accounting, one dict per component
    model.attribute(" people play one good game after work people play one good game", " after")
                                                     # each head's, MLP's and bias's share of the logit

Names and layouts are the app's (DESIGN.md): per-head tensors [B, nh, T, ·], the rest [B, T, ·].
`run.tokens` spells each token as its vocabulary does (" after", a character model's "\n"); the
pages' readable forms ("␣after", "↵") are `run.trace.tokens`.
"""

from dataclasses import dataclass
from pathlib import Path

import torch

from . import plots
from .analysis.attribution import attribute_text, one_token
from .anatomy.components import component_tree
from .anatomy.hooks import from_hook, to_hook
from .model import tokenizer
from .model.demo_model import DEMO_PATH
from .model.folder import CONFIG_FILE, MODEL_FILE, load_weights, read_config
from .model.gpt2 import GPT2, causal_mask
from .model.modes import run as run_model
from .model.tokenizer import GPT2_VOCABULARY, Vocabulary, readable_tokens, vocabulary_of
from .model.trace import Trace
from .model.weights import WeightsError, checkpoint_config, load_safetensors, random_model
from .spec.config import PRESETS, GPT2Config, get_config
from .spec.schema import Mode, concrete, recorded, symbolic, text_dims


class Tokens(tuple):
    """A run's token texts: a tuple that also equals a list of the same strings, so that
    `run.tokens == list(text)` says what it reads as for a character model."""

    def __eq__(self, other):
        return tuple.__eq__(self, tuple(other) if isinstance(other, list) else other)

    def __ne__(self, other):
        return not self == other

    __hash__ = tuple.__hash__


@dataclass(frozen=True)
class Run:
    """One run of a text: every recorded tensor by its app name, with its symbolic and concrete shape."""
    trace: Trace
    config: GPT2Config
    vocabulary: Vocabulary = GPT2_VOCABULARY

    def __getitem__(self, name: str) -> torch.Tensor:
        """A recorded tensor by the app's name, or by its TransformerLens hook name (in that layout)."""
        ours = from_hook(name)
        if ours is None:
            return self.trace[name]
        return to_hook(ours, self.trace[ours], self.config.layer_norm_epsilon, self.trace.P)[1]

    def __contains__(self, name: str) -> bool:
        return (from_hook(name) or name) in self.trace

    @property
    def names(self) -> list[str]:
        return list(self.trace.names)

    @property
    def tokens(self) -> tuple[str, ...]:
        """Each token's text as its vocabulary spells it: a character model's are the text's characters."""
        return Tokens(self.vocabulary.spell(int(i)) for i in self.trace.token_ids)

    def shape(self, name: str) -> tuple[str, tuple[int, ...]]:
        """(symbolic shape, concrete shape) of a recorded name."""
        values = text_dims(self.config, len(self.trace.token_ids), self.trace.mode)
        for recorded_name, axes, _ in recorded(self.config, self.trace.mode):
            if recorded_name == name:
                return symbolic(axes), tuple(concrete(axes, values))
        raise KeyError(f"{name!r} is not recorded in {self.trace.mode.value} mode")


@dataclass(frozen=True)
class Model:
    """A GPT-2 with its weights, as the app's sidebar would choose them."""
    model: GPT2
    label: str

    @property
    def config(self) -> GPT2Config:
        return self.model.config

    @property
    def vocabulary(self) -> Vocabulary:
        """GPT-2's BPE, or the folder's own (a character vocabulary, a byte-level BPE)."""
        return vocabulary_of(self.model)

    def run(self, text: str | list[int], mode: str = "full", seed: int = 0, dropout: bool = True) -> Run:
        """Run a text (or token ids) in a mode: full, training, prefill or decode."""
        ids = self.vocabulary.encode(text) if isinstance(text, str) else list(text)
        trace = run_model(self.model, ids, Mode.parse(mode), seed=seed, dropout=dropout)
        return Run(trace, self.config, self.vocabulary)

    def attribute(self, text: str | list[int], answer: str | None = None, versus: str | None = None,
                  position: int | None = None) -> dict:
        """Direct logit attribution at `position` (default: the last) of `answer` (one token such as
        " after"; default: the top prediction there), or of logit(answer) − logit(versus): the dict
        `python -m gpt2viz attribute --json` prints (target, rows, residual, answer, versus, position, model)."""
        before = tokenizer.current()
        tokenizer.use(self.vocabulary)  # the answers and the report in this model's own vocabulary
        try:
            ids = self.vocabulary.encode(text) if isinstance(text, str) else list(text)
            a = None if answer is None else one_token(answer)
            b = None if versus is None else one_token(versus, "versus")
            return attribute_text(self.model, ids, a, b, position).report()
        finally:
            tokenizer.use(before)


def load(spec: str = "gpt2") -> Model:
    """"gpt2" and the other presets: random weights, seed 0; "random:NAME:seed=N"; "demo": the demo
    model trained here; anything else: a model.safetensors path (Hugging Face layout) or a folder
    (model.safetensors, config.json and its tokenizer.json, as `convert nanogpt` writes)."""
    if spec == "demo":
        return Model(load_safetensors(DEMO_PATH).model, "demo model trained here")
    name, _, seed = spec.removeprefix("random:").partition(":seed=")
    if name in PRESETS and (spec == name or spec.startswith("random:")):
        n = int(seed) if seed else 0
        return Model(random_model(get_config(name), n), f"random {name} weights (seed {n})")
    loaded = load_weights(spec)
    return Model(loaded.model, f"{loaded.model.config.name} from {spec}")


def attention_figure(run: Run, block: int, head: int):
    """The Attention page's chart of one head: scores, pattern and ‖z‖ per query, as a plotly figure."""
    t = run.trace
    keys = readable_tokens(t.token_ids[: t.L], run.vocabulary)
    scores, pattern = t.get("attn.scores", block, head=head)[0], t.get("attn.pattern", block, head=head)[0]  # [T, L]
    z = t.get("attn.z", block)[0, head]  # [T, dh]
    return plots.attention_maps(scores, pattern, z.norm(dim=-1), keys[t.P: t.P + t.T], keys,
                                f"Attention · block {block} head {head}", query_offset=t.P, mask=causal_mask(t.T, t.L))


@dataclass(frozen=True)
class Params:
    config: GPT2Config

    @property
    def total(self) -> int:
        return component_tree(self.config).root.total

    def rows(self) -> list[dict]:
        """One row per component: id, title, parameters in one instance, instances, total."""
        return [{"component": c.id, "title": c.title, "per_instance": c.per_instance, "instances": c.instances,
                 "total": c.total} for c in component_tree(self.config)]


def parameters(model: str | GPT2Config = "gpt2") -> Params:
    """The parameter accounting of a size, a config, or any weights `load` opens ("demo", a model.safetensors,
    a folder), read from the file's header and the folder's config.json alone (not `params`:
    gpt2viz.anatomy.params is the accounting module)."""
    return Params(config_of(model) if isinstance(model, str) else model)


def config_of(spec: str) -> GPT2Config:
    """The config of what `load(spec)` opens, without reading a tensor."""
    if spec == "demo":
        return checkpoint_config(DEMO_PATH)
    name = spec.removeprefix("random:").partition(":seed=")[0]
    if name in PRESETS and (spec == name or spec.startswith("random:")):
        return get_config(name)
    path = Path(spec).expanduser()
    if path.is_dir():
        if not (path / MODEL_FILE).is_file():
            raise WeightsError(f"no {MODEL_FILE} in the folder {path.name}")
        config = read_config(path / CONFIG_FILE, path.name) if (path / CONFIG_FILE).is_file() else None
        return checkpoint_config(path / MODEL_FILE, config=config)
    if path.is_file():
        return checkpoint_config(path)
    return get_config(spec)  # neither a preset nor a file: its error names the presets
