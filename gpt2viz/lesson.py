"""The lesson of each component page: the question it answers, and what to notice in the picture of
this run, worked out from the run itself (issue 20, "a lesson on every page").

A page opens with its question, shows the live picture, then says what to notice in it. What there
is to notice depends on the weights and on the text: random weights give nearly uniform attention
rows; the demo model (trained here) has a previous-token head and induction heads; real GPT-2 has
what the literature reports. Every sentence below is computed from the tensors of the run or says
which case the reader is in; none states a rule the run in view could contradict.

Head scores (`head_scores`) follow the usual definitions: previous-token score, the mean attention
from position i to i − 1; first-token score (the attention sink), the mean attention to position 0;
induction score, over the queries whose token occurred before, the mean attention to the token that
followed its most recent earlier occurrence; entropy of each row over the keys it may read,
divided by its maximum ln(i + 1), so that 1 is uniform; mean attention distance, the mean over
queries of Σⱼ a_ij (i − j), how many positions back a head reads on average. `pattern_scores` scores
every head of a block (or of the model) at once; the head finder (heads.py) ranks them. Pure:
tensors in, numbers and strings out.
"""

import math
from dataclasses import dataclass

import torch

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

SINK, PREVIOUS, INDUCTION = 0.5, 0.5, 0.4  # a head is named for a job only from these shares on
LITERATURE = ("In trained GPT-2, the literature reports heads that put most of their weight on the first "
              "token (an *attention sink*: Xiao et al. 2023, *Efficient Streaming Language Models with "
              "Attention Sinks*), previous-token heads, and induction heads that copy a repeat (Olsson et al. "
              "2022, *In-context Learning and Induction Heads*; in GPT-2 small heads 5.1, 5.5, 6.9, 7.2 and "
              "7.10 among others).")


@dataclass(frozen=True)
class HeadScores:
    previous_token: float  # mean attention from i to i − 1, over queries with i ≥ 1
    first_token: float  # mean attention to position 0, over queries with i ≥ 1
    induction: float | None  # mean attention to the token after the earlier occurrence; None: no repeat
    entropy: float  # mean over rows (i ≥ 1) of H(row) / ln(i + 1): 1 is uniform, 0 one key
    repeats: int  # queries whose token occurred earlier
    mean_distance: float = 0.0  # mean over rows (i ≥ 1) of Σⱼ a_ij (i − j): how far back a head reads


SCORE_NAMES = ("previous_token", "induction", "first_token", "entropy", "mean_distance")


def induction_targets(ids, T: int, offset: int = 0) -> list[tuple[int, int]]:
    """(query row r, key j + 1) for every query i = offset + r whose token occurred before: j is the
    token's most recent earlier occurrence, j + 1 the token that followed it."""
    last_seen = {ids[j]: j for j in range(offset)}
    cells = []
    for r in range(T):
        i = offset + r
        if ids[i] in last_seen:
            cells.append((r, last_seen[ids[i]] + 1))
        last_seen[ids[i]] = i
    return cells


def pattern_scores(pattern: torch.Tensor, ids, offset: int = 0) -> dict[str, torch.Tensor | None]:
    """The head scores of every head at once: pattern [..., T, L] (rows: queries at absolute positions
    offset..offset+T-1; columns: keys 0..L-1, L = offset + T) -> {score name: [...]} (float64;
    induction None where no token repeats). Keys after a query are not read, whatever they hold."""
    T, L = pattern.shape[-2:]
    assert offset + T == L and len(ids) >= L, (pattern.shape, offset, len(ids))
    i = torch.arange(offset, L)  # [T] absolute query positions
    j = torch.arange(L, dtype=torch.float64)  # [L]
    p = pattern.double().masked_fill_(j[None, :] > i[:, None], 0)  # [..., T, L]: the keys each query may read
    rows = i >= 1  # row 0 has one key: every score of it is fixed
    r, q = torch.nonzero(rows).squeeze(1), i[rows]  # [n], [n]
    zero = p.new_zeros(p.shape[:-2])

    def mean(x):  # [..., n] -> [...]
        return x.mean(-1) if x.shape[-1] else zero
    h = -torch.special.xlogy(p, p).sum(-1)  # [..., T] nats (0 · ln 0 = 0)
    back = i.double() * p.sum(-1) - p @ j  # [..., T]: Σⱼ a_ij (i − j)
    out = {"previous_token": mean(p[..., r, q - 1]), "first_token": mean(p[..., r, 0]),
           "entropy": mean(h[..., r] / (q + 1).double().log()), "mean_distance": mean(back[..., r])}
    cells = induction_targets(ids, T, offset)
    out["induction"] = p[..., [c[0] for c in cells], [c[1] for c in cells]].mean(-1) if cells else None
    return out


def head_scores(pattern: torch.Tensor, ids: list[int] | tuple[int, ...], offset: int = 0) -> HeadScores:
    """Scores of one head's pattern [T, L] (rows: queries at absolute positions offset..offset+T-1;
    columns: keys 0..L-1, L = offset + T) on the token ids of the keys."""
    s = pattern_scores(pattern, ids, offset)
    ind = s["induction"]
    return HeadScores(float(s["previous_token"]), float(s["first_token"]), None if ind is None else float(ind),
                      float(s["entropy"]), len(induction_targets(ids, pattern.shape[0], offset)),
                      float(s["mean_distance"]))


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


def tokens_notice(ids: list[int] | tuple[int, ...], tokens: list[str] | tuple[str, ...], text: str) -> list[str]:
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
