"""Starting a version on planned state: the plan again on the worker (re-validated), the
dry run before anything stops (app/worker/preflight.py), reserving the run id, materialising
its checkpoints, creating the run, awaiting its start, and verifying its first batches."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import text, update
from sqlalchemy.orm import Session

from app.core.db import transaction
from app.core.errors import TidegateError
from app.jobs.models import Job, JobVersion
from app.jobs.service import get_version
from app.operations.models import Operation
from app.resume_points import service as resume_points
from app.resume_points.schemas import ResumePointModel
from app.runs import service as runs
from app.runs.models import Run
from app.snapshots import restore
from app.snapshots.store_access import SnapshotFailed
from app.worker import preflight, standby
from app.worker.context import WorkerContext
from app.worker.runctl import (
    await_started,
    await_submitted,
)
from app.worker.steps import OperationFailed, Steps, detail

log = logging.getLogger(__name__)


def checked_plan(
    ctx: WorkerContext,
    op: Operation,
    version_number: int,
    what: str,
    bind: Callable[[Session, dict[str, Any]], dict[str, Any]] | None = None,
) -> dict[str, Any] | None:
    """The plan the API computed and stored on the operation, bound to the checkpoints it will
    use now (resume_points.plan.bind_to_*) and re-validated: every source resolved again and
    the version checked against it, without re-deciding which query resumes from what.
    None for an operation enqueued before plans were stored (the caller plans as it used to)."""
    if op.plan is None:
        return None
    with ctx.factory() as session:
        job = session.get(Job, op.job_id)
        assert job is not None
        try:
            version = get_version(session, job.name, version_number)
            stored = bind(session, op.plan) if bind is not None else op.plan
            plan = resume_points.revalidate(session, ctx.settings, version, stored)
            resume_points.require_compatible(plan, what)
        except TidegateError as exc:
            raise OperationFailed(exc.detail, {"problems": exc.extra.get("problems")}) from None
        return plan.to_json()


def replan(
    ctx: WorkerContext,
    op: Operation,
    version_number: int,
    *,
    snapshot: str | None = None,
    snapshot_job: str | None = None,
    resume_point: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A plan computed on the worker: for a rollback (the API never planned the old version's
    return) and for operations stored before plans were (checked_plan returns None)."""

    with ctx.factory() as session:
        job = session.get(Job, op.job_id)
        assert job is not None
        try:
            version = get_version(session, job.name, version_number)
            plan = resume_points.plan_for_request(
                session,
                ctx.settings,
                job,
                version,
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


def live_plan(
    ctx: WorkerContext, op: Operation, version_number: int, run_id: int
) -> dict[str, Any]:
    """The plan by name from a run's live checkpoints (its latest committed batches), for an
    update stored before plans were (checked_plan returns None)."""

    with ctx.factory() as session:
        job = session.get(Job, op.job_id)
        run = session.get(Run, run_id)
        assert job is not None and run is not None
        try:
            version = get_version(session, job.name, version_number)
            plan = resume_points.plan_from_run(session, ctx.settings, version, run)
            resume_points.require_compatible(plan, f"the state of run {run_id}")
        except TidegateError as exc:
            raise OperationFailed(exc.detail, {"problems": exc.extra.get("problems")}) from None
        return plan.to_json()


def fresh_plan(ctx: WorkerContext, op: Operation, version_number: int) -> dict[str, Any]:
    """Every query of ``version_number`` starts with a new, empty checkpoint."""

    with ctx.factory() as session:
        job = session.get(Job, op.job_id)
        assert job is not None
        version = get_version(session, job.name, version_number)
        return {
            "queries": [{"query": q["name"], "source": None, "parts": []} for q in version.queries]
        }


def dry_run(
    ctx: WorkerContext,
    op: Operation,
    steps: Steps,
    version_number: int,
    plan: dict[str, Any],
    first_attempt: int = 1,
) -> None:
    """Run the new version's app on a scratch copy of the state it would resume (see
    app/worker/preflight.py); OperationFailed naming query, operator and what differs when Spark
    refuses it. Skipped with ``dry_run: false`` or when no resumed query holds state."""

    if op.params.get("dry_run") is False:
        steps.run("dry_run", lambda: {"skipped": "dry_run: false in the request"})
        return
    job_name, version = detached_version(ctx, op, version_number)
    # Each attempt is its own steps (the first with today's names); an attempt whose driver
    # failed for infrastructure reasons records that in its "dry_run" step and the next starts
    # from a fresh scratch copy.
    for attempt in range(first_attempt, preflight.ATTEMPTS + 1):
        if _dry_run_attempt(ctx, op, steps, version_number, version, job_name, plan, attempt):
            return


def detached_version(
    ctx: WorkerContext, op: Operation, version_number: int
) -> tuple[str, JobVersion]:
    """The operation's job name and ``version_number`` of it, readable after the session."""
    with ctx.factory() as session:
        job = session.get(Job, op.job_id)
        assert job is not None
        version = get_version(session, job.name, version_number)
        session.expunge(version)
        return job.name, version


def dry_run_checks(prepared: dict[str, Any]) -> dict[str, int]:
    """What a ``dry_run_prepare`` step planned: each checked query and the batch it must commit."""
    return {q: int(b) for q, b in (prepared.get("check") or {}).items()}


def _step(name: str, attempt: int) -> str:
    return name if attempt == 1 else f"{name}_{attempt}"


def prepare_dry_run(
    ctx: WorkerContext,
    op: Operation,
    steps: Steps,
    version: JobVersion,
    job_name: str,
    plan: dict[str, Any],
    attempt: int,
) -> tuple[Path, dict[str, Any]]:
    """The attempt's scratch copy (step ``dry_run_prepare``): its root and what it checks."""
    scratch = preflight.scratch_dir(ctx, job_name, op.id, attempt)

    def prepare() -> dict[str, Any]:
        try:
            return preflight.prepare(ctx, plan, job_name, list(version.queries), scratch)
        except SnapshotFailed as exc:
            raise OperationFailed(f"the dry run's scratch copy failed: {exc}") from None

    steps.run(_step("dry_run_prepare", attempt), prepare)
    return scratch, detail(steps, _step("dry_run_prepare", attempt))


def _dry_run_attempt(
    ctx: WorkerContext,
    op: Operation,
    steps: Steps,
    version_number: int,
    version: JobVersion,
    job_name: str,
    plan: dict[str, Any],
    attempt: int,
) -> bool:
    """One attempt's steps: True when the dry run passed (or had nothing to check), False when
    its driver failed for infrastructure reasons and another attempt follows."""
    scratch, prepared = prepare_dry_run(ctx, op, steps, version, job_name, plan, attempt)
    check = dry_run_checks(prepared)
    if not check:
        steps.run(_step("dry_run", attempt), lambda: {"skipped": "no resumed query holds state"})
        return True
    steps.run(
        _step("dry_run_submit", attempt),
        lambda: preflight.submit(ctx, op.id, version, job_name, scratch, check, attempt),
    )
    submitted = detail(steps, _step("dry_run_submit", attempt))

    def outcome() -> dict[str, Any]:
        result = preflight.await_outcome(
            ctx,
            version,
            str(submitted["backend_id"]),
            float(submitted["at"]),
            scratch,
            float(op.params.get("dry_run_timeout_seconds") or preflight.DRY_RUN_TIMEOUT_SECONDS),
        )
        return judge_dry_run(op, steps, version_number, prepared, result, attempt)

    try:
        steps.run(_step("dry_run", attempt), outcome)
    except OperationFailed:
        preflight.cleanup(scratch)
        raise
    preflight.cleanup(scratch)  # (a temporary backend error keeps it: the step resumes)
    return bool(detail(steps, _step("dry_run", attempt)).get("ok"))


def judge_dry_run(
    op: Operation,
    steps: Steps,
    version_number: int,
    prepared: dict[str, Any],
    result: dict[str, Any],
    attempt: int,
) -> dict[str, Any]:
    """A dry run's result as its ``dry_run`` step's detail: ok, or an infrastructure error that
    another attempt may get past ({"ok": False, "infrastructure_error": ...}). OperationFailed
    on a refusal (naming query, operator and what differs), or an infrastructure error at the
    last attempt."""
    check = dry_run_checks(prepared)
    if result.get("ok"):
        return {"ok": True, "checked": check, "queries": result.get("queries")}
    infrastructure = preflight.infrastructure_error(result)
    if infrastructure is not None:
        log.warning(
            "operation %s: dry run attempt %s failed for infrastructure reasons: %s",
            op.id,
            attempt,
            infrastructure,
        )
        if attempt < preflight.ATTEMPTS:
            return {
                "ok": False,
                "attempt": attempt,
                "infrastructure_error": infrastructure,
                "dry_run": result,
            }
        earlier = [
            str(detail(steps, _step("dry_run", n)).get("infrastructure_error"))
            for n in range(1, attempt)
        ]
        raise OperationFailed(
            f"the dry run of version {version_number} could not be completed because of a "
            f"Spark infrastructure error ({attempt} attempts; the last: {infrastructure}). "
            "Nothing was stopped; retrying the update is safe.",
            {"dry_run": result, "infrastructure_errors": [*earlier, infrastructure]},
        )
    lines = preflight.problems(result, prepared.get("operators") or {})
    raise OperationFailed(
        f"version {version_number} was refused by a dry run on a scratch copy of the "
        "state it would resume (nothing was stopped): "
        + "; ".join(lines)
        + ". Keep the state's operators and schemas, or start those queries with fresh "
        "state (a resume point with mode 'initialize', or update strategy 'drain').",
        {"dry_run": result},
    )


def create_planned_run(
    ctx: WorkerContext, op: Operation, run_id: int, version_number: int, plan: dict[str, Any]
) -> dict[str, Any]:

    with transaction(ctx.factory) as session:
        if session.get(Run, run_id) is not None:  # created before a crash
            return {"run_id": run_id}
        job = session.get(Job, op.job_id, with_for_update=True)
        assert job is not None
        version = session.query(JobVersion).filter_by(job_id=job.id, number=version_number).one()
        runs.create_run(session, job, version, created_by=op.created_by, run_id=run_id)
        restore.record_uses(session, run_id, plan)
        session.execute(update(Operation).where(Operation.id == op.id).values(run_id=run_id))
        return {"run_id": run_id, "version": version_number}


def start_planned(
    ctx: WorkerContext,
    op: Operation,
    steps: Steps,
    plan: dict[str, Any],
    version_number: int,
    prefix: str = "",
    standby_run: int | None = None,
) -> dict[str, Any]:
    """Reserve the run's id, restore its checkpoints, and only then create the run: the
    supervisor never sees a run to submit whose checkpoints are not in place. With a
    ``standby_run`` (app/worker/standby.py) that run's id is the one, and go replaces the
    creation and submission: its driver is up already."""

    def reserve() -> dict[str, Any]:
        if standby_run is not None:
            return {"run_id": standby_run, "standby": True}
        with transaction(ctx.factory) as session:
            run_id = session.scalar(text("select nextval(pg_get_serial_sequence('runs', 'id'))"))
        return {"run_id": int(run_id)}

    steps.run(f"{prefix}reserve_run", reserve)
    run_id = int(detail(steps, f"{prefix}reserve_run")["run_id"])

    def materialise() -> dict[str, Any]:
        with ctx.factory() as session:
            job = session.get(Job, op.job_id)
            assert job is not None
            job_name = job.name
            queries = list(get_version(session, job_name, version_number).queries)
        try:
            restored = restore.materialise(
                ctx.factory, ctx.settings, plan, job_name, run_id, queries
            )
        except SnapshotFailed as exc:
            raise OperationFailed(str(exc)) from None
        return {"run_id": run_id, "queries": restored}

    steps.run(f"{prefix}materialise", materialise)
    if standby_run is not None:
        steps.run(f"{prefix}go", lambda: standby.go(ctx, op, run_id, plan))
    else:
        steps.run(
            f"{prefix}create_run",
            lambda: create_planned_run(ctx, op, run_id, version_number, plan),
        )
        steps.run(f"{prefix}await_submitted", lambda: await_submitted(ctx, run_id, op))
    return await_started(ctx, run_id, float(op.params.get("start_timeout_seconds", 600)))


def sources(plan: dict[str, Any]) -> dict[str, Any]:
    return {
        q["query"]: (
            {k: v for k, v in q["source"].items() if k not in ("snapshot_id", "checkpoint")}
            if q.get("source")
            else {"mode": "initialize"}
        )
        for q in plan["queries"]
    }
