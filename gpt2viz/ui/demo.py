"""What the pages say when the demo model (trained here, gpt2viz/model/demo_model.py) is in use: its note,
and its vocabulary (shown on the Tokens page)."""

import functools

import streamlit as st

from ..model.demo_model import DEMO_PATH, demo_vocabulary
from ..model.tokenizer import readable
from .text import code_span

NOTE = (":material/school: **Demo model, trained here** ({cfg.n_layer} blocks, {cfg.n_head} heads, d = "
        "{cfg.n_embd}, context {cfg.n_positions}) on made-up sequences drawn from a vocabulary of {n} tokens: "
        "tokens that mostly follow a made-up token-to-token chain, spans that come back later, and stretches where "
        "each token is set by the one two before it. What it can learn there is to copy: when a token comes back, "
        "predict the token that followed it the last time (an induction head reading a previous-token head), plus "
        "those two made-up rules. It knows no English: no grammar, facts or meaning. Its {n} tokens are GPT-2's "
        "first {n} tokens that are a space and lowercase letters (the Tokens page lists them): common words such as "
        "␣the and ␣people, and pieces of words such as ␣inst, ␣le and ␣br, which it writes like any other. Start "
        "your text with a space, or the first token is one it never saw.")


@functools.cache
def vocabulary(path) -> tuple[int, ...]:
    return tuple(demo_vocabulary(path))


# one line at any width, above the page's charts; the whole note one click away
SUMMARY = ":material/school: Demo model: it copies, knows no English · more"
_ONE_LINE = ("<style>.st-key-demo-note summary p {white-space: nowrap; overflow: hidden; text-overflow: ellipsis}"
             "</style>")


def note(view) -> None:
    st.html(_ONE_LINE)
    with st.expander(SUMMARY, key="demo-note"):
        st.caption(NOTE.format(cfg=view.config, n=len(vocabulary(DEMO_PATH))))


def vocabulary_section(ids) -> None:
    """On the Tokens page: which of the text's tokens the demo model never saw, and its whole vocabulary."""
    known = vocabulary(DEMO_PATH)
    unseen = sorted({readable(t) for t in ids if t not in set(known)})
    said = "Every token of this text is one of them."
    if unseen:
        listed = ", ".join(code_span(t) for t in unseen[:20]) + (" …" if len(unseen) > 20 else "")
        said = (f"This text has {len(unseen)} token{'s' * (len(unseen) != 1)} it never saw in training: {listed}. "
                f"All of GPT-2's tokens outside the {len(known)} share one row of its token table: to the model "
                "they are one and the same token.")
    st.markdown(f"**The demo model's vocabulary: {len(known)} tokens.** {said}")
    with st.expander(f"The {len(known)} tokens, in GPT-2's order (BPE merge order: more frequent first)",
                     key="vocabulary", bind="query-params"):
        st.markdown(" ".join(code_span(readable(t)) for t in known))
