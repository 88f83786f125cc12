"""A Streamlit session without a browser: the messages a browser sends, the replies timed.

What Streamlit 1.67's frontend does, and this client does the same way (frontend/app/src/App.tsx
`sendRerunBackMsg`, connection/WebsocketConnection.tsx; the minified copy in streamlit/static):

- loads the page (an HTTP GET of the page's address, which also brings the proxy's cookies), then
  opens `ws://host/_stcore/stream` with the subprotocols `["streamlit", <xsrf token or
  "PLACEHOLDER_AUTH_TOKEN">, <the last session id, when reconnecting>]` and the page's Origin;
- on the first connection sends `BackMsg.rerun_script` (a `ClientState`) with the query string
  (without "?"), `page_name` taken from the path and an empty `page_script_hash` (it does not
  know the pages yet), no widget states, and `context_info` (timezone, locale, url, colour scheme);
- on a page link sends the page's `page_script_hash` (from the `navigation` ForwardMsg's
  `app_pages`) with the query string it keeps.

One difference: a browser also sends the widget states of the widgets still on screen; this client
sends only those of the files it uploaded, and the view's state travels in the query string
(gpt2viz binds its controls to the URL, so both carry the same values). Nor does it report cached
message hashes, like a first visit.

An upload (`Session.upload`) is what the frontend's file uploader does: a multipart PUT of the
file to `/_stcore/upload_file/<session id>/<file id>` (with the XSRF cookie's token in
`X-Xsrftoken`), then a rerun whose widget states give the uploader that file; the uploader's state
is sent again with every later rerun, as the browser does while the file is shown.

A view is timed from the rerun request to the `script_finished` ForwardMsg; the `Exception`
elements the run sent (`delta.new_element.exception`) are counted, and "page not found", a script
that did not finish successfully, a closed socket or a timeout are errors.
"""

import asyncio
import http.cookiejar
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import websockets
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.Markdown_pb2 import Markdown
from streamlit.proto.WidgetStates_pb2 import WidgetState
from websockets.asyncio.client import connect

STREAM_PATH = "/_stcore/stream"
UPLOAD_PATH = "/_stcore/upload_file"
FINISHED = ForwardMsg.ScriptFinishedStatus
SUBPROTOCOL = "streamlit"
NO_TOKEN = "PLACEHOLDER_AUTH_TOKEN"  # what the frontend sends without an xsrf cookie


class Disconnected(Exception):
    """The websocket closed (the server or the proxy went away) or could not be opened."""


@dataclass
class ViewResult:
    page: str  # url path of the page ("" for the default page)
    query: str
    seconds: float | None = None  # request → script_finished, when it finished
    exceptions: list[str] = field(default_factory=list)  # type: message, of each Exception element
    error: str | None = None  # not finished successfully: why
    elements: int = 0  # new elements the run sent
    h1: str | None = None  # the first title the run sent
    boxes: dict[str, str] = field(default_factory=dict)  # label → value of the text areas, select boxes, sliders
    # the boxes whose value the server set (else `boxes` holds their default, and a browser would go on
    # showing the value it had: see `Shown`)
    set_by_server: set[str] = field(default_factory=set)
    uploaders: dict[str, str] = field(default_factory=dict)  # label → widget id of the file uploaders
    # label → widget id of the radios, number inputs and buttons (a form's submit button among them)
    widgets: dict[str, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)  # bodies of st.error
    captions: list[str] = field(default_factory=list)  # bodies of st.caption
    texts: list[str] = field(default_factory=list)  # bodies of every markdown and alert (info, warning, error)
    traces: list[str] = field(default_factory=list)  # the stack trace each Exception element shows ("" none)

    @property
    def ok(self) -> bool:
        return self.error is None and not self.exceptions


class Shown:
    """What a browser tab's boxes show across views: a value the server sets, else the value the box
    showed before (its default the first time)."""

    def __init__(self):
        self.values: dict[str, str] = {}

    def after(self, result: ViewResult) -> dict[str, str]:
        for label, value in result.boxes.items():
            if label in result.set_by_server or label not in self.values:
                self.values[label] = value
        return dict(self.values)


class Session:
    """One browser tab: a cookie jar, a websocket, the app's pages as the server announced them."""

    def __init__(self, base: str, timezone: str = "UTC", locale: str = "en-US"):
        self.base = base.rstrip("/")
        self.cookies = http.cookiejar.CookieJar()
        self._http = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.cookies),
                                                 urllib.request.ProxyHandler({}))
        self.context = {"timezone": timezone, "locale": locale, "color_scheme": "light"}
        self.ws = None
        self.session_id = ""  # the server's id for this session, sent back when reconnecting
        self.page_hashes: dict[str, str] = {}  # url path → page_script_hash
        self.current_hash = ""
        self.replica: str | None = None  # which replica answered the websocket's handshake, behind nginx
        self.widget_states: dict[str, WidgetState] = {}  # sent with every rerun (the uploaders' files)

    # ------------------------------------------------------------------ connection
    async def open(self, page: str = "", query: str = "", timeout: float = 30.0) -> None:
        """Load the page over HTTP (cookies), then open the websocket."""
        await asyncio.to_thread(self._get, self._address(page, query), timeout)
        await self._connect(timeout)

    async def reopen(self, timeout: float = 30.0) -> None:
        """What the frontend does after losing the connection: ping `/_stcore/health`, then open a
        new websocket offering the last session id (a server that does not know it starts a new one)."""
        await asyncio.to_thread(self._get, self.base + "/_stcore/health", timeout)
        await self._connect(timeout)

    def _get(self, url: str, timeout: float) -> None:
        try:
            with self._http.open(url, timeout=timeout) as r:
                r.read()
        except OSError as e:
            raise Disconnected(f"GET {urlsplit(url).path}: {e}") from e

    async def _connect(self, timeout: float) -> None:
        await self.close()
        protocols = [SUBPROTOCOL, self._xsrf() or NO_TOKEN] + ([self.session_id] if self.session_id else [])
        cookie = "; ".join(f"{c.name}={c.value}" for c in self.cookies)
        ws_base = "ws" + self.base[len("http"):]
        try:
            self.ws = await connect(ws_base + STREAM_PATH, origin=self.base, subprotocols=protocols,
                                    additional_headers={"Cookie": cookie} if cookie else None,
                                    max_size=None, open_timeout=timeout, proxy=None)
        except (TimeoutError, OSError, websockets.InvalidHandshake) as e:
            raise Disconnected(f"websocket: {type(e).__name__}: {e}") from e
        self.current_hash = ""  # a new connection starts like a first load: the page by name
        tried = self.ws.response.headers.get("X-Gpt2viz-Replica", "")  # nginx's $upstream_addr: "a, b" after a retry
        self.replica = tried.split(",")[-1].strip() or None

    async def closed_within(self, seconds: float) -> bool:
        """Wait up to `seconds` while the tab shows its page; True as soon as the websocket closes."""
        if self.ws is None:
            return True
        try:
            await asyncio.wait_for(asyncio.shield(self.ws.wait_closed()), seconds)
            return True
        except TimeoutError:
            return False

    async def close(self) -> None:
        if self.ws is not None:
            ws, self.ws = self.ws, None
            await ws.close()

    # ------------------------------------------------------------------ views
    async def view(self, page: str, query: str, timeout: float = 120.0, history: bool = False) -> ViewResult:
        """Ask for `page` (url path, "" for the default) with `query` (no "?"); wait for the run to
        end. Raises Disconnected when the websocket closes meanwhile. `history`: as the browser asks
        on back, forward or a `popstate` (`history.pushState` then a popstate event, from devtools)."""
        if self.ws is None:
            raise Disconnected("not connected")
        result = ViewResult(page, query)
        await self._drain()
        t0 = time.perf_counter()
        msg = self._rerun(page, query)
        msg.rerun_script.is_history_navigation = history
        await self._send(msg)
        try:
            async with asyncio.timeout(timeout):
                while not await self._receive(result):
                    pass
        except TimeoutError:
            result.error = f"no script_finished after {timeout:.0f} s"
            return result
        result.seconds = time.perf_counter() - t0
        return result

    async def act(self, page: str, query: str, values: dict[str, bool | int | float | str],
                  timeout: float = 120.0) -> ViewResult:
        """A rerun of `page` with widget values, as the browser sends them when a button is pressed: a
        button's id with True (its trigger), a radio's with its option as shown (a string), a number
        input's with a float, a text input's with a string.
        Sent once, with this rerun only (a trigger is not held)."""
        for wid, value in values.items():
            state = WidgetState(id=wid)
            if isinstance(value, bool):
                state.trigger_value = value
            elif isinstance(value, int):
                state.int_value = value
            elif isinstance(value, str):
                state.string_value = value
            else:
                state.double_value = value
            self.widget_states[wid] = state
        try:
            return await self.view(page, query, timeout)
        finally:
            for wid in values:
                self.widget_states.pop(wid, None)

    async def upload(self, uploader_id: str, name: str, data: bytes, timeout: float = 600.0) -> int:
        """PUT `data` as the file `name` for the uploader `uploader_id` (from a view's `uploaders`);
        the next views give the uploader that file. The HTTP status (204 when stored)."""
        file_id = str(uuid.uuid4())
        url = f"{self.base}{UPLOAD_PATH}/{self.session_id}/{file_id}"
        boundary = uuid.uuid4().hex
        head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\n"
                "Content-Type: application/octet-stream\r\n\r\n").encode()
        tail = f"\r\n--{boundary}--\r\n".encode()
        if not self._xsrf():  # the frontend has it from its health ping, which sets the cookie
            await asyncio.to_thread(self._get, self.base + "/_stcore/health", timeout)
        xsrf = self._xsrf() or ""
        headers = {"Content-Type": f"multipart/form-data; boundary={boundary}", "X-Xsrftoken": xsrf,
                   "Content-Length": str(len(head) + len(data) + len(tail))}
        # the body as an iterable of views: the file is not copied, however many sessions send it
        request = urllib.request.Request(url, data=[head, memoryview(data), tail], headers=headers, method="PUT")
        try:
            status = await asyncio.to_thread(self._put, request, timeout)
        except OSError as e:
            raise Disconnected(f"PUT {UPLOAD_PATH}: {e}") from e
        state = WidgetState(id=uploader_id)
        info = state.file_uploader_state_value.uploaded_file_info.add()
        info.file_id, info.name, info.size = file_id, name, len(data)
        info.file_urls.file_id, info.file_urls.upload_url, info.file_urls.delete_url = file_id, url, url
        self.widget_states[uploader_id] = state
        return status

    def _xsrf(self) -> str | None:
        return next((c.value for c in self.cookies if c.name == "_streamlit_xsrf"), None)

    def _put(self, request, timeout: float) -> int:
        try:
            with self._http.open(request, timeout=timeout) as r:
                r.read()
                return r.status
        except urllib.error.HTTPError as e:
            return e.code

    def _rerun(self, page: str, query: str) -> BackMsg:
        msg = BackMsg()
        state = msg.rerun_script
        state.query_string = query
        for widget in self.widget_states.values():
            state.widget_states.widgets.add().CopyFrom(widget)
        target = self.page_hashes.get(page)
        if self.current_hash and target:  # a page link: the page by its hash
            state.page_script_hash = target
        else:  # a first load: the page by the name in its path
            state.page_name = page
        info = state.context_info
        info.timezone, info.locale = self.context["timezone"], self.context["locale"]
        info.color_scheme = self.context["color_scheme"]
        info.timezone_offset = 0
        info.url = self._address(page, query)
        return msg

    async def _send(self, msg: BackMsg) -> None:
        try:
            await self.ws.send(msg.SerializeToString())
        except websockets.ConnectionClosed as e:
            raise Disconnected(f"closed while sending ({e})") from e

    async def _drain(self) -> None:
        """Read what the server sent while the tab was idle (nothing, usually)."""
        while True:
            try:
                data = await asyncio.wait_for(self.ws.recv(), 0.001)
            except TimeoutError:
                return
            except websockets.ConnectionClosed as e:
                raise Disconnected(f"closed while idle ({e})") from e
            self._note(ForwardMsg.FromString(data), None)

    async def _receive(self, result: ViewResult) -> bool:
        """Read one ForwardMsg into `result`; True when the run has ended."""
        try:
            data = await self.ws.recv()
        except websockets.ConnectionClosed as e:
            raise Disconnected(f"closed during the run ({e})") from e
        return self._note(ForwardMsg.FromString(data), result)

    def _note(self, msg: ForwardMsg, result: ViewResult | None) -> bool:
        kind = msg.WhichOneof("type")
        if kind == "new_session":
            self.session_id = msg.new_session.initialize.session_id or self.session_id
            self.current_hash = msg.new_session.page_script_hash
        elif kind == "navigation":
            self._pages(msg.navigation.app_pages)
            self.current_hash = msg.navigation.page_script_hash
        elif kind == "session_event" or result is None:
            pass
        elif kind == "page_not_found":
            result.error = f"page not found: {msg.page_not_found.page_name!r}"
        elif kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
            result.elements += 1
            self._element(msg.delta.new_element, result)
        elif kind == "script_finished":
            status = msg.script_finished
            if status == FINISHED.FINISHED_EARLY_FOR_RERUN:
                return False  # another rerun took over; its own script_finished follows
            if status != FINISHED.FINISHED_SUCCESSFULLY:
                result.error = f"script finished with {FINISHED.Name(status)}"
            return True
        return False

    @staticmethod
    def _element(element, result: ViewResult) -> None:
        kind = element.WhichOneof("type")
        if kind in ("alert", "markdown"):
            result.texts.append(getattr(element, kind).body)
        if kind == "exception":
            result.exceptions.append(f"{element.exception.type}: {element.exception.message}"[:300])
            result.traces.append("\n".join(element.exception.stack_trace))
        elif kind == "heading" and element.heading.tag == "h1" and result.h1 is None:
            result.h1 = element.heading.body
        elif kind == "text_area":
            box = element.text_area
            result.boxes[box.label] = box.value if box.set_value else box.default
            Session._note_set(result, box)
        elif kind == "file_uploader":
            result.uploaders[element.file_uploader.label] = element.file_uploader.id
        elif kind in ("radio", "number_input", "button", "text_input"):
            result.widgets[getattr(element, kind).label] = getattr(element, kind).id
        elif kind == "alert" and element.alert.format == element.alert.ERROR:
            result.errors.append(element.alert.body)
        elif kind == "markdown" and element.markdown.element_type == Markdown.CAPTION:
            result.captions.append(element.markdown.body)
        elif kind == "slider":
            box = element.slider
            result.boxes[box.label] = ", ".join(f"{v:g}" for v in (box.value if box.set_value else box.default))
            Session._note_set(result, box)
        elif kind == "selectbox":
            box = element.selectbox
            shown = box.options[box.default] if 0 <= box.default < len(box.options) else ""
            result.boxes[box.label] = box.raw_value if box.set_value else shown
            Session._note_set(result, box)

    @staticmethod
    def _note_set(result: ViewResult, box) -> None:
        if box.set_value:
            result.set_by_server.add(box.label)

    def _pages(self, app_pages) -> None:
        """st.navigation's pages: the default one is served at the root, url path "" """
        self.page_hashes.update({p.url_pathname: p.page_script_hash for p in app_pages})

    def _address(self, page: str, query: str) -> str:
        return f"{self.base}/{page}" + (f"?{query}" if query else "")
