"""Authentication comes before the body (issue 26, #4), and so does the route's scope and body
limit (issue 51, M3): an anonymous request, or a token of too small a scope, that announces a
body gets its 401 or 403 before it has sent a byte of it, and a body over the route's limit its
413, so the service never buffers or parses a body for someone who may not send it. Against a
real uvicorn, over a raw socket."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator

import pytest
from sqlalchemy import Engine

from app.api.main import create_app
from app.api.route_guard import BODY_LIMITS, DEFAULT_BODY_LIMIT
from app.core.config import Settings
from tests.conftest import ADMIN_TOKEN
from tests.support.waiting import served

BODY = DEFAULT_BODY_LIMIT - 1  # announced, just under the size limit, never sent


@pytest.fixture
def port(db: Engine, settings: Settings) -> Iterator[int]:
    with served(create_app(settings, engine=db), lifespan="off") as url:
        yield int(url.rsplit(":", 1)[1])


def _announce(
    port: int,
    authorization: str | None,
    wait: float = 5.0,
    path: str = "/api/v1/jobs",
    size: int = BODY,
) -> bytes:
    """Send only the headers of a POST announcing ``size`` bytes; what comes back in ``wait``."""
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {size}\r\n"
        + (f"Authorization: {authorization}\r\n" if authorization else "")
        + "\r\n"
    )
    with socket.create_connection(("127.0.0.1", port), timeout=wait) as conn:
        conn.sendall(head.encode())
        try:
            answer = conn.recv(4096)
        except TimeoutError:
            return b""
        conn.settimeout(1.0)  # the body may come in a second segment
        while answer and b"\r\n\r\n" in answer and not answer.endswith(b"}"):
            try:
                more = conn.recv(4096)
            except TimeoutError:
                break
            if not more:
                break
            answer += more
        return answer


@pytest.mark.parametrize("authorization", [None, "Bearer tg_not_a_token_of_this_service_0000"])
def test_a_stranger_is_refused_before_its_body(port: int, authorization: str | None) -> None:
    answer = _announce(port, authorization)
    assert answer.startswith(b"HTTP/1.1 401"), answer[:200]
    assert b"application/problem+json" in answer


def test_a_known_token_is_let_through_to_send_its_body(port: int) -> None:
    # The server waits for the body it was promised: no answer yet, and no refusal.
    assert _announce(port, f"Bearer {ADMIN_TOKEN}", wait=1.5) == b""


@pytest.mark.parametrize(
    ("scope", "path"),
    [
        ("read", "/api/v1/jobs"),  # operate's
        ("operate", "/api/v1/tokens"),  # admin's
        ("read", "/api/v1/runs/1/progress"),  # a run's own token only
        ("admin", "/api/v1/runs/1/startpoints/applied"),
    ],
)
def test_a_token_of_too_small_a_scope_is_refused_before_its_body(
    port: int, token_for: Callable[[str], str], scope: str, path: str
) -> None:
    answer = _announce(port, f"Bearer {token_for(scope)}", path=path, size=64 * 1024)
    assert answer.startswith(b"HTTP/1.1 403"), answer[:300]
    assert b"application/problem+json" in answer and b"scope" in answer


def test_a_body_over_the_routes_own_limit_is_refused_at_once(port: int) -> None:
    limit = BODY_LIMITS["run.progress"]
    answer = _announce(port, None, path="/api/v1/runs/1/progress", size=limit + 1)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:300]
    assert str(limit).encode() in answer
