"""A fake Hugging Face Hub on a loopback port, for the download tests: no traffic leaves the machine.

It answers what `huggingface_hub.hf_hub_download` asks (2.4.0, with HF_ENDPOINT or `endpoint=`
pointing here): HEAD and GET on `/{repo}/resolve/{revision}/{file}`, with `X-Repo-Commit`, an
`ETag` that is the file's git blob sha1, or for large files `X-Linked-Etag` (sha256) and
`X-Linked-Size` as the Hub sends for LFS files, and `Range: bytes=N-` answered with 206. Faults on
request: drop the connection once half-way through a file, serve bytes that do not match the hash,
or fail with 500.
"""

import hashlib
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

COMMIT = "0123456789abcdef0123456789abcdef01234567"
LFS = ("model.safetensors",)


class FakeHub:
    def __init__(self, files: dict[str, dict[str, bytes]]):
        """files: repo id -> file name -> bytes."""
        self.files = files
        self.commit = COMMIT  # the revision main resolves to; change it to publish a new one
        self.drop_once: set[str] = set()  # files whose next GET stops half-way
        self.corrupt: set[str] = set()  # files served with one byte changed
        self.fail: set[str] = set()  # files whose GET answers 500
        self.requests: list[tuple[str, str, str | None]] = []  # (method, path, Range header)
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    @staticmethod
    def etag(name: str, data: bytes) -> str:
        if name in LFS:
            return hashlib.sha256(data).hexdigest()
        return hashlib.sha1(f"blob {len(data)}\0".encode() + data).hexdigest()

    def _handler(self):
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _lookup(self):
                parts = self.path.split("/")  # "", owner, name, "resolve", revision, file
                if len(parts) != 6 or parts[3] != "resolve":
                    return None, None
                return parts[5], hub.files.get(f"{parts[1]}/{parts[2]}", {}).get(parts[5])

            def _headers(self, name, data, status, length, extra=()):
                self.send_response(status)
                tag = hub.etag(name, data)
                self.send_header("X-Repo-Commit", hub.commit)
                self.send_header("ETag", f'"{tag}"')
                if name in LFS:
                    self.send_header("X-Linked-Etag", f'"{tag}"')
                    self.send_header("X-Linked-Size", str(len(data)))
                self.send_header("Accept-Ranges", "bytes")
                self.send_header("Content-Length", str(length))
                for k, v in extra:
                    self.send_header(k, v)
                self.end_headers()

            def do_HEAD(self):
                hub.requests.append(("HEAD", self.path, None))
                name, data = self._lookup()
                if data is None:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self._headers(name, data, 200, len(data))

            def do_GET(self):
                rng = self.headers.get("Range")
                hub.requests.append(("GET", self.path, rng))
                name, data = self._lookup()
                if data is None or name in hub.fail:
                    self.send_response(404 if data is None else 500)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                tag_data = data
                if name in hub.corrupt:
                    data = bytes([data[0] ^ 0xFF]) + data[1:]
                start = int(rng.removeprefix("bytes=").split("-")[0]) if rng else 0
                body = data[start:]
                extra = [("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")] if rng else []
                self._headers(name, tag_data, 206 if rng else 200, len(body), extra)
                if name in hub.drop_once:
                    hub.drop_once.discard(name)
                    self.wfile.write(body[: len(body) * 4 // 5])
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.shutdown(2)  # the peer sees the body end early
                    return
                self.wfile.write(body)

        return Handler
