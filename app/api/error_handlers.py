"""The API server's exception handlers: every failure a client can cause becomes a problem
document (RFC 9457) with a ``detail`` a person can act on, never a bare 500; and the OpenAPI
document says so for every 4xx/5xx response."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import iter_route_contexts
from sqlalchemy.exc import DataError, DBAPIError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError
from sqlalchemy.orm.exc import StaleDataError
from starlette.exceptions import HTTPException as StarletteHTTPException

from app.core.errors import PROBLEM_JSON, Problem, TidegateError, problem
from app.core.schemas import MAX_JSON_DEPTH

log = logging.getLogger(__name__)

# Statement timeout, serialization failure, deadlock, lock not available: the request's
# transaction was rolled back whole, so the same request may simply be sent again.
_BUSY = frozenset({"57014", "40001", "40P01", "55P03"})


def _busy(exc: Exception) -> JSONResponse:
    log.warning("metadata store busy: %s", str(exc).splitlines()[0])
    return problem(
        503,
        "Service unavailable",
        "The metadata store was busy with a conflicting change; nothing was changed. Retry.",
        headers={"Retry-After": "1"},
    )


# Answers a parameter itself brings, documented on every operation that takes it (here, once,
# rather than on each route: a new route that pages or takes If-Match cannot forget them).
PARAMETER_ANSWERS: dict[tuple[str, str], tuple[str, str]] = {
    ("query", "cursor"): (
        "400",
        "The cursor is not one this API issued; pass next_cursor from a previous page.",
    ),
    ("header", "if-match"): (
        "412",
        "If-Match does not match the resource's current ETag: it changed since you read it. "
        "Read it again and retry.",
    ),
}


def document_parameter_answers(operation: dict[str, Any]) -> None:
    """Add to ``operation``'s responses the statuses its parameters can bring (a foreign
    cursor: 400; a stale If-Match: 412)."""
    responses = operation.setdefault("responses", {})
    for parameter in operation.get("parameters", []):
        answer = PARAMETER_ANSWERS.get((parameter.get("in"), str(parameter.get("name")).lower()))
        if answer is not None:
            status, description = answer
            responses[status] = {"description": description}
    operation["responses"] = dict(sorted(responses.items()))  # in order of status, as FastAPI


def document_problems(schema: dict[str, Any]) -> dict[str, Any]:
    """Every 4xx/5xx response of the spec carries a Problem as application/problem+json, so
    generated clients get a typed error (FastAPI documents route-level errors without it);
    and every operation documents the answers its parameters bring (PARAMETER_ANSWERS)."""
    schema.setdefault("components", {}).setdefault("schemas", {})["Problem"] = (
        Problem.model_json_schema()
    )
    ref = {"schema": {"$ref": "#/components/schemas/Problem"}}
    for operations in schema.get("paths", {}).values():
        for operation in operations.values():
            document_parameter_answers(operation)
            for status, response in operation.get("responses", {}).items():
                if status[:1] in ("4", "5"):
                    response["content"] = {PROBLEM_JSON: ref}
    return schema


def _field_errors(exc: RequestValidationError) -> list[dict[str, Any]]:
    out = []
    for err in exc.errors():
        loc = [str(p) for p in err.get("loc", ())]
        out.append({"field": ".".join(loc), "message": err.get("msg", ""), "type": err.get("type")})
    return out


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(TidegateError)
    async def _tidegate(request: Request, exc: TidegateError) -> JSONResponse:
        return problem(exc.status, exc.title, exc.detail, headers=exc.headers, **exc.extra)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = _field_errors(exc)
        fields = ", ".join(e["field"] for e in errors[:5])
        return problem(
            422,
            "Invalid request",
            f"The request has {len(errors)} invalid field(s): {fields}. See 'errors' for each.",
            errors=errors,
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        detail = exc.detail if isinstance(exc.detail, str) else "Request failed."
        if exc.status_code == 404 and detail == "Not Found":
            detail = f"No route {request.method} {request.url.path}. See /docs for the API."
        headers = dict(exc.headers or {})
        if exc.status_code == 405:
            allowed = _allowed_methods(request)
            headers["Allow"] = ", ".join(allowed)
            detail = (
                f"{request.method} is not allowed on {request.url.path}; use {', '.join(allowed)}."
            )
        if isinstance(exc.__cause__, RecursionError):
            # Too deep for the JSON parser itself: the same answer as any body nested past
            # the limit the models check (one status for "too deep", whatever the depth).
            message = f"nested deeper than {MAX_JSON_DEPTH} levels"
            return problem(
                422,
                "Invalid request",
                f"The request body is {message}.",
                errors=[{"field": "body", "message": message, "type": "value_error"}],
            )
        return problem(exc.status_code, _title(exc.status_code), detail, headers=headers)

    @app.exception_handler(StaleDataError)
    async def _stale(request: Request, exc: StaleDataError) -> JSONResponse:
        return problem(
            409, "Conflict", "The resource was changed by another request; read it again and retry."
        )

    @app.exception_handler(OperationalError)
    @app.exception_handler(PoolTimeoutError)
    async def _db_down(request: Request, exc: Exception) -> JSONResponse:
        if getattr(getattr(exc, "orig", None), "sqlstate", None) in _BUSY:
            return _busy(exc)  # a deadlock or a lock timeout is an OperationalError too
        log.warning("metadata store unavailable: %s", str(exc).splitlines()[0])
        why = (
            "Every connection to the metadata store is busy."
            if isinstance(exc, PoolTimeoutError)
            else "The metadata store (PostgreSQL) is unreachable."
        )
        return problem(
            503,
            "Service unavailable",
            f"{why} Nothing was changed; retry shortly.",
            headers={"Retry-After": "5"},
        )

    @app.exception_handler(DBAPIError)
    async def _db_error(request: Request, exc: DBAPIError) -> JSONResponse:
        # Constraint violations that slipped past validation are the client's conflict.
        sqlstate = getattr(exc.orig, "sqlstate", None) or ""
        if sqlstate.startswith("23"):
            # Which constraint, for the operator (the client's message names none).
            diag = getattr(exc.orig, "diag", None)
            log.warning(
                "constraint violated on %s %s: %s %s",
                request.method,
                request.url.path,
                sqlstate,
                getattr(diag, "constraint_name", None),
            )
            return problem(409, "Conflict", "The change conflicts with existing data.")
        if sqlstate in _BUSY:
            return _busy(exc)
        # Data exceptions: a value out of range for its column, or text PostgreSQL cannot
        # store (a NUL character; psycopg refuses it before sending, without a sqlstate).
        if sqlstate.startswith("22") or isinstance(exc, DataError):
            return problem(
                422,
                "Invalid request",
                "A value is out of range for its field, or contains a NUL character.",
            )
        log.exception("database error")
        return problem(500, "Internal error", "Unexpected database error; it has been logged.")

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error")
        return problem(500, "Internal error", "Unexpected error; it has been logged.")


def _allowed_methods(request: Request) -> list[str]:
    """Every method some route serves on this path (Starlette's 405 names only the first
    route's): a path is often served by several routes, one per method."""
    methods: set[str] = set()
    path = request.scope.get("path", "")
    for route in iter_route_contexts(request.app.router.routes):
        regex = getattr(route, "path_regex", None)
        if regex is not None and route.methods and regex.match(path):
            methods |= route.methods
    return sorted(methods)


def _title(status: int) -> str:
    from http import HTTPStatus

    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"
