"""Every symbol the pages use (the same set as the code's shape comments), and the ideas a student
meets, each with the page that shows it."""

SYMBOLS = [
    ("B", "batch", "how many texts run side by side; the app runs one (B = 1)"),
    ("T", "positions computed", "tokens this step computes: the whole text in full and training, the prompt "
                                "in prefill, 1 in decode"),
    ("P", "cached positions", "tokens already in the KV cache before this step: P = 0 in full, training and "
                              "prefill (which fills the cache), the text before the new token in decode"),
    ("L", "keys read", "positions each query may attend to in this step: L = P + T (the lower-right causal mask)"),
    ("d", "width, n_embd", "the size of every residual-stream vector: 768 for gpt2, 1,600 for gpt2-xl"),
    ("nh", "heads, n_head", "attention heads per block: 12 for gpt2"),
    ("dh", "head size", "d / nh = 64 for every GPT-2 size"),
    ("V", "vocabulary", "50,257 tokens: 50,000 merges, 256 bytes, and <|endoftext|>"),
    ("n_layer", "blocks", "Transformer blocks: 12, 24, 36, 48 for the four sizes"),
    ("d_mlp", "MLP width, n_inner", "the MLP's hidden width: 4d in every GPT-2 (shapes then read 4d); "
                                    "a custom config may set another"),
    ("n_ctx", "context", "the most positions GPT-2 can read: 1,024 (the rows of wpe)"),
    ("xₙ", "residual stream into block n", "recorded as blocks.n.resid_pre; x₀ = token + position embedding"),
    ("Z₁", "LayerNorm 1 output", "ln1.out: the normalised stream that attention reads"),
    ("Q, K, V", "queries, keys, values", "attn.q, attn.k, attn.v, each [B, nh, T, dh]"),
    ("H = z", "per-head outputs", "one name for one tensor: H_h in the equations, attn.z in the recording, "
                                  "‖z‖ on the Attention page; [B, nh, T, dh], each head's weighted average of "
                                  "values"),
    ("Δattn", "attention's update", "attn.out [B, T, d]: merge(H) W_O + b_O, added to the stream"),
    ("x′ₙ", "stream after attention", "resid_mid = xₙ + Δattn"),
    ("Z₂", "LayerNorm 2 output", "ln2.out: the normalised stream that the MLP reads"),
    ("Δmlp", "the MLP's update", "mlp.out [B, T, d], added to the stream"),
    ("xₙ₊₁", "stream out of block n", "resid_post = x′ₙ + Δmlp, the next block's xₙ"),
    ("μ", "mean", "LayerNorm's mean over the d features of one position (ln*.mean, [B, T, 1])"),
    ("σ²", "variance", "LayerNorm's biased variance over the d features (ln*.var, [B, T, 1]); ε = 1e-5 is "
                       "added before the square root"),
    ("g, b", "gain and bias", "LayerNorm's learned per-feature scale and shift (ln_*.weight, ln_*.bias)"),
    ("W_E, W_P", "token and position tables", "wte [V, d] and wpe [n_ctx, d]; W_E also makes the logits (tied)"),
    ("M", "causal mask", "−∞ where key j comes after query i, 0 elsewhere; added to the scores before the softmax"),
]

# (idea, what it is in our words, url path of the page that shows it)
IDEAS = [
    ("Residual stream", ("The d-wide vector each position carries from the embeddings to the output. Every block "
     "reads it and adds two updates to it (Δattn, then Δmlp); nothing is ever overwritten."), "block"),
    ("LayerNorm", ("Centres one position's d values on their mean μ, divides by their spread √(σ² + ε), then "
     "applies a learned gain g and bias b per feature. A fresh model has g = 1 and b = 0."), "layernorm"),
    ("Causal mask", ("Stops a position from reading later ones: scores of future keys become −∞ before the "
     "softmax, so they get weight 0."), "attention"),
    ("Softmax", ("Turns a row of scores into positive weights that sum to 1: exponentiate each, divide by the "
     "total. Attention uses it over keys, the output over the vocabulary."), "attention"),
    ("GELU", ("The MLP's smooth non-linearity: close to 0 for negative inputs, close to the input for positive "
     "ones, with a soft bend in between (GPT-2 uses its tanh form)."), "mlp"),
    ("Dropout", ("In training only, zeroes a random share p of values (p = 0.1 in GPT-2) and scales the rest by "
     "1/(1 − p), so the model cannot lean on any single feature. Off in every other mode."), "training"),
    ("Tied embeddings", ("The output layer reuses the token table: the logits are the final stream's dot "
     "products with every row of wte, so the unembedding adds no parameters."), "output"),
    ("KV cache", ("Each block's keys and values of the positions already read, kept so that a new token need "
     "not recompute them: [B, nh, L, dh] for K and for V, in every block."), "modes"),
    ("Prefill", ("Reading a prompt in one pass and filling the KV cache with its keys and values; only the last "
     "position's logits are needed to pick the next token."), "modes"),
    ("Decode", ("One step of generation: the single newest token (T = 1) is run against the P cached positions, "
     "reads L = P + 1 keys, and adds its own key and value to the cache."), "generation"),
    ("Temperature", ("Divides the logits before the softmax: below 1 sharpens the distribution towards the most "
     "likely token, above 1 flattens it; 0 means always take the most likely (greedy)."), "generation"),
    ("Top-k", ("Keeps only the k most likely tokens, renormalised, before sampling, so an unlikely token from "
     "the long tail is never drawn."), "generation"),
    ("Logit lens", ("Reads the residual stream part-way through the model as if it were the last block's "
     "output (final LayerNorm, then the unembedding), to see what it would predict at that depth."), "lens"),
]
