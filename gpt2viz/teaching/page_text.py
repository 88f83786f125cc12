"""The pages' other computed sentences: what a model's sizes, a server's limits, a text's cut and a
check's figures say, in words (the Modes page's two paragraphs, the Parameters page's headline, the
tour's running tally, the refusals that quote a number). Pure: numbers and names in, text out; the
pages in gpt2viz/ui/ and views/ only place them."""

from ..anatomy.components import component_tree
from ..spec import costs
from ..spec.config import GPT2Config


def why_decode_is_cheap(cfg: GPT2Config, n_text: int) -> str:
    """In words, with the figures of costs.decode_step_vs_full: one query against L cached keys. A
    1-token text has no cache to read: the figures are then a 2-token text's, and the sentence says so."""
    n = max(n_text, 2)
    c = costs.decode_step_vs_full(cfg, n, component_tree(cfg).root.total)
    ratio = c["full"].value / c["decode"].value
    which = (f"these **{n:,}** tokens" if n == n_text else
             "a text of **2** tokens (this one has 1, and decoding it reads no cache: with L = 1 the step is the "
             "full pass)")
    earlier = "position" if n - 1 == 1 else "positions"
    return (f"Decoding the last of {which} runs **one query**, the new token's, against **L = {n:,}** "
            f"keys and values: {n - 1:,} read from the cache and its own. That step takes "
            f"**{c['decode'].value:,} FLOPs**; a full pass over the same text takes **{c['full'].value:,}**, "
            f"{ratio:,.1f} times as many. Every matrix multiply works on 1 row instead of {n:,}, and attention "
            f"compares 1 query with {n:,} keys ({c['decode_attention'].value:,} FLOPs) instead of {n:,} queries with "
            f"{n:,} keys each ({c['full_attention'].value:,}: the full pass computes every score and masks the "
            f"later keys' afterwards, so query i uses only the first i + 1). What the step reads instead is the cache: "
            f"**{c['cache'].value:,} bytes** ({costs.human_bytes(c['cache'].value)}, fp32) of keys and values for the "
            f"{n - 1:,} earlier {earlier}, beside the {c['weights'].value:,} bytes "
            f"({costs.human_bytes(c['weights'].value)}) of fp32 weights that both read.")


def why_decode_waits_on_memory(cfg: GPT2Config, n: int) -> str:
    """A decode step's arithmetic per byte it must read, against a full pass's: why it is limited by
    memory, not arithmetic; and what the cache costs per token."""
    c = costs.decode_step_vs_full(cfg, n, component_tree(cfg).root.total)
    read = c["weights"].value + c["cache"].value  # bytes both must read at least once
    per_token = costs.kv_cache_bytes(cfg, 1, 1).value  # one position's keys and values, every layer
    ratio = c["full"].value / c["decode"].value
    return (f"A decode step does 1/{ratio:,.0f} of a full pass's arithmetic, but it still "
            f"reads every weight and the whole cache: about **{c['decode'].value / read:.2f} FLOPs per byte read**, "
            f"against **{c['full'].value / c['weights'].value:,.0f}** for a full pass over the same {n:,} tokens, "
            "which reads the weights once and no cache (about T/2 per byte in fp32, T the tokens). A processor needs "
            "tens (CPU) to hundreds (GPU) of operations per byte fetched to keep busy; below that it waits on memory. "
            "A decode step is always far below; a full pass rises above only on long texts. This project's "
            "benchmark (README, `benchmarks/bench_forward.py`) measured a gpt2 decode step against "
            "1,000 cached positions at 1/38 of a full pass's time, although its arithmetic is 1/1,001. Each token "
            f"adds 2 · n_layer · d · 4 bytes = 2 · {cfg.n_layer} · {cfg.n_embd} · 4 = **{per_token:,} bytes** "
            f"({costs.human_bytes(per_token)}, fp32) to the cache.")


def per_block_total(per_instance: int, instances: int, total: int) -> str:
    """A component's parameters, per block and over the blocks (the arithmetic under its table)."""
    if instances > 1:
        return f"**{per_instance:,}** per block × {instances} blocks = **{total:,}** parameters"
    return f"**{total:,}** parameters"


def cut_note(which: str, n_positions: int, cut: int) -> str:
    """A typed text longer than the context: what was cut."""
    return (f"{which} was cut to the model's context of {n_positions:,} tokens: {cut:,} "
            f"token{'s' * (cut != 1)} at the end {'are' if cut != 1 else 'is'} not shown.")


def link_cut_note(which: str, kept: int, total: int, link_chars: int, limit: int) -> str:
    """A text longer than a link can carry (spec/link_text.py): what was kept, and why."""
    return (f"{which} was cut to its first {kept:,} of {total:,} characters: a link carries at most {limit:,} "
            f"characters of text as the address writes them, and this one took {link_chars:,} (a character other "
            "than a letter, a digit or a space takes 3 to 12).")


def endoftext_note(marker: str, which: str, token_id: int, n: int) -> str:
    """A typed `<|endoftext|>` (`marker`), read `n` times as GPT-2's one special token."""
    return (f"`{marker}` in {which.lower()} is read as GPT-2's end-of-text token, id {token_id:,} "
            f"({'once' if n == 1 else f'{n} times'}): one token, not its {len(marker)} characters.")


def cap_note(title: str, cap: int, n_tokens: int) -> str:
    """A shared server runs a heavy page on the first `cap` tokens of a longer text."""
    return (f"This shared server runs {title} on the first {cap:,} of this text's {n_tokens:,} tokens, so that "
            "every student's view stays quick.")


def memory_cap_note(title: str, cap: int, n_tokens: int) -> str:
    """A shared server runs a page on the first `cap` tokens: a run of more would not fit its memory for one run."""
    return (f"This shared server runs {title} on the first {cap:,} of this text's {n_tokens:,} tokens: a run of "
            f"more would need more memory than it gives one run.")


def sweep_refusal(limit: int, n_tokens: int) -> str:
    """A shared server does not sweep a text longer than `limit` tokens."""
    return (f"This shared server sweeps texts of up to {limit:,} tokens (a sweep runs the text once per part); this "
            f"page runs {n_tokens:,}. Shorten the text to sweep it.")


def paths_refusal(limit: int, position: int) -> str:
    """A shared server does not run path patching at a position past the first `limit` (positions from 0)."""
    return (f"This shared server removes a part along its paths at the first {limit:,} positions (each path runs "
            f"the positions up to the one patched); this one is position {position:,}. Choose an earlier position, "
            "or run gpt2viz on your own machine.")


def checkpoint_too_large(n_positions: int, n_embd: int, need: str, budget: str) -> str:
    """A checkpoint whose full context makes a page's run exceed the server's budget (`need` and
    `budget` already in MiB words)."""
    return (f"a context of {n_positions:,} positions at width {n_embd:,} makes a page's run need {need}, more than "
            f"the {budget} this server gives its runs: a checkpoint with a shorter context or a narrower model fits")


def run_too_large(n_tokens: int, mode: str, need: str, budget: str, longest: int | None, others: list[str]) -> str:
    """A page's run that exceeds the server's budget, and what fits instead: a text of at most
    `longest` tokens in this mode (None: none), the `others` modes at this length, another page."""
    ways = [f"a text of at most {longest:,} token{'s' * (longest != 1)} in {mode} mode"] if longest else []
    if others:
        ways.append(f"the {' or '.join(others)} mode at this length")
    ways.append("another page")
    return (f"This page's run of {n_tokens:,} token{'s' * (n_tokens != 1)} in {mode} mode needs about {need}, more "
            f"than the {budget} this server gives one run. What fits: "
            f"{', '.join(ways[:-1])}{', or ' if len(ways) > 1 else ''}{ways[-1]}.")


def memory_note(kept: str, n_tokens: int, mode: str, everything: str) -> str:
    """A page whose run keeps only part of its values (ui/cache.recorded_names): `kept` says which
    ("only", "every_block", "but_gradients"), `everything` what a trace of every value would take (in
    MiB words). In training mode a trace of every value holds the weights' gradients, as large as the
    weights whatever the text: that, not the text's length, is what the last case leaves out."""
    if kept == "but_gradients":
        return (f"To save memory this page keeps every value of the {mode} run but the weights' gradients, which are "
                f"as large as the weights whatever the text (the Training page shows their norms); every value "
                f"with them would take {everything}.")
    what = {"only": "only what it shows", "every_block": "what it shows, in every block"}[kept]
    return (f"To save memory this page keeps {what}: every intermediate value of this {mode} run of "
            f"{n_tokens:,} token{'s' * (n_tokens != 1)} would take {everything}, more than one view may keep on "
            "this server.")


def mask_subtitle(still: float) -> str:
    """The no-mask experiment's chart: how far the earlier positions moved with the mask on (0 in exact
    arithmetic; what rounding leaves)."""
    return ("output: the stream leaving the last block · with the mask "
            + ("every earlier position moved by 0" if still == 0 else f"every earlier position moved by at most "
               f"{still:.2g}"))


def tally_line(met: int, total: int, added: int, titles: list[str], every_block: bool) -> str:
    """The tour's running tally of parameters: met so far of the model's total, and what this stop adds."""
    line = f"parameters met so far: **{met:,}** of {total:,} ({met / total:.1%})"
    if added:
        line += f", {added:,} added here (" + ", ".join(titles) + (", in every block" if every_block else "") + ")"
    return line


AGREE = 1e-4  # the decode check's largest logit difference below which the two paths agree


def decode_check_sentence(n_tokens: int, vocab: int, diff: float, weights: str) -> str:
    """The About page's live check: the last token decoded against the cache of the others, against
    the full sequence without a cache; they agree when the largest logit difference is below AGREE."""
    verdict = ":material/check_circle: agree" if diff < AGREE else ":material/error: DISAGREE"
    cached = n_tokens - 1
    return (f"Decoding the last token against the KV cache of the {cached:,} token{'s' * (cached != 1)} before it, and "
            f"running the full sequence without a cache, give last-position logits that {verdict} (below {AGREE:g}): "
            f"the largest difference over all {vocab:,} logits is **{diff:.2e}** ({weights}).")


def lens_residual_sentence(parts: int, error: float, position: int) -> str:
    """The residual decomposition's check at the position charted: its parts add up to the recorded
    stream there, up to rounding."""
    said = "**0**: they add up exactly" if error == 0 else f"**{error:.2e}** (float32 rounding)"
    return (f"Sum of the {parts} part{'s' * (parts != 1)} minus the recorded stream at position {position:,}: "
            f"largest difference {said}.")


def kv_cache_line(name: str, L: int, calculation: str, value: int, human: str, full_context: bool = False) -> str:
    """One line of the Modes page's KV-cache sizes: after this text, or at the full context."""
    where = f"At the full context (L = {L:,}), fp32" if full_context else f"{name} after this text (L = {L:,})"
    return f"- {where}: {calculation} = **{value:,} bytes** ({human})"


def params_headline(name: str, total: int, variant: list[str]) -> str:
    """The Parameters page's heading: the model and its total."""
    return f"{name}: {total:,} parameters" + "".join(f" · {v}" for v in variant)


def params_formula(symbolic: str, calculation: str, total: int) -> str:
    """The total's formula, with this model's numbers."""
    return f"`{symbolic}`  \n= {calculation} = **{total:,}**"


def link_bounds_note(field: str, asked: str, lo: int, hi: int, shown: int) -> str:
    """A link's size field that is not a whole number in range, and what is shown instead."""
    return (f"The link asked for {field}={asked[:20]!r}, which is not a whole number from {lo:,} to {hi:,}; showing "
            f"{field}={shown:,}.")


def decode_reads(P: int) -> str:
    """A decode step's one query: the new token at position P reads L = P + 1 keys, P of them cached."""
    return (f"Decode: the new token (position {P:,}) reads all **L = P + 1 = {P + 1:,}** keys: {P:,} from the cache "
            "and its own.")


def decode_step_title(P: int) -> str:
    """The title of the KV cache's schematic of one decode step."""
    return f"Decode step: {P:,} cached {'position' if P == 1 else 'positions'} + 1 new, in every layer"


def tie_note(tied: int, token: str, tie_nats: float) -> str:
    """Where a page names the top token and `tied` tokens tie for it (model/ranking.py): `token`, the
    first by token id, as the page prints it."""
    return (f"{tied:,} tokens tie for the top here, {token} first among them by token id: their logits lie within "
            f"{tie_nats:g} of each other, so which one leads is not the model's preference.")


def link_choice_note(key: str, asked: str, shown: str) -> str:
    """A link's value that a page's own control (a choice, a slider, a toggle) could not take. `asked`,
    `shown`: as the page prints them (code spans of the link's text and of the control's value)."""
    return f"The link asked for {key}={asked}, which this page's control does not offer; showing {key}={shown}."


def checkpoint_line(path: str, total: int, expected: int, matches: bool) -> str:
    """A checkpoint's header count against the model's accounting."""
    verdict = "✅ matches" if matches else "❌ does not match"
    return (f"`{path}`: **{total:,}** parameters in the header, {expected:,} expected for this shape: {verdict}.")


def generation_room(n_positions: int, n_tokens: int, room: int) -> str:
    """Generation asked for more steps than the context holds: `room` (model/modes.py) tokens can come
    after a text of `n_tokens`, the last one predicted by position n_positions − 1 and never read back."""
    tokens = "token" if room == 1 else "tokens"
    return (f"The context holds {n_positions:,} positions and this text takes {n_tokens:,}: {room:,} more {tokens} "
            f"can be generated (the last predicted by position {n_positions - 1:,}, which no step reads back); "
            f"generating {room:,}.")


SENTENCES = (why_decode_is_cheap, why_decode_waits_on_memory, per_block_total, cut_note, cap_note, memory_cap_note,
             sweep_refusal,
             paths_refusal, checkpoint_too_large, run_too_large, endoftext_note, mask_subtitle, tally_line,
             decode_check_sentence, lens_residual_sentence, kv_cache_line, params_headline, params_formula,
             link_bounds_note, link_choice_note, decode_reads, decode_step_title, tie_note, link_cut_note,
             checkpoint_line, memory_note, generation_room)
