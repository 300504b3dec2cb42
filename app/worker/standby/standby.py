"""A standby's life around the switch: whether an operation wants one, and its release when
its go will not come. Getting it ready, before the stop, is app/worker/standby/ready.py (and
``ready.recorded``, the one a resumed operation had ready); its go, after the stop, is
app/worker/runs/start.py::take_over. Also a restart's *spare* (the run's next attempt
started ahead, ``prepare_spare``).

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
from app.operations.models import Operation
from app.runs import service as runs
from app.runs import spares
from app.runs.models import Run
from app.worker.core.context import WorkerContext
from app.worker.core.steps import OperationFailed, Steps, detail, set_result
from app.worker.reconcile.reconciler import pass_now, wait_for_run

log = logging.getLogger(__name__)

# How long an operation waits for its standby or spare to be ready (queued drivers included).
READY_SECONDS = 600.0


def wanted(op: Operation) -> bool:
    """On unless the operation says ``prewarm: false`` (the API writes the job's setting on it
    when the request does not say)."""
    return op.params.get("prewarm") is not False


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
