"""Tokens and embeddings: the text as the model's tokens (GPT-2's BPE, or a folder's own vocabulary),
and the vectors wte and wpe give them."""

import streamlit as st

from gpt2viz import plots
from gpt2viz.model.tokenizer import current, token_bytes
from gpt2viz.teaching import notices
from gpt2viz.ui import anatomy, demo
from gpt2viz.ui.anatomy import axis_tokens, plot
from gpt2viz.ui.chips import token_chips

SHOWS = ("embed.tok", "embed.pos", "embed.out")

page = anatomy.header("embed", SHOWS)
sel, trace = page.sel, page.trace
q, _, offset = axis_tokens(trace)
st.markdown(token_chips(sel.ids), unsafe_allow_html=True)
vocabulary = current()  # the weights' own (ui/state.py sets it for the run)
anatomy.notice(notices.tokens_notice(sel.ids, trace.tokens, sel.text, vocabulary.kind, vocabulary.size)
               + (["Spaces show as ␣ and newlines as ↵. Hover a token for its id."] if vocabulary.kind == "char" else
                  ["Spaces show as ␣ and newlines as ↵; a piece such as <0xF0> is one byte of a character "
                   "(an emoji, an accent) that byte-level BPE split across tokens. Hover a token for its id."]))
if trace.T == 1:  # decode embeds one position: its two rows and their sum, not one bar each
    plot(plots.stacked_vectors([(f"wte row of {q[0]!r}", trace["embed.tok"][0, 0]),
                                (f"wpe row {offset}", trace["embed.pos"][0]),
                                ("x₀ = their sum", trace["embed.out"][0, 0])],
                               f"The new token's embedding · position {offset}"))
else:
    cols = st.columns(2)
    with cols[0]:
        plot(plots.position_norms(trace["embed.tok"][0], q, "‖wte row‖ per position", offset=offset), share=0.5)
    with cols[1]:
        plot(plots.position_norms(trace["embed.pos"], q, "‖wpe row‖ per position", offset=offset), share=0.5)
st.markdown("**Word order.** Each position also picks a row of wpe, the position table, and x₀ is the token's row "
            "plus the position's row: the same token at another position starts as another vector. That is all "
            "GPT-2 is told about order; the Experiments page takes wpe away and shows what changes.")
st.dataframe([{"position": i, "id": t, "token": s, "bytes": token_bytes(t).hex(" ")}
              for i, (t, s) in enumerate(zip(sel.ids, trace.tokens))], hide_index=True, height=220)
if sel.weights.demo:
    demo.vocabulary_section(sel.ids)
plot(plots.histogram(trace["embed.out"], "Values of x₀ = token + position embedding", "value"))
anatomy.footer(page)
