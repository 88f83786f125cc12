"""Process-wide caches: models once per weights source, traces in a bounded LRU by bytes.

Everything cached is treated as immutable and shared between sessions; keys carry everything
that determines the value (weights identity, token ids, mode, seed).
"""

import contextlib
import functools
import logging
import os
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from fnmatch import fnmatch
from pathlib import Path

import streamlit as st
import torch

from ..model.demo_model import DEMO_PATH
from ..model.derive import to_record
from ..model.drawn_weights import drawn_model
from ..model.folder import CONFIG_FILE, MODEL_FILE, TOKENIZER_FILE, load_folder, load_weights, read_config
from ..model.generation import Sampler
from ..model.gpt2 import GPT2, LOSS_ROWS
from ..model.memory import reuse_freed_memory_within_a_run
from ..model.modes import Generation, Mode, generate, greedy, last_keys, run
from ..model.tokenizer import vocabulary_of
from ..model.trace import Trace
from ..model.weights import checkpoint_config, find_hf_checkpoints, meta_model, params_bytes
from ..server.model_cache import ModelCache
from ..server.shared_runs import SharedRuns
from ..server.trace_cache import DEFAULT_BUDGET, Progress, RunTooLarge, TraceCache, mib, view_asked
from ..server.trace_cache import log as run_log
from ..server.turnstile import Turnstile
from ..spec import costs
from ..spec.config import PRESETS, get_config
from ..spec.schema import concrete, owns_storage, recorded, text_dims
from ..spec.serving import is_local, random_models
from ..teaching import page_text
from . import first_paint
from .classroom import TRAINING_NEEDS, TrainingNorms, TrainingSummary, training_summary
from .visitor import server_address

BUDGET_ENV = "GPT2VIZ_TRACE_BUDGET_MB"
LOG_RUNS_ENV = "GPT2VIZ_LOG_RUNS"
MAX_RUNS_ENV = "GPT2VIZ_MAX_RUNS"
DRAWING_ENV = "GPT2VIZ_DRAWING"
CORES = os.cpu_count() or 1
MAX_RUNS = max(2, CORES)  # runs computing at once: side by side, a run takes one core (run_threads)
# a run of a text longer than this is heavy whatever its bytes (TraceCache: heavy runs hold all but
# one slot): the heavy pages' capped runs (256-512 tokens) have small estimates, and two tabs on
# them took both slots of a 2-core server, so a third student's short view waited 15-22 s
LIGHT_TOKENS = 128


def heavy_for(n_tokens: int) -> bool | None:
    """True for a run of a long text; None: the trace cache decides by the run's estimate."""
    return True if n_tokens > LIGHT_TOKENS else None
THREADS_ENV = "GPT2VIZ_THREADS"


@dataclass(frozen=True, eq=False)
class LoadedModel:
    """A model with its weights as the sidebar chose them (random, a checkpoint, an upload)."""
    model: GPT2
    key: tuple  # identity of the weights, part of every trace key
    label: str  # what the sidebar says is in use
    random: bool
    notes: tuple[str, ...] = ()
    model_name: str = ""  # the preset, for random weights
    seed: int = 0  # of random weights; also the dropout seed in training
    path: str | None = None  # of file weights
    demo: bool = False  # the small model trained here (gpt2viz/model/demo_model.py)
    built: bool = True  # False: a size this server counts but does not build (no values: a meta model)

    @property
    def nbytes(self) -> int:
        """What its parameters hold (float32); what the model cache counts it as."""
        return 4 * sum(p.numel() for p in self.model.parameters())


def model_cache() -> ModelCache:
    """The models of the trace cache's budget (server/model_cache.py): one per trace cache, so a
    cleared trace cache starts with no model either."""
    traces = trace_cache()
    with _models_lock:
        if not isinstance(getattr(traces, "models", None), ModelCache):
            allowed = random_models(server_address(), PRESETS)  # what a view without a choice shows
            traces.models = ModelCache(traces, ("random", allowed[0], 0) if allowed else None)
        return traces.models


_models_lock = threading.Lock()


def random_weights(model: str, seed: int, models: ModelCache | None = None) -> LoadedModel:
    """`models`: the model cache, for callers outside a script run (a deferred download)."""
    cfg = get_config(model)

    def build() -> LoadedModel:
        with st.spinner("Initialising random GPT-2 weights…"):
            drawn = first_paint.take(model, seed)  # a new server's first run drew them in a thread
            drawn = drawn_model(cfg, seed) if drawn is None else drawn
            return LoadedModel(drawn, ("random", model, seed),
                               f"random {model} weights (seed {seed}), not trained", True, model_name=model, seed=seed)
    models = model_cache() if models is None else models
    return models.get(("random", model, seed), build, params_bytes(cfg), f"random {model} weights")


def counted_weights(model: str, seed: int, allowed: tuple[str, ...]) -> LoadedModel:
    """A size this server does not build for visitors: its shapes without values (nothing allocated),
    for the pages that only count (Parameter accounting, Modes, Exercises)."""
    return LoadedModel(meta_model(get_config(model)), ("counted", model), f"random {model}: counted here, not "
                       f"built (this server builds random {' and '.join(allowed)})", True, model_name=model, seed=seed,
                       built=False)


def file_weights(path: str, mtime_ns: int, size: int, models: ModelCache | None = None) -> LoadedModel:
    models = model_cache() if models is None else models
    cfg = checkpoint_config(path)
    check_fits(cfg, models.traces.budget)

    def build() -> LoadedModel:
        with st.spinner("Loading the checkpoint…"):
            loaded = load_weights(path)  # its token rows checked against GPT-2's vocabulary
        notes = tuple(loaded.notes) + ((f"head count {loaded.model.config.n_head}: {loaded.n_head_source}",)
                                       if loaded.n_head_source.startswith("assumed") else ())
        return LoadedModel(loaded.model, ("file", path, mtime_ns, size),
                           f"{loaded.model.config.name} from {Path(path).name}", False, notes, path=path)
    key = ("file", path, mtime_ns, size)
    return models.get(key, build, params_bytes(cfg), f"the weights of {Path(path).name}")


def weights_again(key: tuple, models: ModelCache) -> LoadedModel:
    """The weights of `key` (a LoadedModel's), from the model cache or built again: for a deferred
    download, which holds its view's weights weakly so that a session cannot keep an evicted model
    alive through it. An upload's model lives in the upload store, as long as its session."""
    if key[0] == "random":
        return random_weights(key[1], key[2], models)
    if key[0] == "file":
        return file_weights(*key[1:], models=models)
    if key[0] == "folder":
        return _folder_weights(key[1], key[2], models)
    raise ValueError("these weights were unloaded: reload the page and download again")


def _folder_weights(path: str, stamp: tuple, models: ModelCache | None = None) -> LoadedModel:
    models = model_cache() if models is None else models
    folder = Path(path)
    config = read_config(folder / CONFIG_FILE, folder.name) if (folder / CONFIG_FILE).is_file() else None
    cfg = checkpoint_config(folder / MODEL_FILE, config=config)
    check_fits(cfg, models.traces.budget)

    def build() -> LoadedModel:
        with st.spinner("Loading the model folder…"):
            loaded = load_folder(path)
        cfg = loaded.model.config
        shape = ", ".join(cfg.variant())
        notes = (f"vocabulary: {vocabulary_of(loaded.model).name}",) + ((f"this model: {shape}",) if shape else ())
        return LoadedModel(loaded.model, ("folder", path, stamp), f"{cfg.name} from the folder {folder.name}",
                           False, notes, path=path)
    return models.get(("folder", path, stamp), build, params_bytes(cfg), f"the weights of the folder {folder.name}")


def folder_weights(path: str) -> LoadedModel:
    """A weights folder (model.safetensors, config.json, tokenizer.json), reloaded when a file changes."""
    p = Path(path).expanduser()
    if not p.is_dir():
        raise ValueError(f"no folder at {path}")
    stamp = tuple((f.name, f.stat().st_mtime_ns, f.stat().st_size)
                  for f in (p / MODEL_FILE, p / CONFIG_FILE, p / TOKENIZER_FILE) if f.is_file())
    return _folder_weights(str(p.resolve()), stamp)


def path_weights(path: str) -> LoadedModel:
    p = Path(path).expanduser()
    if p.is_dir():
        return folder_weights(path)
    if not p.is_file():
        raise ValueError(f"no weights file at {path}")
    stat = p.stat()
    return file_weights(str(p.resolve()), stat.st_mtime_ns, stat.st_size)


def demo_weights() -> LoadedModel:
    """The demo model shipped in assets/, trained by `python -m gpt2viz train-demo`."""
    weights = path_weights(str(DEMO_PATH))
    return replace(weights, label="demo model trained here: it copies repeats, it knows no English", demo=True)


@st.cache_resource(ttl=60)
def cached_checkpoints():
    return find_hf_checkpoints()


HEADROOM_SHARE = 4  # of the budget, kept for what is not a trace: pages being built, sessions' state


def max_runs(env=os.environ) -> int:
    """GPT2VIZ_MAX_RUNS (default: the cores, at least 2): how many runs compute at once; the others
    wait their turn."""
    n = env.get(MAX_RUNS_ENV, "")
    return int(n) if n.isdigit() and int(n) > 0 else MAX_RUNS


def drawing_width(env=os.environ) -> int:
    """GPT2VIZ_DRAWING (default: the cores, at least 2): how many sessions' pages are drawn at once in
    this process; the others wait their turn, in the order they came (server/turnstile.py). 0: no limit."""
    n = env.get(DRAWING_ENV, "")
    return int(n) if n.isdigit() else MAX_RUNS


def torch_threads(env=os.environ) -> int | None:
    """GPT2VIZ_THREADS: torch's threads for every tensor operation of the server, fixed (default:
    unset, `run_threads` decides per run)."""
    n = env.get(THREADS_ENV, "")
    return int(n) if n.isdigit() and int(n) > 0 else None


_scripts = [0]  # script runs in progress in this process (every session's page being drawn)
_scripts_lock = threading.Lock()
DRAWING = Turnstile(drawing_width())  # the pages drawn at once; a run steps aside (TraceCache.aside)


@contextlib.contextmanager
def script_running():
    """Around a session's script run (app.py): `run_threads` counts the pages being drawn, the page is
    drawn when its turn comes (DRAWING), and every run it asks for waits in line from now (view_asked)."""
    with _scripts_lock:
        _scripts[0] += 1
    try:
        with view_asked(), DRAWING.turn():
            yield
    finally:
        with _scripts_lock:
            _scripts[0] -= 1


def run_threads(running: int, env=os.environ, scripts: int | None = None) -> int:
    """torch's threads for a run, with `running` runs computing (this one included): GPT2VIZ_THREADS
    when set; else every core for a run alone on a quiet server (one user on a laptop: today's
    speed), and one core when other runs or other sessions' pages compute meanwhile (a class: runs
    and pages side by side, none asking for every core at once; measured in docs/deploy.md)."""
    fixed = torch_threads(env)
    if fixed:
        return fixed
    others = (_scripts[0] if scripts is None else scripts) > 1
    return CORES if running == 1 and not others else 1


def budget_bytes(env=os.environ, local: bool = False, memory: int | None = None) -> int:
    """GPT2VIZ_TRACE_BUDGET_MB: what the server may use beyond its runtime and weights. Unset: 2 GiB on a
    server for a class; on a local server (one user), half the machine's memory, at least 2 GiB, so
    that a laptop still trains on 1,024 tokens of gpt2 (a 4.6 GiB run, which a class server's budget
    refuses) and a workstation on gpt2-xl. `memory`: the machine's, in bytes (default: read from the system)."""
    mb = env.get(BUDGET_ENV)
    if mb and mb.isdigit() and int(mb) > 0:
        return int(mb) * 2**20
    if not local:
        return DEFAULT_BUDGET
    memory = machine_memory() if memory is None else memory
    return max(DEFAULT_BUDGET, memory // 2)


def machine_memory() -> int:
    """The machine's physical memory in bytes (0 where the system does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


@st.cache_resource
def trace_cache() -> TraceCache:
    """The traces and the runs computing them get all of the budget but a headroom of 1/4: under the
    load test, figures being built, Streamlit's per-session state and allocator slack took up to
    ~150 MiB more at the kernel's high-water mark. At most `max_runs()` runs compute at once: in a
    class, more runs in flight only reserved more of the budget, evicting the traces the students
    came back for, and shared the cores between them."""
    budget = budget_bytes(local=is_local(st.get_option("server.address")))
    reuse_freed_memory_within_a_run()
    if torch_threads():
        torch.set_num_threads(torch_threads())
    if os.environ.get(LOG_RUNS_ENV) == "1":  # one line per run on stderr: what a class costs
        run_log.addHandler(logging.StreamHandler())
        run_log.setLevel(logging.INFO)
    cache = TraceCache(budget - budget // HEADROOM_SHARE, max_runs=max_runs(), threads=run_threads,
                       aside=DRAWING.aside, slack=budget // HEADROOM_SHARE // 2)
    cache.shared_runs = SharedRuns.from_env()  # a class server's folder of runs shared by its processes
    if cache.shared_runs is not None:
        cache.mapped_budget = cache.shared_runs.keep
    return cache


FULL_TRACE_SHARE = 4  # record everything while a trace takes at most 1/4 of the cache budget


def _tensor_bytes(weights: LoadedModel, n_tokens: int, mode: Mode) -> dict[str, int]:
    """Bytes of every name of the run by itself (float32 values, bool masks), derived ones included."""
    return _tensor_bytes_of(weights.model.config, n_tokens, mode)[0]


@functools.lru_cache(maxsize=256)  # asked on every rerun of a page (2-3 ms for gpt2, 4x for gpt2-xl)
def _tensor_bytes_of(cfg, n_tokens: int, mode: Mode) -> tuple[dict[str, int], frozenset[str]]:
    """(bytes of every name by itself, the names that hold storage of their own in a full trace)."""
    values = text_dims(cfg, n_tokens, mode)
    sizes = {name: costs.trace_bytes([(concrete(axes, values), dtype)]).value
             for name, axes, dtype in recorded(cfg, mode)}
    return sizes, frozenset(n for n in sizes if owns_storage(n, cfg, mode, values["P"]))


def check_fits(cfg, budget: int) -> None:
    """Refuse a checkpoint whose context or width makes a page's run at its full context exceed the
    budget (a context of 32,768 asked one page for a 6.6 GB tensor): the lightest run there holds
    its largest tensor three times (stored, and twice while computing)."""
    sizes, _ = _tensor_bytes_of(cfg, cfg.n_positions, Mode.FULL)
    need = 3 * max(sizes.values())
    if need > budget:
        raise CheckpointTooLarge(page_text.checkpoint_too_large(cfg.n_positions, cfg.n_embd, mib(need), mib(budget)))


class CheckpointTooLarge(ValueError):
    """A checkpoint whose pages would not fit the budget; the message says why in one line."""


def full_trace_bytes(weights: LoadedModel, n_tokens: int, mode: Mode) -> int:
    """What a trace of everything in this run holds: each storage once, derived names not stored."""
    sizes, owners = _tensor_bytes_of(weights.model.config, n_tokens, mode)
    return sum(sizes[n] for n in owners)


def run_bytes(weights: LoadedModel, n_tokens: int, mode: Mode, names: tuple[str, ...] | None,
              backward: bool | None = None, dropout: bool = True) -> int:
    """An estimate of what a run holds at its peak beyond the weights: the tensors it stores (all, or what
    `names` needs, each at its own size), and while it computes, twice the largest tensor it computes (the
    logits; with a backward pass that records the embedding's gradient, that one: a gradient is computed only
    when it is recorded). In FULL, PREFILL, and TRAINING without a backward pass, where that is no longer the
    logits (they derive them, or unembed one position), three quarters of the stored bytes more and the matrix
    library's copy of a weight matrix: the forward pass's temporaries and the gaps the allocator leaves
    between the stored tensors (a FULL run measured 17-20, 58 and 494-581 MiB at its peak at 34, 128 and 1,024
    tokens, for 13, 50 and 405 MiB stored: half the stored bytes left 10 % for another machine's matrix
    library at 1,024 tokens, three quarters 28 %). DECODE also holds one block of the prefill that builds its
    cache, and that cache beside the step's (cache_prefill_bytes). A training run with a backward pass (one
    that records a gradient; `backward` True for a caller that runs its own) also holds every activation once
    more (the written-out scores and pattern included), which autograd keeps for it, the loss's log-softmax
    and the logits' gradient (two more of the logits' size), and the matrix library's copies of two of the
    largest weight matrix while it multiplies by them (measured: 10-12 MiB above the rest at 16 tokens). A
    training run that records no gradient runs its forward pass without autograd (modes.run): it holds what a
    full run does (measured: 25, 146 and 1,649 MiB at its peak at 34, 256 and 1,024 tokens, estimated 46, 372
    and 2,589 with its dropout). With dropout (`dropout`, and a config that has it), either kind holds each
    block's scores and pattern written out, or its dropped pattern, which autograd keeps (counted for every
    block: freed blocks are reused, not given back, within a run), and a block's dropout draw and dropped
    pattern. Counting autograd's activations for a run without a backward pass made its estimate 3-60 times
    too large, and the embedding's gradient for the Training page's run 57 % too large at 128 tokens: in a
    class they evicted others' traces. Leaving out the dropped patterns of a backward pass made the Training
    page's estimate 13 % too small at 1,024 tokens, and leaving out the loss's and the matrix library's, a
    backward pass recording one gradient 28 % too small at 16 tokens (tests/test_bounds.py measures these)."""
    cfg = weights.model.config
    sizes, owners = _tensor_bytes_of(cfg, n_tokens, mode)
    stored = None if names is None else to_record(cfg, mode, names)
    kept = full_trace_bytes(weights, n_tokens, mode) if stored is None else sum(sizes[n] for n in stored)
    if backward is None:
        backward = mode is Mode.TRAINING and (stored is None or any(n.startswith("grad.") for n in stored))
    largest = max(sizes[n] for n in owners if not n.startswith("grad.") or backward and
                  (stored is None or n in stored))  # a gradient is computed only when it is recorded
    working = 2 * max(largest, sizes["logits"] if backward else 0)  # a backward pass's loss computes logits
    if mode in (Mode.FULL, Mode.PREFILL) or mode is Mode.TRAINING and not backward:  # no logits computed: the
        working += kept * 3 // 4 + 4 * cfg.n_embd * cfg.d_mlp  # largest no longer covers the forward's temporaries
    if mode is Mode.DECODE:
        working += cache_prefill_bytes(cfg, n_tokens)
    if backward:
        working += sum(n for name, n in sizes.items() if not name.startswith("grad."))
        working += 2 * sizes["logits"] + 2 * 4 * cfg.n_embd * cfg.d_mlp  # float32 values
    if mode is Mode.TRAINING and dropout and cfg.dropout > 0:
        patterns = [n for name, n in sizes.items() if name.endswith((".attn.scores", ".attn.pattern"))]
        working += sum(patterns) + 2 * max(patterns)  # and a block's dropout draw and dropped copy
    return kept + working


def _prefill_block_bytes(cfg, n_tokens: int) -> int:
    """A block of the prefill that builds a cache of the tokens before the last: its tensors of a full
    trace of that length, written out (its attention's scores and pattern dominate at long texts), a
    quarter more for the allocator's gaps, and two of the matrix library's copies of a weight matrix."""
    if n_tokens < 2:
        return 0
    sizes, _ = _tensor_bytes_of(cfg, n_tokens - 1, Mode.FULL)
    block = sum(n for name, n in sizes.items() if name.startswith("blocks.0."))
    return block * 5 // 4 + 2 * 4 * cfg.n_embd * cfg.d_mlp


def _cache_bytes(cfg, n_keys: int) -> int:
    """Every block's keys and values for `n_keys` positions."""
    sizes, _ = _tensor_bytes_of(cfg, n_keys, Mode.DECODE)
    return sum(n for name, n in sizes.items() if name.endswith((".attn.k_cache", ".attn.v_cache")))


def cache_prefill_bytes(cfg, n_tokens: int) -> int:
    """What a DECODE run holds for its cache whatever it stores: the prefill computes each block of the
    tokens before the last in full, one at a time (_prefill_block_bytes), and the step then builds the
    cache a row longer while the prefill's is alive: two caches. Measured on gpt2, a trace of
    everything: 9, 19, 67 and 165 MiB above what it stores at 34, 128, 512 and 1,024 tokens; recording
    only the logits at 1,024 tokens, 229 MiB, and on gpt2-medium 582 MiB (a review found them above the
    estimate when it counted one block and no cache: 237 and 324 MiB)."""
    return _prefill_block_bytes(cfg, n_tokens) + 2 * _cache_bytes(cfg, n_tokens)


def training_summary_bytes(weights: LoadedModel, n_tokens: int, dropout: bool = True) -> int:
    """What the Training page's run holds at its peak: run_bytes of what it asks (TRAINING_NEEDS), but
    the parameters' gradients, which it hands on a block at a time and keeps as norms (modes.run's
    on_grad): two blocks' (one computed while the one before is handed on), not every block's (324 MiB
    on gpt2, whatever the text), and the matrix library's copies of the largest weight matrix in each
    of its autograd calls (measured: 117-123, 286 and 3,142 MiB at its peak at 34, 128 and 1,024
    tokens on gpt2, estimated 163, 378 and 4,751; all the gradients held, it was 376-386, 482 and 3,411)."""
    cfg = weights.model.config
    sizes, _ = _tensor_bytes_of(cfg, n_tokens, Mode.TRAINING)
    grads = sum(sizes[n] for n in to_record(cfg, Mode.TRAINING, TRAINING_NEEDS) if is_weight_grad(n))
    return run_bytes(weights, n_tokens, Mode.TRAINING, TRAINING_NEEDS, dropout=dropout) - grads \
        + 2 * grads // cfg.n_layer + 2 * 4 * cfg.n_embd * cfg.d_mlp


def unembedding_run_bytes(weights: LoadedModel, n_tokens: int) -> int:
    """What a forward pass that unembeds all `n_tokens` positions itself holds at its peak (a
    knock-out's, a sweep's row, a patching's, which call the model rather than `run`): a FULL
    run's, with its logits held once and twice more while they are computed. (A FULL trace derives
    its logits when a page reads them, so `run_bytes` of one that asks for them counts none.)"""
    sizes, _ = _tensor_bytes_of(weights.model.config, n_tokens, Mode.FULL)
    return run_bytes(weights, n_tokens, Mode.FULL, ("logits",)) + 3 * sizes["logits"]


def loss_bytes(weights: LoadedModel, n_tokens: int) -> int:
    """What the loss at every position of a text holds at its peak (gpt2.next_token_loss, LOSS_ROWS
    positions' logits at a time, then their log-softmax): two blocks of logits, and one more for each
    block, as the allocator leaves the freed ones in a fresh process (measured on gpt2: 99 MiB at 256
    tokens; 190 and 277 MiB at 1,024, two processes that had run other things before; this says 147
    and 294)."""
    rows = min(max(n_tokens - 1, 1), LOSS_ROWS)
    blocks = -(-max(n_tokens - 1, 1) // LOSS_ROWS)
    return (blocks + 2) * rows * weights.model.config.vocab_size * 4  # float32 logits


def records_everything(weights: LoadedModel, n_tokens: int, mode: Mode, cache: TraceCache | None = None) -> bool:
    budget = (trace_cache() if cache is None else cache).budget
    return full_trace_bytes(weights, n_tokens, mode) * FULL_TRACE_SHARE <= budget


def is_weight_grad(name: str) -> bool:
    """A parameter's gradient (grad.wte.weight, grad.h.0.attn.c_attn.weight, ...), not the stream's."""
    return name.startswith("grad.") and not name.startswith("grad.blocks.")


@functools.lru_cache(maxsize=256)
def _all_but_weight_grads(cfg, n_tokens: int, stream_grads: bool = True) -> tuple[tuple[str, ...], int]:
    """Globs for every tensor of a training run except the parameters' gradients (the size of the
    weights, whatever the text: 475 MiB on gpt2), and the bytes they take. Without `stream_grads`,
    no gradient at all: the forward pass alone, no backward pass run."""
    sizes, owners = _tensor_bytes_of(cfg, n_tokens, Mode.TRAINING)
    names = ("blocks.*",) + (("grad.blocks.*",) if stream_grads else ()) + \
        tuple(n for n in sizes if not n.startswith(("blocks.", "grad.")))
    kept = (lambda n: not is_weight_grad(n)) if stream_grads else (lambda n: not n.startswith("grad."))
    return names, sum(sizes[name] for name in owners if kept(name))


def every_block(needs: tuple[str, ...]) -> tuple[str, ...]:
    """The same names in every block: ("blocks.3.attn.q",) -> ("blocks.*.attn.q",)."""
    return tuple(dict.fromkeys(re.sub(r"^blocks\.\d+\.", "blocks.*.", n) for n in needs))


def stored_bytes(weights: LoadedModel, n_tokens: int, mode: Mode, names: tuple[str, ...]) -> int:
    """What a run recording `names` (globs, derived ones through their sources) keeps."""
    sizes = _tensor_bytes(weights, n_tokens, mode)
    return sum(sizes[n] for n in to_record(weights.model.config, mode.value, names))


def recorded_names(weights: LoadedModel, n_tokens: int, mode: Mode, needs: tuple[str, ...] | None,
                   cache: TraceCache) -> tuple[str, ...] | None:
    """What the run behind a page records. In training, for every page that shows none of the
    parameters' gradients (all but the Training page, which keeps only their norms), everything but
    those gradients while that fits: one trace for all those pages, a quarter of a full one (the
    gradients weigh as much as the weights); for pages that show no gradient at all (every one but
    the Training page), the forward pass alone: no backward pass, a third of a training run's work.
    Otherwise everything (None) while that fits, one trace
    for every page; else the page's `needs` in every block while that fits (a 1,024-token text on
    gpt2: another block or head is a view of the same trace, not a new run of the whole model);
    else only the page's `needs`."""
    if mode is Mode.TRAINING and needs is not None:
        sizes = _tensor_bytes(weights, n_tokens, mode)
        wants = {name for name in sizes if name.startswith("grad.") and any(fnmatch(name, g) for g in needs)}
        names, nbytes = _all_but_weight_grads(weights.model.config, n_tokens, stream_grads=bool(wants))
        if not any(map(is_weight_grad, wants)) and nbytes * FULL_TRACE_SHARE <= cache.budget:
            return names
    if needs is None or records_everything(weights, n_tokens, mode, cache):
        return None
    widened = every_block(tuple(needs))
    if widened != tuple(needs) and stored_bytes(weights, n_tokens, mode, widened) * FULL_TRACE_SHARE <= cache.budget:
        return widened
    return tuple(needs)


def get_trace(weights: LoadedModel, ids: tuple[int, ...], mode: Mode, seed: int, needs: tuple[str, ...] | None = None,
              cache: TraceCache | None = None, dropout: bool = True, progress: Progress | None = None) -> Trace:
    """The trace of this run, shared by every page while a full recording fits the budget; beyond
    that (long texts on big models), only `needs` (names or globs) is recorded, per page (see
    `recorded_names`), and such a page's trace is the first the cache evicts: in a class, the training
    page's (the gradients weigh as much as the weights) would otherwise push out several students'
    shared traces. `cache`: the trace cache, for callers outside a script run (a deferred download).
    `dropout`: False runs TRAINING with dropout off. `progress`: told the run's steps (working.py)."""
    cache = trace_cache() if cache is None else cache
    names = recorded_names(weights, len(ids), mode, needs, cache)
    estimate = run_bytes(weights, len(ids), mode, names, dropout=dropout)
    refuse_unless_fits(weights, len(ids), mode, needs, estimate, cache)
    training = (seed, dropout) if mode is Mode.TRAINING else None
    key = (weights.key, ids, mode.value, training, names)
    shared = names is None or mode is Mode.TRAINING and any(
        names == _all_but_weight_grads(weights.model.config, len(ids), streams)[0] for streams in (True, False))

    def here() -> Trace:
        return run(weights.model, list(ids), mode, names=names, seed=seed, dropout=dropout, progress=_steps(progress))

    host = getattr(cache, "shared_runs", None)  # the runs this host's processes share, if any

    def compute() -> Trace:
        return here() if host is None else host.get_or_run(key, here, weights.model)
    trace = cache.get_or_compute(key, compute, estimate=estimate, evict_first=not shared, progress=progress,
                                 heavy=heavy_for(len(ids)),
                                 found=None if host is None else lambda: host.find(key, weights.model))
    trace.bind(weights.model, weak=True)  # its logits read this view's W_U, held while the model lives
    return trace


def refuse_unless_fits(weights: LoadedModel, n_tokens: int, mode: Mode, needs: tuple[str, ...] | None, estimate: int,
                       cache: TraceCache, fixed: bool = False, sized: Callable[[int], int] | None = None) -> None:
    """A run whose estimate alone exceeds the budget is refused, in one line that says what would fit:
    the longest text in this mode, the other modes at this length, another page. `fixed`: the run
    records exactly `needs` (else what `recorded_names` chooses for them at each length). `sized`:
    this run's own estimate at n tokens in `mode`, where it is not run_bytes of what it records (the
    Training page's run: training_summary_bytes)."""
    if estimate <= cache.budget:
        return

    def fits(n: int, m: Mode) -> bool:
        if m is mode and sized is not None:
            return sized(n) <= cache.budget
        sizes, _ = _tensor_bytes_of(weights.model.config, n, m)
        wanted = None if needs is None else tuple(g for g in needs if any(fnmatch(name, g) for name in sizes))
        names = wanted if fixed and m is mode else recorded_names(weights, n, m, wanted, cache)
        return run_bytes(weights, n, m, names) <= cache.budget

    shortest = 2 if mode is Mode.TRAINING else 1
    lo = longest_that_fits(lambda n: fits(n, mode), shortest - 1, n_tokens - 1)  # shortest - 1: none fits
    others = [m.value for m in Mode if m is not mode and fits(n_tokens, m)]
    raise RunTooLarge(estimate, cache.budget,
                      page_text.run_too_large(n_tokens, mode.value, mib(estimate), mib(cache.budget),
                                              lo if lo >= shortest else None, others))


def longest_that_fits(fits: Callable[[int], bool], lo: int, hi: int) -> int:
    """The largest n in lo..hi with fits(n), by bisection: `fits` holds at lo (or lo stands for "none
    fits") and, once false as n grows, stays false (a run's memory grows with its tokens)."""
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
    return lo


def _steps(progress: Progress | None):
    return None if progress is None else progress.step


def get_training_summary(weights: LoadedModel, ids: tuple[int, ...], seed: int, dropout: bool,
                         cache: TraceCache | None = None, progress: Progress | None = None) -> TrainingSummary:
    """The Training page's numbers, from a run of the names it reads; only the numbers are kept."""
    cfg = weights.model.config
    key = ("training summary", weights.key, ids, seed, dropout)
    cache = trace_cache() if cache is None else cache
    estimate = training_summary_bytes(weights, len(ids), dropout)
    refuse_unless_fits(weights, len(ids), Mode.TRAINING, TRAINING_NEEDS, estimate, cache, fixed=True,
                       sized=lambda n: training_summary_bytes(weights, n, dropout))

    def compute() -> TrainingSummary:
        norms = TrainingNorms()  # each weight's gradient as its norm, a block's gradients held at a time
        trace = run(weights.model, list(ids), Mode.TRAINING, names=TRAINING_NEEDS, seed=seed, dropout=dropout,
                    progress=_steps(progress), on_grad=norms)
        return training_summary(trace, norms, cfg.n_layer, cfg.dropout, dropout)
    return cache.get_or_compute(key, compute, estimate=estimate, progress=progress, heavy=heavy_for(len(ids)))


GENERATION_NAMES = ("blocks.*.attn.pattern", "logits")


def get_generation(weights: LoadedModel, ids: tuple[int, ...], steps: int, temperature: float,
                   top_k: int | None, seed: int, progress: Progress | None = None,
                   top_p: float | None = None) -> Generation:
    """Cached in the trace cache (within its budget) by everything that determines it (greedy
    ignores top-k, top-p and seed); the weights by their identity. Each step records only what the page
    shows."""
    if temperature <= 0:
        temperature, top_k, seed, top_p = 0.0, None, 0, None
    choose = Sampler(temperature, top_k, seed, top_p) if temperature > 0 else greedy
    key = ("generation", weights.key, ids, steps, temperature, top_k, seed, top_p)
    return trace_cache().get_or_compute(
        key, lambda: generate(weights.model, list(ids), steps, choose=choose, names=GENERATION_NAMES,
                              progress=_steps(progress)), generation_bytes(weights, len(ids), steps), progress=progress)


def generation_bytes(weights: LoadedModel, n_tokens: int, steps: int) -> int:
    """What a generation holds at its peak: the cache (keys and values, as long as the longest step's
    keys) twice, since each step builds it anew a row longer while the last is alive and the allocator
    cannot fit the next in the freed one, every step's trace (each decode step stores its one row of
    the pattern, and the logits), and on top the larger of its two working phases: the prefill that
    builds the cache, and a step's own. Measured on gpt2, 20 steps after 30, 500 and 1,000 tokens: 18-19,
    105-129 and 246-272 MiB at the peak (estimated 32, 174 and 382). When each step kept its own keys,
    from which its pattern derived, the peak was 64, 700 and 1,399 MiB."""
    cfg = weights.model.config
    L = last_keys(n_tokens, steps)  # the longest step's keys
    sizes, _ = _tensor_bytes_of(cfg, L, Mode.DECODE)
    kept = sum(sizes[n] for n in to_record(cfg, Mode.DECODE, GENERATION_NAMES))
    step = run_bytes(weights, L, Mode.DECODE, GENERATION_NAMES) - kept - cache_prefill_bytes(cfg, L)
    return 2 * _cache_bytes(cfg, L) + steps * kept + max(_prefill_block_bytes(cfg, n_tokens), step)


def decode_check(weights: LoadedModel, ids: tuple[int, ...], progress: Progress | None = None) -> float:
    """Largest |DECODE logits − FULL last-position logits| on this text (rounding only, if the
    cache is right), from the two runs in the trace cache: a student in either mode has one already."""
    logits = [get_trace(weights, ids, mode, weights.seed, ("logits",), progress=progress).at("logits", -1)[0]  # [V]
              for mode in (Mode.FULL, Mode.DECODE)]
    return float((logits[0] - logits[1]).abs().max())
