"""The demo model: a small GPT-2 trained here, on data made here, so that its attention does something.

Data: common GPT-2 words in three kinds of stretch. Fresh words mostly follow a made-up Markov chain
(each word has 4 usual successors), so there are word statistics to learn from the current word, as
in text. Spans come back after a random gap, so that a repeated word's successor is predictable by
finding the earlier occurrence of the current word and copying what followed it: the job of an
induction head (Olsson et al. 2022), which reads from a previous-token head in the block before. In
"skip" stretches each word is a fixed permutation of the word two before it, which pays a
previous-token head by itself. Without the chain, every model trained here copied repeats through
heads that attend one word later than an induction head (README: the demo model).

The model is GPT-2's architecture with GPT-2's tokenizer, trained in a compact copy whose token
table holds only the training words (each step then costs a fraction of a 50,257-way softmax). The
export writes a full 50,257-row table: the trained rows at the training words' ids and, at every
other id, one row fitted last with everything else frozen, so that the full softmax gives those
tokens, together, the little probability they deserve (they never occur).

`python -m gpt2viz train-demo` writes assets/demo-model/model.safetensors. Shapes: B, T, nh, V.
"""

import json
import math
import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from ..spec.config import GPT2Config
from ..spec.schema import Mode
from . import tokenizer
from .demo_recipe import DEMO_PATH, Recipe
from .gpt2 import GPT2
from .modes import run
from .weights import init_weights, read_header, save_safetensors

WORD = re.compile(r" [a-z]+")


def training_words(n: int) -> torch.Tensor:
    """The token ids of GPT-2's first n tokens that are a space and lowercase letters (" the",
    " cat", ...). BPE ids follow merge order, which follows frequency: these are common words."""
    enc = tokenizer.encoding()
    words = []
    for token_id in range(256, tokenizer.ENDOFTEXT_ID):
        if WORD.fullmatch(enc.decode_single_token_bytes(token_id).decode("utf-8", "replace")):
            words.append(token_id)
            if len(words) == n:
                return torch.tensor(words)
    raise ValueError(f"GPT-2 has only {len(words)} word tokens, fewer than {n}")


# ---------------------------------------------------------------------------- data
RULED = -2  # source of a word that the word two before it determines (a skip segment)


def successor(n_words: int, seed: int) -> torch.Tensor:
    """The skip segments' rule: word w two positions back makes the word successor[w] (a permutation)."""
    return torch.randperm(n_words, generator=torch.Generator().manual_seed(seed + 7))


def chain_successors(n_words: int, seed: int, k: int = 4) -> torch.Tensor:
    """The fresh words' Markov chain: the k words [n_words, k] each word is most often followed by."""
    return torch.randint(n_words, (n_words, k), generator=torch.Generator().manual_seed(seed + 11))


def repeated_spans(g: torch.Generator, B: int, T: int, V: int, skip: float = 0.0,
                   rule: torch.Tensor | None = None, chain: float = 0.0,
                   successors: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(ids [B, T] in 0..V-1, source [B, T]): random words in segments, each either a span of
    2 to 3T/8 words, 0 to T/8 other words and the span again, or (with probability `skip`) 4 to 16
    words each of which is rule[the word two before it]. With `chain` > 0 a fresh word is, with that
    probability, one of its predecessor's `successors` (a Markov chain: word statistics, as text has,
    that the model learns from each word itself). source[b, i] is the earlier position whose word
    position i repeats, RULED where the rule made it, or -1 where the word is fresh."""
    ids = torch.randint(V, (B, T), generator=g)  # [B, T]
    source = torch.full((B, T), -1)  # [B, T]
    max_span, max_gap = max(2, 3 * T // 8), T // 8
    for b in range(B):
        i = 0
        while i < T - 2:
            if float(torch.rand((), generator=g)) < skip:
                n = min(int(torch.randint(4, 17, (), generator=g)), T - i)
                for pos in range(i + 2, i + n):
                    ids[b, pos] = rule[ids[b, pos - 2]] % V
                source[b, i + 2:i + n] = RULED
                i += n
                continue
            span = int(torch.randint(2, max_span + 1, (), generator=g))
            copy = i + span + int(torch.randint(0, max_gap + 1, (), generator=g))
            n = min(span, T - copy)
            if n > 0:
                ids[b, copy:copy + n] = ids[b, i:i + n]
                source[b, copy:copy + n] = torch.arange(i, i + n)
            i = copy + span
    if chain > 0:
        for b in range(B):
            for t in range(1, T):  # in order: copies and ruled words follow what they depend on
                if source[b, t] == -1 and float(torch.rand((), generator=g)) < chain:
                    k = int(torch.randint(successors.shape[1], (), generator=g))
                    ids[b, t] = successors[ids[b, t - 1], k] % V
                elif source[b, t] == RULED:
                    ids[b, t] = rule[ids[b, t - 2]] % V
                elif source[b, t] >= 0:
                    ids[b, t] = ids[b, source[b, t]]
    return ids, source


# ---------------------------------------------------------------------------- measurements
@dataclass(frozen=True)
class HeadScores:
    induction: list[list[float]]  # [layer][head]: mean attention from a repeated word to the word
    # that followed its earlier occurrence
    previous: list[list[float]]  # [layer][head]: mean attention to the previous position
    loss_fresh: float  # mean loss predicting words that are not repeats
    loss_repeated: float  # mean loss predicting repeated words whose predecessor was repeated too

    def best(self, kind: str) -> tuple[int, int, float]:
        table = getattr(self, kind)
        return max(((layer, head, s) for layer, row in enumerate(table) for head, s in enumerate(row)),
                   key=lambda t: t[2])


@torch.no_grad()
def head_scores(model: GPT2, ids: torch.Tensor, source: torch.Tensor) -> HeadScores:
    """Scores of every head on sequences `ids` [B, T] with their `source` map (see repeated_spans),
    pooled over all sequences; one sequence at a time (the full model's logits of 256 tokens are 51 MB)."""
    T = ids.shape[1]
    induction, previous, fresh, repeated = 0.0, 0.0, [], []
    for seq, src in zip(ids, source):
        trace = run(model, seq[None], Mode.FULL, names=["blocks.*.attn.pattern", "logits"])  # patterns derived
        logits = trace["logits"]  # [1, T, V]
        patterns = torch.stack([trace.get("attn.pattern", n)[0] for n in range(model.config.n_layer)])
        # [n_layer, nh, T, T]; induction: from i (a repeat of source[i]) to source[i] + 1, which precedes i
        i = ((src >= 0) & (src + 1 < torch.arange(T))).nonzero()[:, 0]
        induction = induction + patterns[:, :, i, src[i] + 1].sum(-1)  # [n_layer, nh]
        previous = previous + patterns[:, :, 1:].diagonal(dim1=2, dim2=3).sum(-1)  # [n_layer, nh]
        losses = F.cross_entropy(logits[0, :-1], seq[1:], reduction="none")  # [T-1]
        fresh.append(losses[src[1:] == -1])
        repeated.append(losses[(src[1:] >= 0) & (src[:-1] >= 0)])  # the word and its predecessor repeat
    n_induction = sum(((src >= 0) & (src + 1 < torch.arange(T))).sum() for src in source)
    return HeadScores((induction / n_induction).tolist(), (previous / (len(ids) * (T - 1))).tolist(),
                      torch.cat(fresh).mean().item(), torch.cat(repeated).mean().item())


# ---------------------------------------------------------------------------- training
def sinusoids(n_positions: int, d: int, std: float) -> torch.Tensor:
    """Vaswani et al.'s position code, scaled to `std` per entry: attending to the previous position
    is then a fixed rotation of the query, which a head can learn quickly."""
    pos = torch.arange(n_positions).unsqueeze(1)  # [n_positions, 1]
    freq = torch.exp(-math.log(10_000.0) * torch.arange(0, d, 2) / d)  # [d/2]
    table = torch.zeros(n_positions, d)
    table[:, 0::2], table[:, 1::2] = torch.sin(pos * freq), torch.cos(pos * freq)
    return table * std * math.sqrt(2)


def lr_at(step: int, lr: float, warmup: int, steps: int) -> float:
    """Linear warmup, then cosine decay to a tenth."""
    if step < warmup:
        return lr * (step + 1) / warmup
    progress = (step - warmup) / max(1, steps - warmup)
    return lr * (0.1 + 0.45 * (1 + math.cos(math.pi * progress)))


def train(recipe: Recipe, log=print, eval_every: int = 250) -> tuple[GPT2, torch.Tensor, list[dict]]:
    """The compact model (its vocabulary the training words) after `recipe.steps` steps, the row of
    every other token (fit_other_row), and a log."""
    torch.manual_seed(recipe.seed)
    V, T = recipe.n_words, recipe.n_positions
    model = init_weights(GPT2(recipe.config(V)), recipe.seed)
    with torch.no_grad():
        model.wte.weight.mul_(recipe.wte_std / 0.02)
    if recipe.sinusoid_positions:
        with torch.no_grad():
            model.wpe.weight.copy_(sinusoids(T, recipe.n_embd, recipe.wpe_std))
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=recipe.lr, betas=(0.9, 0.98), weight_decay=0.0)
    data = torch.Generator().manual_seed(recipe.seed)
    rule, successors = successor(V, recipe.seed), chain_successors(V, recipe.seed)
    probes = {p: repeated_spans(torch.Generator().manual_seed(recipe.seed + 1), 8, p.context, p.words, 0.0)
              for p in recipe.schedule}  # each phase measured on sequences like its own
    history, start, steps = [], time.perf_counter(), recipe.steps
    for step in range(steps):
        for group in opt.param_groups:
            group["lr"] = lr_at(step, recipe.lr, recipe.warmup, steps)
        phase = recipe.phase_at(step)
        ids, source = repeated_spans(data, phase.batch, phase.context, phase.words, recipe.skip, rule,
                                     recipe.chain, successors)  # [B, T]
        logits, _ = model(ids)  # [B, T, V]
        losses = F.cross_entropy(logits[:, :-1].flatten(0, 1), ids[:, 1:].flatten(), reduction="none")  # [B*(T-1)]
        loss = losses.mean() if recipe.loss_on == "all" else losses[source[:, 1:].flatten() != -1].mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if (step + 1) % eval_every == 0 or step + 1 == steps:
            s = head_scores(model, *probes[phase])
            entry = {"step": step + 1, "context": phase.context, "words": phase.words,
                     "seconds": round(time.perf_counter() - start, 1), "loss": round(loss.item(), 3),
                     "loss_fresh": round(s.loss_fresh, 3), "loss_repeated": round(s.loss_repeated, 3),
                     "induction": round(s.best("induction")[2], 3), "previous": round(s.best("previous")[2], 3)}
            history.append(entry)
            log(json.dumps(entry))
    other = fit_other_row(model.eval(), recipe, data, rule, successors)
    entry = {"other_row_steps": recipe.other_steps, "loss_full_vocabulary": round(other[1], 3)}
    history.append(entry)
    log(json.dumps(entry))
    return model, other[0], history


def fit_other_row(model: GPT2, recipe: Recipe, data: torch.Generator, rule: torch.Tensor,
                  successors: torch.Tensor) -> tuple[torch.Tensor, float]:
    """The row [d] that each of GPT-2's tokens outside the training words gets in the full model, and
    the full-vocabulary loss of the last step: fitted with the trained model frozen, its logit counted
    once per such token (log(50,257 − V) added), on sequences like the last phase's."""
    V, phase = recipe.n_words, recipe.schedule[-1]
    others = math.log(tokenizer.ENDOFTEXT_ID + 1 - V)
    final = {}
    hook = model.ln_f.register_forward_hook(lambda module, args, out: final.update(h=out))
    row = torch.zeros(recipe.n_embd, requires_grad=True)  # [d]
    opt = torch.optim.Adam([row], lr=1e-2)
    loss = torch.tensor(float("nan"))
    try:
        for _ in range(recipe.other_steps):
            ids, _ = repeated_spans(data, phase.batch, phase.context, V, recipe.skip, rule, recipe.chain,
                                    successors)  # [B, T]
            with torch.no_grad():
                logits = model(ids)[0]  # [B, T, V]
            logits = torch.cat([logits, (final["h"] @ row + others)[..., None]], -1)  # [B, T, V + 1]
            loss = F.cross_entropy(logits[:, :-1].flatten(0, 1), ids[:, 1:].flatten())
            opt.zero_grad()
            loss.backward()
            opt.step()
    finally:
        hook.remove()
    return row.detach(), loss.item()


@torch.no_grad()
def export(compact: GPT2, words: torch.Tensor, other: torch.Tensor, seed: int) -> GPT2:
    """The full-vocabulary model: the trained rows at the training words' ids, `other` at every other
    id (as input, none of those tokens was ever seen), all other parameters as trained."""
    cfg = compact.config
    full = init_weights(GPT2(GPT2Config("demo", n_layer=cfg.n_layer, n_head=cfg.n_head, n_embd=cfg.n_embd,
                                        n_positions=cfg.n_positions, dropout=0.0)), seed)
    state = compact.state_dict()
    wte = other.expand_as(full.wte.weight).clone()  # [50257, d]
    wte[words] = state.pop("wte.weight")
    full.load_state_dict({**state, "wte.weight": wte})
    return full.eval()


def save_demo(model: GPT2, path: Path, recipe: Recipe, history: list[dict], scores: HeadScores, seconds: float,
              cpu_seconds: float) -> None:
    """fp16 storage (the loader reads it back as fp32), with how it was made in the metadata."""
    path.parent.mkdir(parents=True, exist_ok=True)
    half = type(model)(model.config)
    half.load_state_dict({k: v.half() for k, v in model.state_dict().items()}, assign=True)
    meta = {
        "trained_by": "python -m gpt2viz train-demo" + (f" --seed {recipe.seed}" if recipe.seed else ""),
        "recipe": json.dumps(asdict(recipe)),
        "data": (f"random words from GPT-2's first {recipe.n_words} ' word' tokens, in which spans come back "
                 f"after a random gap, and ({recipe.skip:.0%} of segments) each word is a fixed permutation "
                 "of the word two before it; "
                 f"phases (steps x context x batch x words): {recipe.phases}"),
        "train_seconds": f"{seconds:.0f}",
        "train_cpu_seconds": f"{cpu_seconds:.0f}",  # summed over threads
        "torch": torch.__version__,
        "threads": str(torch.get_num_threads()),
        "history": json.dumps(history),
        "heads": json.dumps({kind: scores.best(kind) for kind in ("induction", "previous")}),
        "loss_fresh": f"{scores.loss_fresh:.3f}",
        "loss_repeated": f"{scores.loss_repeated:.3f}",
    }
    save_safetensors(half, path, meta)


def held_out(recipe: Recipe, seed: int, B: int = 16) -> tuple[torch.Tensor, torch.Tensor]:
    """Probe sequences in GPT-2 token ids, from another seed than training: full-length sequences of
    all the training words, spans repeated after varying gaps (no skip segments)."""
    ids, source = repeated_spans(torch.Generator().manual_seed(seed), B, recipe.n_positions, recipe.n_words, 0.0)
    return training_words(recipe.n_words)[ids], source  # [B, T] GPT-2 ids, [B, T]


def train_demo(recipe: Recipe, out: Path, log=print) -> HeadScores:
    """Train, export to the full vocabulary, measure the heads on held-out sequences, save."""
    start, cpu = time.perf_counter(), time.process_time()
    compact, other, history = train(recipe, log)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    model = export(compact, training_words(recipe.n_words), other, recipe.seed)
    scores = head_scores(model, *held_out(recipe, recipe.seed + 1000))
    save_demo(model, out, recipe, history, scores, seconds, cpu)
    return scores


def demo_heads(path: Path = DEMO_PATH) -> dict[str, tuple[int, int, float]]:
    """{"induction": (block, head, score), "previous": ...} as measured when the file was made."""
    return {kind: tuple(v) for kind, v in json.loads(read_header(path).metadata["heads"]).items()}


def demo_vocabulary(path: Path = DEMO_PATH) -> list[int]:
    """The token ids the model at `path` was trained on (its recipe's n_words training words)."""
    recipe = json.loads(read_header(path).metadata["recipe"])
    return training_words(recipe["n_words"]).tolist()
