"""The page registry: every page explicit (st.navigation turns off pages/ discovery)."""

from pathlib import Path

import streamlit as st

ROOT = Path(__file__).resolve().parents[2] / "pages"

# (file in pages/, title, url path, icon)
PAGE_TABLE = [
    ("overview.py", "Overview", "overview", "🗺️"),
    ("tokens.py", "Tokens and embeddings", "tokens", "🔤"),
    ("block.py", "Transformer block", "block", "🧱"),
    ("layernorm.py", "LayerNorm", "layernorm", "📏"),
    ("attention.py", "Attention", "attention", "👀"),
    ("merge.py", "Merge and project", "merge", "🔀"),
    ("mlp.py", "MLP", "mlp", "🧮"),
    ("output.py", "Output", "output", "🎯"),
    ("modes.py", "Modes and KV cache", "modes", "🗂️"),
    ("params.py", "Parameter accounting", "params", "🔢"),
]



def pages() -> list:
    return [st.Page(ROOT / file, title=title, url_path=url, icon=icon, default=(url == "overview"))
            for file, title, url, icon in PAGE_TABLE]
