"""Generation, step by step: one decode step per new token, the cache growing, the choice made."""

import streamlit as st

from gpt2viz import plots
from gpt2viz.model import modes
from gpt2viz.spec import costs
from gpt2viz.teaching import page_text
from gpt2viz.ui import code_panel, present, story
from gpt2viz.ui.anatomy import axis_tokens, page_question, plot, random_note, selection, text_or_stop
from gpt2viz.ui.cache import get_generation
from gpt2viz.ui.classroom import distribution_label, generation_rows, step_choices
from gpt2viz.ui.layout import wide_table
from gpt2viz.ui.overview import say_tie
from gpt2viz.ui.state import locked, nucleus, number
from gpt2viz.ui.text import code_span
from gpt2viz.ui.working import working

sel = selection()
st.title("Generation, step by step")
page_question("generation")
with present.folded(sel.present):  # projected, the first chart starts in the first screen
    st.markdown("Each step is one **decode**: the newest token reads the KV cache of every earlier position "
                "(L = P + 1 keys), the logits become probabilities, and one token is chosen. It is then the "
                "input of the next step, and its keys and values join the cache.")
    story.offer(sel, "generation")
text_or_stop(sel)
# five inputs in one row keep their buttons on a projector; an 800 px window fits four a row
cols = st.columns(5) if sel.present else [*st.columns(4), st.columns(4)[0]]
steps = number(cols[0], "Steps", 1, 32, 8, key="steps")
temperature = number(cols[1], "Temperature (0 = greedy)", 0.0, 5.0, 0.0, key="temperature", step=0.1)
if not sel.present:  # projected, the lecturer says it
    st.caption("Greedy (temperature 0) takes the most likely token; the chart then shows the model's "
               "probabilities. Sampling draws from softmax(logits / temperature), kept to the top-k, then the top-p.")
top_k = number(cols[2], "Top-k (0 = all)", 0, 50257, 0, key="top_k") or None
top_p = nucleus(cols[3])
seed = number(cols[4], "Sampling seed", 0, 2**31 - 1, 0, key="gen_seed")
room = modes.room(sel.config.n_positions, len(sel.ids))
if steps > room:
    st.info(page_text.generation_room(sel.config.n_positions, len(sel.ids), room))
    steps = room
with working(f"Generating {steps} token{'s' * (steps != 1)} step by step…") as progress:
    gen = get_generation(sel.weights, sel.ids, steps, temperature, top_k, seed, progress=progress, top_p=top_p)
random_note(sel)
rows = generation_rows(gen, sel.config, temperature, top_k, top_p)
L_steps, bytes_steps = costs.kv_cache_series(sel.config, [t.L for t in gen.traces])
plot(plots.cache_growth(L_steps, bytes_steps, "KV cache: keys read (L) and bytes per step"))
with present.folded(sel.present, "The steps, as a table"):  # the chart first; projected, the table folded
    st.markdown("**Continuation:** " + " ".join(code_span(row["chosen"]) for row in rows))
    wide_table(rows)
n = len(gen.traces)
step = int(st.slider("Step", 1, n, 1, key="step", bind="query-params",
                     disabled=locked("step"))) if n > 1 else 1  # from 1, as table and chart
trace, chosen = gen.traces[step - 1], gen.ids[step - 1]
q, k, offset = axis_tokens(trace)
cols = st.columns(2)
with cols[0]:
    plot(plots.attention_heatmap(trace.get("attn.pattern", sel.block)[0, sel.head], q, k,
                                 f"Step {step}: the new token's attention · block {sel.block} head {sel.head}",
                                 query_offset=offset, share=0.5), share=0.5)
with cols[1]:
    probs, labels, chosen_at = step_choices(trace, chosen, temperature, top_k, top_p=top_p)
    plot(plots.topk_tokens(probs, labels, f"Step {step}: probabilities, the chosen token highlighted",
                           highlight=chosen_at, subtitle=distribution_label(temperature, top_k, top_p)), share=0.5)
    say_tie(trace.at("logits", -1)[0])
# the snippets draw as the page does: its steps, temperature, top-k, top-p and sampling seed
code_panel.section("generation", sel, (("steps", steps), ("temp", temperature), ("topk", top_k or 0),
                                       ("topp", top_p or 1.0), ("gen_seed", seed)))
