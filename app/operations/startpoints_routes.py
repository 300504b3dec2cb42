"""``PUT /jobs/{job}/startpoints``: set startpoints and, when asked, restart the job to apply
them. It may create an operation, so it lives with the operations (startpoints sit below)."""

from __future__ import annotations

from fastapi import APIRouter

from app.auth.deps import Operator
from app.core.deps import AppSettings, DbSession
from app.core.params import JobName
from app.operations import lifecycle
from app.operations.schemas import RestartBody
from app.startpoints import service
from app.startpoints.schemas import PutResult, StartpointsPut

# The same tag as the startpoints router, and included right after it (app.api.main).
router = APIRouter(tags=["startpoints"])


@router.put(
    "/jobs/{job}/startpoints",
    response_model=PutResult,
    operation_id="setStartpoints",
    name="startpoints.set",
)
def set_startpoints(
    job: JobName, body: StartpointsPut, session: DbSession, actor: Operator, settings: AppSettings
) -> PutResult:
    count = service.upsert(
        session, job, body.startpoints, actor, eventlog_roots=settings.resolved_eventlog_roots
    )
    op_id = None
    if body.restart:
        op, _ = lifecycle.restart(session, job, RestartBody(), actor, None)
        op_id = op.id
    return PutResult(upserted=count, restart_operation_id=op_id)
