"""Every symbol the pages use, in one place (the same set as the code's shape comments)."""

SYMBOLS = [
    ("B", "batch", "how many texts run side by side; the app runs one (B = 1)"),
    ("T", "positions computed", "tokens this step computes: the whole text in full and training, the prompt in prefill, 1 in decode"),
    ("P", "cached positions", "tokens already in the KV cache before this step: P = 0 in full, training and prefill (which fills the cache), the text before the new token in decode"),
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
    ("σ²", "variance", "LayerNorm's biased variance over the d features (ln*.var, [B, T, 1]); ε = 1e-5 is added before the square root"),
    ("g, b", "gain and bias", "LayerNorm's learned per-feature scale and shift (ln_*.weight, ln_*.bias)"),
    ("W_E, W_P", "token and position tables", "wte [V, d] and wpe [n_ctx, d]; W_E also makes the logits (tied)"),
    ("M", "causal mask", "−∞ where key j comes after query i, 0 elsewhere; added to the scores before the softmax"),
]
