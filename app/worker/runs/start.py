"""Starting a version on its plan, cold or pre-warmed, and awaiting its start (``await_started``,
which every operation that starts a run waits with). Cold (``start_planned``): reserve the
run's id, materialise its checkpoints, and only then create the run (the reconciler submits
it) and await its start, so the supervisor never sees a run to submit whose checkpoints are
not in place. Pre-warmed (``take_over``): the ready standby's id instead of a new one, the
same materialise, and go for the run's creation and submission (app/worker/standby/ holds the
standby's readying and release)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import text

from app.core import run_states as states
from app.core.db import transaction
from app.core.errors import Conflict
from app.core.plans import StoredPlan
from app.jobs.models import Job
from app.operations import state as op_state
from app.operations.models import Operation
from app.runs import service as runs
from app.runs.models import Run
from app.snapshots import restore
from app.snapshots.errors import SnapshotFailed
from app.worker.core.context import WorkerContext
from app.worker.core.steps import OperationFailed, Steps, detail
from app.worker.core.version import Target
from app.worker.reconcile.reconciler import wait_for_run


def await_submitted(ctx: WorkerContext, run_id: int, op: Operation) -> dict[str, Any]:
    run = wait_for_run(
        ctx,
        run_id,
        lambda r: r.backend_id is not None or r.state != states.SUBMITTING,
        float(op.params.get("timeout_seconds", 600)),
        "reach the backend",
    )
    return {"backend_id": run.backend_id, "tag": run.tag}


def await_started(ctx: WorkerContext, run_id: int, timeout: float) -> dict[str, Any]:
    run = wait_for_run(
        ctx, run_id, lambda r: r.state != states.SUBMITTING, timeout, "start running"
    )
    if run.state == states.RUNNING:
        return {"run_id": run.id, "backend_id": run.backend_id, "attempt": run.attempt}
    note = (
        f" It will be restarted at {run.next_restart_at.isoformat()} per the restart policy."
        if run.state == states.RESTARTING and run.next_restart_at
        else ""
    )
    raise OperationFailed(
        f"run {run.id} failed to start: {run.last_error or run.state}.{note}",
        {"run_id": run.id, "run_state": run.state},
    )


def start_planned(
    ctx: WorkerContext,
    op: Operation,
    steps: Steps,
    plan: StoredPlan,
    target: Target,
    prefix: str = "",
) -> dict[str, Any]:
    """A new run of ``target`` on ``plan``, awaited until Spark runs it."""

    def reserve() -> dict[str, Any]:
        with transaction(ctx.factory) as session:
            run_id = session.scalar(text("select nextval(pg_get_serial_sequence('runs', 'id'))"))
        return {"run_id": int(run_id)}

    steps.run(f"{prefix}reserve_run", reserve)
    run_id = int(detail(steps, f"{prefix}reserve_run")["run_id"])
    materialise(ctx, steps, plan, target, run_id, prefix)
    steps.run(f"{prefix}create_run", lambda: create_planned_run(ctx, op, run_id, target, plan))
    steps.run(f"{prefix}await_submitted", lambda: await_submitted(ctx, run_id, op))
    return started(ctx, op, run_id)


def materialise(
    ctx: WorkerContext,
    steps: Steps,
    plan: StoredPlan,
    target: Target,
    run_id: int,
    prefix: str = "",
) -> None:
    """The run's checkpoints, in place (step ``materialise``), from the plan's sources."""

    def restored() -> dict[str, Any]:
        queries = list(target.version.queries)
        try:
            done = restore.materialise(
                ctx.factory, ctx.settings, plan, target.job_name, run_id, queries
            )
        except SnapshotFailed as exc:
            raise OperationFailed(str(exc)) from None
        return {"run_id": run_id, "queries": done}

    steps.run(f"{prefix}materialise", restored)


def started(ctx: WorkerContext, op: Operation, run_id: int) -> dict[str, Any]:
    return await_started(ctx, run_id, float(op.params.get("start_timeout_seconds", 600)))


def create_planned_run(
    ctx: WorkerContext, op: Operation, run_id: int, target: Target, plan: StoredPlan
) -> dict[str, Any]:

    with transaction(ctx.factory) as session:
        if session.get(Run, run_id) is not None:  # created before a crash
            return {"run_id": run_id}
        job = session.get(Job, op.job_id, with_for_update={"key_share": True})
        assert job is not None
        runs.create_run(session, job, target.row(session), created_by=op.created_by, run_id=run_id)
        restore.record_uses(session, run_id, plan)
        op_state.move_to_run(session, op.id, run_id)
        return {"run_id": run_id, "version": target.number}


def take_over(
    ctx: WorkerContext,
    op: Operation,
    steps: Steps,
    plan: StoredPlan,
    target: Target,
    run_id: int,
) -> dict[str, Any]:
    """The ready standby becomes the job's run: its id is the run's (step ``reserve_run``), the
    plan's checkpoints are materialised into it, go, and its start awaited. The same steps as
    a cold start's above, with go for the run's creation and submission."""
    steps.run("reserve_run", lambda: {"run_id": run_id, "standby": True})
    materialise(ctx, steps, plan, target, run_id)
    steps.run("go", lambda: go(ctx, op, run_id, plan))
    return started(ctx, op, run_id)


def go(ctx: WorkerContext, op: Operation, run_id: int, plan: StoredPlan) -> dict[str, Any]:
    """The step after the new checkpoints are materialised: the standby starts its queries
    and becomes the job's current run. Refused while the run it replaces may still run."""
    with transaction(ctx.factory) as session:
        try:
            run = runs.go(session, run_id, reason=f"go from operation {op.id}")
        except Conflict as exc:  # the replaced run may still run: nothing was written
            raise OperationFailed(exc.detail) from None
        if run.go_at is None:
            raise OperationFailed(
                f"the standby run {run_id} is {run.state}, not waiting: "
                f"{run.last_error or run.stop_reason or 'it was released'}",
                {"standby_run_id": run_id},
            )
        this_op = session.get(Operation, op.id)
        if this_op is not None and this_op.run_id != run_id:  # went in this transaction
            restore.record_uses(session, run_id, plan)
            op_state.move_to_run(session, op.id, run_id)
        return {
            "run_id": run_id,
            "go_at": run.go_at.isoformat(),
            "standby_ready_at": run.standby_ready_at.isoformat() if run.standby_ready_at else None,
        }
