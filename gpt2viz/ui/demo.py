"""What the pages say when the demo model (trained here, gpt2viz/demo_model.py) is in use."""

from urllib.parse import urlencode

import streamlit as st

from ..demo_model import DEMO_PATH, demo_heads
from .state import link_params

# every token is one of the model's training words (a test checks): each begins with a space, the first
# too (a first word without one is a token the model never saw, and it throws every head off)
DEMO_TEXT = (" people play one good game after work when she said their world was"
             " people play one good game after work when she said")
NOTE = (":material/school: **Demo model, trained here** ({cfg.n_layer} blocks, {cfg.n_head} heads, d = {cfg.n_embd}, "
        "context {cfg.n_positions}) on made-up sequences of common words: words that mostly follow a made-up "
        "word-to-word chain, spans that come back later, and stretches where each word is set by the word two "
        "before it. What it can learn there is to copy: when a word comes back, predict the word that followed it "
        "the last time (an induction head reading a previous-token head), plus those two made-up rules. It knows "
        "no English: no grammar, facts or meaning. It knows 300 common words, each with a space before it: start "
        "your text with a space, or the first word is one it never saw.")


def note(view) -> None:
    st.caption(NOTE.format(cfg=view.config))


def heads_pointer(view) -> None:
    """On the Attention page: which heads to look at (as measured when the file was made), and a link
    to a text that shows them. A head is called an induction or previous-token head only at >= 50%."""
    heads = demo_heads(DEMO_PATH)
    block, head, score = heads["induction"]
    pblock, phead, pscore = heads["previous"]
    link = "/attention?" + urlencode({**link_params(), "weights": "demo", "text": DEMO_TEXT,
                                      "block": block, "head": head})
    induction = ("is an induction head" if score >= 0.5 else "comes closest to an induction head") + (
        f": from a repeated word it puts {score:.0%} of its attention on the word that followed the earlier "
        "occurrence (held-out sequences)")
    previous = f"block {pblock} head {phead} puts {pscore:.0%} on the previous word"
    st.info(f"**Block {block} head {head} {induction}**; {previous}. [Try a text that repeats]({link}).",
            icon=":material/visibility:")
