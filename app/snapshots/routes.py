from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, BackgroundTasks, Query, Request, Response, status

from app.auth.deps import Operator, Reader
from app.core.deps import AppSettings, DbSession
from app.core.pagination import Cursor, Limit, Page
from app.core.params import JobName, SnapshotPath
from app.snapshots import retention, service
from app.snapshots.schemas import (
    CoordinatesResponse,
    RetentionBody,
    RetentionResponse,
    SnapshotResponse,
    SnapshotSummary,
)

router = APIRouter(tags=["snapshots"])


@router.get(
    "/snapshots",
    response_model=Page[SnapshotSummary],
    operation_id="listSnapshots",
    name="snapshot.list",
)
def list_snapshots(
    session: DbSession,
    _: Reader,
    job: Annotated[str | None, Query(max_length=128, description="Only this job's.")] = None,
    limit: Limit = 50,
    cursor: Cursor = None,
) -> Page[SnapshotSummary]:
    """hz-cli list-snapshots: TIME, SIZE, JOB, SNAPSHOT; newest first."""
    rows, next_cursor = service.list_snapshots(session, job=job, limit=limit, cursor=cursor)
    return Page(items=[service.summary(s) for s in rows], next_cursor=next_cursor)


@router.get(
    "/jobs/{job}/snapshots/{name}",
    response_model=SnapshotResponse,
    operation_id="getSnapshot",
    name="snapshot.get",
)
def get_snapshot(
    job: JobName, name: SnapshotPath, session: DbSession, _: Reader
) -> SnapshotResponse:
    return service.snapshot_response(session, service.get_snapshot(session, job, name))


def _collect(request: Request) -> None:
    retention.collect_garbage(request.app.state.sessionmaker, request.app.state.settings)


@router.delete(
    "/jobs/{job}/snapshots/{name}",
    status_code=204,
    operation_id="deleteSnapshot",
    name="snapshot.delete",
    responses={409: {"description": "A run in an active state started from it."}},
)
def delete_snapshot(
    job: JobName,
    name: SnapshotPath,
    session: DbSession,
    actor: Operator,
    request: Request,
    background: BackgroundTasks,
) -> Response:
    """Delete a snapshot; its files no other snapshot shares are collected after the response."""
    service.delete_snapshot(session, job, name, actor)
    background.add_task(_collect, request)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get(
    "/jobs/{job}/snapshot-coordinates",
    response_model=CoordinatesResponse,
    operation_id="getSnapshotCoordinates",
    name="snapshot.coordinates",
)
def snapshot_coordinates(
    job: JobName, session: DbSession, _: Reader, settings: AppSettings
) -> CoordinatesResponse:
    """The latest committed batch of each query of the current or last run (Onyx's
    job-snapshot-coordinates): what a resume point can name without a snapshot."""
    return service.coordinates(session, settings, job)


@router.get(
    "/jobs/{job}/snapshot-retention",
    response_model=RetentionResponse,
    operation_id="getSnapshotRetention",
    name="snapshot.retention.get",
)
def get_retention(job: JobName, session: DbSession, _: Reader) -> RetentionResponse:
    return service.get_retention(session, job)


@router.put(
    "/jobs/{job}/snapshot-retention",
    response_model=RetentionResponse,
    operation_id="setSnapshotRetention",
    name="snapshot.retention.set",
)
def set_retention(
    job: JobName, body: RetentionBody, session: DbSession, actor: Operator
) -> RetentionResponse:
    """Keep the newest N and/or those younger than T (a snapshot any rule keeps stays);
    applied after each export."""
    return service.set_retention(session, job, body, actor)
