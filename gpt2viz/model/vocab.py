"""A weights folder's own vocabulary, read from (and written as) a Hugging Face `tokenizer.json`.

Two kinds are read, both without the `tokenizers` package (the BPE is built on tiktoken, as
GPT-2's is, so the app gains no dependency):
- a character vocabulary: a BPE model whose vocabulary is the symbols and whose merges are none
  (what `convert nanogpt` writes for nanoGPT's meta.pkl), one token per character;
- a byte-level BPE like GPT-2's: the ByteLevel pre-tokenizer with GPT-2's split pattern.
Any other kind (WordPiece, a normaliser, another split) is refused in one line: the pages would
otherwise show tokens the model never saw.
"""

import json
from pathlib import Path

import tiktoken

from .tokenizer import PATTERN, TextError, Vocabulary, _unicode_to_byte

MAX_TOKENIZER_BYTES = 64 * 2**20  # GPT-2's tokenizer.json is 1.4 MB; a class server reads only the operator's


class VocabularyError(ValueError):
    """A tokenizer.json that cannot be used; one line says what was found."""


class CharVocabulary(Vocabulary):
    """One token per character, as nanoGPT's character models read text (meta.pkl's stoi / itos)."""
    kind = "char"
    end_of_text = None

    def __init__(self, symbols: list[str]):
        self.symbols = list(symbols)
        self.size = len(self.symbols)
        self.index = {s: i for i, s in enumerate(self.symbols)}
        self.name = f"a character vocabulary of {self.size:,} symbols"

    def _ids(self, text: str) -> list[int]:
        try:
            return [self.index[c] for c in text]
        except KeyError as e:
            symbol = e.args[0]
            raise TextError(f"{symbol!r} (U+{ord(symbol):04X}) is not in this model's vocabulary of "
                            f"{self.size:,} symbols: leave it out") from None

    def token_bytes(self, token_id: int) -> bytes:
        return self.symbols[token_id].encode("utf-8")


class ByteBPEVocabulary(Vocabulary):
    """A byte-level BPE of a folder's own, through tiktoken. tiktoken merges by rank, so each token
    is ranked by the merge that makes it (single bytes first) and the ranks are mapped to the file's ids."""
    kind = "bpe"

    def __init__(self, vocab: dict[str, int], merges: list[tuple[str, str]], specials: dict[str, int]):
        to_byte = _unicode_to_byte()

        def raw(token: str) -> bytes:
            try:
                return bytes(to_byte[c] for c in token)
            except KeyError:
                raise VocabularyError(f"tokenizer.json: token {token[:20]!r} is not byte-level (GPT-2's "
                                      "byte-to-character alphabet)") from None

        self.size = max([*vocab.values(), *specials.values()]) + 1
        self._bytes: dict[int, bytes] = {i: raw(t) for t, i in vocab.items()}
        self._bytes |= {i: s.encode("utf-8") for s, i in specials.items()}
        ranks, rank_to_id = {}, []
        by_bytes = {raw(t): i for t, i in vocab.items()}
        for b in range(256):
            if bytes([b]) not in by_bytes:
                raise VocabularyError(f"tokenizer.json: byte 0x{b:02X} has no token, so a byte-level BPE "
                                      "cannot spell every text")
            ranks[bytes([b])] = len(rank_to_id)
            rank_to_id.append(by_bytes[bytes([b])])
        for left, right in merges:
            made = raw(left) + raw(right)
            if made in by_bytes and made not in ranks:
                ranks[made] = len(rank_to_id)
                rank_to_id.append(by_bytes[made])
        special_ranks = {s: len(rank_to_id) + k for k, s in enumerate(specials)}
        rank_to_id += list(specials.values())
        self._rank_to_id = rank_to_id
        self._encoding = tiktoken.Encoding(name="folder-bpe", pat_str=PATTERN, mergeable_ranks=ranks,
                                           special_tokens=special_ranks)
        self._specials = set(specials)
        self.end_of_text = specials.get("<|endoftext|>")
        self.name = f"a byte-level BPE of {self.size:,} tokens"

    def _ids(self, text: str) -> list[int]:
        return [self._rank_to_id[r] for r in self._encoding.encode(text, allowed_special=self._specials)]

    def known(self, token_id: int) -> bool:
        return token_id in self._bytes

    def token_bytes(self, token_id: int) -> bytes:
        return self._bytes[token_id]


# ---------------------------------------------------------------------------- reading
def _type(part) -> str | None:
    return part.get("type") if isinstance(part, dict) else None


def _merges(model: dict) -> list[tuple[str, str]]:
    merges = model.get("merges") or []
    out = []
    for m in merges:  # "Ġ t" in older files, ["Ġ", "t"] in newer ones
        pair = m.split(" ") if isinstance(m, str) else m
        if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(p, str) for p in pair)):
            raise VocabularyError(f"tokenizer.json: a merge {str(m)[:40]!r} is not a pair of tokens")
        out.append((pair[0], pair[1]))
    return out


def read_json_object(path, max_bytes: int, error: type[ValueError]) -> dict:
    """A small JSON object from a file (a folder's config.json or tokenizer.json); `error` of one line if not."""
    path = Path(path)
    if path.stat().st_size > max_bytes:
        raise error(f"{path.name} is {path.stat().st_size:,} bytes: too large for a {path.name}")
    try:
        d = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise error(f"{path.name} is not valid JSON") from None
    if not isinstance(d, dict):
        raise error(f"{path.name} is not a JSON object")
    return d


def read_tokenizer(path) -> Vocabulary:
    """The vocabulary of a tokenizer.json: a character vocabulary or a byte-level BPE; anything
    else a VocabularyError of one line."""
    path = Path(path)
    d = read_json_object(path, MAX_TOKENIZER_BYTES, VocabularyError)
    model = d.get("model")
    if _type(model) != "BPE":
        found = _type(model) or "no model"
        raise VocabularyError(f"{path.name} holds a {found} tokenizer; gpt2viz reads a character vocabulary "
                              "(BPE without merges) or a byte-level BPE like GPT-2's")
    if d.get("normalizer") is not None:
        raise VocabularyError(f"{path.name} has a normalizer ({_type(d['normalizer'])}); gpt2viz reads "
                              "tokenizers that take the text as it is")
    vocab = model.get("vocab")
    if not (isinstance(vocab, dict) and vocab and all(isinstance(k, str) and isinstance(v, int) and v >= 0
                                                      for k, v in vocab.items())):
        raise VocabularyError(f"{path.name}: the model's vocab is not a map of tokens to ids")
    specials = {t["content"]: t["id"] for t in d.get("added_tokens") or []
                if isinstance(t, dict) and isinstance(t.get("content"), str) and isinstance(t.get("id"), int)}
    merges = _merges(model)
    pre = d.get("pre_tokenizer")
    if pre is None and not merges:
        ids = sorted(vocab.values())
        if ids != list(range(len(ids))):
            raise VocabularyError(f"{path.name}: the character vocabulary's ids are not 0 to {len(ids) - 1}")
        by_id = {i: t for t, i in vocab.items()}
        return CharVocabulary([by_id[i] for i in ids])
    if _type(pre) == "ByteLevel":
        if pre.get("add_prefix_space") or pre.get("use_regex") is False:
            raise VocabularyError(f"{path.name}: a byte-level BPE with add_prefix_space or without GPT-2's "
                                  "split pattern; gpt2viz reads GPT-2's kind")
        return ByteBPEVocabulary(vocab, merges, specials)
    raise VocabularyError(f"{path.name} has a {_type(pre) or 'BPE'} pre-tokenizer with {len(merges):,} merges; "
                          "gpt2viz reads a character vocabulary (no pre-tokenizer, no merges) or a "
                          "byte-level BPE like GPT-2's")


# ---------------------------------------------------------------------------- writing
def char_tokenizer_json(symbols: list[str]) -> dict:
    """A character vocabulary in Hugging Face tokenizers' format: a BPE model with the symbols as its
    vocabulary and no merges, so `tokenizers.Tokenizer.from_file` gives the same ids (one a character);
    the Fuse decoder joins tokens without spaces."""
    return {"version": "1.0", "truncation": None, "padding": None, "added_tokens": [], "normalizer": None,
            "pre_tokenizer": None, "post_processor": None, "decoder": {"type": "Fuse"},
            "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                      "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                      "ignore_merges": False, "vocab": {s: i for i, s in enumerate(symbols)}, "merges": []}}
