"""The demo model's recipe: every number that determines its trained weights, and where the shipped
file lies. Torch-free, so that the command line can offer the recipe's options without loading torch
(gpt2viz/model/demo_model.py trains by it)."""

from dataclasses import dataclass

from ..spec.config import GPT2Config
from ..spec.paths import APP_ROOT

DEMO_PATH = APP_ROOT / "assets" / "demo-model" / "model.safetensors"


@dataclass(frozen=True)
class Phase:
    steps: int
    context: int  # T of the training sequences
    batch: int
    words: int  # drawn from the first `words` training words


@dataclass(frozen=True)
class Recipe:
    """Everything that determines the trained weights."""
    seed: int = 0
    n_layer: int = 2
    n_head: int = 4
    n_embd: int = 128
    n_positions: int = 32
    n_words: int = 300  # the training vocabulary: GPT-2's first n_words " word" tokens
    # "steps x context x batch x words" per phase, comma-separated (a curriculum, if more than one)
    phases: str = "3000x32x64x300"
    lr: float = 3e-3
    warmup: int = 100
    skip: float = 0.3  # share of segments in which each word is fixed by the word two before it, through a
    # fixed random permutation of the words: a head that reads the previous position pays off by itself
    # (and what it passes on is a word's identity, not a copy of it to predict)
    sinusoid_positions: bool = False  # True: wpe starts as sinusoids, then is learned (GPT-2's architecture)
    wpe_std: float = 0.02  # the sinusoids' scale per entry (GPT-2 initialises wpe at std 0.01)
    wte_std: float = 0.02  # the token table's initial scale (GPT-2's 0.02; larger keeps each position's own
    # word legible in the stream beside what the heads write there)
    chain: float = 0.8  # share of fresh words drawn from the previous word's 4 usual successors: with word
    # statistics to learn from the current word (as in text), block 1's heads match on the current word,
    # the induction head's way (without them every model trained here matched on the word before it)
    other_steps: int = 300  # then, all else frozen, fit the one row every other GPT-2 token gets (see export)
    loss_on: str = "all"  # "all" positions, or only "repeated" ones: repeats and skip segments' words (fresh
    # words are unpredictable noise)

    def __post_init__(self):  # bad sizes or phases fail here, before any training
        self.config(self.n_words)
        self.schedule  # noqa: B018 (parses and checks the phases)
        if self.loss_on not in ("all", "repeated"):
            raise ValueError(f"loss_on {self.loss_on!r}: expected 'all' or 'repeated'")

    @property
    def schedule(self) -> list[Phase]:
        try:
            schedule = [Phase(*(int(n) for n in p.split("x"))) for p in self.phases.split(",")]
        except (TypeError, ValueError):
            raise ValueError(f"phases {self.phases!r}: expected steps x context x batch x words, "
                             "comma-separated") from None
        for p in schedule:
            if min(p.steps, p.batch) < 1 or not 4 <= p.context <= self.n_positions or not 2 <= p.words <= self.n_words:
                raise ValueError(f"phase {p}: needs steps, batch >= 1, context 4..{self.n_positions}, "
                                 f"words 2..{self.n_words}")
        return schedule

    @property
    def steps(self) -> int:
        return sum(p.steps for p in self.schedule)

    def phase_at(self, step: int) -> Phase:
        for p in self.schedule:
            if step < p.steps:
                return p
            step -= p.steps
        return self.schedule[-1]

    def config(self, vocab_size: int) -> GPT2Config:
        return GPT2Config("demo", n_layer=self.n_layer, n_head=self.n_head, n_embd=self.n_embd,
                          vocab_size=vocab_size, n_positions=self.n_positions, dropout=0.0)
