"""The app's library of ready prompts, one set per weights source: each says what it shows and the
greedy next token it must produce (tests/test_prompts.py runs them through the weights and checks).

Prompts are measured, not guessed: a prompt is only here for weights that were run on it. The demo
model's were chosen with `python -m gpt2viz trace --weights assets/demo-model/model.safetensors`;
the figures in `shows` are those runs' (the tests measure them again).
"""

from dataclasses import dataclass

from ..analysis.heads import induction_targets


@dataclass(frozen=True)
class Prompt:
    key: str  # its name in code and tests
    text: str  # the sidebar's text (text A for patching)
    next_token: str  # the greedy next token after `text`, as the tokenizer decodes it (" after")
    shows: str  # what it shows, one sentence for the page that offers it
    text_b: str | None = None  # for patching: text B, of as many tokens as `text`
    next_token_b: str | None = None  # the greedy next token after text_b


# ---------------------------------------------------------------------------- the demo model
# Every token is one of the demo model's training tokens, the first too (tests check): each starts
# with a space.
_REPEAT = " people play one good game after work people play one good game"

DEMO_REPEAT = Prompt(
    "repeat", _REPEAT, " after",
    "seven words, then the first five again: at the last word (game) the model predicts the word that followed "
    "game the first time, after (p = 0.92), and greedy generation goes on copying. In block 1 every head attends "
    "from a repeated word to the word after its earlier occurrence: a diagonal stripe, one column right of "
    "where each word first occurred.")
DEMO_PAIR = Prompt(
    "pair", _REPEAT, " after",
    "A is the repeat; B is A with its last word changed from game to point, a word that has not occurred "
    "before, so B has nothing to copy: A predicts after (p = 0.92), B guesses would (p = 0.24). Both are 12 "
    "tokens and only the last differs. Patched from A into B, each of block 1's four heads restores 0.09 to 0.20 "
    "of A's margin and block 0's heads none: each of the four induction heads carries part of the copy, unevenly.",
    text_b=" people play one good game after work people play one good point", next_token_b=" would")

PROMPTS: dict[str, tuple[Prompt, ...]] = {"demo": (DEMO_REPEAT, DEMO_PAIR)}
# (block, head) of the demo model's attention sink, where the Glossary points: on the repeat, its queries
# from the fifth word on put 0.9 of their weight on the first word (tests/test_prompts.py measures it)
DEMO_SINK = (0, 2)


def prompts_for(source: str) -> dict[str, Prompt]:
    """The prompts measured on weights `source` (a key of ui.state.SOURCES), by key; {} if none."""
    return {p.key: p for p in PROMPTS.get(source, ())}


def induction_cells(ids) -> list[tuple[int, int]]:
    """Where an induction head looks, the very cells the induction score reads: (query i, key j + 1)
    for the most recent earlier occurrence j of token ids[i], when j + 1 < i − 1 (the word that
    followed it, neither the current word nor the one before it)."""
    return induction_targets(ids, len(ids))


NOT_SENTENCES = (prompts_for,)  # the ready prompts: static texts and sentences, checked on the demo model by
# tests/test_prompts.py, not built from a run in view
