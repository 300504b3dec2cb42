"""The plan a version starts on, on the worker: the one the API stored, bound to the
checkpoints it uses now and re-validated (``checked_plan``); computed here where the API never
planned (a rollback's way back, an operation stored before plans were, a fresh start)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from sqlalchemy.orm import Session

from app.core.errors import TidegateError
from app.core.plans import StoredPlan
from app.jobs.models import Job
from app.operations.models import Operation
from app.resume_points import plan as resume_plan
from app.resume_points import service as resume_points
from app.resume_points.schemas import ResumePointModel
from app.runs.models import Run
from app.snapshots.models import Snapshot
from app.worker.core.context import WorkerContext
from app.worker.core.steps import OperationFailed
from app.worker.core.version import Target


def checked_plan(
    ctx: WorkerContext,
    op: Operation,
    target: Target,
    what: str,
    bind: Callable[[Session, StoredPlan], StoredPlan] | None = None,
) -> StoredPlan | None:
    """The plan the API computed and stored on the operation, bound to the checkpoints it will
    use now (resume_points.plan.bind_to_*) and re-validated: every source resolved again and
    the version checked against it, without re-deciding which query resumes from what.
    None for an operation enqueued before plans were stored (the caller plans as it used to)."""
    if op.plan is None:
        return None
    with ctx.factory() as session:
        try:
            stored = cast(StoredPlan, op.plan)
            if bind is not None:
                stored = bind(session, stored)
            return resume_points.revalidated(session, ctx.settings, target.version, stored, what)
        except TidegateError as exc:
            raise OperationFailed(exc.detail, {"problems": exc.extra.get("problems")}) from None


def replan(
    ctx: WorkerContext,
    op: Operation,
    target: Target,
    *,
    snapshot: str | None = None,
    snapshot_job: str | None = None,
    resume_point: dict[str, Any] | None = None,
) -> StoredPlan:
    """A plan computed on the worker: for a rollback (the API never planned the old version's
    return) and for operations stored before plans were (checked_plan returns None)."""

    with ctx.factory() as session:
        job = session.get(Job, op.job_id)
        assert job is not None
        try:
            plan = resume_points.plan_for_request(
                session,
                ctx.settings,
                job,
                target.version,
                snapshot=snapshot,
                snapshot_job=snapshot_job,
                resume_point=(
                    ResumePointModel.validate_python(resume_point) if resume_point else None
                ),
            )
            resume_points.require_compatible(plan, (snapshot and f"snapshot '{snapshot}'") or "it")
        except TidegateError as exc:
            raise OperationFailed(exc.detail, {"problems": exc.extra.get("problems")}) from None
        return plan.to_json()


def plan_from_run(ctx: WorkerContext, op: Operation, target: Target, run_id: int) -> StoredPlan:
    """An update's plan before the stop: the stored one bound to the run's latest committed
    batches, or (an update stored before plans were) planned by name from its live
    checkpoints."""
    what = f"the state of run {run_id}"
    checked = checked_plan(
        ctx, op, target, what, lambda _, stored: resume_plan.bind_to_latest(stored, run_id)
    )
    if checked is not None:
        return checked
    with ctx.factory() as session:
        run = session.get(Run, run_id)
        assert run is not None
        try:
            plan = resume_points.plan_from_run(session, ctx.settings, target.version, run)
            resume_points.require_compatible(plan, what)
        except TidegateError as exc:
            raise OperationFailed(exc.detail, {"problems": exc.extra.get("problems")}) from None
        return plan.to_json()


def plan_from_snapshot(
    ctx: WorkerContext, op: Operation, target: Target, run_id: int, snapshot_id: int
) -> StoredPlan:
    """An update's plan after the stop: the stored one bound to the snapshot that stopped run
    ``run_id`` (the queries it holds a batch of), or planned by name from it."""
    with ctx.factory() as session:
        snapshot = session.get(Snapshot, snapshot_id)
        assert snapshot is not None
        name = snapshot.name
        held = set(snapshot.held_queries)

    def bind(session: Session, stored: StoredPlan) -> StoredPlan:
        return resume_plan.bind_to_snapshot(stored, run_id, name, held)

    return checked_plan(ctx, op, target, f"snapshot '{name}'", bind) or replan(
        ctx, op, target, snapshot=name
    )


def fresh_plan(target: Target) -> StoredPlan:
    """Every query of the version starts with a new, empty checkpoint (the API's own fresh
    plan, app/resume_points/plan.py::fresh, for a version it did not plan)."""
    return resume_plan.fresh(target.number, target.query_names)
