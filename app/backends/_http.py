"""HTTP plumbing shared by the backends: one place that turns transport trouble into
``TemporaryBackendError`` and a refusal into ``PermanentBackendError``."""

from __future__ import annotations

from typing import Any

import httpx

from app.backends.base import PermanentBackendError, TemporaryBackendError

# Statuses worth retrying: the server is overloaded, restarting or behind a flaky proxy.
RETRYABLE_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})


def request(
    client: httpx.Client, method: str, url: str, *, what: str, **kwargs: Any
) -> httpx.Response:
    """Send a request; network errors and timeouts become ``TemporaryBackendError``."""
    try:
        return client.request(method, url, **kwargs)
    except httpx.TimeoutException as exc:
        raise TemporaryBackendError(f"{what}: timed out ({url})", detail=repr(exc)) from exc
    except httpx.TransportError as exc:
        raise TemporaryBackendError(f"{what}: cannot reach {url}: {exc}", detail=repr(exc)) from exc


def raise_for_retryable(resp: httpx.Response, what: str) -> None:
    if resp.status_code in RETRYABLE_STATUS:
        raise TemporaryBackendError(
            f"{what}: HTTP {resp.status_code} from {resp.request.url}", detail=resp.text[:4000]
        )


def json_body(resp: httpx.Response, what: str) -> dict[str, Any]:
    """The response's JSON object; anything else (an HTML error page, a proxy) is temporary."""
    try:
        body = resp.json()
    except ValueError as exc:
        raise TemporaryBackendError(
            f"{what}: HTTP {resp.status_code} without JSON from {resp.request.url}",
            detail=resp.text[:4000],
        ) from exc
    if not isinstance(body, dict):
        raise TemporaryBackendError(f"{what}: unexpected JSON from {resp.request.url}")
    return body


def refuse(resp: httpx.Response, what: str, message: str | None) -> PermanentBackendError:
    msg = first_line(message) or f"HTTP {resp.status_code}"
    return PermanentBackendError(f"{what}: {msg}", detail=message or resp.text[:4000])


def first_line(text: str | None) -> str:
    """Spark puts a Java stack trace after the message; the first line is what people need."""
    return (text or "").strip().split("\n", 1)[0].strip()


def tail_lines(text: str, lines: int) -> str:
    return "\n".join(text.splitlines()[-lines:]) if lines > 0 else ""


# A Python driver's traceback ends in the exception that ended it; what its JVM logs while it
# stops after it (the stack traces of queries torn down with it) can push that line out of
# any tail; cause_first puts it ahead of the tail.
_TRACEBACK = "Traceback (most recent call last):"


def python_cause(text: str) -> str | None:
    """The exception line of the last Python traceback in ``text``: the first line after it
    that is not indented."""
    at = text.rfind(_TRACEBACK)
    if at < 0:
        return None
    for line in text[at + len(_TRACEBACK) :].splitlines()[1:]:
        if line.strip() and not line[0].isspace():
            return line.strip()
    return None


def cause_first(shown: str, log: str) -> str:
    """``shown`` (a tail of a failed driver's ``log``) as a person needs it: the exception
    that ended the driver first, so a reader that keeps only the head of it keeps the cause."""
    cause = python_cause(log)
    return f"{cause}\n[...]\n{shown}" if cause else shown
