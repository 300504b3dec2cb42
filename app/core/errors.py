"""One error hierarchy that carries its HTTP status, rendered as RFC 9457 problem+json.

Services raise these; the API's handlers (``app.api.error_handlers``) turn every failure a client
can cause into a problem document with a ``detail`` a person can act on, never a bare 500.
"""

from __future__ import annotations

from typing import Any

from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

PROBLEM_JSON = "application/problem+json"


class TidegateError(Exception):
    status = 500
    title = "Internal error"
    type = "about:blank"

    def __init__(self, detail: str, *, headers: dict[str, str] | None = None, **extra: Any) -> None:
        super().__init__(detail)
        self.detail = detail
        self.headers = headers or {}
        self.extra = extra


class BadRequest(TidegateError):
    status, title = 400, "Bad request"


class Unauthorized(TidegateError):
    status, title = 401, "Unauthorized"


class Forbidden(TidegateError):
    status, title = 403, "Forbidden"


class NotFound(TidegateError):
    status, title = 404, "Not found"


class Conflict(TidegateError):
    status, title = 409, "Conflict"


class PreconditionFailed(TidegateError):
    status, title = 412, "Precondition failed"


class PayloadTooLarge(TidegateError):
    status, title = 413, "Payload too large"


class Unprocessable(TidegateError):
    status, title = 422, "Unprocessable request"


class ServiceUnavailable(TidegateError):
    status, title = 503, "Service unavailable"


class Problem(BaseModel):
    """An error, RFC 9457: ``detail`` says what went wrong and what to do about it."""

    model_config = ConfigDict(extra="allow", title="Problem")

    type: str = Field("about:blank", description="Always about:blank: the status says it.")
    title: str = Field(description="The status's name, e.g. 'Conflict'.")
    status: int = Field(description="The HTTP status, repeated.")
    detail: str = Field(description="What went wrong, and what to do about it.")
    errors: list[dict[str, Any]] | None = Field(
        None, description="422: one entry per invalid field: {field, message}."
    )


def problem(
    status: int, title: str, detail: str, *, headers: dict[str, str] | None = None, **extra: Any
) -> JSONResponse:
    body = {"type": "about:blank", "title": title, "status": status, "detail": detail, **extra}
    return JSONResponse(body, status_code=status, headers=headers, media_type=PROBLEM_JSON)
