"""The notices of each component page: the question it answers, and what to notice in the picture of
this run, worked out from the run itself.

A page opens with its question, shows the live picture, then says what to notice in it. What there
is to notice depends on the weights and on the text: random weights give nearly uniform attention
rows; the demo model (trained here) has a previous-token head and induction heads; real GPT-2 has
what the literature reports. The head scores these sentences rest on are defined in
`gpt2viz.analysis.heads`. Pure: tensors in, numbers and strings out.

Rules every computed sentence keeps (tests/test_notice_corpus.py calls every notice on a corpus of
weights, texts, modes and temperatures and checks them):

1. Never name a head's job on random weights: say what the pattern is (how even its rows are, how
   much goes to the previous or first token), not what it is for. Nothing there is learned.
2. Name a job only where the text has enough positions to tell it (`HeadScores.shows`): the
   previous-token and first-token scores are read from position 2 on (at position 1 the previous
   token is the first token), and a job needs `heads.MIN_ROWS` scored positions.
3. Induction targets exclude the query and the position before it; a text with no valid target has
   no induction score, and the notice says so and why.
4. One threshold per job (`heads.THRESHOLDS`), the same on every page and in the head finder.
5. State a rule (1/√n, saturation, "barely above uniform", GELU's near-identity) only where this run
   obeys it, and with this run's numbers beside it.
6. Every number printed is the one the chart beside it is drawn from (the same tensor, the same
   positions), and two notices on a page never give one quantity two values.
7. A live check (live_checks.py) accepts what the run cannot tell apart from its answer and nothing
   more: a probability within 10 % of its own size, any head within a printed percent of the best.
"""

import math
from collections import Counter

import torch

from ..analysis.heads import JOBS, MIN_ROWS, SCORES, THRESHOLDS, head_scores
from ..model import ranking
from . import arithmetic
from .arithmetic import fmt, gelu, term
from .head_notices import cannot_tell, job_sentence, no_induction, shares, tells_previous_token

# The question a learner brings to each component page, by component id: one line.
QUESTIONS = {
    "model": "What happens between typing a sentence and GPT-2 guessing the next word?",
    "embed": "How does text become numbers the model can compute with, and how does it know word order?",
    "block": "What does one Transformer block add to each position's vector?",
    "block.ln1": "Why is every vector rescaled before attention and the MLP read it?",
    "block.ln2": "Why is every vector rescaled before attention and the MLP read it?",
    "ln_f": "Why is the stream rescaled one last time before the prediction?",
    "block.attn": "How does a word find the earlier words it needs, such as the word that followed it last time?",
    "block.attn.merge": "How do the heads' separate findings go back into one vector per position?",
    "block.mlp": "What does each position compute on its own, after attention has mixed the positions?",
    "unembed": "How does the last vector become a probability for every token of the vocabulary?",
}
# the question each page without a component of its own opens with, by its url (spec/pages.py)
PAGE_QUESTIONS = {
    "modes": "Why can generation reuse the work done on earlier tokens, and what does the KV cache keep?",
    "params": "Where do the model's parameters sit, and how is each count worked out?",
    "generation": "How does the model write one token at a time, and what does each step reuse?",
    "training": "How does one text teach the model: which positions surprise it, and where does the gradient go?",
    "lens": "What would the model predict if it stopped after each block?",
    "whatif": "Which part of the model does this prediction depend on?",
    "attribution": "Which parts wrote the answer's logit, and how much did each add?",
    "paths": "Through which later part does one part's effect on the answer travel?",
    "patch": "Which part's values make text A's prediction differ from text B's?",
    "heads": "Which head reads the previous token, which copies a repeat, which parks its attention on the first "
             "token?",
}

LITERATURE = ("In trained GPT-2, the literature reports heads that put most of their weight on the first "
              "token (an *attention sink*: Xiao et al. 2023, *Efficient Streaming Language Models with "
              "Attention Sinks*), previous-token heads, and induction heads that copy a repeat (Olsson et al. "
              "2022, *In-context Learning and Induction Heads*).")
# Only for GPT-2 small's shape: the list is that model's.
GPT2_SMALL_INDUCTION = ("In GPT-2 small, tutorials that feed it repeated random tokens (TransformerLens, ARENA) "
                        "find induction heads at block 5 heads 1 and 5, block 6 head 9 and block 7 heads 2 and 10.")


def fixed(value: float, digits: int = 3) -> str:
    """value to `digits` decimals, never a negative zero ("-0.000" reads as a sign that is not there)."""
    return fmt(value, digits)


def weights_kind(weights) -> str:
    """"random", "demo" or "trained" (a checkpoint) of weights with `random` and `demo` flags."""
    return "random" if weights.random else "demo" if weights.demo else "trained"


def attention_notice(pattern: torch.Tensor, ids, offset: int, kind: str, block: int, head: int,
                     gpt2_small: bool = False) -> list[str]:
    """What to notice in one head's pattern [T, L] of this run (the chart beside it draws `pattern`).
    `gpt2_small`: the weights have GPT-2 small's shape, so its literature's head list applies."""
    T, L = pattern.shape
    s = head_scores(pattern, ids, offset)
    lines = []
    if offset:  # decode: one new row against the cache (L = offset + 1 ≥ 2 keys)
        top = int(pattern[0].argmax())
        lines.append(f"Decode computes one row: the new token reads all {L:,} keys, the {offset:,} cached ones and "
                     f"its own, and gives the most weight, {arithmetic.pct(float(pattern[0, top]))}, to key {top}. "
                     "Switch to full sequence to see every position's row and the stripes a head draws.")
    elif T == 1:
        lines.append("A text of one token: its one row reads only itself, with weight 1. Type more words to see a "
                     "pattern.")
    else:
        lines.append("The grey upper triangle is the causal mask: a position never reads a later one.")
    named = False
    if kind != "random":  # on random weights nothing is learned: no job to name
        for key in ("previous_token", "induction", "first_token"):
            value = getattr(s, key)
            if s.shows(key) and key == "previous_token" and not tells_previous_token(pattern, ids, offset):
                lines.append(cannot_tell(pattern, ids, offset))  # a period-2 repeat: an induction head looks there too
                named = True
            elif s.shows(key):
                lines.append(f"**{JOBS[key][0].upper() + JOBS[key][1:]}:** "
                             f"{job_sentence(key, shares(pattern, ids, key, offset))}.")
                named = True
            elif value is not None and value >= THRESHOLDS[key]:
                n = s.repeats if key == "induction" else s.rows
                lines.append(f"Its {SCORES[key].title} is {value:.0%}, but only {n} position{'s' * (n != 1)} of this "
                             f"text score{'s' * (n == 1)} it: too few to say what the head does (from {MIN_ROWS} on).")
    if not named and T > 1:
        lines.append(_pattern_shape(s))
    if kind == "random":
        if s.rows < MIN_ROWS and T > 1 and not offset:
            even = ["half of row 1", "a third of row 2", "a quarter of row 3"][:T - 1]
            split = even[0] if len(even) == 1 else ", ".join(even[:-1]) + " and " + even[-1]
            lines.append(f"On a text this short an even split already gives key 0 {split}, so a large share there "
                         "says nothing about the head.")
        lines.append("These weights are random: q·k is small noise, so softmax gives nearly even rows and no head "
                     "has a job. The demo model (sidebar, **demo**) shows heads that learned one.")
    elif kind == "demo":
        if s.induction is None and T > 1:
            lines.append(no_induction(list(ids[:L])))
        lines.append("The demo model was trained until block 0 head 0 read the previous word and block 1's heads "
                     "copied repeats (measured on held-out sequences when it was made); this is block "
                     f"{block} head {head}, and the numbers above are its pattern on your text.")
    else:
        lines.append(LITERATURE + (" " + GPT2_SMALL_INDUCTION if gpt2_small else ""))
    return lines


def _pattern_shape(s) -> str:
    """What a pattern is, without saying what it is for: how even its rows are, and the previous- and
    first-token shares where the text scores them."""
    spread = ("nearly evenly, close to 1/(i + 1) on each of row i's i + 1 keys" if s.entropy >= 0.9
              else "over several keys" if s.entropy >= 0.5 else "")
    verb = f"spread their attention {spread}" if spread else "concentrate their attention on a few keys"
    shares = (f"; on average from position 2 on, {s.previous_token:.0%} goes to the token just before and "
              f"{s.first_token:.0%} to the first token" if s.previous_token is not None else "")
    return (f"On average its rows {verb} (their mean entropy is {s.entropy:.2f} of an even row's: 1 is "
            f"perfectly even, 0 all on one key){shares}.")


def top_neuron(post: torch.Tensor) -> int:
    """The neuron the "Most active neurons" chart puts first: the largest mean over the positions of
    post [T, 4d] (the first on a tie, as the chart's stable sort)."""
    return int(post.double().mean(0).argmax())


def mlp_notice(pre: torch.Tensor, post: torch.Tensor, kind: str) -> list[str]:
    """pre, post: [T, 4d] of one block, in the run's positions: the GELU chart draws every entry of
    pre, the neuron chart ranks the neurons of post by their mean over the positions (its one row in
    decode), and so does this notice."""
    pre = pre.double()
    n, T = pre.shape[-1], pre.shape[0]
    neg = float((pre < 0).double().mean())
    positive = pre[pre > 0]
    small = float((positive < 1).double().mean()) if positive.numel() else 0.0
    mean = post.double().mean(0)  # [4d]: what "Most active neurons" ranks
    top = top_neuron(post)
    where = "at the one position computed" if T == 1 else f"on average over the {T} positions"
    lines = [f"{neg:.1%} of the {T * n:,} pre-activations ({T} position{'s' * (T != 1)} × {n:,} neurons) are "
             "negative: GELU squashes those into the small dip between about −0.17 and 0. It keeps large positive "
             f"ones almost unchanged, but shrinks small ones: GELU(0.5) = {gelu(0.5):.2f}, GELU(1) = {gelu(1):.2f}, "
             f"and {small:.0%} of the positive ones here are below 1.",
             f"The most active neuron {where} is #{top} ({float(mean[top]):.2f}), the first bar of the chart "
             "below; the MLP works on each position alone, with no attention between them."]
    if kind == "random":
        lines.append("On random weights the pre-activations are symmetric around 0, so about half are negative; "
                     "trained MLPs have a few neurons that fire strongly for particular tokens or contexts.")
    return lines


def residual_notice(norms: torch.Tensor, labels: list[str]) -> list[str]:
    """norms: [points, T] of the stream's L2 norm at each depth."""
    mean = norms.double().mean(dim=1)  # [points]
    first, last = float(mean[0]), float(mean[-1])
    trend = "grows" if last > first * 1.05 else "shrinks" if last < first * 0.95 else "stays about the same"
    return [f"The stream's mean norm {trend} from {first:.2f} ({labels[0]}) to {last:.2f} ({labels[-1]}): "
            "each block adds its two updates to it, so what one block writes, every later block can read."]


def output_notice(top_prob: float, top_token: str, vocab: int, kind: str, tied: int = 1) -> list[str]:
    """`tied`: how many tokens tie for the top (model/ranking.py), the first bar's among them."""
    top = (f"The top token, {top_token!r}, gets {top_prob:.3g}" if tied == 1 else
           f"{tied:,} tokens tie for the top, each with about {top_prob:.3g}: their logits lie within "
           f"{ranking.TIE_NATS:g} of each other, so their probabilities differ by less than 0.01%, and the bars "
           f"put them in token-id order, not in an order the model prefers")
    lines = [f"The probabilities are softmax(logits): each logit's exponential divided by the sum over all "
             f"{vocab:,} tokens, so they are positive and add to 1. {top}; a uniform guess would give each token "
             f"1/{vocab:,} = {1 / vocab:.2g}."]
    if kind == "random":
        lines.append(f"Random weights have learned nothing: the top probability, {top_prob * vocab:.1f} times the "
                     f"uniform 1/{vocab:,}, is what the largest of {vocab:,} noisy logits reaches by chance, and "
                     "the ranking is noise.")
    return lines


# equal logits give probabilities equal to within a few ulps (a vectorised exp may round its last lanes apart), and
# distinct float32 logits give probabilities apart by 1e-7 of themselves at least: this tells the two apart
SAME_P = 1 - 1e-9


def _top_k_kept(top_k: int, kept: int, V: int, rest: bool = True) -> str:
    """What top-k kept: `kept` tokens, more than k where tokens tie with the k-th, all V where that tie reaches the
    least likely (on the demo model 49,957 untrained tokens tie: any k past the 300 above them keeps every token)."""
    most = "the most likely token" if top_k == 1 else f"the {top_k:,} most likely tokens"
    if kept >= V:
        return (f"Top-k {top_k:,} cuts nothing here: the {top_k:,}th most likely token ties with every token below "
                f"it, and top-k keeps all that tie with the {top_k:,}th, so all {V:,} are kept")
    tie = f" (with {kept - top_k:,} more that tie with the {top_k:,}th)" if kept > top_k else ""
    said = f"Top-k keeps {most}{tie}"
    if not rest:
        return said
    return said + (" and gives it 1" if kept == 1 else " and rescales them to add to 1") + \
        f"; the other {V - kept:,} get exactly 0."


def temperature_notice(before: torch.Tensor, after: torch.Tensor, temperature: float, top_k: int | None,
                       top_p: float | None = None) -> list[str]:
    """before, after: [V] the distribution at temperature 1 and at `temperature` with `top_k` and then `top_p`
    (float64, as the two charts beside it draw them). Only top-k, top-p, or temperature 0 (greedy), makes a
    probability 0; a cut that keeps every token cuts nothing."""
    top, V = ranking.top(before.log()), after.numel()
    was, now = f"{float(before[top]):.3g}", f"{float(after[top]):.3g}"
    line = (f"The top token's probability stays at {was}. " if was == now
            else f"The top token's probability goes from {was} to {now}. ")
    kept = int((after > 0).sum())
    k_cuts = top_k is not None and top_k < V
    p_cuts = top_p is not None and top_p < 1
    if temperature == 0:
        line += f"Temperature 0 is greedy: the top token gets 1 and the other {V - 1:,} get 0."
    elif k_cuts and not p_cuts:
        line += _top_k_kept(top_k, kept, V) + " Temperature alone never makes a probability 0."
    elif p_cuts:
        # top-k's own count, from the ranking at temperature 1 (a temperature above 0 keeps it): the k-th token and
        # every token that ties with it, as transformers' TopKLogitsWarper keeps them
        by_k = int((before >= before.topk(top_k).values[-1] * SAME_P).sum()) if k_cuts else V
        those = "it" if by_k == 1 else f"those {by_k:,}"
        which = (f"{_top_k_kept(top_k, by_k, V, rest=False)}; of {those}, top-p keeps the fewest" if k_cuts
                 else "Top-p keeps the fewest most likely tokens")
        least = before[after > 0].min()
        tied = (before >= least * SAME_P) & (before <= least / SAME_P)  # [V]: the least kept and its equals
        arbitrary = (f" (the cut falls inside {int(tied.sum()):,} tokens of equal probability: which of them are kept "
                     "is arbitrary)" if (tied & (after == 0)).any() else "")
        line += (f"{which} whose probabilities together reach {top_p:g}: {kept:,} {'token' if kept == 1 else 'tokens'} "
                 f"here{arbitrary}, rescaled to add to 1, and the other {V - kept:,} get exactly 0. Temperature alone "
                 "never makes a probability 0.")
    else:
        zero = int((after == 0).sum())
        smallest = f"{float(after[after > 0].min()):.2g}"
        if temperature == 1:
            line += ("At temperature 1, with every token kept, sampling draws from softmax(logits) itself: the two "
                     "charts are the same. Below 1 the top tokens take more of the probability; above 1 it spreads "
                     "out. ")
        if zero:  # exp underflows: below half of float64's smallest subnormal, 4.9e-324, a value is stored as 0
            line += (f"Temperature alone never makes a probability 0, but {zero:,} of these {V:,} "
                     f"{'is' if zero == 1 else 'are'} smaller than the smallest number a float64 can hold (about "
                     f"5 × 10⁻³²⁴) and {'is' if zero == 1 else 'are'} stored as 0; the smallest stored is {smallest}.")
        else:
            line += (f"Temperature alone never makes a probability 0: all {V:,} tokens keep one, the smallest here "
                     f"{smallest}.")
    return [line.rstrip()]


def layernorm_notice(x: torch.Tensor, normalized: torch.Tensor, out: torch.Tensor, eps: float) -> list[str]:
    """One position's vector entering [d], after centring and scaling [d], and out [d]."""
    var = float(x.double().var(unbiased=False))
    sd = float(normalized.double().std(unbiased=False))
    expected = math.sqrt(var / (var + eps))
    tiny = round(expected, 3) < 1  # ε shows in the printed digits
    lines = [f"Entering: mean {fixed(float(x.double().mean()))}, standard deviation {math.sqrt(var):.3f}. After "
             f"centring and scaling: mean {fixed(float(normalized.double().mean()))}, standard deviation {sd:.3f}"
             + (f" = √(σ²/(σ² + ε)): 1 up to ε = {eps:g}, which shows here because this vector's variance σ² is "
                f"only {var:.2g}." if tiny else f": 1, whatever the vector's size (ε = {eps:g} is negligible beside "
                f"σ² = {var:.3g}).")]
    if torch.equal(normalized, out):
        lines.append("Gain 1 and bias 0 (GPT-2's starting values): out is the scaled vector itself.")
    else:
        lines.append("Then the learned gain and bias stretch and shift each dimension: out differs from the "
                     "scaled vector.")
    return lines


def layernorm_why(entering: float, leaving: float, d: int, positions: int = 2) -> str:
    """The LayerNorm page's answer to its own question, with this run's stream: `entering` and `leaving`,
    the stream's mean norm over the run's `positions` into block 0 and out of the last block (one position:
    decode's new one, or a 1-token text, whose norm is no mean of the text's)."""
    change = "grows" if leaving > entering * 1.05 else "shrinks" if leaving < entering * 0.95 else "stays"
    whose = ("At the one position computed, the stream's norm" if positions == 1 else
             f"Over this text's {positions:,} positions, the stream's mean norm")
    return (f"**Why rescale?** {whose} {change} from {entering:.2f} (into block 0) to "
            f"{leaving:.2f} (out of the last block), as every block adds its updates. LayerNorm hands each sublayer a "
            f"vector of mean 0 and spread 1 whatever that size (a norm of about √d = {math.sqrt(d):.1f}), so the "
            "weights reading it see inputs of one size at every depth, which keeps training stable.")


CONTRACTIONS = {"'s", "'t", "'re", "'ve", "'m", "'ll", "'d"}  # GPT-2's pre-tokenizer splits these off a word


def token_kind(token: str) -> str:
    """What a token is, from its readable form (spaces as ␣, newlines as ↵): "newline" (whitespace with
    a line break), "space" (spaces or tabs alone), "mark" (ASCII punctuation, a leading space allowed),
    "contraction" ('s, 't, ...) or "piece" (a word or part of one: letters, digits, emoji bytes)."""
    if token and all(c in "␣↵⇥ " for c in token):
        return "newline" if "↵" in token else "space"
    bare = token.lstrip("␣ ")
    if bare in CONTRACTIONS:
        return "contraction"
    if bare and all(not c.isalnum() and c.isascii() for c in bare):
        return "mark"
    return "piece"


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'s' * (n != 1)}"


def tokens_notice(ids: list[int] | tuple[int, ...], tokens: list[str] | tuple[str, ...], text: str,
                  vocabulary: str = "gpt2", size: int = 50257) -> list[str]:
    """What the tokenizer made of the text, each claim only where this text shows it; `vocabulary` is
    the kind (tokenizer.Vocabulary.kind)."""
    if vocabulary == "char":  # a character model (nanoGPT's shakespeare_char): no pieces, no words
        return [f"{len(ids):,} tokens for {len(text):,} characters: this model's vocabulary is {size:,} symbols, "
                "one token per character, the space and the newline included, so a word of five letters is five "
                "tokens and 'the', 'The' and ' the' share the ids of their letters."]
    words = text.split()
    kinds = [token_kind(t) for t in tokens]
    count = {k: kinds.count(k) for k in ("mark", "newline", "space", "contraction", "piece")}
    # a token within one word (GPT-2's pre-tokenizer never joins two): what the word claims rest on
    within = all(not any(c in "␣↵⇥ " for c in t.lstrip("␣ ")) for t, k in zip(tokens, kinds)
                 if k not in ("newline", "space"))
    parts = []
    if within and len(ids) == len(words) and not count["newline"] + count["space"]:
        # each non-space token lies within one word and each word holds one at least: one token each
        parts.append("each word is a single token, as common words are")
    else:
        for kind, one, many in (("mark", "is punctuation", "are punctuation"),
                                ("newline", "is a line break", "are line breaks"),
                                ("space", "is spaces alone", "are spaces alone"),
                                ("contraction", "is a contraction split off ('s, 't, 're, …)",
                                 "are contractions split off ('s, 't, 're, …)")):
            if count[kind]:
                parts.append(f"{count[kind]:,} {one if count[kind] == 1 else many}")
        if within and count["piece"] > len(words):  # more pieces than words: some word holds two at least
            parts.append("some words split into pieces (rare words, numbers, emoji and accents do)")
    line = f"{_plural(len(ids), 'token')} for {_plural(len(words), 'space-separated word')}" + (
        ": " + "; ".join(parts) + "." if parts else ".")
    starts = sum(1 for t in tokens if t.startswith(" ") or t.startswith("␣"))
    if starts:
        line += (f" {_plural(starts, 'token')} start{'s' * (starts == 1)} with a space: the space belongs to the "
                 "token, so ' the', 'the' and 'The' are three different ids.")
    return [line]


def attention_intuition(nh: int, dh: int) -> str:
    """Query, key and value in plain words; why the scores are divided by √dh; why several heads."""
    return (
        "**In plain words.** Each position makes three vectors from its own normalised stream Z₁. Its **query** "
        "says what it is looking for; every position's **key** says what it offers; its **value** is what it "
        "hands over when it is chosen. A position's score for itself and for each earlier position is its "
        "query's dot product with that position's key; softmax turns a row of scores into weights that add to "
        "1 (the pattern), and the output is the weighted sum of the values.\n\n"
        f"**Why divide by √dh.** A dot product of two vectors of dh = {dh} entries, each about unit size, "
        f"spreads with a standard deviation of about √{dh} = {math.sqrt(dh):.3g}: the larger dh, the larger "
        "the scores, and softmax of large scores puts almost all the weight on one key and learns slowly. "
        "Dividing by √dh brings the spread back to about 1 whatever dh is.\n\n"
        f"**Why {nh} heads.** Each head has its own queries, keys and values, {dh} wide, and so its own "
        "pattern: one head can follow the previous word while another looks for a repeated name. Their "
        f"outputs are laid side by side ({nh} × {dh} = {nh * dh}) and projected back into the stream.")


def mlp_intuition(d: int, d_mlp: int) -> str:
    """What an MLP neuron is, why the layer widens and narrows, why it needs a non-linearity."""
    return (
        f"**In plain words.** Each of the {d_mlp:,} **neurons** has two vectors of d = {d} numbers. The first, a "
        "column of W_fc, is what it detects: its dot product with the position's normalised stream Z₂ is the "
        "neuron's pre-activation, large when the stream points its way. The second, a row of W_proj, is what it "
        "writes: GELU of the pre-activation sets how much of that row is added back into the stream. Trained "
        "MLPs have been read this way as key-value memories (Geva et al. 2021, *Transformer Feed-Forward Layers "
        "Are Key-Value Memories*): a neuron that detects a context and writes a push toward the tokens that tend "
        "to follow it.\n\n"
        f"**Why widen to {d_mlp // d if d_mlp % d == 0 else round(d_mlp / d, 2)}d and narrow back.** Each neuron "
        f"is one pattern to detect: {d_mlp:,} of them can hold more patterns than the stream has dimensions, and "
        f"the projection adds their writes back into the {d} the stream carries.\n\n"
        "**Why a non-linearity.** Without GELU the two matrices would multiply into one d × d matrix: "
        "Z₂ W_fc W_proj is a single linear map, however wide the middle. GELU lets a neuron stay near 0 until its "
        "pattern is present, so the layer can compute what no linear map can.")


def updates_notice(attn: torch.Tensor, mlp: torch.Tensor, kind: str, block: int | None = None,
                   tokens: list[str] | tuple[str, ...] | None = None) -> list[str]:
    """attn, mlp: [T] norms of the two updates a block adds at each position (full sequence): what the
    two charts beside it draw; `block` and the T readable `tokens`: which block, on which text (why
    the 1/√n rule fails differs in block 0, whose input is the embeddings alone)."""
    T = attn.numel()
    first, last = float(attn[0]), float(attn[-1])
    lines = [f"‖Δattn‖ is {first:.2f} at the first position and {last:.2f} at the last; ‖Δmlp‖ ranges from "
             f"{float(mlp.min()):.2f} to {float(mlp.max()):.2f}: the MLP works on each position alone, so how much "
             "it adds depends on that position's own stream, not on how many positions came before it."]
    if kind == "random" and T > 1 and last > 0:
        ratio, root = first / last, math.sqrt(T)
        if abs(ratio / root - 1) <= ROOT_N_TOLERANCE:
            lines.append(f"On random weights each attention row averages its i + 1 values nearly evenly, and an "
                         f"average of n independent random vectors is about 1/√n as long: √{T} = {root:.2f}, and "
                         f"here the first position's update is {ratio:.2f} times the last's.")
        else:
            lines.append(f"Here the first position's update is {ratio:.2f} times the last's, not √{T} = {root:.2f}: "
                         + not_root_n(block, tokens))
    return lines


def not_root_n(block: int | None, tokens) -> str:
    """Why a row's average is not 1/√n as long: in block 0 (its input the embeddings alone) a repeated
    token, or chance; in a later block, streams that already hold averages of earlier positions."""
    if block == 0 and tokens is not None:
        token, n = Counter(tokens).most_common(1)[0]
        if n > 1:
            return (f"the values a row averages are not independent here, because this text repeats tokens "
                    f"({token!r} {n} times), and copies of one token share its embedding row, so their values lean "
                    "the same way.")
        return ("1/√n is what an average of n independent random vectors gives on average over many draws; one "
                "text's first and last positions scatter around it by chance.")
    return ("in this block each position's stream already holds averages of earlier ones, so the values a row "
            "averages are not independent, and an average of n of them is not 1/√n as long.")


ROOT_N_TOLERANCE = 0.15  # the 1/√n rule is stated only where the run is within 15 % of it


# ---------------------------------------------------------------------------- worked examples
# One vector followed through a page's computation with this run's numbers, beside the picture it is
# drawn from. Each step is printed as an equation of printed numbers whose result is computed from those
# printed numbers (arithmetic.Sheet), so it holds to the last digit for a reader who redoes it; a
# result the next step uses is used as printed. The operands get as many decimals as it takes for each
# result to be the chart's value as its hover rounds it (arithmetic.enough).
NUMBER_WORDS = {1: "one", 2: "two", 3: "three"}


def attention_worked(scores: torch.Tensor, pattern: torch.Tensor, v: torch.Tensor, z: torch.Tensor,
                     keys: list[str]) -> str:
    """The last query of one head: scores [L] (already divided by √dh), its pattern row [L] (the
    chart's), the values v [L, dh] it weighs and its output z [dh] (the ‖z‖ strip's last bar); keys:
    the L key tokens."""
    s = scores.double()
    L = s.numel()
    m = float(s.max())
    e = (s - m).exp()  # [L]: subtracting the max changes no weight, and no exponential overflows
    total = float(e.sum())
    top = s.topk(min(3, L)).indices.tolist()

    def prints(w: arithmetic.Sheet) -> str:
        steps = []
        for j in top:
            ej = w.result(f"e^({w.num(float(s[j]))} − {term(w.num(m))})", float(e[j]), w.fewer)
            aj = w.result(f"{ej} ÷ {w.num(total)}", float(pattern[j]), 3)  # the chart's weight, as its hover rounds it
            steps.append(f"key {j} {keys[j]!r}: e^({w.num(float(s[j]))} − {term(w.num(m))}) = {ej}, "
                         f"and {ej} ÷ {w.num(total)} = **{aj}**")
        return "; ".join(steps)
    terms = (pattern.double()[:, None] * v.double()).norm(dim=-1)  # [L]: ‖a_j v_j‖
    k = int(terms.argmax())
    listed = ("The only score" if L == 1 else f"The row's {NUMBER_WORDS[L]} scores" if len(top) == L else
              f"The {NUMBER_WORDS[len(top)]} largest scores")
    weights = "The row's one weight is 1." if L == 1 else f"The row's {L} weights add to 1."
    return (f"**Worked example: the last row.** Softmax takes each score minus the row's largest, exponentiates it "
            f"and divides by the sum S of all {L} exponential{'s' if L > 1 else ''}. {listed}: "
            f"{arithmetic.enough(prints, 3)}. {weights} The head's output for this "
            f"position is z = Σⱼ aⱼ vⱼ, the weighted average of the values; its largest term is key {k} "
            f"{keys[k]!r} (‖a v‖ = {float(terms[k]):.3f}). ‖z‖ = {float(z.double().norm()):.3f} is the last bar of "
            "the ‖z‖ strip: the length of that average, short when the weights spread over values that point "
            "different ways, long when one value dominates.")


def output_worked(logits: torch.Tensor, z_f: torch.Tensor, w_u: torch.Tensor, tokens) -> str:
    """logits [V] of the last position (float64), z_f [d] its final LayerNorm output, w_u [d, V] the
    unembedding (W_Eᵀ when tied); tokens: the readable token of an id (a mapping of the top two at least)."""
    top = ranking.ranked(logits, 2).tolist()
    first, second = float(logits[top[0]]), float(logits[top[1]])
    ratio = math.exp(first - second)  # p(first) / p(second), the softmax's own ratio
    row = w_u[:, top[0]].double()
    nz, nr = float(z_f.double().norm()), float(row.norm())
    cos = first / (nz * nr)  # the angle's cosine that makes the product the recorded logit

    def gap(w: arithmetic.Sheet) -> str:
        a, b = w.num(first), w.num(second)
        difference = w.result(f"{a} − {term(b)}", None)  # the difference of the two printed logits
        times = w.result(f"e^{difference}", ratio, 3 if ratio < 100 else 1)
        return (f"{tokens[top[0]]!r} has logit {a} and {tokens[top[1]]!r} {b}: a gap of "
                f"{a} − {term(b)} = {difference}, so the first is e^{difference} = {times} times as likely as "
                "the second")

    def dot(w: arithmetic.Sheet) -> str:
        return (f"logit({tokens[top[0]]!r}) = Z_f · W_U[:, {top[0]}] = ‖Z_f‖ ‖W_U[:, {top[0]}]‖ cos θ = "
                + w.equation(f"{w.num(nz)} × {w.num(nr)} × {term(w.num(cos, 1))}", first, 3))
    return (f"**Worked example: the top two.** {arithmetic.enough(gap, 3)}, whatever the other tokens' logits "
            f"(the softmax divides both by the same sum). Each logit is a dot product: "
            f"{arithmetic.enough(dot, 3)}.")


def exact_gelu(pre: torch.Tensor, post: torch.Tensor) -> bool:
    """Whether post is the exact (erf) GELU of pre rather than GPT-2's tanh form: the nearer of the two."""
    x, y = pre.double().flatten(), post.double().flatten()
    tanh = torch.nn.functional.gelu(x, approximate="tanh")
    return bool((torch.nn.functional.gelu(x) - y).abs().sum() < (tanh - y).abs().sum())


def mlp_worked(pre: torch.Tensor, post: torch.Tensor, w_proj: torch.Tensor, neuron: int) -> str:
    """One neuron (the chart's first bar) at the last position: pre, post [T, 4d]; w_proj [4d, d]."""
    a, g = float(pre[-1, neuron]), float(post[-1, neuron])
    r = float(w_proj[neuron].double().norm())
    exact = exact_gelu(pre[-1], post[-1])  # a nanoGPT model's exact GELU, a × Φ(a)

    def steps(w: arithmetic.Sheet) -> str:
        pa = w.num(a)
        applied = f"{pa} × Φ({pa})" if exact else f"GELU({pa})"
        fired = w.result(applied, g, w.fewer)  # the chart's bar; the next step's operand, as printed
        form = "GELU(a), here the exact form a × Φ(a) (Φ: the standard normal distribution function), is " \
            if exact else ""
        norm = w.result(f"{fired.lstrip('-')} × {w.num(r)}", abs(g) * r, 3)
        return (f"Its pre-activation is a = {pa} (Z₂'s dot product with column {neuron} of W_fc, plus its "
                f"bias), and {form}{applied} = {fired}. It writes back {fired} × row {neuron} of W_proj, a "
                f"d-vector of norm {fired.lstrip('-')} × {w.num(r)} = {norm}")
    return (f"**Worked example: neuron #{neuron} at the last position.** {arithmetic.enough(steps, 3)}: "
            f"one of the {w_proj.shape[0]:,} terms that add up to Δmlp there.")


def layernorm_worked(x: torch.Tensor, normalized: torch.Tensor, out: torch.Tensor, gain: torch.Tensor,
                     bias: torch.Tensor | None, eps: float, position: int) -> str:
    """One position through a LayerNorm, with the chart's vectors: x entering [d], normalized [d] and
    out [d] as recorded, gain and bias [d] (bias None: a model without biases). The coordinate taken
    apart is the chart's tallest bar of the centred row."""
    x64 = x.double()
    d, mu = x64.numel(), float(x64.mean())
    var = float(x64.var(unbiased=False))
    j = int((x64 - mu).abs().argmax())
    nj, oj, gj = float(normalized[j]), float(out[j]), float(gain[j])
    bj = float(bias[j]) if bias is not None else 0.0
    after = normalized.double()
    epsilon = f"{eps:.10f}".rstrip("0")  # 0.00001, as a calculator takes it

    def steps(w: arithmetic.Sheet) -> str:  # σ² with 3 more decimals: √ of a small variance magnifies its rounding
        total, variance = w.num(float(x64.sum())), w.num(var, 3)
        mean = w.result(f"{total} ÷ {d}", mu)
        root = w.result(f"√({variance} + {epsilon})", math.sqrt(var + eps))
        centred = f"({w.num(float(x[j]))} − {term(mean)}) ÷ {root}"
        scaled = w.result(centred, nj, w.fewer)  # the chart's bar; the next step's operand, as printed
        return (f"Its {d} numbers add to {total}, so μ = {total} ÷ {d} = {mean}; their variance is "
                f"σ² = {variance} (the mean of (x − μ)²), so √(σ² + ε) = √({variance} + {epsilon}) = "
                f"{root}. Coordinate {j}, the tallest bar of the centred row: {centred} = {scaled}; then gain and "
                f"bias: " + w.equation(f"{w.num(gj)} × {term(scaled)} + {term(w.num(bj))}", oj, 3))
    if var >= LN_SCALE_FREE * eps:  # then √(σ² ÷ (σ² + ε)), the standard deviation after, is 1 to 3 decimals
        scale = (f"σ² is {var / eps:,.0f} times ε, so dividing by √(σ² + ε) takes out x's scale")
    else:
        scale = (f"dividing by √(σ² + ε) leaves a standard deviation of √(σ² ÷ (σ² + ε)), and ε = {epsilon} is "
                 f"not negligible beside this vector's σ² = {var:.2g}, only {var / eps:,.0f} times ε")
    return (f"**Worked example: position {position}.** {arithmetic.enough(steps, 3)}. "
            f"After: mean {fixed(float(after.mean()))} and standard deviation "
            f"{float(after.std(unbiased=False)):.3f}: {scale}.")


LN_SCALE_FREE = 1000  # σ² at least this many times ε: LayerNorm's output has standard deviation 1 to 3 decimals


def block_worked(x: torch.Tensor, attn: torch.Tensor, mid: torch.Tensor, mlp: torch.Tensor,
                 out: torch.Tensor, position: int) -> str:
    """One position's running sum through a block: x, Δattn, x′ = x + Δattn, Δmlp, x + Δattn + Δmlp [d]."""
    n = {k: float(t.double().norm()) for k, t in (("x", x), ("a", attn), ("mid", mid), ("m", mlp), ("out", out))}

    def prints(w: arithmetic.Sheet) -> str:
        first = w.result(f"{w.num(n['a'])} ÷ {w.num(n['x'])}", n["a"] / n["x"], 2)  # the ratio chart's last bar
        second = w.result(f"{w.num(n['m'])} ÷ {w.num(n['mid'])}", n["m"] / n["mid"], 2)
        return (f"‖xₙ‖ = {w.num(n['x'])}; + Δattn, of norm {w.num(n['a'])} (‖Δattn‖ ÷ ‖xₙ‖ = {w.num(n['a'])} ÷ "
                f"{w.num(n['x'])} = {first}, the last bar of the first ratio chart), gives "
                f"‖x′ₙ‖ = {w.num(n['mid'])}; + Δmlp, of norm {w.num(n['m'])} (‖Δmlp‖ ÷ ‖x′ₙ‖ = {w.num(n['m'])} ÷ "
                f"{w.num(n['mid'])} = {second}), gives ‖xₙ₊₁‖ = {w.num(n['out'])}")
    return (f"**Worked example: position {position}, a running sum.** The block adds, it never overwrites: "
            f"{arithmetic.enough(prints, 2)}. Norms do not add: two updates pointing different ways lengthen the "
            "sum by less than their own lengths.")


SENTENCES = (attention_notice, mlp_notice, residual_notice, output_notice, temperature_notice, layernorm_notice,
             layernorm_why, tokens_notice, attention_intuition, mlp_intuition, updates_notice, not_root_n,
             attention_worked, output_worked, mlp_worked, layernorm_worked, block_worked)
NOT_SENTENCES = (fixed,  # a number's digits, no sentence
                 weights_kind,  # "random", "demo" or "trained": a label the sentences branch on
                 token_kind)  # a token's class, which tokens_notice counts
