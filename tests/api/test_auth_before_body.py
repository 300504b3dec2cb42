"""Authentication comes before the body (issue 26, #4): an anonymous request that announces
megabytes gets its 401 before it has sent a byte of them, so the service never buffers or
parses a body for someone it does not know. Against a real uvicorn, over a raw socket."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from sqlalchemy import Engine

from app.api.main import create_app
from app.core.config import Settings
from tests.conftest import ADMIN_TOKEN
from tests.support.waiting import served

BODY = 8 * 1024 * 1024 - 1  # announced, just under the size limit, never sent


@pytest.fixture
def port(db: Engine, settings: Settings) -> Iterator[int]:
    with served(create_app(settings, engine=db), lifespan="off") as url:
        yield int(url.rsplit(":", 1)[1])


def _announce(port: int, authorization: str | None, wait: float = 5.0) -> bytes:
    """Send only the headers of a POST announcing BODY bytes; what comes back in ``wait``."""
    head = (
        f"POST /api/v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {BODY}\r\n"
        + (f"Authorization: {authorization}\r\n" if authorization else "")
        + "\r\n"
    )
    with socket.create_connection(("127.0.0.1", port), timeout=wait) as conn:
        conn.sendall(head.encode())
        try:
            return conn.recv(4096)
        except TimeoutError:
            return b""


@pytest.mark.parametrize("authorization", [None, "Bearer tg_not_a_token_of_this_service_0000"])
def test_a_stranger_is_refused_before_its_body(port: int, authorization: str | None) -> None:
    answer = _announce(port, authorization)
    assert answer.startswith(b"HTTP/1.1 401"), answer[:200]
    assert b"application/problem+json" in answer


def test_a_known_token_is_let_through_to_send_its_body(port: int) -> None:
    # The server waits for the body it was promised: no answer yet, and no refusal.
    assert _announce(port, f"Bearer {ADMIN_TOKEN}", wait=1.5) == b""
