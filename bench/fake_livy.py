"""A Livy-compatible batch server that runs nothing and remembers when each call arrived.

The reaction benchmark points a real worker at it: the worker's first backend call for an
operation is visible here, on the benchmark's own clock (time.monotonic, same process).
Batches are "running" as soon as they are created and "killed" once deleted.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Call:
    at: float
    method: str
    path: str
    name: str | None = None  # the batch name, for POST /batches


@dataclass
class FakeLivy:
    calls: list[Call] = field(default_factory=list)
    batches: dict[int, dict[str, Any]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def start(self) -> FakeLivy:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_: Any) -> None:
                pass

            def _send(self, status: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                fake.record("GET", self.path)
                status, body = fake.get(self.path)
                self._send(status, body)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                payload = json.loads(self.rfile.read(length) or b"{}")
                fake.record("POST", self.path, payload.get("name"))
                status, body = fake.create(payload)
                self._send(status, body)

            def do_DELETE(self) -> None:
                fake.record("DELETE", self.path)
                status, body = fake.delete(self.path)
                self._send(status, body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, name="fake-livy", daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()

    # ---- the API ----------------------------------------------------------------------

    def record(self, method: str, path: str, name: str | None = None) -> None:
        with self.lock:
            self.calls.append(Call(time.monotonic(), method, urlsplit(path).path, name))

    def _view(self, batch: dict[str, Any]) -> dict[str, Any]:
        return {**batch, "appId": f"app-{batch['id']}", "appInfo": {}, "log": []}

    def get(self, raw: str) -> tuple[int, Any]:
        url = urlsplit(raw)
        with self.lock:
            if url.path == "/batches":
                query = parse_qs(url.query)
                start = int(query.get("from", ["0"])[0])
                size = int(query.get("size", ["100"])[0])
                ids = sorted(self.batches)[start : start + size]
                return 200, {
                    "from": start,
                    "total": len(self.batches),
                    "sessions": [self._view(self.batches[i]) for i in ids],
                }
            match = re.fullmatch(r"/batches/(\d+)(/state|/log)?", url.path)
            if match is None or int(match.group(1)) not in self.batches:
                return 404, {"msg": "not found"}
            batch = self.batches[int(match.group(1))]
            if match.group(2) == "/state":
                return 200, {"id": batch["id"], "state": batch["state"]}
            if match.group(2) == "/log":
                return 200, {"id": batch["id"], "from": 0, "total": 0, "log": []}
            return 200, self._view(batch)

    def create(self, payload: dict[str, Any]) -> tuple[int, Any]:
        with self.lock:
            name = payload.get("name")
            if name is not None and any(b["name"] == name for b in self.batches.values()):
                return 400, {"msg": f"Duplicate session name: {name}"}
            batch_id = len(self.batches)
            self.batches[batch_id] = {"id": batch_id, "name": name, "state": "running"}
            return 201, self._view(self.batches[batch_id])

    def delete(self, raw: str) -> tuple[int, Any]:
        match = re.fullmatch(r"/batches/(\d+)", urlsplit(raw).path)
        with self.lock:
            if match is None or int(match.group(1)) not in self.batches:
                return 404, {"msg": "not found"}
            self.batches[int(match.group(1))]["state"] = "killed"
            return 200, {"msg": "deleted"}

    def first_call(
        self, since: float, method: str | None, path: str | re.Pattern[str]
    ) -> Call | None:
        """The first call since ``since`` of ``method`` (None: any) on ``path``."""
        with self.lock:
            for call in self.calls:
                if call.at < since or (method is not None and call.method != method):
                    continue
                if (isinstance(path, str) and call.path == path) or (
                    isinstance(path, re.Pattern) and path.fullmatch(call.path)
                ):
                    return call
        return None
