"""The guided tour a lecturer can follow in class: pages in order, one sentence each."""

# (url path of the page, what to show there in one sentence)
TOUR = [
    ("overview", "The whole model on one screen: text in, logits out, every box a page and every count exact."),
    ("tokens", "Text becomes token ids; each id and each position picks a row of wte and wpe, and their sum is x₀."),
    ("block", ("One Transformer block: two updates added to the residual stream, attention then the MLP, each "
              "after its own LayerNorm.")),
    ("layernorm", "One position's vector as it enters, centred, scaled, then given a gain and a bias."),
    ("attention", "Each head scores the positions so far, masks the future, and averages their values."),
    ("merge", "The heads' outputs laid side by side and projected back into the stream as Δattn."),
    ("mlp", "Each position on its own: widen to 4d, GELU, narrow back to d; two thirds of a block's parameters."),
    ("output", "The final LayerNorm and the tied unembedding turn the last stream into next-token probabilities."),
    ("modes", "The same weights in four modes: prefill fills a KV cache, and a decode step reads it cheaply."),
    ("generation", "Decoding step by step: one token at a time, the cache one position longer each step."),
    ("params", "Every parameter accounted for, with the arithmetic, and the other totals you may meet."),
    ("exercises", "Check yourself: predict a shape, count a component's parameters."),
]


def stop(url: str) -> int | None:
    """The page's place in the tour (0 for the first), or None when the tour does not visit it."""
    return next((i for i, (u, _) in enumerate(TOUR) if u == url), None)
