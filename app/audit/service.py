"""The audit trail: every mutating call leaves who/what/when/result."""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from app.audit.models import AuditEvent
from app.auth.service import Principal
from app.errors import BadRequest
from app.pagination import decode_cursor, encode_cursor
from app.request_context import current_request_id

log = logging.getLogger(__name__)

MUTATING = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def record(
    session: Session,
    actor: Principal | str,
    action: str,
    *,
    job: str | None = None,
    target: str | None = None,
    detail: dict[str, Any] | None = None,
    status_code: int = 200,
) -> None:
    """Record a successful change in the caller's transaction, so both land or neither does."""
    session.add(
        AuditEvent(
            actor=actor if isinstance(actor, str) else actor.name,
            action=action,
            job=job,
            target=target,
            result="ok",
            status_code=status_code,
            detail=detail,
            request_id=current_request_id(),
        )
    )


def record_failure(
    factory: sessionmaker[Session],
    *,
    actor: str,
    action: str,
    job: str | None,
    status_code: int,
    title: str,
) -> None:
    """A refused change is audited in its own transaction: the request's was rolled back."""
    try:
        with factory() as session, session.begin():
            session.add(
                AuditEvent(
                    actor=actor,
                    action=action,
                    job=job,
                    result="error",
                    status_code=status_code,
                    detail={"error": title},
                    request_id=current_request_id(),
                )
            )
    except Exception as exc:  # the store may be the thing that is down
        log.warning("could not audit a failed %s: %s", action, str(exc).splitlines()[0])


def list_events(
    session: Session, *, job: str | None, action: str | None, limit: int, cursor: str | None
) -> tuple[list[AuditEvent], str | None]:
    stmt = select(AuditEvent).order_by(AuditEvent.id.desc()).limit(limit + 1)
    if job is not None:
        stmt = stmt.where(AuditEvent.job == job)
    if action is not None:
        stmt = stmt.where(AuditEvent.action == action)
    after = decode_cursor(cursor)
    if after is not None:
        if not isinstance(after, int):
            raise BadRequest("The cursor is not one this API issued.")
        stmt = stmt.where(AuditEvent.id < after)
    rows = list(session.scalars(stmt))
    more = len(rows) > limit
    rows = rows[:limit]
    return rows, encode_cursor(rows[-1].id) if more else None
