"""The page registry: every page explicit. The folder is views/, not pages/: Streamlit treats a pages/
folder beside the entry script as an old-style multipage app and would run those files without app.py."""

from pathlib import Path

import streamlit as st

ROOT = Path(__file__).resolve().parents[2] / "views"

# (file in views/, title, url path, icon)
PAGE_TABLE = [
    ("start.py", "Start here", "start", ":material/flag:"),
    ("overview.py", "Overview", "overview", ":material/map:"),
    ("tokens.py", "Tokens and embeddings", "tokens", ":material/abc:"),
    ("block.py", "Transformer block", "block", ":material/view_agenda:"),
    ("layernorm.py", "LayerNorm", "layernorm", ":material/straighten:"),
    ("attention.py", "Attention", "attention", ":material/visibility:"),
    ("merge.py", "Merge and project", "merge", ":material/merge:"),
    ("mlp.py", "MLP", "mlp", ":material/hub:"),
    ("output.py", "Output", "output", ":material/target:"),
    ("modes.py", "Modes and KV cache", "modes", ":material/memory:"),
    ("params.py", "Parameter accounting", "params", ":material/calculate:"),
    ("generation.py", "Generation, step by step", "generation", ":material/play_arrow:"),
    ("training.py", "Training internals", "training", ":material/school:"),
    ("lens.py", "Logit lens", "lens", ":material/search:"),
    ("exercises.py", "Exercises", "exercises", ":material/quiz:"),
    ("glossary.py", "Glossary", "glossary", ":material/menu_book:"),
    ("about.py", "About", "about", ":material/info:"),
]



DEFAULT = "overview"


def href(url: str) -> str:
    """The address of a page: Streamlit serves the default page at the root only."""
    return "/" if url == DEFAULT else "/" + url


SECTIONS = {"Start": PAGE_TABLE[:1], "The model": PAGE_TABLE[1:11], "Classroom": PAGE_TABLE[11:15],
            "Reference": PAGE_TABLE[15:]}
TITLES = {url: title for _, title, url, _ in PAGE_TABLE}


def pages() -> dict[str, list]:
    return {section: [st.Page(ROOT / file, title=title, url_path=url, icon=icon, default=(url == DEFAULT))
                      for file, title, url, icon in table] for section, table in SECTIONS.items()}
