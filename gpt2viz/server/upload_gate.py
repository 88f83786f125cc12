"""A gate in front of Streamlit's upload endpoint: at most N files arrive at once, the others wait.

Streamlit reads each uploaded file whole into memory when it has arrived, before the app sees it
(gpt2viz/ui/upload.py then moves it to disk). Six students uploading a 475 MiB file at once
therefore put six copies in memory together. This ASGI middleware lets at most `at_once` PUTs to
`/_stcore/upload_file/` into Streamlit at a time (GPT2VIZ_UPLOADS_AT_ONCE, default 2); the others
wait before a byte of their body is read (the client is held back by TCP), instead of being refused.
`serve.py` runs app.py behind it (`streamlit run serve.py`); behind nginx, the proxy's limit_conn
does the same (deploy/nginx.conf.template).
"""

import asyncio
import os

AT_ONCE_ENV = "GPT2VIZ_UPLOADS_AT_ONCE"
AT_ONCE = 2
UPLOAD_PATH = "/_stcore/upload_file/"


def uploads_at_once(env=os.environ) -> int:
    n = env.get(AT_ONCE_ENV, "")
    return int(n) if n.isdigit() and int(n) > 0 else AT_ONCE


class UploadGate:
    """ASGI middleware: PUTs to the upload endpoint pass `at_once` at a time."""

    def __init__(self, app, at_once: int | None = None):
        self.app = app
        self.at_once = at_once or uploads_at_once()
        self._gate: asyncio.Semaphore | None = None  # made in the server's event loop
        self.passing = 0  # uploads inside now (for tests and logs)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope.get("method") != "PUT" or UPLOAD_PATH not in scope.get("path", ""):
            await self.app(scope, receive, send)
            return
        if self._gate is None:
            self._gate = asyncio.Semaphore(self.at_once)
        async with self._gate:
            self.passing += 1
            try:
                await self.app(scope, receive, send)
            finally:
                self.passing -= 1
