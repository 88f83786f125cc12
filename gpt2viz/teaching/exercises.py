"""Exercises generated from the component tree and the schema: "predict the shape" and "compute the parameter count",
each with its answer and the worked arithmetic, and a handout (Markdown) for a teacher.

A student is never shown an answer they did not give: a wrong try gets a hint, the last wrong try
the method without its numbers (`method`) and "ask your lecturer". The answer and its working
(`worked`) are the lecturer's (the answer key) and the student's once they answered right; so a
new tab, a fresh attempt under the same rule, holds nothing to copy.

An exercise has a stable id that encodes everything that determines it, so a set of exercises is
reproducible from a seed and shareable as a list of ids.
"""

import random
import re
from dataclasses import dataclass

from ..anatomy.components import component_tree
from ..spec.config import get_config
from ..spec.schema import (
    AXIS_NAMES,
    CACHED_MODES,
    Mode,
    axis_value,
    block_name,
    concrete,
    dims,
    recorded,
    run_dims,
    symbolic,
)

SHAPE_NAMES = ("embed.tok", "embed.pos", "attn.qkv", "attn.q", "attn.k_cache", "attn.scores", "attn.pattern",
               "attn.z", "attn.merged", "attn.out", "mlp.pre", "mlp.post", "logits", "ln1.mean")
PARAM_COMPONENTS = ("embed.tok", "embed.pos", "block.ln1", "block.attn.qkv", "block.attn.merge", "block.attn",
                    "block.mlp.fc", "block.mlp.proj", "block.mlp", "block", "ln_f", "unembed", "model")
MODELS = ("gpt2", "gpt2-medium", "distilgpt2")  # the sizes a set draws from
# the conventions every answer follows, said in the handout and on the page
CONVENTIONS = ("Shapes use the reference implementations' layout: heads before positions, [B, nh, T, dh]. "
               "`embed.pos` is the T position rows once, [T, d], shared by the batch (openai/gpt-2 broadcasts "
               "them to [B, T, d], transformers looks them up as [1, T, d]). `logits` in prefill are the last "
               "position's only, [B, 1, V], what generation needs; a plain forward returns [B, T, V].")
MODEL_AXES = {"d": "the width n_embd", "nh": "the number of heads", "dh": "the head size d / nh",
              "V": "the vocabulary size", "n_ctx": "the context length"}


@dataclass(frozen=True)
class Exercise:
    id: str
    kind: str  # "shape" or "params"
    question: str  # Markdown
    answer: tuple[int, ...]  # a shape, or a one-element count
    worked: str  # Markdown: the arithmetic (shown after a right answer, and in the answer key)
    method: str = ""  # Markdown: how to work it out, in symbols, with no number of the answer in it

    @property
    def answer_text(self) -> str:
        return f"[{', '.join(map(str, self.answer))}]" if self.kind == "shape" else f"{self.answer[0]:,}"


# ---------------------------------------------------------------------------- shapes
def shape_exercise(model: str, mode: str, short: str, B: int = 1, T: int | None = None, P: int | None = None,
                   block: int = 0) -> Exercise:
    cfg = get_config(model)
    mode = Mode.parse(mode)
    run = run_dims(cfg, mode, B, T, P)
    name = short if not _per_block(short) else block_name(short, block)
    axes = {n: a for n, a, _ in recorded(cfg, mode)}.get(name)
    if axes is None:
        raise ValueError(f"{name} is not recorded in {mode.value} mode")
    values = dims(cfg, run["B"], run["T"], run["P"], run["L"])
    answer = tuple(concrete(axes, values))
    setting = {Mode.FULL: f"reads a text of T = {run['T']} tokens at once",
               Mode.TRAINING: f"trains on a text of T = {run['T']} tokens",
               Mode.PREFILL: f"prefills an empty KV cache with a prompt of T = {run['T']} tokens, keeping the "
                             "logits of the last position only, as generation does",
               Mode.DECODE: f"decodes one new token after P = {run['P']} cached positions"}[mode]
    question = (f"**{model}** ({cfg.n_layer} blocks, d = {cfg.n_embd}, nh = {cfg.n_head}) {setting}, "
                f"batch B = {run['B']}. What is the shape of `{name}`?")
    steps = [f"`{name}` is {symbolic(axes)}."] + [f"- {_explain(a, values, short)}" for a in axes]
    steps.append(f"So the shape is **[{', '.join(map(str, answer))}]**.")
    ident = f"shape:{model}:{mode.value}:{short}:B{run['B']}:T{run['T']}:P{run['P']}:b{block}"
    return Exercise(ident, "shape", question, answer, "\n".join(steps), _shape_method(name, axes))


def _shape_method(name: str, axes) -> str:
    """The working in symbols: the tensor's axes and what each one means, no value of any."""
    seen, lines = set(), [f"`{name}` is {symbolic(axes)}. Put in each size:"]
    for axis in axes:
        sym = re.match(r"^\d*([A-Za-z_]*)", axis).group(1)
        if not sym:
            lines.append("- a number written in the shape itself keeps its value")
        elif sym not in seen:
            seen.add(sym)
            meaning = "d / nh, the head size" if sym == "dh" else MODEL_AXES.get(sym) or AXIS_NAMES.get(sym, sym)
            lines.append(f"- {sym}: {meaning}" + ("; L = P + T" if sym == "L" else ""))
    lines.append("The question gives the batch and the positions; the model's config (Parameters page) gives the rest.")
    return "\n".join(lines)


def _per_block(short: str) -> bool:
    return short.startswith(("attn.", "mlp.", "ln1.", "ln2.", "resid_"))


def _explain(axis: str, values: dict, short: str) -> str:
    value = axis_value(axis, values)
    m = re.match(r"^(\d*)([A-Za-z_]*)(?:-(\d+))?$", axis)
    coef, sym, minus = m.groups()
    if not sym:
        return (f"{value}: prefill keeps the logits of the last position only, all generation needs to pick "
                "the next token (a plain forward of either reference returns every position's, [B, T, V])"
                if short == "logits"
                else f"{value}: one value (μ or σ²) per position")
    meaning = MODEL_AXES.get(sym) or AXIS_NAMES.get(sym, sym)
    base = f"{sym} = {values[sym]:,} ({meaning})" if not coef and not minus else f"{sym} = {values[sym]:,}"
    if sym == "L":
        base += f"; L = P + T = {values['P']} + {values['T']}"
    if sym == "dh":
        base = f"dh = d / nh = {values['d']:,} / {values['nh']} = {values['dh']}"
    if coef or minus:
        return f"{axis} with {base}: {value:,}"
    return base


# ---------------------------------------------------------------------------- parameter counts
def params_exercise(model: str, component: str) -> Exercise:
    cat = component_tree(model)
    c = cat[component]
    lines, terms, method = [], [], []
    for leaf in [x for x in c.leaves if x.rows]:
        times = leaf.instances // c.instances  # the model counts each block component n_layer times
        for r in leaf.rows:
            if not r.parameters:
                lines.append(f"- {leaf.title}: 0 ({leaf.weights_note or 'no tensor of its own'})")
                continue
            method.append(f"- {leaf.title}, {r.name}: {r.symbolic}" + (" in each block, times the blocks it spans"
                                                                      if times > 1 else ""))
            lines.append(f"- {leaf.title}, {r.name}: {r.symbolic} = {r.calculation} = {r.parameters:,}"
                         + (f"; × {times} blocks: {r.parameters:,} × {times} = {r.parameters * times:,}"
                            if times > 1 else ""))
            terms.append(r.parameters * times)
    per = c.per_instance
    assert sum(terms) == per, f"{component}: rows sum to {sum(terms)}, not {per}"
    if not terms:
        lines = [f"- {c.weights_note or 'It owns no weights.'} So: 0."]
    elif len(terms) > 1:
        lines.append(f"- Sum: {' + '.join(f'{t:,}' for t in terms)} = {per:,}")
    if c.instances > 1 and per:
        lines.append(f"- Across all {c.instances} blocks: {per:,} × {c.instances} = {c.total:,}")
    method = (["Count each tensor as the product of its sizes, then add them up:"] + method if method
               else [f"{c.weights_note or 'It owns no weights.'}"])
    method.append("The model's config (Parameters page) gives V, n_ctx, d and the number of blocks.")
    return Exercise(f"params:{model}:{component}", "params", params_question(model, component), (per,),
                    "\n".join(lines), "\n".join(method))


# what each counted component is called in a question
NOUNS = {"embed.tok": "the token embedding (wte)", "embed.pos": "the position embedding (wpe)",
         "block.ln1": "LayerNorm 1", "block.attn.qkv": "attention's query, key and value projection (c_attn)",
         "block.attn.merge": "attention's output projection (c_proj)", "block.attn": "the attention sublayer",
         "block.mlp.fc": "the MLP's expansion (c_fc)", "block.mlp.proj": "the MLP's projection (c_proj)",
         "block.mlp": "the MLP", "ln_f": "the final LayerNorm (ln_f)", "unembed": "the tied unembedding"}


def params_question(model: str, component: str) -> str:
    """The question in plain English: "How many parameters does gpt2-medium have?"."""
    if component == "model":
        return f"How many parameters does **{model}** have?"
    if component == "block":
        return f"How many parameters does one Transformer block of **{model}** have?"
    if component_tree(model)[component].instances > 1:
        return f"How many parameters does {NOUNS[component]} have in one block of **{model}**?"
    return f"How many parameters does {NOUNS[component]} of **{model}** have?"


# ---------------------------------------------------------------------------- sets, answers, handouts
def from_id(ident: str) -> Exercise:
    parts = ident.split(":")
    try:
        if parts[0] == "params" and len(parts) == 3:
            return params_exercise(parts[1], parts[2])
        if parts[0] == "shape" and len(parts) == 8:
            _, model, mode, short, B, T, P, b = parts
            return shape_exercise(model, mode, short, int(B[1:]), int(T[1:]), int(P[1:]) if Mode.parse(mode) in
                                  CACHED_MODES else None, int(b[1:]))
    except (KeyError, ValueError, IndexError) as e:
        raise ValueError(f"not an exercise id: {ident!r} ({e})") from None
    raise ValueError(f"not an exercise id: {ident!r}")


def exercise_set(seed: int, n: int = 6, models=MODELS) -> list[Exercise]:
    """n different exercises, alternating shapes and counts, the same for the same seed."""
    rng = random.Random(seed)
    out: list[Exercise] = []
    for _ in range(50 * n):
        if len(out) == n:
            break
        e = _draw(rng, len(out) % 2 == 1, models)
        if all(e.id != o.id for o in out):
            out.append(e)
    return out


def _draw(rng: random.Random, count: bool, models) -> Exercise:
    model = rng.choice(models)
    if count:
        return params_exercise(model, rng.choice(PARAM_COMPONENTS))
    mode = rng.choice(list(Mode))
    short = rng.choice([s for s in SHAPE_NAMES if not (s == "attn.k_cache" and mode not in CACHED_MODES)])
    T = rng.choice([5, 16, 64, 256]) if mode is not Mode.DECODE else None
    P = rng.choice([10, 100, 1000]) if mode is Mode.DECODE else None
    block = rng.randrange(get_config(model).n_layer)
    return shape_exercise(model, mode, short, rng.choice([1, 1, 2, 8]), T, P, block)


class Unreadable(ValueError):
    """An answer that could not be read as one: asked for again, never marked."""


def parse_answer(text: str) -> tuple[int, ...]:
    """Read "[1, 12, 1, 64]", "1 × 12 × 1 × 64" style shapes or "2,362,368" counts."""
    cleaned = text.strip().strip("[]()")
    if not cleaned:
        raise Unreadable("type an answer first")
    # one count (4,722,432 or 4722432), or a shape: [1, 12, 1, 64], [1,12,1,64], 1 × 12 × 1 × 64, 1 12 1 64
    parts = [cleaned] if re.fullmatch(r"\d{1,3}(,\d{3})+|\d+", cleaned) else re.split(r"[\s,;x×]+", cleaned)
    try:
        return tuple(int(p.replace(",", "").replace("_", "")) for p in parts if p)
    except ValueError:
        raise Unreadable(f"could not read {text[:40]!r} as whole numbers") from None


TRIES = 2  # a wrong answer gets a hint and another try; after the last, the method and "ask your lecturer"
ASK = "Ask your lecturer, or work it through with the method below."


def _given(ex: Exercise, text: str) -> tuple[int, ...]:
    given = parse_answer(text)
    if ex.kind != "shape" and len(given) != 1:
        raise Unreadable(f"could not read {text[:40]!r} as one count: a count is one whole number")
    return given


def check(ex: Exercise, text: str) -> tuple[bool, str]:
    """(correct, the feedback) of a readable answer; a wrong one is told a hint, never the answer.
    An unreadable one ("355M", "twelve", a shape for a count) raises Unreadable: it is not an
    answer, so nothing is marked or revealed."""
    given = _given(ex, text)
    if given == ex.answer:
        return True, f"Correct: {ex.answer_text}."
    return False, f"Not quite: you gave {_fmt(given, ex)}. Hint: {hint(ex, given)}."


def hint(ex: Exercise, given: tuple[int, ...]) -> str:
    """Where a wrong answer goes wrong, without the answer: which axes, or which way a count is off."""
    if ex.kind == "shape":
        if len(given) != len(ex.answer):
            return f"this tensor has {len(ex.answer)} axes, not {len(given)}"
        wrong = [str(i) for i, (g, a) in enumerate(zip(given, ex.answer), 1) if g != a]
        return (f"axis {wrong[0]} is" if len(wrong) == 1 else f"axes {', '.join(wrong)} are") + \
            " not right (counting from 1); the others are"
    way = "high" if given[0] > ex.answer[0] else "low"
    if abs(given[0] - ex.answer[0]) <= 0.02 * ex.answer[0]:
        return f"close, a little too {way}: check the biases and the LayerNorms' two vectors"
    return f"too {way}: count each weight matrix as rows × columns, then add its bias"


@dataclass(frozen=True)
class Attempt:
    """One exercise in a session: how many readable answers it had, and whether one was right."""
    tries: int = 0
    correct: bool = False
    message: str = ""

    @property
    def closed(self) -> bool:
        """Answered right, or out of tries: its mark is final (the working is shown only after a right answer)."""
        return self.correct or self.tries >= TRIES


def answer(ex: Exercise, before: Attempt, text: str) -> Attempt:
    """The exercise after this answer. A closed one does not change: its mark is final. The answer is
    never in a message (a wrong last try is told to ask the lecturer). Raises Unreadable (no try is
    used) for an answer that is not one."""
    if before.closed:
        return before
    ok, message = check(ex, text)
    tries = before.tries + 1
    if not ok:
        message += " One more try." if tries < TRIES else f" {ASK}"
    return Attempt(tries, ok, message)


def _fmt(given, ex) -> str:
    return f"[{', '.join(map(str, given))}]" if ex.kind == "shape" else ", ".join(f"{g:,}" for g in given)


def handout(exercises: list[Exercise], answers: bool = True, title: str = "GPT-2 exercises") -> str:
    """The set as Markdown: the questions, then (for an answer key) every answer with its working."""
    lines = [f"# {title}", "", CONVENTIONS, ""]
    for i, ex in enumerate(exercises, 1):
        lines += [f"## {i}. {'Predict the shape' if ex.kind == 'shape' else 'Count the parameters'}", "",
                  ex.question, ""]
        if answers:
            lines += [f"**Answer:** {ex.answer_text}", "", ex.worked, ""]
    return "\n".join(lines)


SENTENCES = (shape_exercise, params_exercise, params_question, check, hint, answer)
NOT_SENTENCES = (handout,  # the set laid out as HTML: its sentences are shape_exercise's and params_exercise's
                 exercise_set)  # draws exercises: the same functions write them
