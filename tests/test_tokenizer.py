"""GPT-2's BPE, built offline from GPT-2's own vocabulary files."""

import pytest

from gpt2viz.model import tokenizer as tok


def test_hello_world():
    assert tok.encode("Hello world") == [15496, 995]


def test_known_ids():
    assert tok.encode("<|endoftext|>") == [50256]
    assert tok.encode(" the") == [262]
    assert tok.encoding().n_vocab == 50257


@pytest.mark.parametrize("text", ["naïve café, déjà vu", "emoji 🌍🎉 and 👩‍👩‍👧", "日本語のテキスト",
                                  "tabs\tand\nnewlines  "])
def test_round_trip(text):
    assert tok.decode(tok.encode(text)) == text


def test_readable_pieces():
    ids = tok.encode("Hi 🌍\n")
    assert tok.readable_tokens(ids) == ["Hi", "␣<0xF0><0x9F>", "<0x8C>", "<0x8D>", "↵"]
    assert tok.readable(tok.encode("\x07")[0]) == "<0x07>"


def test_empty_text_is_refused_and_whitespace_is_text():
    """GPT-2 tokenizes spaces; only an empty text has nothing to run."""
    with pytest.raises(tok.TextError, match="empty"):
        tok.encode("")
    ids = tok.encode("   \n\t")
    assert ids and "".join(tok.readable_tokens(ids)) == "␣␣␣↵⇥"


def test_over_long_text_is_refused_or_truncated():
    text = "word " * 1999 + "word"
    with pytest.raises(tok.TextError, match="2,000 tokens; the model reads at most 1,024"):
        tok.encode(text, max_tokens=1024)
    assert len(tok.encode(text, max_tokens=1024, truncate=True)) == 1024


def test_ranks_from_encoder_json_are_the_ranks_of_the_merges():
    from tiktoken.load import data_gym_to_mergeable_bpe_ranks
    data = tok.data_dir()
    from_merges = data_gym_to_mergeable_bpe_ranks(
        vocab_bpe_file=str(data / "vocab.bpe"), encoder_json_file=str(data / "encoder.json"),
        vocab_bpe_hash=tok.VOCAB_BPE_SHA256, encoder_json_hash=tok.ENCODER_JSON_SHA256)
    assert tok.mergeable_ranks() == from_merges and len(from_merges) == 50256
