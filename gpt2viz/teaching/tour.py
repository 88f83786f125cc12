"""The guided tour a lecturer can follow in class: pages in order, one sentence each (its terms'
first uses linked to the glossary), in two parts: the model, then the classroom's experiments.

Along the first part a running tally adds each part's parameters (`Stop.adds`, component ids) toward
the model's total, so that a class sees where the parameters live (124,439,808 for gpt2). Stops
whose values matter (`Stop.demo`) say that random weights show nothing learned and link the demo
model's text for that page."""

from typing import NamedTuple

from ..spec.glossary import link


class Stop(NamedTuple):
    url: str  # the page's url path
    sentence: str  # what to show there, in one sentence
    adds: tuple[str, ...] = ()  # components whose parameters the tally adds at this stop
    demo: bool = False  # its values mean something only on trained weights: offer the demo model
    part: str = "The model"


def _stops(part: str, rows) -> list[Stop]:
    return [Stop(*row, part=part) for row in rows]


_MODEL = [
    ("overview", f"The whole model on one screen: text in, {link('logit', 'logits')} out, every box a page and "
                 "every count exact."),
    ("tokens", f"Text becomes {link('token')} ids; each id and each position picks a row of wte and wpe, and "
               "their sum is x₀.", ("embed",)),
    ("block", (f"One Transformer block: two updates added to the {link('residual stream')}, attention then the "
               f"MLP, each after its own {link('LayerNorm')} ({link('pre-LN')}).")),
    ("layernorm", "One position's vector as it enters, centred, scaled, then given a gain and a bias.",
     ("block.ln1", "block.ln2", "ln_f")),
    ("attention", f"Each {link('head')} scores the positions so far, masks the future, and averages their values.",
     ("block.attn.qkv",), True),
    ("merge", "The heads' outputs laid side by side and projected back into the stream as Δattn.",
     ("block.attn.merge",)),
    ("mlp", f"Each position on its own: widen to 4d, {link('GELU')}, narrow back to d; two thirds of a block's "
            "parameters.", ("block.mlp",)),
    ("output", f"The final LayerNorm and the {link('tied embeddings', 'tied unembedding')} turn the last stream "
               f"into next-token probabilities with a {link('softmax')}.", ("unembed",), True),
    ("modes", f"The same weights in four modes: {link('prefill')} fills a {link('KV cache')}, and a "
              f"{link('decode')} step reads it cheaply."),
    ("generation", f"Decoding step by step: one token at a time, the cache one position longer each step, with "
                   f"{link('temperature')} and {link('top-k')}.", (), True),
    ("params", "Every parameter accounted for, with the arithmetic, and the other totals you may meet."),
    ("exercises", "Check yourself: predict a shape, count a component's parameters."),
]
_CLASSROOM = [
    ("lens", "Read the prediction at every depth: the final LayerNorm and the unembedding applied to each "
             "block's stream.", (), True),
    ("experiments", "Predict, then see: take away the 1/√dh scale, the causal mask or the position embeddings "
                    "and watch what changes.", (), True),
    ("heads", "Score every head on your text: which ones read the previous word, which copy a repeat, which "
              "rest on the first token?", (), True),
    ("whatif", "Knock out one head or one MLP and watch the prediction move: which parts does this text need?",
     (), True),
    ("attribution", f"Split the answer's {link('logit')} into one share per head and MLP, "
                    f"{link('direct logit attribution', 'exactly')}, and set it beside the knock-outs.", (), True),
    ("patch", "Run two texts that differ in one word and patch A's activations into B: where does the answer "
              "live?", (), True),
    ("training", "One training step: dropout, the loss at each position, and the gradients flowing back."),
]
TOUR = _stops("The model", _MODEL) + _stops("In the classroom", _CLASSROOM)


def stop(url: str) -> int | None:
    """The page's place in the tour (0 for the first), or None when the tour does not visit it."""
    return next((i for i, s in enumerate(TOUR) if s.url == url), None)


def tally(totals: dict[str, int], i: int) -> tuple[int, int]:
    """(parameters met up to stop i, those stop i adds), from each component's total over the model."""
    added = [sum(totals[c] for c in s.adds) for s in TOUR[: i + 1]]
    return sum(added), added[-1]


NOT_SENTENCES = ()  # the stops' sentences are static; the tally's sentence is ui/links.py's (tally gives numbers)
