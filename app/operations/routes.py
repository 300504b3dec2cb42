from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Header, Path, Response

from app.auth.deps import Operator, Reader
from app.core.deps import AppSettings, DbSession
from app.core.pagination import Cursor, Limit, Page
from app.core.params import JobName
from app.operations import lifecycle, service
from app.operations.models import Operation
from app.operations.schemas import (
    DrainBody,
    OperationResponse,
    RestartBody,
    SnapshotBody,
    StopBody,
    SubmitBody,
    UpdateBody,
)

router = APIRouter(tags=["operations"])

IdempotencyKey = Annotated[
    str | None,
    Header(
        max_length=128,
        description="Same key, same operation: a retried request has no second effect.",
    ),
]
ACCEPTED: dict[int | str, dict[str, Any]] = {
    202: {"description": "Accepted; follow the operation at /api/v1/operations/{id}."},
    409: {"description": "Another operation of this job is in progress, or its state forbids it."},
}


def _accepted(op: Operation, response: Response) -> OperationResponse:
    response.headers["Location"] = f"/api/v1/operations/{op.id}"
    return service.operation_response(op)


@router.post(
    "/jobs/{job}/submit",
    status_code=202,
    response_model=OperationResponse,
    operation_id="submitJob",
    name="operation.submit",
    responses=ACCEPTED,
)
def submit(
    job: JobName,
    body: SubmitBody,
    session: DbSession,
    actor: Operator,
    settings: AppSettings,
    response: Response,
    idempotency_key: IdempotencyKey = None,
) -> OperationResponse:
    """Start a run of a version: fresh, from a snapshot (queries resume by name), or from a
    resume point (per query: resume from a snapshot or run coordinates, or initialize)."""
    op, _ = lifecycle.submit(session, job, body, actor, idempotency_key, settings)
    return _accepted(op, response)


@router.post(
    "/jobs/{job}/stop",
    status_code=202,
    response_model=OperationResponse,
    operation_id="stopJob",
    name="operation.stop",
    responses=ACCEPTED,
)
def stop(
    job: JobName,
    session: DbSession,
    actor: Operator,
    response: Response,
    body: StopBody | None = None,
    idempotency_key: IdempotencyKey = None,
) -> OperationResponse:
    params = (body or StopBody()).model_dump()
    op, _ = lifecycle.stop(session, job, "stop", params, actor, idempotency_key)
    return _accepted(op, response)


@router.post(
    "/jobs/{job}/drain",
    status_code=202,
    response_model=OperationResponse,
    operation_id="drainJob",
    name="operation.drain",
    responses=ACCEPTED,
)
def drain(
    job: JobName,
    session: DbSession,
    actor: Operator,
    response: Response,
    body: DrainBody | None = None,
    idempotency_key: IdempotencyKey = None,
) -> OperationResponse:
    """Stop-and-drain: fix each source's end offsets now, process everything up to them,
    flush event-time windows, commit, stop. The drained end offsets are kept on the run."""
    params = (body or DrainBody()).model_dump()
    op, _ = lifecycle.drain(session, job, params, actor, idempotency_key)
    return _accepted(op, response)


@router.post(
    "/jobs/{job}/cancel",
    status_code=202,
    response_model=OperationResponse,
    operation_id="cancelJob",
    name="operation.cancel",
    responses=ACCEPTED,
)
def cancel(
    job: JobName,
    session: DbSession,
    actor: Operator,
    response: Response,
    idempotency_key: IdempotencyKey = None,
) -> OperationResponse:
    op, _ = lifecycle.stop(session, job, "cancel", {}, actor, idempotency_key)
    return _accepted(op, response)


@router.post(
    "/jobs/{job}/restart",
    status_code=202,
    response_model=OperationResponse,
    operation_id="restartJob",
    name="operation.restart",
    responses=ACCEPTED,
)
def restart(
    job: JobName,
    session: DbSession,
    actor: Operator,
    response: Response,
    body: RestartBody | None = None,
    idempotency_key: IdempotencyKey = None,
) -> OperationResponse:
    op, _ = lifecycle.restart(session, job, body or RestartBody(), actor, idempotency_key)
    return _accepted(op, response)


@router.post(
    "/jobs/{job}/snapshots",
    status_code=202,
    response_model=OperationResponse,
    operation_id="exportSnapshot",
    name="operation.snapshot",
    responses=ACCEPTED,
)
def export_snapshot(
    job: JobName,
    body: SnapshotBody,
    session: DbSession,
    actor: Operator,
    settings: AppSettings,
    response: Response,
    idempotency_key: IdempotencyKey = None,
) -> OperationResponse:
    """Export a named snapshot of the current run's state at its latest committed batch;
    with stop: true, stop at a batch boundary first and end the run (hz-cli save-snapshot)."""
    op, _ = lifecycle.snapshot(session, job, body, actor, idempotency_key, settings)
    return _accepted(op, response)


@router.post(
    "/jobs/{job}/update",
    status_code=202,
    response_model=OperationResponse,
    operation_id="updateJobVersion",
    name="operation.update",
    responses=ACCEPTED,
)
def update(
    job: JobName,
    body: UpdateBody,
    session: DbSession,
    actor: Operator,
    settings: AppSettings,
    response: Response,
    idempotency_key: IdempotencyKey = None,
) -> OperationResponse:
    """Replace the current run with another version, state carried over: compatibility check
    (409 before anything stops), save-snapshot, submit the new version from it; if it fails to
    start, the old version is started again from the same snapshot."""
    op, _ = lifecycle.update(session, job, body, actor, idempotency_key, settings)
    return _accepted(op, response)


@router.get(
    "/operations/{op_id}",
    response_model=OperationResponse,
    operation_id="getOperation",
    name="operation.get",
)
def get_operation(
    op_id: Annotated[int, Path(ge=1, le=2**62)], session: DbSession, _: Reader
) -> OperationResponse:
    return service.operation_response(service.get_operation(session, op_id))


@router.get(
    "/jobs/{job}/operations",
    response_model=Page[OperationResponse],
    operation_id="listJobOperations",
    name="operation.list",
)
def list_operations(
    job: JobName, session: DbSession, _: Reader, limit: Limit = 50, cursor: Cursor = None
) -> Page[OperationResponse]:
    rows, next_cursor = service.list_operations(session, job, limit=limit, cursor=cursor)
    return Page(items=[service.operation_response(o) for o in rows], next_cursor=next_cursor)
