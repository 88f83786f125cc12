"""How to read the pages: every term a page uses, each under a heading other pages link to
(/glossary#induction-head) and linked to the page that shows it; every symbol; the names readers
bring from nanoGPT and TransformerLens."""

import streamlit as st

from gpt2viz.model.demo_model import DEMO_PATH, demo_heads
from gpt2viz.spec.glossary import ALIASES, ENTRIES, GROUPS, SYMBOLS
from gpt2viz.teaching.prompts import DEMO_SINK, prompts_for
from gpt2viz.ui.links import anchor

# heads only trained weights have: the view that shows each (a head of the demo model, measured, on its
# repeat). Random weights show none, so without the demo model's file the entry says so.
DEMO_HEADS = {"induction-head": "induction", "previous-token-head": "previous", "attention-sink": "sink"}


def table(header: tuple[str, ...], rows) -> str:
    """A Markdown table (it wraps long cells, where a dataframe cuts them)."""
    def cell(s: str) -> str:
        return s.replace("|", "\\|").replace("*", "\\*")  # a | would split the row, * start emphasis
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows])


def where_it_shows(e) -> str:
    """The entry's link to a view where the thing is visible (or why there is none here)."""
    if e.key in DEMO_HEADS:
        if not DEMO_PATH.is_file():
            return ("*Only trained weights show one, and this server has not the demo model's file: try a GPT-2 "
                    "checkpoint from the Hugging Face cache.*")
        kind = DEMO_HEADS[e.key]
        block, head = DEMO_SINK if kind == "sink" else demo_heads(DEMO_PATH)[kind][:2]
        return anchor(f"Where it shows: the demo model's block {block} head {head}, on a repeat →", "attention",
                      weights="demo", text=prompts_for("demo")["repeat"].text, mode="full", block=block, head=head)
    return anchor("Where it shows →", e.page)


st.title("Glossary")
st.markdown("Every term the pages use, in our words, with the page that shows it; then every symbol, and the "
            "names you may know from nanoGPT or TransformerLens.")
for group in GROUPS:
    st.header(group, anchor=False)
    st.markdown("\n\n".join(f"### {e.term}\n{e.text} {where_it_shows(e)}"
                            for e in ENTRIES if e.group == group), unsafe_allow_html=True)
st.header("Symbols", anchor="symbols")
st.markdown("The symbols every page and every shape uses, one meaning each. Shapes keep the reference "
            "implementations' layout: heads before positions, so per-head tensors are [B, nh, T, dh].")
st.markdown(table(("symbol", "name", "meaning"), SYMBOLS))
st.header("If you come from nanoGPT or TransformerLens", anchor="other-names")
st.markdown("The same things under their names. Tensor names here are written blocks.n.…, n the block.")
st.markdown(table(("from", "there", "here", "what differs"), ALIASES))
