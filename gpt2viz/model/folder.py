"""A weights folder: `model.safetensors`, the `config.json` beside it (transformers' GPT2Config layout,
plus nanoGPT's `"bias": false`) and, where it has one, the `tokenizer.json` of its own vocabulary.

`convert nanogpt` writes such a folder; a Hugging Face snapshot of a GPT-2 is one too. Everything
here reads JSON and safetensors only, so a server may open a folder its operator lists. The model
carries its vocabulary (`model.vocab`, tokenizer.vocabulary_of); without a tokenizer.json it is
GPT-2's. A model with fewer token rows than its vocabulary has ids is refused: such a text would
index past the embedding.
"""

from dataclasses import replace
from pathlib import Path

from ..spec.config import ACTIVATIONS, GPT2Config, custom_config
from .tokenizer import GPT2_VOCABULARY, Vocabulary
from .vocab import read_json_object, read_tokenizer
from .weights import Loaded, WeightsError, load_safetensors

MODEL_FILE, CONFIG_FILE, TOKENIZER_FILE = "model.safetensors", "config.json", "tokenizer.json"
MAX_CONFIG_BYTES = 2**20


def _int(cfg: dict, *keys: str, default=None):
    for key in keys:
        if key in cfg:
            value = cfg[key]
            if not isinstance(value, int) or isinstance(value, bool):
                raise WeightsError(f"{CONFIG_FILE}: {key} is {value!r:.40}, not a whole number")
            return value
    if default is None:
        raise WeightsError(f"{CONFIG_FILE}: no {keys[0]}")
    return default


def read_config(path, name: str) -> GPT2Config:
    """A config from a folder's config.json (GPT2Config's keys: n_layer, n_head, n_embd, n_positions,
    vocab_size, n_inner, activation_function, tie_word_embeddings, layer_norm_epsilon; nanoGPT's bias)."""
    cfg = read_json_object(path, MAX_CONFIG_BYTES, WeightsError)
    if cfg.get("model_type", "gpt2") != "gpt2":
        raise WeightsError(f"{CONFIG_FILE}: model_type {cfg['model_type']!r:.40}; gpt2viz opens GPT-2-shaped models")
    activation = cfg.get("activation_function", "gelu_new")
    if activation not in ACTIVATIONS:
        raise WeightsError(f"{CONFIG_FILE}: activation_function {activation!r:.40} is not one of "
                           f"{', '.join(ACTIVATIONS)}")
    flags = {key: cfg.get(key, True) for key in ("bias", "tie_word_embeddings")}
    for key, value in flags.items():
        if not isinstance(value, bool):
            raise WeightsError(f"{CONFIG_FILE}: {key} is {value!r:.40}, not true or false")
    eps = cfg.get("layer_norm_epsilon", 1e-5)
    if not isinstance(eps, (int, float)) or isinstance(eps, bool) or not 0 < eps < 1:
        raise WeightsError(f"{CONFIG_FILE}: layer_norm_epsilon {eps!r:.40} is not a small positive number")
    try:
        config = custom_config(vocab_size=_int(cfg, "vocab_size"), n_positions=_int(cfg, "n_positions", "n_ctx"),
                               n_embd=_int(cfg, "n_embd"), n_layer=_int(cfg, "n_layer"), n_head=_int(cfg, "n_head"),
                               n_inner=cfg.get("n_inner") and _int(cfg, "n_inner"), bias=flags["bias"],
                               tied=flags["tie_word_embeddings"], name=name)
    except WeightsError:
        raise
    except ValueError as e:
        raise WeightsError(f"{CONFIG_FILE}: {e}") from None
    # the training run's own p: 0 (nanoGPT's default for fine-tuning) runs TRAINING without dropout
    dropout = cfg.get("resid_pdrop", config.dropout)
    dropout = float(dropout) if isinstance(dropout, (int, float)) and 0 <= dropout < 1 else config.dropout
    return replace(config, activation=activation, layer_norm_epsilon=float(eps), dropout=dropout)


def check_vocabulary(model, vocabulary: Vocabulary, where: str) -> None:
    """Refuse a model whose token rows do not cover every id its vocabulary can give."""
    V = model.config.vocab_size
    if vocabulary.size > V:
        raise WeightsError(f"{where}: the model has {V:,} token rows but its vocabulary ({vocabulary.name}) has "
                           f"ids up to {vocabulary.size - 1:,}; a text could ask for a row it lacks")


def load_folder(path) -> Loaded:
    """A checked model from a folder; its vocabulary rides on `model.vocab`."""
    path = Path(path)
    if not (path / MODEL_FILE).is_file():
        raise WeightsError(f"no {MODEL_FILE} in the folder {path.name}")
    config = read_config(path / CONFIG_FILE, path.name) if (path / CONFIG_FILE).is_file() else None
    try:
        loaded = load_safetensors(path / MODEL_FILE, config=config)
    except WeightsError as e:
        if config is None:
            raise
        raise WeightsError(f"{CONFIG_FILE} and {MODEL_FILE} disagree: {e}") from None
    vocabulary = read_tokenizer(path / TOKENIZER_FILE) if (path / TOKENIZER_FILE).is_file() else GPT2_VOCABULARY
    check_vocabulary(loaded.model, vocabulary, path.name)
    loaded.model.vocab = vocabulary
    source = f"{CONFIG_FILE} in the folder" if config else loaded.n_head_source
    return replace(loaded, path=str(path), n_head_source=source)


def load_weights(path, n_head: int | None = None) -> Loaded:
    """A folder (model.safetensors, config.json, tokenizer.json) or a model.safetensors file."""
    path = Path(path).expanduser()
    if path.is_dir():
        return load_folder(path)
    loaded = load_safetensors(path, n_head=n_head)
    check_vocabulary(loaded.model, GPT2_VOCABULARY, path.name)
    return loaded
