"""gpt2viz: an instrumented GPT-2 whose every intermediate tensor can be recorded, counted and shown."""
