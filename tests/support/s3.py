"""A real S3-compatible server for snapshot tests: moto's server mode on a loopback port,
behind a small HTTP proxy that counts requests and, once armed, answers 500 or hangs (a store
that fails or times out in the middle of an export)."""

from __future__ import annotations

import http.client
import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

# moto's server, a bucket on it and the options to reach it: app/devtools/s3_server.py (the
# benchmarks use them too).
from app.devtools.s3_server import ACCESS_KEY as ACCESS_KEY
from app.devtools.s3_server import REGION as REGION
from app.devtools.s3_server import SECRET_KEY as SECRET_KEY
from app.devtools.s3_server import create_bucket as create_bucket
from app.devtools.s3_server import moto_server as moto_server
from app.devtools.s3_server import no_delay
from app.devtools.s3_server import s3a_conf as s3a_conf
from app.devtools.s3_server import s3fs_options as s3fs_options

# How long a hung request is held at most (the client gives up long before).
HANG_LIMIT_SECONDS = 30.0
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length"}
S3_INTERNAL_ERROR = (
    b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>InternalError</Code>'
    b"<Message>We encountered an internal error. Please try again.</Message></Error>"
)


@dataclass
class FaultProxy:
    """Forwards every request to ``upstream``; records (method, path); after ``arm`` lets
    ``after`` more requests of ``method`` through, then answers every request with a 500
    (``mode="error"``) or holds it unanswered (``mode="hang"``) until ``disarm``."""

    upstream: str
    requests: list[tuple[str, str]] = field(default_factory=list)
    # (method, path, body bytes) of each request: what a client sent through, not the server.
    bodies: list[tuple[str, str, int]] = field(default_factory=list)
    mode: str | None = None
    method: str = "PUT"
    remaining: int = 0
    faulted: int = 0
    release: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def arm(self, mode: str, *, after: int, method: str = "PUT") -> None:
        with self.lock:
            self.mode, self.method, self.remaining = mode, method, after
            self.release.clear()

    def disarm(self) -> None:
        with self.lock:
            self.mode = None
        self.release.set()

    def bytes_put(self, marker: str = "/blobs/") -> int:
        """The bytes sent in PUT bodies to paths with ``marker`` (a server-side copy sends none)."""
        return sum(n for m, p, n in self.bodies if m == "PUT" and marker in p)

    def puts(self, marker: str = "/blobs/") -> list[str]:
        return [p for m, p in self.requests if m == "PUT" and marker in p]

    def decide(self, method: str, path: str) -> str | None:
        """The fault to inject for this request, if any."""
        with self.lock:
            self.requests.append((method, path))
            if self.mode is None:
                return None
            if self.remaining > 0:
                if method == self.method:
                    self.remaining -= 1
                return None
            self.faulted += 1
            return self.mode


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as S3 clients expect
    proxy: FaultProxy

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return out
                out += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _handle(self) -> None:
        body = self._body()
        fault = self.proxy.decide(self.command, self.path)
        self.proxy.bodies.append((self.command, self.path, len(body)))
        if fault == "hang":
            self.proxy.release.wait(HANG_LIMIT_SECONDS)
            self.close_connection = True
            return
        if fault == "error":
            self._reply(500, {"Content-Type": "application/xml"}, S3_INTERNAL_ERROR)
            return
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
        headers["Content-Length"] = str(len(body))
        resp, data = self._forward(headers, body)
        out = {k: v for k, v in resp.getheaders() if k.lower() not in HOP_BY_HOP}
        if self.command == "HEAD":  # the object's length, with no body
            out["Content-Length"] = resp.getheader("Content-Length", "0")
            self._reply(resp.status, out, b"", length=False)
        else:
            self._reply(resp.status, out, data)

    def _forward(
        self, headers: dict[str, str], body: bytes
    ) -> tuple[http.client.HTTPResponse, bytes]:
        """To moto over one kept-alive connection per client connection (a new one if moto
        closed it)."""
        for attempt in (1, 2):
            conn: http.client.HTTPConnection | None = getattr(self, "_upstream", None)
            if conn is None:
                host, _, port = self.proxy.upstream.removeprefix("http://").partition(":")
                conn = http.client.HTTPConnection(host, int(port), timeout=HANG_LIMIT_SECONDS)
                self._upstream = conn
            try:
                conn.request(self.command, self.path, body=body, headers=headers)
                resp = conn.getresponse()
                return resp, resp.read()
            except (http.client.HTTPException, ConnectionError):
                conn.close()
                self._upstream = None
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def finish(self) -> None:
        super().finish()
        conn = getattr(self, "_upstream", None)
        if conn is not None:
            conn.close()

    def _reply(
        self, status: int, headers: dict[str, str], data: bytes, *, length: bool = True
    ) -> None:
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        if length:
            self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if data:
            self.wfile.write(data)

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def fault_proxy(upstream: str) -> Iterator[tuple[FaultProxy, str]]:
    """A FaultProxy on a free loopback port; yields it and its URL."""
    proxy = FaultProxy(upstream)
    handler = type("Handler", (_Handler,), {"proxy": proxy})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    no_delay(server.socket)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield proxy, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        proxy.disarm()
        server.shutdown()
        server.server_close()


@dataclass
class S3Store:
    """A fresh bucket behind its own proxy: the root URL and the options tidegate gets."""

    url: str
    endpoint: str
    proxy: FaultProxy
    bucket: str

    def options(self, **config: Any) -> dict[str, Any]:
        """Storage options for the store; ``config`` overrides botocore's (timeouts)."""
        return {
            "endpoint_url": self.endpoint,
            "key": ACCESS_KEY,
            "secret": SECRET_KEY,
            "client_kwargs": {"region_name": REGION},
            # Generous for a loaded machine (a retried PUT would be counted twice), and no
            # botocore retries: a fault shows at once.
            "config_kwargs": {
                "connect_timeout": 5,
                "read_timeout": 10,
                "retries": {"max_attempts": 1},
                **config,
            },
        }
