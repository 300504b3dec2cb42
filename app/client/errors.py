"""What can go wrong on the client side, as one line and an exit code a script can branch on.

Exit codes (documented in docs/cli.md):

====  ==========================================================================
0     success
1     the operation failed (``--wait``), or the server failed (5xx)
2     usage: bad flags or files (click's own), or the API refused the request as
      invalid (400, 413, 422)
3     conflict: 409 (busy job, name taken, incompatible snapshot), 412 (stale If-Match)
4     not found: 404
5     not authorised: 401 (no or bad token), 403 (the token's scope is too small)
6     the server is unreachable or unavailable (connection refused, timeout, 503)
7     ``--wait`` gave up (``--timeout``) while the operation goes on
130   interrupted (Ctrl-C); an accepted operation goes on on the server
====  ==========================================================================
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any


class Exit(IntEnum):
    OK = 0
    FAILED = 1
    USAGE = 2
    CONFLICT = 3
    NOT_FOUND = 4
    AUTH = 5
    UNAVAILABLE = 6
    TIMEOUT = 7
    INTERRUPTED = 130


class CliError(Exception):
    """An expected failure: printed as ``error: <message>`` and turned into an exit code."""

    def __init__(self, message: str, code: Exit = Exit.FAILED) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


def exit_code_for(status: int) -> Exit:
    if status == 404:
        return Exit.NOT_FOUND
    if status in (409, 412):
        return Exit.CONFLICT
    if status in (401, 403):
        return Exit.AUTH
    if status in (400, 405, 413, 415, 422):
        return Exit.USAGE
    if status in (502, 503, 504):
        return Exit.UNAVAILABLE
    return Exit.FAILED


AUTH_HINT = (
    "set TIDEGATE_TOKEN or --token ('make run' keeps an admin token in .tidegate/admin-token; "
    "'tidegate tokens create' mints one)"
)


class ApiError(CliError):
    """A non-2xx answer, rendered from its RFC 9457 problem document."""

    def __init__(self, status: int, problem: dict[str, Any], method: str, path: str) -> None:
        self.status = status
        self.problem = problem
        super().__init__(render_problem(status, problem, method, path), exit_code_for(status))


def _field(name: str) -> str:
    # "body.queries.0.name" → "queries.0.name": the body is the file the user gave.
    return name.removeprefix("body.") if name != "body" else "body"


def render_problem(status: int, problem: dict[str, Any], method: str, path: str) -> str:
    """One line: ``Title: detail`` (field errors in place of the detail's pointer to them)."""
    title = str(problem.get("title") or f"HTTP {status}")
    detail = str(problem.get("detail") or "").strip()
    errors = problem.get("errors")
    if isinstance(errors, list) and errors:
        parts = []
        for err in errors[:8]:
            if isinstance(err, dict):
                field = _field(str(err.get("field") or ""))
                message = str(err.get("message") or err.get("msg") or "invalid")
                parts.append(f"{field}: {message}" if field else message)
            else:
                parts.append(str(err))
        more = f" (+{len(errors) - 8} more)" if len(errors) > 8 else ""
        fields = "; ".join(parts) + more
        # The generic validation detail only points at 'errors': show them instead. A
        # specific detail stays, with the fields after it.
        generic = not detail or "See 'errors'" in detail
        detail = fields if generic else f"{detail} ({fields})"
    line = f"{title}: {detail}" if detail else f"{title} ({method} {path})"
    if status in (404, 405) and detail.startswith(("No route", f"{method} is not allowed")):
        line = (
            f"this server has no {method} {path}: it is older than this client "
            "(upgrade the server, or use a client of its version)"
        )
    if status == 401:
        line += f" — {AUTH_HINT}"
    elif status == 409 and isinstance(problem.get("operation_id"), int):
        line += f" — follow it with: tidegate wait {problem['operation_id']}"
    return " ".join(line.split())  # one line, whatever the server put in it


def unreachable(url: str, reason: str) -> CliError:
    return CliError(
        f"cannot reach tidegate at {url} ({reason}). Start it with 'make run' (or "
        "'tidegate run'), or point --url / TIDEGATE_URL at a running server.",
        Exit.UNAVAILABLE,
    )
