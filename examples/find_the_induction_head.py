# %% [markdown]
# # Find the induction head of the demo model
# An induction head, at a token that occurred before, attends to the token that *followed* the earlier
# occurrence and copies it. Score every head on a text that repeats, and see which one does that.

# %%
import gpt2viz
from gpt2viz.analysis.heads import head_scores

model = gpt2viz.load("demo")  # 2 blocks, 4 heads, trained in this project on repeated word spans
run = model.run(" people play one good game after work people play one good game after")
ids = run.trace.token_ids

# %% every head's previous-token and induction score
scores = {}
for block in range(model.config.n_layer):
    pattern = run[f"blocks.{block}.attn.pattern"][0]  # [nh, T, T]
    for head in range(model.config.n_head):
        scores[block, head] = head_scores(pattern[head], ids)
        s = scores[block, head]
        print(f"block {block} head {head}: previous-token {s.previous_token:.2f}, induction {s.induction:.2f}")

# %% the best of each
induction = max(scores, key=lambda bh: scores[bh].induction)
previous = max(scores, key=lambda bh: scores[bh].previous_token)
print("induction head:", induction, "previous-token head:", previous)

# %% its picture, as on the Attention page (inline in Jupyter)
figure = gpt2viz.attention_figure(run, *induction)
