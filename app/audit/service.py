"""The audit trail: every mutating call leaves who/what/when/result."""

from __future__ import annotations

import logging
import threading
import time
from datetime import timedelta
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session, sessionmaker

from app.audit.models import AuditEvent
from app.auth.service import Principal
from app.core.db import utcnow
from app.core.pagination import keyset_page
from app.core.request_context import current_request_id

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
            actor_token_id=None if isinstance(actor, str) else actor.token_id,
            action=action,
            job=job,
            target=target,
            result="ok",
            status_code=status_code,
            detail=detail,
            request_id=current_request_id(),
        )
    )


class Repeats:
    """Refusals of one kind (the same caller, action and status) are audited once per
    ``window``; the repeats in between are counted, and the next row of that kind says how
    many there were. A token cannot fill the audit log with its own 403s, and no refusal goes
    unmentioned. Per API process, bounded in memory."""

    def __init__(self, window: float = 60.0, limit: int = 10_000) -> None:
        self.window, self.limit = window, limit
        self._kinds: dict[tuple[object, ...], tuple[float, int]] = {}
        self._lock = threading.Lock()

    def admit(self, kind: tuple[object, ...]) -> int | None:
        """None: a repeat, counted, not to be recorded; else the repeats it follows."""
        now = time.monotonic()
        with self._lock:
            since, repeats = self._kinds.get(kind, (-self.window, 0))
            if now - since < self.window:
                self._kinds[kind] = (since, repeats + 1)
                return None
            if len(self._kinds) >= self.limit:  # forget the kinds whose window has passed
                self._kinds = {k: v for k, v in self._kinds.items() if now - v[0] < self.window}
            self._kinds[kind] = (now, 0)
            return repeats


def record_failure(
    factory: sessionmaker[Session],
    *,
    actor: str,
    actor_token_id: int | None,
    action: str,
    job: str | None,
    status_code: int,
    title: str,
    repeats: Repeats | None = None,
) -> None:
    """A refused change is audited in its own transaction: the request's was rolled back.
    With ``repeats``, a refusal repeated within its window is counted instead: a repeat is
    the same token, route and status, whatever job it names (issue 51 M2: a new job name a
    request was a new row), and the row kept names the first one's job."""
    kind = (actor, actor_token_id, action, status_code)
    repeated = repeats.admit(kind) if repeats is not None else 0
    if repeated is None:
        return
    detail: dict[str, Any] = {"error": title}
    if repeated:
        detail["repeats_not_recorded"] = repeated  # since the last row of this kind
    try:
        with factory() as session, session.begin():
            session.add(
                AuditEvent(
                    actor=actor,
                    actor_token_id=actor_token_id,
                    action=action,
                    job=job,
                    result="error",
                    status_code=status_code,
                    detail=detail,
                    request_id=current_request_id(),
                )
            )
    except Exception as exc:  # the store may be the thing that is down
        log.warning("could not audit a failed %s: %s", action, str(exc).splitlines()[0])


def list_events(
    session: Session, *, job: str | None, action: str | None, limit: int, cursor: str | None
) -> tuple[list[AuditEvent], str | None]:
    stmt = select(AuditEvent)
    if job is not None:
        stmt = stmt.where(AuditEvent.job == job)
    if action is not None:
        stmt = stmt.where(AuditEvent.action == action)
    return keyset_page(
        session, stmt, AuditEvent.id, limit=limit, cursor=cursor, descending=True, strict=True
    )


SWEEP_BATCH = 1000
SWEEP_MAX_BATCHES = 50


def sweep(
    factory: sessionmaker[Session],
    retention: timedelta,
    *,
    batch: int = SWEEP_BATCH,
    max_batches: int = SWEEP_MAX_BATCHES,
) -> int:
    """Delete audit events older than ``retention``, ``batch`` rows per transaction (short
    locks, small WAL bursts), at most ``max_batches`` per call: a backlog goes over several
    sweeps. Returns how many were deleted."""
    cutoff = utcnow() - retention
    deleted = 0
    for _ in range(max_batches):
        with factory() as session, session.begin():
            # Oldest first by id (the primary key): old rows have the lowest ids.
            ids = (
                select(AuditEvent.id)
                .where(AuditEvent.at < cutoff)
                .order_by(AuditEvent.id)
                .limit(batch)
                .scalar_subquery()
            )
            count = session.execute(delete(AuditEvent).where(AuditEvent.id.in_(ids))).rowcount  # type: ignore[attr-defined]
        deleted += count
        if count < batch:
            break
    if deleted:
        log.info("audit retention: deleted %s event(s) older than %s", deleted, cutoff.isoformat())
    return deleted
