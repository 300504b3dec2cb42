from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query
from pydantic import Field

from app.audit import service
from app.auth.deps import Reader
from app.core.deps import DbSession
from app.core.pagination import Cursor, Limit, Page
from app.core.schemas import Response, redacting

router = APIRouter(tags=["audit"])


class EventResponse(Response):
    id: int
    at: datetime
    actor: str
    actor_token_id: int | None = Field(
        description="The id of the stored token that acted (GET /api/v1/tokens); null for the "
        "bootstrap admin token and for tidegate itself. The actor name is the token's name, "
        "which is free text."
    )
    action: str
    job: str | None
    target: str | None
    result: str
    status_code: int
    detail: dict[str, Any] | None
    request_id: str | None

    _redact = redacting("detail")


@router.get(
    "/events", response_model=Page[EventResponse], operation_id="listEvents", name="event.list"
)
def list_events(
    session: DbSession,
    _: Reader,
    job: Annotated[
        str | None, Query(max_length=128, description="Only events of this job.")
    ] = None,
    action: Annotated[str | None, Query(max_length=64, examples=["job.create"])] = None,
    limit: Limit = 50,
    cursor: Cursor = None,
) -> Page[EventResponse]:
    rows, next_cursor = service.list_events(
        session, job=job, action=action, limit=limit, cursor=cursor
    )
    return Page(items=[EventResponse.model_validate(r) for r in rows], next_cursor=next_cursor)
