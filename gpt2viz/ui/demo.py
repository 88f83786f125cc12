"""What the pages say when the demo model (trained here, gpt2viz/demo_model.py) is in use."""

from urllib.parse import urlencode

import streamlit as st

from ..demo_model import DEMO_PATH, demo_heads
from .state import link_params

# every word is one of the model's training words (a test checks), repeated once
DEMO_TEXT = ("green cat sat on my old mat while his big dog went past our red door "
             "green cat sat on my old mat while his big dog went past our red door")
NOTE = (":material/school: **Demo model, trained here** ({cfg.n_layer} blocks, {cfg.n_head} heads, d = {cfg.n_embd}) "
        "on random common words in which spans repeat, and in some stretches each word is set by the word two "
        "before it through a fixed made-up rule. What it can learn there is to copy: when a word comes back, "
        "predict the word that followed it the last time (an induction head reading a previous-token head), and "
        "that rule. It knows no English: no grammar, facts or meaning; where nothing repeats, its guess is any of "
        "its training words.")


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
