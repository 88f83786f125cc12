"""gpt2viz for a class: app.py behind two small ASGI middlewares (`gpt2viz app` and the class server run it).

- `UploadGate` lets at most 2 uploads arrive at once (GPT2VIZ_UPLOADS_AT_ONCE), the others waiting
  their turn;
- `VoterCookie` gives each browser an anonymous id signed with GPT2VIZ_LESSON_KEY, for the class vote
  (one vote per browser per round).

    streamlit run serve.py --server.address 0.0.0.0

Everything else is app.py's (the same pages, settings and .streamlit/config.toml); see docs/deploy.md.
"""

import os

import streamlit as st
from starlette.middleware import Middleware

from gpt2viz.server.upload_gate import UploadGate
from gpt2viz.server.voter import VoterCookie
from gpt2viz.teaching.lessons import LessonError, server_key

try:
    key = server_key(os.environ)
except LessonError:
    key = None  # the app says why on the Lessons page; no vote can be checked without the key

app = st.App("app.py", middleware=[Middleware(UploadGate), Middleware(VoterCookie, key=key)])
