"""A thin HTTP client for the tidegate API: JSON in and out, problems turned into CliErrors.

Plain httpx rather than the generated client (openapi/clients/python): the CLI must also
speak to endpoints that land in the spec later (snapshots, startpoints, drain, update),
passes documents through untouched for ``-o json|yaml``, and renders problem+json itself.
"""

from __future__ import annotations

import ssl
import time
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx

from app.client.errors import ApiError, CliError, Exit, unreachable

API = "/api/v1"
# Retried: nothing was changed (reads), or the request carries an Idempotency-Key or is
# idempotent by definition (PUT, DELETE), so the server ignores a second copy.
RETRY_STATUSES = (502, 503, 504)
ATTEMPTS = 3


def seg(value: object) -> str:
    """One URL path segment: a name with '/', '?' or '#' must not change the path."""
    return quote(str(value), safe="")


def new_idempotency_key() -> str:
    return f"cli-{uuid.uuid4()}"


class Api:
    def __init__(self, url: str, token: str | None, timeout: float) -> None:
        headers = {"User-Agent": "tidegate-cli", "Accept": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self.url = url
        self.more = False  # the last pages() stopped at its limit with items left
        # Plain http needs no CA bundle (loading it is most of a command's run time); a bare
        # client context has none, so TLS would fail closed if it were ever used.
        verify: ssl.SSLContext | bool = (
            True if url.startswith("https://") else ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        )
        self._http = httpx.Client(base_url=url, headers=headers, timeout=timeout, verify=verify)

    def close(self) -> None:
        self._http.close()

    def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        raw: bool = False,
    ) -> Any:
        """Send one request under /api/v1 (unless the path is absolute) and return its JSON
        body (None when empty). Retries transient failures only where a retry is safe."""
        full = path if path.startswith(("/healthz", "/readyz", "/metrics", API)) else API + path
        query = {k: v for k, v in (params or {}).items() if v is not None}
        retry_safe = method in ("GET", "HEAD", "PUT", "DELETE") or bool(
            headers and "Idempotency-Key" in headers
        )
        for attempt in range(1, ATTEMPTS + 1):
            last = attempt == ATTEMPTS or not retry_safe
            try:
                response = self._http.request(
                    method, full, json=json, params=query, headers=headers
                )
            except httpx.ConnectError as e:
                raise unreachable(self.url, _reason(e)) from None
            except (httpx.TimeoutException, httpx.RemoteProtocolError, httpx.ReadError) as e:
                if last:
                    raise CliError(
                        f"{method} {full} to {self.url} failed: {_reason(e)}"
                        + (
                            "; it is safe to retry the same command"
                            if retry_safe
                            else "; check whether it took effect before retrying"
                        ),
                        Exit.UNAVAILABLE,
                    ) from None
                time.sleep(0.5 * 2.0**attempt)
                continue
            except httpx.HTTPError as e:
                raise CliError(f"{method} {full}: {_reason(e)}", Exit.UNAVAILABLE) from None
            if response.status_code in RETRY_STATUSES and not last:
                time.sleep(_retry_after(response, attempt))
                continue
            if response.status_code >= 400:
                raise ApiError(response.status_code, _problem(response), method, full)
            if raw:
                return response.text
            if not response.content:
                return None
            try:
                return response.json()
            except ValueError:
                raise CliError(
                    f"{method} {full}: the server answered {response.status_code} with "
                    f"something that is not JSON; is {self.url} a tidegate server?",
                    Exit.FAILED,
                ) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def get(self, path: str, **params: Any) -> Any:
        return self.request("GET", path, params=params)

    def post(self, path: str, body: Any = None, *, idempotency_key: str | None = None) -> Any:
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        return self.request("POST", path, json=body, headers=headers)

    def pages(self, path: str, limit: int | None, **params: Any) -> Iterator[dict[str, Any]]:
        """Items of a paginated list, following ``next_cursor``; ``limit`` None = all."""
        cursor: str | None = None
        seen = 0
        while True:
            size = 500 if limit is None else max(1, min(500, limit - seen))
            page = self.get(path, **params, limit=size, cursor=cursor)
            items = page.get("items", []) if isinstance(page, dict) else list(page or [])
            for item in items:
                if limit is not None and seen >= limit:
                    return
                seen += 1
                yield item
            cursor = page.get("next_cursor") if isinstance(page, dict) else None
            if not cursor or (limit is not None and seen >= limit):
                self.more = bool(cursor)
                return


def _problem(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        return body
    text = " ".join(response.text.split())[:200]
    return {"title": response.reason_phrase or f"HTTP {response.status_code}", "detail": text}


def _retry_after(response: httpx.Response, attempt: int) -> float:
    try:
        return min(5.0, float(str(response.headers.get("Retry-After", ""))))
    except ValueError:
        return 0.5 * 2.0**attempt


def _reason(exc: Exception) -> str:
    text = str(exc) or type(exc).__name__
    if "refused" in text.lower():
        return "connection refused"
    return " ".join(text.split())[:200]
