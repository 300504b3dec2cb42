"""Cluster credentials go only to the origins the admin registered (issue 26, #2). A standalone
master on loopback reports a worker UI on another port, as any master may: reading a driver's
log from there must not hand that address the cluster's secret. Two real HTTP servers."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.backends.base import TemporaryBackendError
from app.backends.registry import backend_for

SECRET = "Bearer cluster-secret-value"


class _Recorder(ThreadingHTTPServer):
    def __init__(self, answer: Any) -> None:
        self.seen: list[dict[str, str]] = []
        self.answer = answer
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_: Any) -> None:
                pass

            def do_GET(self) -> None:
                recorder.seen.append({k.lower(): v for k, v in self.headers.items()})
                body = recorder.answer(self.path).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        super().__init__(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


@pytest.fixture
def servers() -> Iterator[tuple[_Recorder, _Recorder]]:
    worker = _Recorder(lambda path: "==== Bytes 0-9 of 9 of x ====\nboom here\n")
    master = _Recorder(
        lambda path: json.dumps(
            {
                "workers": [{"id": "w1", "state": "ALIVE", "webuiaddress": worker.url}],
                "activedrivers": [{"id": "driver-1", "state": "RUNNING", "worker": "w1"}],
                "completeddrivers": [],
            }
            if path.startswith("/json")
            else {"success": True, "driverState": "FAILED", "workerId": "w1"}
        )
    )
    yield master, worker
    for server in (master, worker):
        server.shutdown()
        server.server_close()


class _Cluster:
    kind = "standalone"
    master_url = "spark://127.0.0.1:7077"

    def __init__(self, url: str, credentials: dict[str, str]) -> None:
        self.url, self.ui_url, self.credentials = url, url, credentials


@pytest.mark.parametrize(
    "credentials", [{"authorization": SECRET}, {"username": "spark", "password": "pw-value"}]
)
def test_a_worker_ui_the_master_names_gets_no_credentials(
    servers: tuple[_Recorder, _Recorder], credentials: dict[str, str]
) -> None:
    master, worker = servers
    backend = backend_for(_Cluster(master.url, credentials))
    backend.log_tail("driver-1", 10)
    with contextlib.suppress(TemporaryBackendError):  # no launch command here: cannot tell
        backend.find("some-tag")
    assert worker.seen, "the worker UI was never asked: the test proves nothing"
    assert all("authorization" not in h for h in worker.seen), worker.seen
    assert master.seen and all("authorization" in h for h in master.seen)


def test_a_read_token_does_not_make_the_service_call_a_cluster(
    client: TestClient, token_for: Callable[[str], str]
) -> None:
    """Issue 26, #12: GET /clusters/{name} with a read token had the API call the cluster with
    its credentials, holding a database slot up to 2 s, as often as it was asked."""
    livy = _Recorder(lambda path: json.dumps({"from": 0, "total": 0, "sessions": []}))
    try:
        body = {"name": "probe", "kind": "livy", "url": livy.url}
        body["credentials"] = {"authorization": SECRET}  # type: ignore[assignment]
        assert client.post("/api/v1/clusters", json=body).status_code == 201
        reader = {"Authorization": f"Bearer {token_for('read')}"}
        for _ in range(5):
            shown = client.get("/api/v1/clusters/probe", headers=reader)
            assert shown.status_code == 200 and shown.json()["reachable"] is None
        assert livy.seen == []
        operator = {"Authorization": f"Bearer {token_for('operate')}"}
        for _ in range(5):  # probed once, then answered from the last probe
            shown = client.get("/api/v1/clusters/probe", headers=operator)
            assert shown.json()["reachable"] is True
        assert len(livy.seen) == 1
    finally:
        livy.shutdown()
        livy.server_close()
