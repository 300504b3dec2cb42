from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Path, Response

from app.auth.deps import Reader
from app.core.db import utcnow
from app.core.deps import AppSettings, DbSession
from app.core.json_response import json_response
from app.core.pagination import Cursor, Limit, Page
from app.core.params import JobName
from app.runs import accounting, service
from app.runs.models import Run
from app.runs.schemas import (
    RunAccount,
    RunResponse,
    SpareResponse,
    TransitionResponse,
)

router = APIRouter(tags=["runs"])


def run_response(run: Run, transitions: list[TransitionResponse] | None = None) -> RunResponse:
    return RunResponse.model_validate(
        {
            **{
                c: getattr(run, c)
                for c in (
                    "id",
                    "state",
                    "stop_reason",
                    "attempt",
                    "failures",
                    "backend_id",
                    "tag",
                    "observed_state",
                    "observed_at",
                    "last_error",
                    "next_restart_at",
                    "running_since",
                    "drain",
                    "standby_ready_at",
                    "go_at",
                    "created_by",
                    "created_at",
                    "ended_at",
                )
            },
            "progress": run.progress or {},
            "query_restarts": _query_restarts(run),
            "spare": _spare(run),
            "job": run.job.name,
            "version": run.version.number,
            "cluster": run.version.cluster.name,
            "transitions": transitions,
        }
    )


def _query_restarts(run: Run) -> dict[str, dict[str, Any]]:
    """What the run's drivers said of their queries' failures; a restart an earlier attempt
    was waiting for, or one whose time has passed, is no longer ahead."""
    now = utcnow()
    shown = {}
    for name, entry in (run.query_restarts or {}).items():
        ahead = entry.get("next_restart_at")
        if ahead is not None and (
            entry.get("attempt") != run.attempt or datetime.fromisoformat(ahead) <= now
        ):
            ahead = None
        shown[name] = {**entry, "next_restart_at": ahead}
    return shown


def _spare(run: Run) -> SpareResponse | None:
    if run.spare_attempt is None and run.spare_error is None:
        return None
    return SpareResponse(
        attempt=run.spare_attempt,
        backend_id=run.spare_backend_id,
        ready_at=run.spare_ready_at,
        last_error=run.spare_error,
        retry_at=run.spare_retry_at,
    )


@router.get(
    "/jobs/{job}/runs",
    response_model=Page[RunResponse],
    operation_id="listJobRuns",
    name="run.list",
)
def list_runs(
    job: JobName, session: DbSession, _: Reader, limit: Limit = 50, cursor: Cursor = None
) -> Page[RunResponse]:
    rows, next_cursor = service.list_runs(session, job, limit=limit, cursor=cursor)
    return Page(items=[run_response(r) for r in rows], next_cursor=next_cursor)


@router.get("/runs/{run_id}", response_model=RunResponse, operation_id="getRun", name="run.get")
def get_run(
    run_id: Annotated[int, Path(ge=1, le=2**62)], session: DbSession, _: Reader
) -> Response:
    run = service.run_for_response(session, run_id)
    history = [TransitionResponse.model_validate(t) for t in service.transitions(session, run_id)]
    return json_response(run_response(run, history))


@router.get(
    "/runs/{run_id}/accounting",
    response_model=RunAccount,
    operation_id="getRunAccounting",
    name="run.accounting",
)
def get_run_accounting(
    run_id: Annotated[int, Path(ge=1, le=2**62)],
    session: DbSession,
    _: Reader,
    settings: AppSettings,
) -> RunAccount:
    """Did the run lose anything? Per query and batch: the records its checkpoint says it
    read, what Spark counted in, and the rows dropped as late (``tidegate verify JOB``)."""
    return accounting.account(session, run_id, settings.resolved_checkpoint_root)
