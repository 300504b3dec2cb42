"""The status page's documents, built from the same services and responses as the JSON API."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.channel import service as channel
from app.core.db import utcnow
from app.jobs import service as jobs
from app.operations import service as operations
from app.operations.schemas import OperationResponse
from app.runs import service as runs
from app.runs.models import QueryProgress, Run
from app.runs.routes import run_response
from app.runs.schemas import RunResponse, TransitionResponse
from app.snapshots import service as snapshots
from app.snapshots.schemas import SnapshotSummary
from app.startpoints import service as startpoints
from app.startpoints.schemas import ApplicationResponse, StartpointResponse
from app.ui.figures import (
    Sparkline,
    StepTiming,
    backlog,
    batch_duration_ms,
    job_backlog_series,
    rows_dropped_late,
    sparkline,
    state_rows,
    step_timings,
)

WINDOW = timedelta(hours=1)
JOBS_PER_PAGE = 50
RUNS_SHOWN = 10
TRANSITIONS_SHOWN = 10
OPERATIONS_SHOWN = 20
SNAPSHOTS_SHOWN = 20


@dataclass(frozen=True)
class JobRow:
    job: jobs.JobView
    backlog: int | None
    trend: Sparkline


@dataclass(frozen=True)
class JobsPage:
    rows: list[JobRow]
    next_cursor: str | None
    now: datetime


def _total_backlog(progress: dict[str, Any]) -> int | None:
    parts = [backlog(payload) for payload in progress.values()]
    known = [p for p in parts if p is not None]
    return sum(known) if known else None


def jobs_page(session: Session, cursor: str | None) -> JobsPage:
    responses, next_cursor = jobs.list_jobs(session, state=None, limit=JOBS_PER_PAGE, cursor=cursor)
    run_ids = [j.current_run_id for j in responses if j.current_run_id]
    now = utcnow()
    history = channel.recent_progress(session, run_ids, now - WINDOW)
    current = (
        {run.id: run for run in session.scalars(select(Run).where(Run.id.in_(run_ids)))}
        if run_ids
        else {}
    )
    table = []
    for job in responses:
        run = current.get(job.current_run_id or 0)
        reports = history.get(job.current_run_id or 0, [])
        table.append(
            JobRow(
                job=job,
                backlog=_total_backlog(run.progress or {}) if run else None,
                trend=sparkline(job_backlog_series((r.query, r.payload) for r in reports)),
            )
        )
    return JobsPage(table, next_cursor, now)


@dataclass(frozen=True)
class QueryPanel:
    name: str
    latest: dict[str, Any]
    backlog: int | None
    state_rows: int | None
    # Rows dropped as behind the watermark: over the run's batches, and in the latest one.
    dropped_late: int | None
    dropped_late_batch: int | None
    watermark_lead: float | None
    reports: int
    plots: dict[str, Sparkline]


@dataclass(frozen=True)
class OperationRow:
    operation: OperationResponse
    steps: list[StepTiming]
    seconds: float | None


@dataclass(frozen=True)
class JobPage:
    job: jobs.JobView
    now: datetime
    runs: list[RunResponse]
    transitions: dict[int, list[TransitionResponse]]
    shown_run: RunResponse | None
    queries: list[QueryPanel]
    operations: list[OperationRow]
    pending_startpoints: list[StartpointResponse]
    applied_startpoints: list[ApplicationResponse]
    snapshots: list[SnapshotSummary] = field(default_factory=list)


def _query_panels(run: RunResponse, reports: list[QueryProgress]) -> list[QueryPanel]:
    by_query: dict[str, list[dict[str, Any]]] = {}
    for report in reports:
        by_query.setdefault(report.query, []).append(report.payload)
    panels = []
    for name in sorted(set(run.progress) | set(by_query)):
        payloads = by_query.get(name, [])
        latest = run.progress.get(name) or {}
        series = {
            "backlog": [v for p in payloads if (v := backlog(p)) is not None],
            "input rows": [int(p.get("num_input_rows") or 0) for p in payloads],
            "batch ms": [v for p in payloads if (v := batch_duration_ms(p)) is not None],
            "dropped late": [rows_dropped_late(p) or 0 for p in payloads],
        }
        panels.append(
            QueryPanel(
                name=name,
                latest=latest,
                backlog=backlog(latest),
                state_rows=state_rows(latest),
                dropped_late=latest.get("rows_dropped_late_total"),
                dropped_late_batch=rows_dropped_late(latest),
                watermark_lead=latest.get("watermark_lead_seconds"),
                reports=len(payloads),
                plots={label: sparkline(values, 160, 36) for label, values in series.items()},
            )
        )
    return panels


def _operation_row(op: OperationResponse, now: datetime) -> OperationRow:
    started = op.started_at
    seconds = ((op.finished_at or now) - started).total_seconds() if started else None
    return OperationRow(op, step_timings(op.steps, started), seconds)


def job_page(session: Session, name: str) -> JobPage:
    row = jobs.get_job(session, name)
    job = jobs.job_view(session, name)
    now = utcnow()
    run_rows, _ = runs.list_runs(session, name, limit=RUNS_SHOWN, cursor=None)
    run_list = [run_response(r) for r in run_rows]
    transitions = {
        r.id: [
            TransitionResponse.model_validate(t)
            for t in runs.transitions(session, r.id, TRANSITIONS_SHOWN)
        ]
        for r in run_list
    }
    # The current run's progress, else the newest run's.
    shown = next((r for r in run_list if r.id == job.current_run_id), None) or next(
        iter(run_list), None
    )
    queries = []
    if shown is not None:
        reports = channel.recent_progress(session, [shown.id], now - WINDOW)[shown.id]
        queries = _query_panels(shown, reports)
    ops, _ = operations.list_operations(session, name, limit=OPERATIONS_SHOWN, cursor=None)
    snaps, _ = snapshots.list_snapshots(session, job=name, limit=SNAPSHOTS_SHOWN, cursor=None)
    return JobPage(
        job=job,
        now=now,
        runs=run_list,
        transitions=transitions,
        shown_run=shown,
        queries=queries,
        operations=[_operation_row(operations.operation_response(op), now) for op in ops],
        pending_startpoints=[
            StartpointResponse.model_validate(s) for s in startpoints.list_pending(session, row)
        ],
        applied_startpoints=[
            ApplicationResponse.model_validate(a)
            for a in startpoints.recent_applications(session, row)
        ],
        snapshots=[snapshots.summary(s) for s in snaps],
    )
