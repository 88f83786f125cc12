"""An anonymous, signed id per browser, for the class vote: one vote per browser per round.

The id is not one the client chooses: `VoterCookie`, an ASGI middleware in front of the app (serve.py,
which `gpt2viz app` and the class server run), sets it as a cookie on the page a browser loads when the
browser has no valid one: 16 random bytes and an HMAC-SHA256 tag under the server's lesson key
(GPT2VIZ_LESSON_KEY, the same on every host of a class), so every host accepts it and no one can make
one up. The page reads it back from the websocket's cookies (`st.context.cookies`) and checks the tag.

A second tab and a reload carry the same cookie, so they vote as the same browser. A private window, or
a browser whose cookies were cleared, is a new browser with a new id (docs/deploy.md says so). The id
holds nothing about the student: no name, no address.
"""

import base64
import hashlib
import hmac
import secrets
from http.cookies import SimpleCookie

COOKIE = "gpt2viz_voter"
MAX_AGE = 180 * 24 * 3600  # half a year: a course
_TAG_BYTES = 16


def _tag(key: bytes, ident: str) -> str:
    mac = hmac.new(key, b"gpt2viz voter " + ident.encode(), hashlib.sha256).digest()[:_TAG_BYTES]
    return base64.urlsafe_b64encode(mac).decode().rstrip("=")


def mint(key: bytes) -> str:
    """A new signed id: `<id>.<tag>`."""
    ident = base64.urlsafe_b64encode(secrets.token_bytes(16)).decode().rstrip("=")
    return f"{ident}.{_tag(key, ident)}"


def check(value: str | None, key: bytes | None) -> str | None:
    """The id of a signed cookie value, or None when it is missing, malformed or not signed by `key`."""
    if not value or key is None or len(value) > 80 or value.count(".") != 1:
        return None
    ident, tag = value.split(".")
    return ident if len(ident) == 22 and hmac.compare_digest(tag, _tag(key, ident)) else None


def _cookie_value(headers: list[tuple[bytes, bytes]]) -> str | None:
    for name, value in headers:
        if name == b"cookie":
            jar = SimpleCookie()
            try:
                jar.load(value.decode("latin-1"))
            except Exception:  # noqa: BLE001 - a malformed Cookie header is no cookie
                return None
            if COOKIE in jar:
                return jar[COOKIE].value
    return None


# whether this process serves pages through VoterCookie (serve.py: `gpt2viz app`, the class server); a bare
# `streamlit run app.py` gives no browser an id, and its students could not vote however often they reloaded
INSTALLED = False


class VoterCookie:
    """ASGI middleware: a page load (a GET that is not Streamlit's own endpoint or a static file) from a
    browser without a valid id gets a Set-Cookie with a new one. Nothing else is changed."""

    def __init__(self, app, key: bytes | None):
        global INSTALLED
        self.app = app
        self.key = key  # None: the server has no lesson key, so no vote can be checked and none is set
        INSTALLED = True

    async def __call__(self, scope, receive, send):
        path = scope.get("path", "")
        if (scope["type"] != "http" or scope.get("method") != "GET" or self.key is None
                or path.startswith(("/_stcore", "/static", "/component", "/media", "/app/static"))
                or check(_cookie_value(scope.get("headers", [])), self.key)):
            await self.app(scope, receive, send)
            return
        cookie = (f"{COOKIE}={mint(self.key)}; Max-Age={MAX_AGE}; Path=/; HttpOnly; SameSite=Lax").encode()

        async def with_cookie(message):
            if message["type"] == "http.response.start":
                message = dict(message, headers=[*message.get("headers", []), (b"set-cookie", cookie)])
            await send(message)

        await self.app(scope, receive, with_cookie)
