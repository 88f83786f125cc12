"""gpt2viz: an instrumented GPT-2 whose every intermediate tensor can be recorded, counted and shown.

For notebooks (gpt2viz/api.py): `gpt2viz.load("demo").run("...")`, `gpt2viz.parameters("gpt2")`,
`gpt2viz.attention_figure(run, block, head)`; imported on first use, so the command line stays light.

The package is grouped by layer, lowest first; a layer imports only those below it (a test reads every
import and checks this order):

- `spec/`: the vocabulary (config, schema, references, costs, glossary, page registry, paths, serving
  rule); torch-free, imports nothing of ours;
- `model/`: the instrumented model, its modes, traces, weights and tokenizer (spec);
- `anatomy/`: components and their parameter accounting, diagrams, hook names (spec, model);
- `analysis/`: head scores and finder, logit lens, knock-outs and patching, experiments (the above);
- `teaching/`: notices, tour, prompts, exercises, live checks, lessons, snippets, handout (the above);
- `server/`: upload gate, uploads, trace cache, launcher, class server (spec, model);
- `plots/`: figure builders (spec); `ui/`: the Streamlit layer (everything);
- `api.py`, `cli.py`: the notebook API and the command line (everything but ui).

Module paths printed before the packages existed (`gpt2viz.tokenizer`, `gpt2viz.weights`,
`gpt2viz.lesson.head_scores`, ...) still import: `_MovedModules` below maps each to its new home,
loading it only when asked."""

import importlib
import importlib.abc
import importlib.util
import sys

_API = ("load", "parameters", "attention_figure", "Model", "Run", "Params")

# Old module path -> its home now. The page notices' head scores moved with the head finder.
MOVED = {
    "tokenizer": "model.tokenizer", "config": "spec.config", "schema": "spec.schema", "modes": "model.modes",
    "weights": "model.weights", "trace": "model.trace", "record": "model.record",
    "interventions": "model.interventions", "demo_model": "model.demo_model", "hooks": "anatomy.hooks",
    "params": "anatomy.params", "lens": "analysis.lens", "heads": "analysis.heads", "whatif": "analysis.whatif",
    "experiments": "analysis.experiments", "lesson": "analysis.heads",
}


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """`import gpt2viz.weights` gives the module `gpt2viz.model.weights` itself (one module, two names)."""

    def find_spec(self, fullname, path=None, target=None):
        prefix, _, old = fullname.partition(".")
        if prefix != __name__ or old not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        return importlib.import_module(f"{__name__}.{MOVED[spec.name.partition('.')[2]]}")

    def exec_module(self, module):
        module.__spec__ = importlib.util.find_spec(module.__name__)  # the import system set the alias's


sys.meta_path.append(_MovedModules())


def __getattr__(name):
    if name in _API:
        from . import api

        return getattr(api, name)
    if name in MOVED:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'gpt2viz' has no attribute {name!r}")
