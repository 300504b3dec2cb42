from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Header, Path, Query, Request, Response, status

from app.auth.deps import Operator, Reader
from app.core.deps import AppSettings, DbSession
from app.core.json_response import json_response
from app.core.pagination import Cursor, Limit, Page
from app.core.params import JobName
from app.jobs import service, sources
from app.jobs.models import etag_of
from app.jobs.schemas import (
    JobCreate,
    JobResponse,
    JobState,
    JobUpdate,
    VersionCreate,
    VersionResponse,
)

router = APIRouter(tags=["jobs"])


@router.post(
    "/jobs",
    status_code=201,
    response_model=JobResponse,
    operation_id="createJob",
    name="job.create",
)
def create_job(
    body: JobCreate, session: DbSession, actor: Operator, request: Request, response: Response
) -> dict[str, Any]:
    request.state.audit_job = body.name
    job = service.create_job(session, body, actor)
    response.headers["ETag"] = job.etag
    response.headers["Location"] = f"/api/v1/jobs/{job.name}"
    return service.job_response(session, job)


@router.get(
    "/source-kinds",
    response_model=list[sources.SourceKind],
    operation_id="listSourceKinds",
    name="source_kind.list",
)
def list_source_kinds(_: Reader) -> list[sources.SourceKind]:
    """What each source kind supports: startpoint types, drain (native, bounded or not)."""
    return list(sources.KINDS.values())


@router.get("/jobs", response_model=Page[JobResponse], operation_id="listJobs", name="job.list")
def list_jobs(
    session: DbSession,
    _: Reader,
    state: Annotated[JobState | None, Query(description="Only jobs in this state.")] = None,
    limit: Limit = 50,
    cursor: Cursor = None,
) -> Response:
    views, next_cursor = service.list_jobs(session, state=state, limit=limit, cursor=cursor)
    items = [service.job_document(view) for view in views]
    return json_response({"items": items, "next_cursor": next_cursor})


@router.get("/jobs/{job}", response_model=JobResponse, operation_id="getJob", name="job.get")
def get_job(job: JobName, session: DbSession, _: Reader) -> Response:
    view = service.job_view(session, job)
    return json_response(service.job_document(view), headers={"ETag": etag_of(view.revision)})


@router.patch(
    "/jobs/{job}",
    response_model=JobResponse,
    operation_id="updateJob",
    name="job.update",
)
def update_job(
    job: JobName,
    body: JobUpdate,
    session: DbSession,
    actor: Operator,
    response: Response,
    if_match: Annotated[str | None, Header(max_length=64)] = None,
) -> dict[str, Any]:
    row = service.update_job(session, job, body, if_match, actor)
    response.headers["ETag"] = row.etag
    return service.job_response(session, row)


@router.delete("/jobs/{job}", status_code=204, operation_id="deleteJob", name="job.delete")
def delete_job(job: JobName, session: DbSession, actor: Operator) -> Response:
    service.delete_job(session, job, actor)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post(
    "/jobs/{job}/versions",
    status_code=201,
    response_model=VersionResponse,
    operation_id="createVersion",
    name="version.create",
)
def create_version(
    job: JobName,
    body: VersionCreate,
    session: DbSession,
    actor: Operator,
    settings: AppSettings,
    response: Response,
) -> VersionResponse:
    version = service.create_version(session, job, body, actor, settings)
    response.headers["Location"] = f"/api/v1/jobs/{job}/versions/{version.number}"
    return service.version_response(version)


@router.get(
    "/jobs/{job}/versions",
    response_model=Page[VersionResponse],
    operation_id="listVersions",
    name="version.list",
)
def list_versions(
    job: JobName, session: DbSession, _: Reader, limit: Limit = 50, cursor: Cursor = None
) -> Page[VersionResponse]:
    rows, next_cursor = service.list_versions(session, job, limit=limit, cursor=cursor)
    return Page(items=[service.version_response(v) for v in rows], next_cursor=next_cursor)


@router.get(
    "/jobs/{job}/versions/{number}",
    response_model=VersionResponse,
    operation_id="getVersion",
    name="version.get",
)
def get_version(
    job: JobName,
    number: Annotated[int, Path(ge=1, le=2_147_483_647)],
    session: DbSession,
    _: Reader,
) -> VersionResponse:
    return service.version_response(service.get_version(session, job, number))
