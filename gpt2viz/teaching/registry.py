"""The registry of sentence functions: every function of `gpt2viz.teaching` that builds a sentence
from a run's, a model's or a lesson's numbers (numbers and names in, text out; no Streamlit).

A teaching module that has such functions lists them in a module-level `SENTENCES` tuple, and the
functions of its public interface that return text but state no fact about a run (formatting
helpers, labels, static prose, page assembly) in a commented `NOT_SENTENCES` tuple.
tests/test_sentence_registry.py holds the contract: every registered function is exercised by a
corpus test (tests/test_*corpus*.py), every text-returning function the pages call is in one of the
two tuples, and no module under gpt2viz/ui/ or views/ formats a run's numbers into a sentence itself.
"""

import importlib
import pkgutil
from collections.abc import Callable
from types import ModuleType

from .. import teaching


def modules() -> list[ModuleType]:
    """Every module of gpt2viz.teaching, imported."""
    return [importlib.import_module(f"{teaching.__name__}.{m.name}")
            for m in pkgutil.iter_modules(teaching.__path__) if not m.name.startswith("_")]


def sentence_functions() -> set[Callable]:
    """The union of every teaching module's SENTENCES."""
    return {f for m in modules() for f in getattr(m, "SENTENCES", ())}


def not_sentences() -> set[Callable]:
    """The union of every teaching module's NOT_SENTENCES: text-returning functions that state no fact
    about a run, a model or a lesson's measurement."""
    return {f for m in modules() for f in getattr(m, "NOT_SENTENCES", ())}
