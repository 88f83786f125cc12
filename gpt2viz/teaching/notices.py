"""The notices of each component page: the question it answers, and what to notice in the picture of
this run, worked out from the run itself.

A page opens with its question, shows the live picture, then says what to notice in it. What there
is to notice depends on the weights and on the text: random weights give nearly uniform attention
rows; the demo model (trained here) has a previous-token head and induction heads; real GPT-2 has
what the literature reports. Every sentence below is computed from the tensors of the run or says
which case the reader is in; none states a rule the run in view could contradict.

The head scores these sentences rest on are defined in `gpt2viz.analysis.heads`. Pure: tensors in,
numbers and strings out.
"""

import math

import torch

from ..analysis.heads import INDUCTION, PREVIOUS, SINK, head_scores

# The question a learner brings to each component page, by component id: one line.
QUESTIONS = {
    "model": "What happens between typing a sentence and GPT-2 guessing the next word?",
    "embed": "How does text become numbers the model can compute with, and how does it know word order?",
    "block": "What does one Transformer block add to each position's vector?",
    "block.ln1": "Why is every vector rescaled before attention and the MLP read it?",
    "block.ln2": "Why is every vector rescaled before attention and the MLP read it?",
    "ln_f": "Why is the stream rescaled one last time before the prediction?",
    "block.attn": "How does a word find the earlier words it needs, such as what ' it' refers to?",
    "block.attn.merge": "How do the heads' separate findings go back into one vector per position?",
    "block.mlp": "What does each position compute on its own, after attention has mixed the positions?",
    "unembed": "How does the last vector become a probability for every token of the vocabulary?",
}

LITERATURE = ("In trained GPT-2, the literature reports heads that put most of their weight on the first "
              "token (an *attention sink*: Xiao et al. 2023, *Efficient Streaming Language Models with "
              "Attention Sinks*), previous-token heads, and induction heads that copy a repeat (Olsson et al. "
              "2022, *In-context Learning and Induction Heads*; in GPT-2 small heads 5.1, 5.5, 6.9, 7.2 and "
              "7.10 among others).")


def weights_kind(weights) -> str:
    """"random", "demo" or "trained" (a checkpoint) of weights with `random` and `demo` flags."""
    return "random" if weights.random else "demo" if weights.demo else "trained"


def attention_notice(pattern: torch.Tensor, ids, offset: int, kind: str, block: int, head: int) -> list[str]:
    """What to notice in one head's pattern [T, L] of this run."""
    T, L = pattern.shape
    s = head_scores(pattern, ids, offset)
    lines = []
    if T == 1:
        top = int(pattern[0].argmax())
        lines.append(f"Decode computes one row: the new token reads all {L} keys, the cached ones and its own, "
                     f"and gives the most weight, {float(pattern[0, top]):.0%}, to key {top}. Switch to full "
                     "sequence to see every position's row and the stripes a head draws.")
    else:
        lines.append("The grey upper triangle is the causal mask: a position never reads a later one.")
    named = False
    if s.previous_token >= PREVIOUS:
        lines.append(f"**A previous-token head:** on average {s.previous_token:.0%} of each position's attention "
                     "goes to the token just before it (the stripe right below the diagonal).")
        named = True
    if s.induction is not None and s.induction >= INDUCTION:
        lines.append(f"**An induction head:** where a token has occurred before ({s.repeats} such positions), "
                     f"{s.induction:.0%} of its attention goes to the token that *followed* the earlier "
                     "occurrence, which is the token it predicts comes next (a stripe parallel to the diagonal).")
        named = True
    if s.first_token >= SINK:
        lines.append(f"**An attention sink:** {s.first_token:.0%} of the attention goes to the first token, "
                     "a place to put weight when nothing else matters.")
        named = True
    if not named and T > 1:
        spread = ("nearly evenly: row i gives each of its i + 1 keys about 1/(i + 1)" if s.entropy >= 0.9
                  else "over several keys, with no one stripe")
        lines.append(f"Each row spreads its attention {spread} (entropy {s.entropy:.2f} of the uniform's).")
    if kind == "random":
        lines.append("These weights are random: q·k is small noise, so softmax gives nearly uniform rows. "
                     "Nothing here is learned; the demo model (sidebar, **demo**) shows learned heads.")
    elif kind == "demo":
        if s.induction is None:
            lines.append("Your text repeats no token, so an induction head has nothing to copy here: "
                         "try a text that repeats (below).")
        lines.append("On the demo model, block 0 head 0 is a previous-token head and block 1's heads are "
                     f"induction heads; this is block {block} head {head}.")
    else:
        lines.append(LITERATURE)
    return lines


def mlp_notice(pre: torch.Tensor, post: torch.Tensor, kind: str) -> list[str]:
    """pre, post: [T, 4d] of one block, in the run's positions."""
    last = pre[-1]  # [4d]
    neg = float((last < 0).double().mean())
    n = last.numel()
    top = int(post[-1].argmax())
    lines = [f"At the last position, {neg:.0%} of the {n:,} neurons have a negative pre-activation: GELU "
             "squashes those into the small dip between about −0.17 and 0, and passes positive ones almost "
             "unchanged.",
             f"The most active neuron there is #{top} ({float(post[-1, top]):.2f}); the MLP works on each "
             "position alone, with no attention between them."]
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


def output_notice(top_prob: float, top_token: str, vocab: int, kind: str) -> list[str]:
    lines = [f"The probabilities are softmax(logits): each logit's exponential divided by the sum over all "
             f"{vocab:,} tokens, so they are positive and add to 1. The top token, {top_token!r}, gets "
             f"{top_prob:.3g}; a uniform guess would give each token 1/{vocab:,} = {1 / vocab:.2g}."]
    if kind == "random":
        lines.append("Random weights have learned nothing, so the top probability is barely above uniform "
                     "and the ranking is noise.")
    return lines


def layernorm_notice(x: torch.Tensor, normalized: torch.Tensor, out: torch.Tensor) -> list[str]:
    """One position's vector entering [d], after centring and scaling [d], and out [d]."""
    lines = [f"Entering: mean {float(x.mean()):.3f}, standard deviation {float(x.std(unbiased=False)):.3f}. "
             f"After centring and scaling: mean {float(normalized.mean()):.1e}, standard deviation "
             f"{float(normalized.std(unbiased=False)):.3f}, whatever the vector was."]
    if torch.equal(normalized, out):
        lines.append("Gain 1 and bias 0 (GPT-2's starting values): out is the scaled vector itself.")
    else:
        lines.append("Then the learned gain and bias stretch and shift each dimension: out differs from the "
                     "scaled vector.")
    return lines


def tokens_notice(ids: list[int] | tuple[int, ...], tokens: list[str] | tuple[str, ...], text: str,
                  vocabulary: str = "gpt2", size: int = 50257) -> list[str]:
    """What the tokenizer made of the text; `vocabulary` is the kind (tokenizer.Vocabulary.kind)."""
    if vocabulary == "char":  # a character model (nanoGPT's shakespeare_char): no pieces, no words
        return [f"{len(ids):,} tokens for {len(text):,} characters: this model's vocabulary is {size:,} symbols, "
                "one token per character, the space and the newline included, so a word of five letters is five "
                "tokens and 'the', 'The' and ' the' share the ids of their letters."]
    words = text.split()
    starts = sum(1 for t in tokens if t.startswith(" ") or t.startswith("␣"))
    return [f"{len(ids):,} tokens for {len(words):,} words: common words are one token each, rare words split "
            f"into pieces. {starts:,} tokens start with a space: the space belongs to the token, so ' the', "
            "'the' and 'The' are three different ids."]


def attention_intuition(nh: int, dh: int) -> str:
    """Query, key and value in plain words; why the scores are divided by √dh; why several heads."""
    return (
        "**In plain words.** Each position makes three vectors from its own stream. Its **query** says what "
        "it is looking for; every position's **key** says what it offers; its **value** is what it hands over "
        "when it is chosen. A position's score for each earlier position is its query's dot product with "
        "that position's key; softmax turns a row of scores into weights that add to 1 (the pattern), and "
        "the output is the weighted sum of the values.\n\n"
        f"**Why divide by √dh.** A dot product of two vectors of dh = {dh} entries, each about unit size, "
        f"spreads with a standard deviation of about √{dh} = {math.sqrt(dh):.3g}: the larger dh, the larger "
        "the scores, and softmax of large scores puts almost all the weight on one key and learns slowly. "
        "Dividing by √dh brings the spread back to about 1 whatever dh is.\n\n"
        f"**Why {nh} heads.** Each head has its own queries, keys and values, {dh} wide, and so its own "
        "pattern: one head can follow the previous word while another looks for a repeated name. Their "
        f"outputs are laid side by side ({nh} × {dh} = {nh * dh}) and projected back into the stream.")


def updates_notice(attn: torch.Tensor, mlp: torch.Tensor, kind: str) -> list[str]:
    """attn, mlp: [T] norms of the two updates a block adds at each position (full sequence)."""
    T = attn.numel()
    first, last = float(attn[0]), float(attn[-1])
    lines = [f"‖Δattn‖ is {first:.2f} at the first position and {last:.2f} at the last; ‖Δmlp‖ ranges from "
             f"{float(mlp.min()):.2f} to {float(mlp.max()):.2f}: the MLP sees one position at a time."]
    if kind == "random" and T > 1:
        lines.append(f"On random weights each attention row averages its i + 1 values nearly evenly, and an "
                     f"average of n random vectors is about 1/√n as long: √{T} = {math.sqrt(T):.2f}, and here "
                     f"the first position's update is {first / last:.2f} times the last's.")
    return lines
