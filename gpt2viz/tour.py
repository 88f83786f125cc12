"""The guided tour a lecturer can follow in class: pages in order, one sentence each (its terms'
first uses linked to the glossary)."""

from .glossary import link

# (url path of the page, what to show there in one sentence)
TOUR = [
    ("overview", f"The whole model on one screen: text in, {link('logit', 'logits')} out, every box a page and "
                 "every count exact."),
    ("tokens", f"Text becomes {link('token')} ids; each id and each position picks a row of wte and wpe, and "
               "their sum is x₀."),
    ("block", (f"One Transformer block: two updates added to the {link('residual stream')}, attention then the "
               f"MLP, each after its own {link('LayerNorm')} ({link('pre-LN')}).")),
    ("layernorm", "One position's vector as it enters, centred, scaled, then given a gain and a bias."),
    ("attention", f"Each {link('head')} scores the positions so far, masks the future, and averages their values."),
    ("merge", "The heads' outputs laid side by side and projected back into the stream as Δattn."),
    ("mlp", f"Each position on its own: widen to 4d, {link('GELU')}, narrow back to d; two thirds of a block's "
            "parameters."),
    ("output", f"The final LayerNorm and the {link('tied embeddings', 'tied unembedding')} turn the last stream "
               f"into next-token probabilities with a {link('softmax')}."),
    ("modes", f"The same weights in four modes: {link('prefill')} fills a {link('KV cache')}, and a "
              f"{link('decode')} step reads it cheaply."),
    ("generation", f"Decoding step by step: one token at a time, the cache one position longer each step, with "
                   f"{link('temperature')} and {link('top-k')}."),
    ("params", "Every parameter accounted for, with the arithmetic, and the other totals you may meet."),
    ("exercises", "Check yourself: predict a shape, count a component's parameters."),
]


def stop(url: str) -> int | None:
    """The page's place in the tour (0 for the first), or None when the tour does not visit it."""
    return next((i for i, (u, _) in enumerate(TOUR) if u == url), None)
