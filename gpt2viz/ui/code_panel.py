"""The Code panel's snippets (gpt2viz/teaching/snippets.py) for the view on screen: one tab per kind
(gpt2viz · transformers), each copyable, and one download of both as a `.py` of `# %%` cells.

The code sits in a closed expander that draws it only once opened (`opened`): the browser highlights
every code block it is sent, open or not, about 0.3 s of its main thread a page for code below the fold."""

from pathlib import Path

import streamlit as st

from ..teaching.snippets import KINDS, View, cells, snippet
from .state import Selection

# True in the session: every code expander drawn open (the lesson export reads the code from the page;
# gpt2viz/lesson_site.py sets it)
OPEN_CODE = "_code_open"

# the page's own controls the snippets follow (session keys)
PAGE_VALUES = {"layernorm": ("ln",), "output": ("temp", "topk", "topp")}


def view_of(sel: Selection, values: tuple = ()) -> View | None:
    """The selection as a snippet's view; None when the weights have no spec gpt2viz.load takes."""
    w, cfg = sel.weights, sel.config
    spec = f"random:{w.model_name}:seed={w.seed}" if w.random else "demo" if w.demo else w.path
    if spec is None:
        return None
    return View(sel.text, spec, sel.mode.value, sel.block, sel.head, seed=w.seed, values=values, config=cfg,
                ids=tuple(sel.ids), cut=bool(sel.cut), folder=bool(w.path) and Path(w.path).is_dir())


# What each page control a snippet follows is called where the page shows it (ids_b has no control).
VALUE_WORDS = {"ln": "which LayerNorm", "temp": "temperature", "topk": "top-k", "topp": "top-p", "steps": "steps",
               "gen_seed": "sampling seed", "text_b": "second text", "answers": "answers", "answer": "answer",
               "versus": "versus token", "position": "position", "part": "part knocked out", "method": "method",
               "neuron": "neuron", "lens_pos": "position"}


def view_words(values: tuple = ()) -> str:
    """'text, weights, mode, block, head', then the page's own controls that the snippets follow."""
    own = list(dict.fromkeys(VALUE_WORDS[k] for k, _ in values if k in VALUE_WORDS))
    shared = "text, weights, mode, block, head"
    if not own:
        return shared
    return f"{shared}, and this page's {own[0] if len(own) == 1 else ', '.join(own[:-1]) + ' and ' + own[-1]}"


def opened(label: str, key: str):
    """A closed expander that reruns the page when opened: (the expander, whether to draw its code now)."""
    box = st.expander(label, expanded=bool(st.session_state.get(OPEN_CODE)), key=key, on_change="rerun")
    return box, box.open


def section(page: str, sel: Selection, values: tuple = ()) -> None:
    """The Code section of a page without a component (What if, Logit lens, Head finder, Generation)."""
    st.subheader("Code")
    snippets(page, sel, values)


def snippets(page: str, sel: Selection, values: tuple = ()) -> None:
    """The snippets that recompute `page`'s main numbers for this view (`values`: the page's controls)."""
    values = values or tuple((k, st.session_state[k]) for k in PAGE_VALUES.get(page, ()) if st.session_state.get(k))
    view = None if sel.text_error else view_of(sel, values)
    if view is None:
        st.caption("The snippets need a text and weights gpt2viz.load can open.")
        return
    st.markdown(f"**Recompute this page's numbers yourself**, for this view ({view_words(values)}): with "
                "gpt2viz, or with `transformers` alone on the same weights read from their file (forward hooks on its "
                "modules). Each script leaves the numbers in `result`.")
    box, show = opened(f"The two scripts: {' and '.join(KINDS)}", key=f"code-{page}")
    if show:
        with box:
            for tab, kind in zip(st.tabs(list(KINDS)), KINDS):
                with tab:
                    st.code(snippet(page, view, kind), language="python", wrap_lines=True)  # narrow windows wrap
    st.download_button(f"gpt2viz-{page}.py (both, as # %% cells)", lambda: cells(page, view),
                       file_name=f"gpt2viz-{page}.py", mime="text/x-python", key=f"cells-{page}",
                       icon=":material/download:", on_click="ignore")
