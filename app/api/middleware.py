"""Pure ASGI middleware: request ids, access logs, metrics, body limits, failure audit."""

from __future__ import annotations

import logging
import time
import uuid
from typing import Any

import anyio
import structlog
from prometheus_client import Counter, Histogram
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.api import route_guard
from app.audit.service import MUTATING, record_failure
from app.auth.service import Principal, authenticate
from app.core.errors import Forbidden, Unauthorized, problem
from app.core.request_context import set_request_id

log = logging.getLogger("tidegate.access")

HTTP_REQUESTS = Counter(
    "tidegate_http_requests_total",
    "HTTP requests by operation and status",
    ["method", "operation", "status"],
)
HTTP_LATENCY = Histogram(
    "tidegate_http_request_duration_seconds",
    "HTTP request latency by operation",
    ["method", "operation"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)


# Metric labels come from closed sets: a made-up method is "other", not a new time series.
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def _method(scope: Scope) -> str:
    method = str(scope.get("method", ""))
    return method if method in METHODS else "other"


def _operation(scope: Scope) -> str:
    # The route's name (e.g. "job.get"): bounded cardinality, stable across path changes.
    route = scope.get("route")
    return getattr(route, "name", None) or "unmatched"


class RequestMiddleware:
    def __init__(self, app: ASGIApp, *, max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        incoming = headers.get("x-request-id", "")
        request_id = (
            incoming if 0 < len(incoming) <= 64 and incoming.isprintable() else uuid.uuid4().hex
        )
        set_request_id(request_id)
        structlog.contextvars.bind_contextvars(request_id=request_id)
        start = time.perf_counter()
        status_holder: dict[str, Any] = {"status": 500, "audited": False}

        async def audit_if_refused() -> None:
            # Before the response's last byte: a client (or a test emptying the store) that
            # has its answer never races the refusal's audit row.
            if not status_holder["audited"] and _refused_change(scope, status_holder["status"]):
                status_holder["audited"] = True
                await self._audit_failure(scope, status_holder["status"])

        async def send_wrapper(message: Message) -> None:
            if message["type"] == "http.response.start":
                status_holder["status"] = message["status"]
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], (b"x-request-id", request_id.encode())]
            elif message["type"] == "http.response.body" and not message.get("more_body"):
                await audit_if_refused()
            await send(message)

        guard = route_guard.guard_for(scope)
        if guard is not None:  # the audit names a refusal by route, even one made here
            scope.setdefault("state", {})["route_name"] = guard.name
        limit = guard.body_limit if guard else self.max_body_bytes
        declared = headers.get("content-length")
        if declared is not None and not (declared.isascii() and declared.isdigit()):
            response = problem(
                400,
                "Bad Request",
                "The Content-Length header must be the body's size in bytes (digits only).",
            )
            await response(scope, receive, send_wrapper)
        elif declared is not None and int(declared) > limit:
            await _too_large(limit)(scope, receive, send_wrapper)
        elif (refusal := await self._authenticate_first(scope, headers, guard)) is not None:
            await refusal(scope, receive, send_wrapper)
        else:
            received = 0

            async def limited_receive() -> Message:
                nonlocal received
                message = await receive()
                if message["type"] == "http.request":
                    received += len(message.get("body", b""))
                    if received > limit:
                        raise _BodyTooLarge(limit)
                return message

            try:
                await self.app(scope, limited_receive, send_wrapper)
            except _BodyTooLarge:
                await _too_large(limit)(scope, receive, send_wrapper)

        status = status_holder["status"]
        operation = _operation(scope)
        elapsed = time.perf_counter() - start
        method = _method(scope)
        HTTP_REQUESTS.labels(method, operation, str(status)).inc()
        HTTP_LATENCY.labels(method, operation).observe(elapsed)
        log.info(
            "%s %s %s %.1fms",
            scope["method"],
            scope["path"],
            status,
            elapsed * 1000,
            extra={"status": status},
        )
        await audit_if_refused()  # an unhandled error sent no body through send_wrapper
        structlog.contextvars.unbind_contextvars("request_id")

    async def _authenticate_first(
        self, scope: Scope, headers: dict[str, str], guard: route_guard.Guard | None
    ) -> Any:
        """A request to the API with a body is authenticated, and its token's scope checked
        against the route's, before a byte of its body is read: neither an anonymous client
        nor a token of too small a scope may make the service buffer and parse megabytes. The
        principal is kept for the route's own check (app/auth/deps.py). Returns the refusal,
        or None to go on (a store that cannot answer is left to the route's 503)."""
        has_body = headers.get("content-length", "0") != "0" or "transfer-encoding" in headers
        if not (has_body and scope["path"].startswith("/api/")):
            return None
        app = scope["app"]
        admin = app.state.settings.admin_token

        def check() -> Principal:
            # Its own transaction, committed: a run token's renewal must not be lost, nor
            # its row held while the route locks a job and a run.
            with app.state.sessionmaker.begin() as session:
                return authenticate(
                    session,
                    headers.get("authorization"),
                    admin.get_secret_value() if admin else None,
                )

        try:
            principal = await anyio.to_thread.run_sync(check)
        except Unauthorized as exc:
            return problem(401, exc.title, exc.detail, headers=exc.headers)
        except Exception:  # e.g. the store is down: the route answers for itself
            return None
        scope.setdefault("state", {})["principal"] = principal
        try:
            if guard is not None:
                guard.check(principal, scope["path"])
        except Forbidden as exc:
            return problem(403, exc.title, exc.detail, **exc.extra)
        return None

    async def _audit_failure(self, scope: Scope, status: int) -> None:
        state = scope.get("state") or {}
        principal = state["principal"]
        route = scope.get("route")
        # A route's name, never the raw path: a closed set, so new paths are not new rows.
        action = getattr(route, "name", None) or state.get("route_name") or "unmatched"
        # A route may name the job itself when it is not in the path (POST /jobs).
        job = state.get("audit_job") or (scope.get("path_params") or {}).get("job")
        app = scope["app"]
        await anyio.to_thread.run_sync(
            lambda: record_failure(
                app.state.sessionmaker,
                actor=principal.name,
                actor_token_id=principal.token_id,
                action=action,
                job=job if isinstance(job, str) and len(job) <= 128 else None,
                status_code=status,
                title=_title(status),
                repeats=app.state.refusals,
            )
        )


def _refused_change(scope: Scope, status: int) -> bool:
    """A change an authenticated caller asked for and did not get (anyone can send 401s, and
    each would be a row)."""
    return (
        status >= 400
        and scope["method"] in MUTATING
        and scope["path"].startswith("/api/")
        and (scope.get("state") or {}).get("principal") is not None
    )


def _title(status: int) -> str:
    from http import HTTPStatus

    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "error"


def _too_large(limit: int) -> Any:
    return problem(
        413, "Payload too large", f"The request body exceeds {limit} bytes; send less per call."
    )


class _BodyTooLarge(HTTPException):
    """An HTTPException, so FastAPI's body parsing lets it through as a 413 (any other
    exception there becomes "400 error parsing the body")."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"The request body exceeds {limit} bytes; send less per call.")
