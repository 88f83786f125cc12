"""What a trained model shows on each page where random weights show noise: one line per page,
measured on the demo model (trained here) running its ready repeat text (teaching/prompts.py), so
that a student who follows the tour on the default random weights still sees something learned
beside the values in front of them.

Every number is measured on the model handed in, when the lines are made: nothing is copied from a
past run. The lines describe patterns and effects ("puts 97 % of its attention on the previous
token", "knocking it out moves p from 0.918 to 0.077"); they name no head's job."""

import re
from dataclasses import dataclass

import torch

from ..analysis.attribution import attribute, component_names
from ..analysis.heads import score_patterns
from ..analysis.lens import logit_lens
from ..analysis.whatif import last_logits
from ..model import ranking
from ..model.gpt2 import GPT2
from ..model.interventions import Intervention
from ..model.modes import run
from ..model.tokenizer import encode, readable
from ..spec.schema import Mode
from .prompts import Prompt


@dataclass(frozen=True)
class Measured:
    """The demo run's numbers the lines print."""
    last: str  # the text's last token, readable
    answer: str  # the greedy next token, readable
    p: float  # its probability
    vocab: int
    previous: tuple[int, int, float]  # (block, head, share on the previous token), the best head
    induction: tuple[int, int, float]  # (block, head, share on the token after the earlier occurrence)
    knocked: tuple[int, int, float]  # (block, head, p of the answer with that head's output zeroed): the largest drop
    knocked_last: tuple[int, float]  # (head, p) of the last block's head whose knock-out drops p the most
    mlp: tuple[float, ...]  # p of the answer with each block's MLP output zeroed
    no_position: float  # p of the answer with the position embeddings zeroed
    lens: tuple[float, ...]  # p of the answer read after each block (the logit lens)
    greedy: str  # the next few greedy tokens
    gain: tuple[float, float]  # ln_f's learned gain, smallest and largest
    norms: tuple[float, float]  # the stream's mean norm into block 0 and out of the last block
    update: tuple[int, float, float]  # (block, mean ‖Δattn‖/‖x‖ at repeated tokens, at tokens seen first)
    share: tuple[str, float, float]  # (the part with the largest direct share of the answer's logit, it, the logit)
    pair: tuple[str, float, str, float]  # the pair's B: (A's answer, its p, B's answer, its p)


def _p(model: GPT2, ids, token: int, interventions=()) -> float:
    return float(torch.softmax(last_logits(model, ids, list(interventions))[0].double(), -1)[token])


@torch.no_grad()
def measure(model: GPT2, repeat: Prompt, pair: Prompt) -> Measured:
    """Run the demo model on its repeat text (and the pair's B) and measure what the lines say."""
    cfg, ids = model.config, encode(repeat.text)
    trace = run(model, ids, Mode.FULL, names=["blocks.*.attn.pattern", "blocks.*.attn.out", "blocks.*.resid_pre",
                                              "blocks.*.resid_post", "ln_f.var", "blocks.*.mlp.out", "embed.out",
                                              "blocks.*.attn.z", "logits"])
    probs = torch.softmax(trace.at("logits", -1)[0].double(), -1)  # [V]
    answer = ranking.top(probs.log())
    rows = score_patterns([trace[f"blocks.{b}.attn.pattern"][0] for b in range(cfg.n_layer)], ids)

    def best(key: str) -> tuple[int, int, float]:
        row = max((r for r in rows if r[key] is not None), key=lambda r: r[key])
        return row["block"], row["head"], row[key]
    heads = [(b, h, _p(model, ids, answer, [Intervention(f"blocks.{b}.attn.z", head=h)]))
             for b in range(cfg.n_layer) for h in range(cfg.n_head)]
    generated = list(ids)
    for _ in range(4):
        generated.append(ranking.top(last_logits(model, generated, [])[0]))
    repeated, seen = [], set()
    for t in ids:
        repeated.append(t in seen)
        seen.add(t)
    ratios = torch.stack([trace[f"blocks.{b}.attn.out"][0].norm(dim=-1) / trace[f"blocks.{b}.resid_pre"][0].norm(dim=-1)
                          for b in range(cfg.n_layer)]).double()  # [n_layer, T]
    mask = torch.tensor(repeated)
    b_up = int((ratios[:, mask].mean(1) - ratios[:, ~mask].mean(1)).argmax())
    attr = attribute(model, trace, answer)
    top = int(attr.values.abs().argmax())
    b_ids = encode(pair.text_b)
    b_probs = torch.softmax(last_logits(model, b_ids, [])[0].double(), -1)
    b_top = ranking.top(b_probs.log())
    gain = model.ln_f.weight.detach().double()
    return Measured(
        readable(ids[-1]), readable(answer), float(probs[answer]), cfg.vocab_size, best("previous_token"),
        best("induction"), min(heads, key=lambda x: x[2]),
        min(((h, p) for b, h, p in heads if b == cfg.n_layer - 1), key=lambda x: x[1]),
        tuple(_p(model, ids, answer, [Intervention(f"blocks.{b}.mlp.out")]) for b in range(cfg.n_layer)),
        _p(model, ids, answer, [Intervention("embed.pos")]),
        tuple(row.final_prob for row in logit_lens(model, trace)[1:]),
        "".join(readable(t) for t in generated[len(ids):]),
        (float(gain.min()), float(gain.max())),
        (float(trace["blocks.0.resid_pre"][0].norm(dim=-1).mean()),
         float(trace[f"blocks.{cfg.n_layer - 1}.resid_post"][0].norm(dim=-1).mean())),
        (b_up, float(ratios[b_up, mask].mean()), float(ratios[b_up, ~mask].mean())),
        (component_names(cfg)[top], float(attr.values[top]), attr.target),
        (readable(answer), float(b_probs[answer]), readable(b_top), float(b_probs[b_top])))


def part(name: str) -> str:
    """An attribution row's name in words: blocks.1.attn.head.3 -> block 1 head 3."""
    if m := re.fullmatch(r"blocks\.(\d+)\.attn\.head\.(\d+)", name):
        return f"block {m[1]} head {m[2]}"
    if m := re.fullmatch(r"blocks\.(\d+)\.(mlp|attn\.bias)", name):
        return f"block {m[1]}'s {'MLP' if m[2] == 'mlp' else 'attention bias'}"
    return {"embed": "the embeddings", "ln_f.bias": "ln_f's bias"}.get(name, name)


def lines(m: Measured) -> dict[str, str]:
    """One line per page url: what the demo model shows there, with its numbers."""
    ans, after = repr(m.answer), f"after its repeat text's last token {m.last!r}"
    pb, ph, ps = m.previous
    ib, ih, iscore = m.induction
    kb, kh, kp = m.knocked
    attention = (f"block {pb} head {ph} puts on average {ps:.1%} of a row's attention on the previous token, and block "
                 f"{ib} head {ih} {iscore:.1%} on the token that followed the earlier occurrence of the current one "
                 "(where copying a repeat looks)")
    predicts = f"{after} it predicts {ans}, the token that followed {m.last!r} the first time, with p = {m.p:.3f}"
    mlp = ", ".join(f"block {b}'s to {p:.3f}" for b, p in enumerate(m.mlp))
    lens = ", ".join(f"{p:.3f} after block {b}" for b, p in enumerate(m.lens))
    name, value, logit = m.share
    rb, rep, first = m.update
    return {
        "attention": attention + ".",
        "heads": attention + ".",
        "output": f"{predicts} ({m.p * m.vocab:,.0f} times a uniform 1/{m.vocab:,}).",
        "generation": f"{predicts}, and greedy decoding goes on copying: {m.greedy!r}.",
        "mlp": f"{predicts}; zeroing one block's MLP output moves that p to: {mlp}.",
        "layernorm": (f"the gains are trained: ln_f's g runs from {m.gain[0]:.2f} to {m.gain[1]:.2f} (fresh weights: "
                      f"all 1), and on its repeat text the stream's mean norm goes from {m.norms[0]:.2f} into block 0 "
                      f"to {m.norms[1]:.2f} out of the last block."),
        "block": (f"on its repeat text, block {rb}'s attention adds on average ‖Δattn‖ = {rep:.2f} ‖x‖ at the tokens "
                  f"seen before and {first:.2f} ‖x‖ at those seen for the first time."),
        "lens": f"p({ans}) {after}, read at each depth: {lens}.",
        "experiments": f"{predicts}; with the position embeddings zeroed, p({ans}) is {m.no_position:.3f}.",
        "whatif": (f"{predicts}; knocking out block {kb} head {kh} (zeroed) moves it to {kp:.3f}, the largest drop of "
                   f"any head; in the last block, head {m.knocked_last[0]}'s knock-out moves it to "
                   f"{m.knocked_last[1]:.3f}."),
        "attribution": (f"{predicts}; of its logit {logit:.2f}, {part(name)} writes {value:.2f} directly, the largest "
                        "share."),
        "patch": (f"{predicts}; with the last token changed (the ready pair's B) there is nothing to copy: "
                  f"p({ans}) is {m.pair[1]:.3f} and the top token {m.pair[2]!r} ({m.pair[3]:.3f})."),
    }


SENTENCES = (lines,)
NOT_SENTENCES = (part,)  # an attribution row's name in words ("block 1 head 3"): a label
