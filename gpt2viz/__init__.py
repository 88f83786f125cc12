"""gpt2viz: an instrumented GPT-2 whose every intermediate tensor can be recorded, counted and shown.

For notebooks (gpt2viz/api.py): `gpt2viz.load("demo").run("...")`, `gpt2viz.parameters("gpt2")`,
`gpt2viz.attention_figure(run, block, head)`; imported on first use, so the command line stays light."""

_API = ("load", "parameters", "attention_figure", "Model", "Run", "Params")


def __getattr__(name):
    if name in _API:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'gpt2viz' has no attribute {name!r}")
