"""gpt2viz for a class server without a proxy in front: app.py behind `UploadGate`, which lets at most
2 uploads arrive at once (GPT2VIZ_UPLOADS_AT_ONCE), the others waiting their turn.

    streamlit run serve.py --server.address 0.0.0.0

Everything else is app.py's (the same pages, settings and .streamlit/config.toml); see docs/deploy.md.
"""

import streamlit as st
from starlette.middleware import Middleware

from gpt2viz.server.upload_gate import UploadGate

app = st.App("app.py", middleware=[Middleware(UploadGate)])
