"""The weights' story on each page: a same-tab link to the ready prompt (gpt2viz/teaching/prompts.py) that
shows what the page is about with the weights in use, and what it shows. Only weights with measured
prompts get one (today the demo model)."""

import streamlit as st

from ..model.demo_model import DEMO_PATH, demo_heads
from ..teaching.head_notices import demo_heads_sentence
from ..teaching.prompts import Prompt, prompts_for
from .links import anchor
from .state import Selection

# page -> (the prompt it offers, the link's label, the values that set the view, besides the text)
OFFERS = {
    "attention": ("repeat", "Show the repeat in block {block} head {head}, full sequence", {"mode": "full"}),
    "generation": ("repeat", "Generate after the repeat", {}),
    "whatif": ("repeat", "Knock out block {block} head {head} on the repeat", {"part": "head", "method": "zero"}),
    "attribution": ("repeat", "Split the repeat's next word among the heads", {}),
    "patch": ("pair", "Patch the ready pair (A: the repeat, B: its last word changed)", {}),
}


def induction_head() -> tuple[int, int, float]:
    """(block, head, score) of the demo model's induction head, as measured when the file was made."""
    return demo_heads(DEMO_PATH)["induction"]


def offer(sel: Selection, page: str, says: str | None = None) -> Prompt | None:
    """The link to this page's prompt for the weights in use (with the view it needs) and what it
    shows (or `says`, what the page measures on it); returns the prompt, or None where the weights
    have none."""
    prompts = prompts_for(sel.source)
    if page not in OFFERS or OFFERS[page][0] not in prompts:
        return None
    key, label, values = OFFERS[page]
    prompt = prompts[key]
    block, head, _ = induction_head()
    values = {**values, "text": prompt.text, "block": block, "head": head}
    if prompt.text_b is not None:
        values["text_b"] = prompt.text_b
    link = anchor(label.format(block=block, head=head) + " →", page, **values)
    st.markdown(f":material/science: **{link}**: {says or prompt.shows}", unsafe_allow_html=True)
    return prompt


def heads_pointer(sel: Selection) -> None:
    """On the Attention page: which heads to look at (as measured when the file was made), and the link
    to the text that shows them. A head is called an induction head only from the threshold every
    page and the head finder use (head_notices.demo_heads_sentence)."""
    heads = demo_heads(DEMO_PATH)
    st.info(demo_heads_sentence(heads["induction"], heads["previous"]), icon=":material/visibility:")
    offer(sel, "attention")
