from __future__ import annotations

from fastapi import APIRouter

from app.auth.deps import Reader
from app.core.deps import AppSettings, DbSession
from app.core.params import JobName
from app.resume_points import service
from app.resume_points.schemas import (
    BuildBody,
    BuildResponse,
    CompatibilityBody,
    CompatibilityResponse,
)

router = APIRouter(tags=["snapshots"])


@router.post(
    "/jobs/{job}/resume-points/build",
    response_model=BuildResponse,
    operation_id="buildResumePoint",
    name="resume_point.build",
)
def build_resume_point(
    job: JobName, body: BuildBody, session: DbSession, _: Reader, settings: AppSettings
) -> BuildResponse:
    """Onyx's build-resume-point: map every query of a version by name to a snapshot or to
    run coordinates. Edit the result to take state from other queries or jobs."""
    return service.build(session, settings, job, body)


@router.post(
    "/jobs/{job}/compatibility",
    response_model=CompatibilityResponse,
    operation_id="checkCompatibility",
    name="resume_point.compatibility",
)
def compatibility(
    job: JobName, body: CompatibilityBody, session: DbSession, _: Reader, settings: AppSettings
) -> CompatibilityResponse:
    """Which queries of the version resume, initialize or are dropped, and every reason it
    cannot start from the snapshot or resume point; nothing is stopped or changed."""
    return service.compatibility(session, settings, job, body)
