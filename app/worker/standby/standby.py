"""The pre-warmed switch after the stop: once the old run has ended and the new checkpoints are
in place, the ready standby gets go (``take_over``); a standby whose go will not come is
released. Getting it ready, before the stop, is app/worker/standby/ready.py. Also a
restart's *spare* (the run's next attempt started ahead, ``prepare_spare``).

Fencing: the standby's driver waits inside ``Runtime.from_spark`` before the job reaches its
queries, so nothing touches a checkpoint before go; go is given only once the run it replaces
is terminal (its driver reported ended by the backend). A standby whose go will not come is
released (the reconciler kills its driver, which also hears "stop" on its long-poll); one left
behind by a killed worker is the same run row, found again by its tag, never submitted twice.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from sqlalchemy import select

from app.core import run_states as states
from app.core.db import transaction, utcnow
from app.core.errors import Conflict
from app.core.plans import StoredPlan
from app.operations import state as op_state
from app.operations.models import Operation
from app.runs import service as runs
from app.runs import spares
from app.runs.models import Run
from app.snapshots import restore
from app.worker.core.context import WorkerContext
from app.worker.core.steps import OperationFailed, Steps, detail, set_result
from app.worker.core.version import Target
from app.worker.reconcile.reconciler import pass_now, wait_for_run
from app.worker.runs import start as cold_start

log = logging.getLogger(__name__)

# How long an operation waits for its standby or spare to be ready (queued drivers included).
READY_SECONDS = 600.0


def wanted(op: Operation) -> bool:
    """On unless the operation says ``prewarm: false`` (the API writes the job's setting on it
    when the request does not say)."""
    return op.params.get("prewarm") is not False


def go(ctx: WorkerContext, op: Operation, run_id: int, plan: StoredPlan) -> dict[str, Any]:
    """The step after the new checkpoints are materialised: the standby starts its queries
    and becomes the job's current run. Refused while the run it replaces may still run."""
    with transaction(ctx.factory) as session:
        run = runs.lock_run(session, run_id)
        assert run is not None
        if run.state == states.STANDBY:
            restore.record_uses(session, run_id, plan)
            op_state.move_to_run(session, op.id, run_id)
            try:
                run = runs.go(session, run, reason=f"go from operation {op.id}")
            except Conflict as exc:  # the replaced run may still run: all of this undone
                raise OperationFailed(exc.detail) from None
        elif run.go_at is None:
            raise OperationFailed(
                f"the standby run {run_id} is {run.state}, not waiting: "
                f"{run.last_error or run.stop_reason or 'it was released'}",
                {"standby_run_id": run_id},
            )
        assert run.go_at is not None
        return {
            "run_id": run_id,
            "go_at": run.go_at.isoformat(),
            "standby_ready_at": run.standby_ready_at.isoformat() if run.standby_ready_at else None,
        }


def prepare_spare(ctx: WorkerContext, op: Operation, steps: Steps, run_id: int) -> None:
    """A restart's spare: the run's next attempt, started while the current one runs, ready
    before the current one is asked to stop. OperationFailed (withdrawn) when it does not
    become ready: nothing was stopped."""

    def ask() -> dict[str, Any]:
        with transaction(ctx.factory) as session:
            run = runs.lock_run(session, run_id)
            assert run is not None
            spares.request(run)
            return {"run_id": run_id, "attempt": run.attempt + 1, "asked_at": utcnow().isoformat()}

    steps.run("spare", ask)
    if not steps.load().step_done("spare_ready"):  # asked again after a resume: harmless
        with transaction(ctx.factory) as session:
            run = runs.lock_run(session, run_id)
            assert run is not None
            spares.request(run)
    asked = datetime.fromisoformat(detail(steps, "spare")["asked_at"])
    timeout = float(op.params.get("start_timeout_seconds") or READY_SECONDS)

    def ready() -> dict[str, Any]:
        def settled(run: Run) -> bool:
            waiting = run.spare_ready_at is None and run.state == states.RUNNING
            failed = run.spare_retry_at is not None and run.spare_retry_at > asked
            set_result(
                ctx,
                op.id,
                {
                    "phase": "spare-starting" if waiting else "spare",
                    "spare_backend_id": run.spare_backend_id,
                },
            )
            return not waiting or failed

        run: Run | None = None
        try:
            run = wait_for_run(ctx, run_id, settled, timeout, "have a ready spare")
            why = run.spare_error or f"the run is {run.state}"
        except OperationFailed as exc:
            why = str(exc)
        if run is None or run.spare_ready_at is None:
            withdraw_spare(ctx, run_id)
            raise OperationFailed(
                f"the pre-warmed driver for run {run_id}'s next attempt was not ready ({why}); "
                "nothing was stopped. Retry when the cluster has room for one more driver, or "
                "with prewarm: false.",
                {"run_id": run_id},
            )
        return {
            "run_id": run_id,
            "attempt": run.spare_attempt,
            "ready_at": run.spare_ready_at.isoformat(),
            "waited_seconds": round((run.spare_ready_at - asked).total_seconds(), 3),
        }

    steps.run("spare_ready", ready)


def withdraw_spare(ctx: WorkerContext, run_id: int) -> None:
    with transaction(ctx.factory) as session:
        run = runs.lock_run(session, run_id)
        assert run is not None
        spares.withdraw(run)
    pass_now(ctx, run_id)  # the reconciler drops it now, not at its next sweep


def release_all(ctx: WorkerContext, job_id: int, why: str) -> dict[str, Any]:
    """Every standby of the job is released (a cancel: whatever update waits on it fails)."""
    with transaction(ctx.factory) as session:
        waiting = session.scalars(
            select(Run).where(Run.job_id == job_id, Run.state == states.STANDBY)
        ).all()
        for run in waiting:
            runs.release_standby(session, run, f"released: {why}")
        return {"released": [run.id for run in waiting]}


def release(ctx: WorkerContext, run_id: int | None, why: str) -> None:
    """The standby will not get go: it stops, and this waits (bounded) for its driver to be
    gone, so an operation that ends leaves none behind."""
    if run_id is None:
        return
    with transaction(ctx.factory) as session:
        runs.release_standby(session, runs.get_run(session, run_id), f"released: {why}")
    try:
        wait_for_run(ctx, run_id, lambda r: r.state in states.TERMINAL, 120.0, "exit")
    except OperationFailed as exc:  # the reconciler goes on killing it; say so in the log
        log.warning("standby run %s: %s", run_id, exc)


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
    a cold start's (app/worker/runs/start.py), with go for the run's creation and submission."""
    steps.run("reserve_run", lambda: {"run_id": run_id, "standby": True})
    cold_start.materialise(ctx, steps, plan, target, run_id)
    steps.run("go", lambda: go(ctx, op, run_id, plan))
    return cold_start.started(ctx, op, run_id)


def recorded(steps: Steps) -> int | None:
    """The standby that was ready before the old run stopped, read back from the steps (a
    worker resuming the update after the stop): the second one's when a first was released."""
    for name in ("standby_ready_2", "standby_ready"):
        if steps.load().step_done(name):
            return int(detail(steps, name)["run_id"])
    return None
