"""Every symbol the pages use (the same set as the code's shape comments), the terms a student meets,
each with an anchor on the Glossary page and the page that shows it, and the names readers bring
from nanoGPT and TransformerLens.

`link(term)` gives a Markdown link to a term's entry (`[logits](/glossary#logit)`): the component
texts call it where a term is first used. Streamlit opens a Markdown link in a new tab, so the
page being read stays open. Torch-free and Streamlit-free."""

import re
from dataclasses import dataclass

SYMBOLS = [
    ("B", "batch", "how many texts run side by side; the app runs one (B = 1)"),
    ("T", "positions computed", "tokens this step computes: the whole text in full and training, the prompt "
                                "in prefill, 1 in decode"),
    ("P", "cached positions", "tokens already in the KV cache before this step: P = 0 in full, training and "
                              "prefill (which fills the cache), the text before the new token in decode"),
    ("L", "keys in this step", "positions whose keys this step holds, cached and new: L = P + T. Query i of the "
                               "step (i = 0 … T − 1) reads the first P + i + 1 of them, the causal mask hiding "
                               "the rest; only the last query reads all L"),
    ("d", "width, n_embd", "the size of every residual-stream vector: 768 for gpt2, 1,600 for gpt2-xl"),
    ("nh", "heads, n_head", "attention heads per block: 12 for gpt2"),
    ("dh", "head size", "d / nh = 64 for every GPT-2 size"),
    ("V", "vocabulary", "50,257 tokens: 50,000 merges, 256 bytes, and <|endoftext|>. V alone always means the "
                        "vocabulary; the values of head h are V_h"),
    ("n_layer", "blocks", "Transformer blocks: 12, 24, 36, 48 for the four sizes"),
    ("n", "block index", "which block: 0 … n_layer − 1 (blocks.n.… in tensor names, xₙ its input)"),
    ("d_mlp", "MLP width, n_inner", "the MLP's hidden width: 4d in every GPT-2 (shapes then read 4d); "
                                    "a custom config may set another"),
    ("n_ctx", "context", "the most positions a model can read: the rows of wpe; 1,024 for GPT-2, 32 for the "
                         "demo model"),
    ("xₙ", "residual stream into block n", "blocks.n.resid_pre; x₀ = token + position embedding"),
    ("Z₁", "LayerNorm 1 output", "ln1.out: the normalised stream that attention reads"),
    ("Q_h, K_h, V_h", "queries, keys, values of head h", "attn.q, attn.k, attn.v, each [B, nh, T, dh] for all "
                                                          "heads; Q, K without h: all heads' at once"),
    ("H = z", "per-head outputs", "one name for one tensor: H_h in the equations, attn.z in the tensor names, "
                                  "‖z‖ on the Attention page; [B, nh, T, dh], each head's weighted average of "
                                  "its values V_h"),
    ("Δattn", "attention's update", "attn.out [B, T, d]: merge(H) W_O + b_O (after dropout in training), added "
                                    "to the stream"),
    ("x′ₙ", "stream after attention", "resid_mid = xₙ + Δattn"),
    ("Z₂", "LayerNorm 2 output", "ln2.out: the normalised stream that the MLP reads"),
    ("A", "MLP pre-activation", "mlp.pre [B, T, 4d]: A = Z₂ W_fc + b_fc, what the GELU receives"),
    ("G", "MLP activation", "mlp.post [B, T, 4d]: G = GELU(A), the 4d features the projection reads"),
    ("Δmlp", "the MLP's update", "mlp.out [B, T, d]: G W_proj + b_proj (after dropout in training), added to "
                                 "the stream"),
    ("xₙ₊₁", "stream out of block n", "resid_post = x′ₙ + Δmlp, the next block's xₙ"),
    ("Z_f", "final LayerNorm output", "ln_f.out [B, T, d]: the last block's stream, normalised once more; the "
                                      "logits are computed from Z_f, not from the stream itself"),
    ("μ", "mean", "LayerNorm's mean over the d features of one position (ln*.mean, [B, T, 1])"),
    ("σ²", "variance", "LayerNorm's biased variance over the d features (ln*.var, [B, T, 1]); ε = 1e-5 is "
                       "added before the square root"),
    ("g, b", "gain and bias", "LayerNorm's learned per-feature scale and shift (ln_*.weight, ln_*.bias); b_QKV, "
                              "b_O, b_fc and b_proj are the projections' biases, b₁, b₂ and b_f the LayerNorms'"),
    ("W_E, W_P", "token and position tables", "wte [V, d] and wpe [n_ctx, d]"),
    ("W_U", "unembedding", "the output matrix [d, V]: logits = Z_f W_U. GPT-2 ties it, W_U = W_Eᵀ; an untied "
                           "model stores its transpose as lm_head.weight [V, d]"),
    ("p_embd, p_resid, p_attn", "dropout rates", "the share of values dropout zeroes in training: after the "
                                                 "embeddings, on each sublayer's update, on the attention pattern; "
                                                 "0.1 each in GPT-2"),
    ("ε", "LayerNorm's epsilon", "1e-5, added to σ² before the square root so that a vector with no spread "
                                 "does not divide by 0; the scaled vector's spread is then √(σ²/(σ² + ε)), 1 up "
                                 "to ε"),
    ("M", "causal mask", "−∞ where key j comes after query i, 0 elsewhere; added to the scores before the softmax"),
]


@dataclass(frozen=True)
class Entry:
    term: str
    text: str  # our own words
    page: str | None  # url path of the page that shows it
    group: str
    also: tuple[str, ...] = ()  # other names it is looked up by

    @property
    def key(self) -> str:
        return anchor_of(self.term)


def anchor_of(term: str) -> str:
    """The anchor Streamlit gives a Markdown heading: lower case, runs of other characters as one "-"
    ("Knock-out (ablation)" -> "knock-out-ablation")."""
    return "-".join(w for w in re.split(r"[^0-9a-z]+", term.lower()) if w)


MODEL, ATTENTION, RUNNING, EXPERIMENTS = "The model", "Attention", "Running it", "Experiments"
ENTRIES = [
    Entry("Token", ("A piece of text the model reads as one unit: a word, part of a word, a space with a word, or a "
                    "byte. GPT-2's tokenizer (BPE) cuts text into tokens and numbers them 0 … V − 1."), "tokens", MODEL,
          ("tokens", "token id")),
    Entry("Residual stream", ("The d-wide vector each position carries from the embeddings to the output. Every "
                              "block reads it and adds two updates to it (Δattn, then Δmlp); nothing is ever "
                              "overwritten."), "block", MODEL, ("stream",)),
    Entry("Pre-LN", ("Where GPT-2 puts its LayerNorms: before each sublayer, on a copy of the stream, so the "
                     "stream itself only ever has updates added to it. A final LayerNorm then normalises it once "
                     "before the output. (The original Transformer normalised after each addition: post-LN.)"),
          "block", MODEL),
    Entry("LayerNorm", ("Centres one position's d values on their mean μ, divides by their spread √(σ² + ε), then "
                        "applies a learned gain g and bias b per feature. A fresh model has g = 1 and b = 0."),
          "layernorm", MODEL),
    Entry("MLP", ("The second sublayer of a block: each position on its own is widened from d to 4d features (A), "
                  "passed through the GELU (G) and narrowed back to d (Δmlp)."), "mlp", MODEL),
    Entry("GELU", ("The MLP's smooth non-linearity. For large positive inputs it is close to the input; for "
                   "negative ones it dips below 0, down to about −0.17 near −0.75, and tends to 0 only for large "
                   "negative inputs (−0.004 at −3). GPT-2 uses its tanh form."), "mlp", MODEL),
    Entry("Neuron", ("One of the 4d features of the MLP: the column of W_fc whose dot product with Z₂ gives its "
                     "pre-activation (what it detects), the GELU of that, and the row of W_proj it scales (what it "
                     "writes back into the stream). A neuron is active where its GELU output is large."), "mlp", MODEL,
          ("neurons", "pre-activation", "pre-activations")),
    Entry("Logit", ("A raw score, one per vocabulary entry, that the model gives each possible next token: the "
                    "dot product of Z_f with that token's row of wte. Any real number; the softmax turns the V "
                    "logits of a position into probabilities."), "output", MODEL, ("logits",)),
    Entry("Softmax", ("Turns a row of scores into positive weights that sum to 1: exponentiate each, divide by the "
                      "total. Attention uses it over keys, the output over the vocabulary."), "attention", MODEL),
    Entry("Unembedding", ("The last step: the matrix W_U [d, V] that turns Z_f, the final LayerNorm's output, "
                          "into V logits per position."), "output", MODEL, ("W_U",)),
    Entry("Tied embeddings", ("The output layer reuses the token table: W_U = W_Eᵀ, so the logits are Z_f's dot "
                              "products with every row of wte and the unembedding adds no parameters."), "output",
          MODEL, ("tied",)),
    Entry("Dropout", ("In training only, zeroes a random share p of values and scales the rest by 1/(1 − p), so "
                      "the model cannot lean on any single feature; off in every other mode. The GPT-2 configs "
                      "published with transformers set p = 0.1 at four places: the embeddings' sum, the "
                      "attention pattern, and each sublayer's update before it is added."), "training", MODEL),
    Entry("Head", ("One of the nh attention units in a block, each with its own dh-wide queries, keys and values: "
                   "each head chooses on its own which earlier positions to read."), "attention", ATTENTION,
          ("heads", "attention head")),
    Entry("Query, key, value", ("The three vectors attention makes from each position, per head. A query asks, "
                                "a key answers: their dot product q·k scores how well a position matches. The "
                                "values are what gets averaged with the resulting weights."), "attention",
          ATTENTION, ("query", "key", "value", "queries", "keys", "values")),
    Entry("Causal mask", ("Stops a position from reading later ones: scores of future keys become −∞ before the "
                          "softmax, so they get weight 0."), "attention", ATTENTION),
    Entry("Attention pattern", ("A head's weights after the softmax: one row per query, one column per key, each "
                                "row summing to 1."), "attention", ATTENTION, ("pattern",)),
    Entry("Attention sink", ("A position, usually the first, that many heads attend to heavily when they have "
                             "nothing useful to read: the softmax must put its weight somewhere, and a sink "
                             "takes it while adding little."), "attention", ATTENTION, ("sink",)),
    Entry("Previous-token head", ("A head whose query at each position puts most of its weight on the position "
                                  "just before it, so it copies information about the previous token forward."),
          "attention", ATTENTION),
    Entry("Induction head", ("A head that completes repeats: at a token seen before, it attends to the token "
                             "that followed the earlier occurrence and raises its logit. It works with a "
                             "previous-token head in an earlier block."), "attention", ATTENTION),
    Entry("KV cache", ("Each block's keys and values of the positions already read, kept so that a new token need "
                       "not recompute them: [B, nh, L, dh] for K and for V, in every block."), "modes", RUNNING),
    Entry("Prefill", ("Reading a prompt in one pass and filling the KV cache with its keys and values. Generation "
                      "needs only the last position's logits to pick the next token, and this app keeps only "
                      "those in prefill; a plain forward pass returns every position's."), "modes", RUNNING),
    Entry("Decode", ("One step of generation: the single newest token (T = 1) is run against the P cached "
                     "positions, reads L = P + 1 keys, and adds its own key and value to the cache."), "generation",
          RUNNING),
    Entry("Temperature", ("Divides the logits before the softmax: below 1 sharpens the distribution towards the "
                          "most likely token, above 1 flattens it; 0 means always take the most likely (greedy)."),
          "generation", RUNNING),
    Entry("Top-k", ("Keeps only the k most likely tokens, renormalised, before sampling, so an unlikely token from "
                    "the long tail is never drawn."), "generation", RUNNING),
    Entry("Top-p", ("Nucleus sampling: keeps the fewest most likely tokens whose probabilities add up to p, "
                    "renormalised, so the number kept follows how sure the model is (after top-k, if both)."),
          "generation", RUNNING, ("nucleus sampling",)),
    Entry("Loss", ("How surprised the model is by the true next token: −ln of the probability it gave it, "
                   "averaged over positions (cross-entropy, in nats). A uniform guess among N tokens scores ln N."),
          "training", RUNNING, ("cross-entropy",)),
    Entry("Entropy", ("How spread out a distribution is: −Σ p ln p, in nats. ln N for a uniform choice among N, "
                      "0 for a certain one. An attention row's entropy divided by ln(i + 1), its even row's, is 1 "
                      "when the row is even and 0 when it is all on one key."), "experiments", RUNNING),
    Entry("Nat", ("The unit of entropy and loss measured with the natural logarithm: −ln p. ln 2 = 0.693 nats "
                  "are one bit."), "training", RUNNING, ("nats",)),
    Entry("Mode", ("How the app runs the model: full sequence (every position at once, no cache), training "
                   "(the same with dropout and the loss), prefill (read a prompt and fill the KV cache) or decode "
                   "(one new token against the cache)."), "modes", RUNNING,
          ("modes", "full sequence", "training")),
    Entry("Perplexity", ("e to the power of the loss: the number of equally likely tokens the model is, on "
                         "average, choosing among. A loss of 2.3 is a perplexity of 10."), "training", RUNNING),
    Entry("Logit lens", ("Reads the residual stream part-way through the model as if it were the last block's "
                         "output (final LayerNorm, then the unembedding), to see what it would predict at that "
                         "depth."), "lens", EXPERIMENTS),
    Entry("Knock-out (ablation)", ("Removing one part, a head, a whole attention, an MLP or one neuron, by "
                                   "replacing its output with zero or with its mean over the positions, and "
                                   "watching how the prediction changes."), "whatif", EXPERIMENTS,
          ("knock-out", "ablation", "knock out")),
    Entry("Direct logit attribution", ("Splits one logit at one position into a share per part: the embedding, "
                                       "every head, every attention bias, every MLP and the final LayerNorm's "
                                       "bias. The final stream is their sum; with the final LayerNorm's scale "
                                       "held at the run's value, each part centred and scaled, then read "
                                       "through the unembedding, adds up to the logit exactly. It sees only what "
                                       "a part writes straight to the answer (its direct effect), not what it "
                                       "makes later parts do."), "attribution", EXPERIMENTS,
          ("logit attribution", "DLA")),
    Entry("Logit difference", ("logit(A) − logit(B) at one position: how much more the model favours answer A "
                               "than answer B. It does not depend on the other tokens (the softmax's shared "
                               "normaliser cancels), which makes it the usual measure in circuit analysis."),
          "attribution", EXPERIMENTS, ("logit diff", "margin")),
    Entry("Activation patching", ("Running a corrupt text B with one activation copied from the run of a clean "
                                  "text A, to find which parts carry the difference between their answers."),
          "patch", EXPERIMENTS, ("patching",)),
    Entry("Path patching", ("Removing one part's output (a head's, an MLP's) from the input of one later part "
                            "only, its receiver (a head's query, key or value input, an MLP, or the final stream: "
                            "the direct path), and running the rest again: how much of the part's effect travels "
                            "through that receiver. Done for every receiver in turn, it shows the route."),
          "paths", EXPERIMENTS, ("paths", "receiver")),
    Entry("Total effect", ("Everything that changes when a part is removed everywhere (What if's knock-out): what "
                           "it writes straight to the answer (its direct effect) and what it makes later parts do. "
                           "Path patching splits it by the route it takes."), "whatif", EXPERIMENTS),
    Entry("Restored fraction", ("How much of A's answer a patch brings back into B's run, on the logit difference "
                                "m of an answer pair: (m_patched − m_B) / (m_A − m_B). 0 when the patch changes "
                                "nothing, 1 when it gives A's margin back in full."), "patch", EXPERIMENTS),
]
GROUPS = (MODEL, ATTENTION, RUNNING, EXPERIMENTS)
URL = "/glossary"  # the Glossary page's address (Streamlit serves views/glossary.py there)

# names a reader may bring from elsewhere: (where from, their name, ours, what differs)
ALIASES = [
    ("nanoGPT", "C (n_embd)", "d", ""),
    ("nanoGPT", "n_head, n_layer, block_size", "nh, n_layer, n_ctx", ""),
    ("nanoGPT", "lm_head.weight", "W_U's transpose, [V, d]", "tied to wte.weight in GPT-2, as here"),
    ("nanoGPT", "transformer.h[n]", "block n", "the same checkpoint names: h.{n}.attn.c_attn, …"),
    ("TransformerLens", "d_model, n_heads, d_head", "d, nh, dh", ""),
    ("TransformerLens", "d_mlp, d_vocab, n_ctx", "d_mlp (4d), V, n_ctx", ""),
    ("TransformerLens", "hook_embed, hook_pos_embed", "embed.tok, embed.pos",
     "hook_pos_embed is [batch, pos, d_model]; embed.pos here is [T, d]"),
    ("TransformerLens", "blocks.{n}.hook_resid_pre / _mid / _post", "blocks.n.resid_pre / resid_mid / resid_post", ""),
    ("TransformerLens", "blocks.{n}.ln1.hook_scale, ln1.hook_normalized", "blocks.n.ln1.var, ln1.normalized",
     "hook_scale is √(σ² + ε), here the variance σ² itself"),
    ("TransformerLens", "blocks.{n}.attn.hook_q, hook_k, hook_v", "blocks.n.attn.q, attn.k, attn.v",
     "[batch, pos, head, d_head] there; [B, nh, T, dh] here (heads before positions)"),
    ("TransformerLens", "blocks.{n}.attn.hook_attn_scores", "blocks.n.attn.scores",
     "masked there (−inf above the diagonal); here recorded before the mask"),
    ("TransformerLens", "blocks.{n}.attn.hook_pattern", "blocks.n.attn.pattern", "the same layout"),
    ("TransformerLens", "blocks.{n}.attn.hook_z", "blocks.n.attn.z (H)",
     "[batch, pos, head, d_head] there; [B, nh, T, dh] here"),
    ("TransformerLens", "blocks.{n}.hook_attn_out, hook_mlp_out", "blocks.n.attn.out (Δattn), mlp.out (Δmlp)", ""),
    ("TransformerLens", "blocks.{n}.mlp.hook_pre, hook_post", "blocks.n.mlp.pre (A), mlp.post (G)", ""),
    ("TransformerLens", "ln_final.hook_normalized", "ln_f.normalized", "Z_f is ln_f.out, after the gain and bias"),
]


def entry(term: str) -> Entry:
    """An entry by its term, its anchor or another name it goes by (case-insensitive)."""
    key = anchor_of(term)
    for e in ENTRIES:
        if key == e.key or key in {anchor_of(a) for a in e.also}:
            return e
    raise KeyError(f"no glossary entry for {term!r}")


def link(term: str, label: str | None = None) -> str:
    """A Markdown link to a term's entry: link("logit", "logits") -> "[logits](/glossary#logit)"."""
    return f"[{label or term}]({URL}#{entry(term).key})"


def linked_keys(text: str) -> list[str]:
    """The anchors a Markdown text links to on the Glossary page."""
    return re.findall(r"\]\(" + re.escape(URL) + r"#([0-9a-z-]+)\)", text)
