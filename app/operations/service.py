"""Lifecycle operations: accepted by the API, carried out by the worker."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from sqlalchemy import select, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.audit import service as audit
from app.auth.service import Principal
from app.core.errors import Conflict, NotFound, Unprocessable
from app.core.pagination import keyset_page
from app.core.plans import StoredPlan
from app.jobs.models import Job
from app.jobs.service import get_job
from app.operations.models import ACTIVE_OPERATION_STATES, Operation
from app.operations.schemas import OperationResponse

NOTIFY_CHANNEL = "tidegate_operations"


def _request_hash(kind: str, params: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps([kind, params], sort_keys=True).encode()).hexdigest()


def _by_key(session: Session, job: Job, key: str) -> Operation | None:
    return session.scalar(
        select(Operation).where(Operation.job_id == job.id, Operation.idempotency_key == key)
    )


def _replay(existing: Operation, kind: str, digest: str, key: str) -> Operation:
    if existing.request_hash != digest or existing.kind != kind:
        raise Unprocessable(
            f"Idempotency-Key '{key}' was already used for a different request "
            f"(operation {existing.id}, {existing.kind}); use a new key for a new request."
        )
    return existing


def find_replay(
    session: Session, job: Job, kind: str, params: dict[str, Any], key: str | None
) -> Operation | None:
    """A retried request (same Idempotency-Key) gets its operation back before any check
    that the first request's own effects would now fail."""
    if key is None:
        return None
    existing = _by_key(session, job, key)
    return _replay(existing, kind, _request_hash(kind, params), key) if existing else None


def active_operation(session: Session, job: Job) -> Operation | None:
    return session.scalar(
        select(Operation).where(
            Operation.job_id == job.id,
            Operation.state.in_(ACTIVE_OPERATION_STATES),
            Operation.kind != "cancel",
        )
    )


def enqueue(
    session: Session,
    job: Job,
    kind: str,
    params: dict[str, Any],
    actor: Principal,
    idempotency_key: str | None,
    run_id: int | None = None,
    plan: StoredPlan | None = None,
) -> tuple[Operation, bool]:
    """Record the operation (with the plan the caller checked, if it starts a version) and wake
    a worker. Returns (operation, created). The same Idempotency-Key returns the same
    operation, with its original plan; a conflicting active one is a 409."""
    digest = _request_hash(kind, params)
    if idempotency_key is not None:
        existing = _by_key(session, job, idempotency_key)
        if existing is not None:
            return _replay(existing, kind, digest, idempotency_key), False
    if kind != "cancel":
        busy = active_operation(session, job)
        if busy is not None:
            raise _busy(job, busy)
    op = Operation(
        job_id=job.id,
        kind=kind,
        params=params,
        idempotency_key=idempotency_key,
        request_hash=digest,
        created_by=actor.name,
        run_id=run_id,
        plan=plan,
        steps=[],
    )
    try:
        with session.begin_nested():  # a race lost to a concurrent request must not poison us
            session.add(op)
            session.flush()
    except IntegrityError as exc:
        constraint = getattr(getattr(exc.orig, "diag", None), "constraint_name", "") or ""
        if "idempotency" in constraint and idempotency_key is not None:
            existing = _by_key(session, job, idempotency_key)
            if existing is not None:
                return _replay(existing, kind, digest, idempotency_key), False
        busy = active_operation(session, job)
        raise _busy(job, busy) from None
    session.execute(
        text("select pg_notify(:channel, :payload)"),
        {"channel": NOTIFY_CHANNEL, "payload": str(op.id)},
    )
    audit.record(
        session,
        actor,
        f"operation.{kind}",
        job=job.name,
        target=f"operation {op.id}",
        detail=params or None,
        status_code=202,
    )
    return op, True


def _busy(job: Job, busy: Operation | None) -> Conflict:
    which = f"operation {busy.id} ({busy.kind}, {busy.state})" if busy else "another operation"
    return Conflict(
        f"Job '{job.name}' is busy with {which}; wait for it to finish "
        f"(GET /api/v1/operations/{busy.id if busy else '…'}) or cancel the job.",
        operation_id=busy.id if busy else None,
    )


def get_operation(session: Session, op_id: int) -> Operation:
    op = session.get(Operation, op_id)
    if op is None:
        raise NotFound(f"No operation with id {op_id}.")
    return op


def list_operations(
    session: Session, job_name: str, *, limit: int, cursor: str | None
) -> tuple[list[Operation], str | None]:
    job = get_job(session, job_name)
    stmt = select(Operation).where(Operation.job_id == job.id)
    return keyset_page(session, stmt, Operation.id, limit=limit, cursor=cursor, descending=True)


def operation_response(op: Operation) -> OperationResponse:
    return OperationResponse.model_validate(
        {
            **{
                c: getattr(op, c)
                for c in (
                    "id",
                    "kind",
                    "state",
                    "params",
                    "run_id",
                    "steps",
                    "error",
                    "result",
                    "idempotency_key",
                    "created_by",
                    "created_at",
                    "started_at",
                    "finished_at",
                )
            },
            "job": op.job.name,
        }
    )
