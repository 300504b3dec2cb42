from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Response
from starlette.convertors import StringConvertor, register_url_convertor

from app.auth.deps import Operator, Reader
from app.core.deps import AppSettings, DbSession
from app.core.pagination import Cursor
from app.core.params import JobName
from app.jobs.schemas import RESERVED_SOURCE_NAMES
from app.jobs.service import get_job
from app.startpoints import applications, service
from app.startpoints import preview as preview_service
from app.startpoints.schemas import (
    ApplicationResponse,
    Preview,
    StartpointResponse,
    StartpointsView,
)

router = APIRouter(tags=["startpoints"])


class _SourceConvertor(StringConvertor):
    """A source's path segment: never a reserved word, so `…/startpoints/preview` is only the
    preview route (its Allow header says POST, not the DELETE of a source named so)."""

    regex = "(?!(?:" + "|".join(sorted(RESERVED_SOURCE_NAMES)) + ")(?:/|$))[^/]+"


class _PartitionConvertor(StringConvertor):
    """A partition's path segment: never `revert`, so `…/startpoints/<id>/revert` is only the
    revert route. Any other text still reaches the route (401 before auth, then 422)."""

    regex = "(?!revert(?:/|$))[^/]+"


register_url_convertor("source", _SourceConvertor())
register_url_convertor("partition", _PartitionConvertor())

Source = Annotated[str, Path(max_length=128)]
Partition = Annotated[int, Path(ge=0, le=1_000_000)]


@router.get(
    "/jobs/{job}/startpoints",
    response_model=StartpointsView,
    operation_id="listStartpoints",
    name="startpoints.list",
)
def list_startpoints(
    job: JobName,
    session: DbSession,
    _: Reader,
    limit: Annotated[
        int, Query(ge=1, le=500, description="Pending startpoints per page (1 to 500).")
    ] = 500,
    cursor: Cursor = None,
) -> StartpointsView:
    row = get_job(session, job)
    pending, next_cursor = service.page_pending(session, row, limit=limit, cursor=cursor)
    return StartpointsView(
        pending=[StartpointResponse.model_validate(s) for s in pending],
        next_cursor=next_cursor,
        applied=[
            ApplicationResponse.model_validate(a) for a in service.recent_applications(session, row)
        ],
    )


@router.delete(
    "/jobs/{job}/startpoints/{source:source}",
    status_code=204,
    operation_id="withdrawStartpoint",
    name="startpoints.withdraw",
)
def withdraw_source(job: JobName, source: Source, session: DbSession, actor: Operator) -> Response:
    service.withdraw(session, job, source, None, actor)
    return Response(status_code=204)


@router.delete(
    "/jobs/{job}/startpoints/{source:source}/{partition:partition}",
    status_code=204,
    operation_id="withdrawPartitionStartpoint",
    name="startpoints.withdraw_partition",
)
def withdraw_partition(
    job: JobName, source: Source, partition: Partition, session: DbSession, actor: Operator
) -> Response:
    service.withdraw(session, job, source, partition, actor)
    return Response(status_code=204)


@router.post(
    "/jobs/{job}/startpoints/preview",
    response_model=Preview,
    operation_id="previewStartpoints",
    name="startpoints.preview",
)
def preview(job: JobName, session: DbSession, _: Reader, settings: AppSettings) -> Preview:
    return preview_service.preview(
        session,
        job,
        settings.resolved_checkpoint_root,
        settings.resolved_eventlog_roots,
        settings.resolved_kafka_preview_brokers,
    )


@router.post(
    "/jobs/{job}/startpoints/{application_id}/revert",
    response_model=ApplicationResponse,
    operation_id="revertStartpoint",
    name="startpoints.revert",
)
def revert(
    job: JobName,
    application_id: Annotated[int, Path(ge=1, le=2**62)],
    session: DbSession,
    actor: Operator,
    settings: AppSettings,
) -> ApplicationResponse:
    app = applications.revert(
        session, job, application_id, actor, settings.resolved_checkpoint_root
    )
    return ApplicationResponse.model_validate(app)
