"""About: what gpt2viz checks live and what its test suite proves against transformers."""

import streamlit as st

from gpt2viz.teaching import page_text
from gpt2viz.ui.anatomy import selection, text_notes
from gpt2viz.ui.cache import decode_check
from gpt2viz.ui.caps import capped
from gpt2viz.ui.working import working

sel = selection()
st.title("About gpt2viz")
st.markdown("gpt2viz runs its own GPT-2, written so that every intermediate tensor can be recorded, and holds it "
            "to the reference implementation number by number.")
st.header("Checked live on your text")
if sel.text_error:
    st.warning(sel.text_error, icon=":material/edit:")
else:
    text_notes(sel)
    sel = capped(sel, "about")
    with working(f"Running {sel.config.name} on {len(sel.ids):,} tokens twice: full, then decode…") as progress:
        diff = decode_check(sel.weights, sel.ids, progress)
    st.markdown(page_text.decode_check_sentence(len(sel.ids), sel.config.vocab_size, diff, sel.weights.label))
st.header("What the test suite proves")
st.markdown("""
Against `transformers.GPT2LMHeadModel` (eager attention) on the same random weights, loaded from the
`model.safetensors` that transformers itself wrote (3 blocks, 4 heads, width 128):

| what | tolerance |
|---|---|
| logits, every block's input hidden state, the final LayerNorm output | max abs 1e-4 (rel 1e-4) |
| every attention pattern | max abs 1e-4 |
| the KV cache of every layer against `past_key_values` | max abs 1e-4 |
| the training loss with labels (dropout off) | max abs 1e-4 |
| 10 greedy generated tokens against `generate` | identical ids |
| DECODE logits against FULL's last position; a PREFILL + DECODE chain against FULL at every step | max abs 1e-4 |

And on their own: the residual stream adds up exactly (`resid_mid = resid_pre + attn.out`, `resid_post =
resid_mid + mlp.out`, to the bit); patterns are causal softmaxes (rows sum to 1, zeros above the
diagonal); LayerNorm's recorded μ, σ², normalized and out agree with `torch.nn.functional.layer_norm`;
the recorded gradients equal torch's own `.backward()`; every parameter count is computed three ways
(closed form, a model's parameters, a checkpoint header) that agree for every size, and every
calculation shown evaluates to its count; every recorded shape equals the one the pages state, in every mode.
""")
