# %% [markdown]
# # Count GPT-2's parameters three ways
# By hand from the configuration, from the component accounting the app shows, and from the
# tensors of a model built with those shapes. All three give 124,439,808 for gpt2.

# %%
import gpt2viz

config = gpt2viz.parameters("gpt2").config
V, n_ctx, d, n_layer = config.vocab_size, config.n_positions, config.n_embd, config.n_layer

# %% 1. by hand: embeddings, then per block two LayerNorms, attention and the MLP, then ln_f
embeddings = V * d + n_ctx * d  # wte, wpe (the unembedding is tied to wte: no more)
per_block = 2 * (2 * d) + (d * 3 * d + 3 * d) + (d * d + d) + (d * 4 * d + 4 * d) + (4 * d * d + d)
by_hand = embeddings + n_layer * per_block + 2 * d
print(f"by hand: {by_hand:,}")

# %% 2. from the accounting, its leaf components
rows = gpt2viz.parameters("gpt2").rows()
print(f"accounting: {gpt2viz.parameters('gpt2').total:,} ({len(rows)} components)")

# %% 3. from the tensors of a model with these shapes (random weights: the count is the same)
model = gpt2viz.load("gpt2").model
from_tensors = sum(p.numel() for p in model.parameters())
print(f"tensors: {from_tensors:,}")
assert by_hand == gpt2viz.parameters("gpt2").total == from_tensors == 124_439_808
