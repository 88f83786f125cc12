"""What the pages say when the demo model (trained here, gpt2viz/demo_model.py) is in use."""

from urllib.parse import urlencode

import streamlit as st

from ..demo_model import demo_heads

# every word is one of the model's training words (a test checks), repeated once
DEMO_TEXT = ("green cat sat on my old mat while his big dog went past our red door "
             "green cat sat on my old mat while his big dog went past our red door")
NOTE = (":material/school: **Demo model, trained here** (2 blocks, 8 heads, d = 128) on random common words "
        "in which spans repeat. It learned to copy: when a word comes back, it predicts the word that followed "
        "it the last time (an induction head in block 1 reading a previous-token head in block 0). It knows no "
        "English: no grammar, facts or meaning; where nothing repeats, its guess is any of its 2,000 training words.")


def note() -> None:
    st.caption(NOTE)


def heads_pointer(view) -> None:
    """On the Attention page: which heads to look at, and a link to the text that shows them."""
    heads = demo_heads()
    block, head, score = heads["induction"]
    pblock, phead, pscore = heads["previous"]
    link = "/attention?" + urlencode({**st.query_params.to_dict(), "weights": "demo", "text": DEMO_TEXT,
                                      "block": block, "head": head})
    st.info(f"**Block {block} head {head} is an induction head**: from a repeated word it attends to the word "
            f"that followed the earlier occurrence ({score:.0%} of its attention on held-out sequences). "
            f"Block {pblock} head {phead} attends to the previous word ({pscore:.0%}). "
            f"[Try a text that repeats]({link}).", icon=":material/visibility:")
