"""The instrumented GPT-2 and everything that runs it.

The model itself (gpt2.py), the recorder and its interventions, the four modes and generation, the
trace a run leaves (and the tensors derived from it), weights (random, demo, safetensors, download),
weights folders with their own config and vocabulary (folder.py, vocab.py) and the nanoGPT converter
that writes them (convert.py), the tokenizer, and the allocator's memory policy. May import: spec."""
