"""The one owner of an operation's state. An operation is created ``pending`` (the model's
default, by ``operations.service.enqueue``); from then on only these functions change it:

- ``claim``: a worker takes the oldest pending operation, or a running one whose lease ran out
  (FOR UPDATE SKIP LOCKED), as ``running`` under its lease, counting the attempt;
- ``renew``: the worker's heartbeat extends the leases of the operations it carries out;
- ``finish``: ``succeeded`` or ``failed``, with the error and result, releasing the lease;
- ``move_to_run``: the run an operation acts on moves to the run it started, in the
  transaction that created that run (or gave its standby go);
- ``retry_later``: a temporary backend error or an unexpected exception releases the operation
  until its backoff has passed (the claim takes it up again then); past ``RETRY_MAX_ATTEMPTS``
  attempts it fails with the last error.

Every write checks that the caller still holds the lease: a worker whose lease expired and was
taken over changes nothing."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from sqlalchemy import text, update
from sqlalchemy.orm import Session, sessionmaker

from app.core.db import transaction, utcnow
from app.operations.models import FAILED, SUCCEEDED, Operation
from app.snapshots import pins

log = logging.getLogger(__name__)


# A backend that keeps answering with temporary errors (down, 5xx, not ready), or an operation
# that keeps raising an unexpected exception, is retried with exponential backoff — 1 s, 2 s,
# 4 s … capped at a minute — for about eight minutes in all, then the operation fails with the
# last error. Every step is idempotent, so a retry resumes.
RETRY_MAX_ATTEMPTS = 12
RETRY_MAX_DELAY_SECONDS = 60.0

CLAIM = text(
    """
    update operations set state = 'running', lease_owner = :me,
           lease_expires_at = now() + make_interval(secs => :lease),
           attempts = attempts + 1, started_at = coalesce(started_at, now())
    where id = (
        select id from operations
        where state = 'pending' or (state = 'running' and lease_expires_at < now())
        order by id
        for update skip locked
        limit 1
    )
    returning id
    """
)
RENEW = text(
    "update operations set lease_expires_at = now() + make_interval(secs => :lease) "
    "where id = any(:ids) and lease_owner = :me and state = 'running'"
)


def retry_delay(attempt: int) -> float:
    """Seconds before claim number ``attempt + 1`` after ``attempt`` failed attempts."""
    return float(min(RETRY_MAX_DELAY_SECONDS, 2 ** max(0, attempt - 1)))


def claim(factory: sessionmaker[Session], worker_id: str, lease_seconds: float) -> int | None:
    """The next operation to carry out, now ``running`` under ``worker_id``'s lease."""
    with transaction(factory) as session:
        op_id: int | None = session.scalar(CLAIM, {"me": worker_id, "lease": lease_seconds})
        return op_id


def renew(
    factory: sessionmaker[Session], worker_id: str, op_ids: list[int], lease_seconds: float
) -> int:
    """Extends the leases ``worker_id`` holds on ``op_ids``; returns how many."""
    if not op_ids:
        return 0
    with transaction(factory) as session:
        result = session.execute(RENEW, {"ids": op_ids, "me": worker_id, "lease": lease_seconds})
        return int(getattr(result, "rowcount", 0) or 0)


def _locked_if_mine(session: Session, op_id: int, worker_id: str) -> Operation | None:
    op = session.get(Operation, op_id, with_for_update=True, populate_existing=True)
    assert op is not None
    return op if op.lease_owner == worker_id else None


def _end(
    session: Session, op: Operation, state: str, error: str | None, result: dict[str, Any] | None
) -> None:
    op.state, op.error, op.result = state, error, result
    pins.release(session, op.id)  # its snapshots may be deleted or expired again
    op.finished_at = utcnow()
    op.lease_owner, op.lease_expires_at = None, None


def finish(
    factory: sessionmaker[Session],
    op_id: int,
    worker_id: str,
    state: str,
    error: str | None = None,
    result: dict[str, Any] | None = None,
) -> None:
    """``succeeded`` or ``failed``, if ``worker_id`` still holds the lease."""
    assert state in (SUCCEEDED, FAILED), state
    with transaction(factory) as session:
        op = _locked_if_mine(session, op_id, worker_id)
        if op is None:
            return
        _end(session, op, state, error, result)
    log.info("operation %s %s%s", op_id, state, f": {error}" if error else "")


def retry_later(
    factory: sessionmaker[Session], op_id: int, worker_id: str, exc: Exception, *, what: str
) -> None:
    """Release the operation until its backoff has passed, showing why on the operation;
    past the last attempt, fail it. ``what``: "backend" (a temporary backend error) or
    "unexpected" (an exception no step classified)."""
    with transaction(factory) as session:
        op = _locked_if_mine(session, op_id, worker_id)
        if op is None:
            return
        if op.attempts >= RETRY_MAX_ATTEMPTS:
            if what == "backend":
                error = (
                    f"the Spark backend kept failing ({op.attempts} attempts with backoff): "
                    f"{exc}. Check the cluster is up and reachable from the worker, then retry "
                    "the request."
                )
            else:
                error = (
                    f"the worker kept failing with an unexpected error ({op.attempts} attempts "
                    f"with backoff): {type(exc).__name__}: {exc}. See the worker's log."
                )
            _end(session, op, FAILED, error, op.result)
            log.warning("operation %s failed for good: %s", op_id, exc)
            return
        delay = retry_delay(op.attempts)
        kind = "temporary backend error" if what == "backend" else "unexpected error"
        detail = str(exc) if what == "backend" else f"{type(exc).__name__}: {exc}"
        op.error = f"{kind} (attempt {op.attempts}, retrying in {delay:.0f}s): {detail}"
        op.lease_owner = None
        op.lease_expires_at = utcnow() + timedelta(seconds=delay)
    log.warning("operation %s: %s, retrying in %.0fs: %s", op_id, kind, delay, exc)


def move_to_run(session: Session, op_id: int, run_id: int) -> None:
    """The operation now acts on run ``run_id`` (the run it created or gave go): written in the
    caller's transaction, so the run and the operation's pointer to it commit together."""
    session.execute(update(Operation).where(Operation.id == op_id).values(run_id=run_id))
