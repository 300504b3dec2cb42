"""Before the stop, the next run's driver started ahead as a *standby* and made ready: session
built, Python started, waiting inside ``Runtime.from_spark`` before the job reaches its
queries, so nothing touches a checkpoint before go (app/worker/standby/standby.py::take_over
gives it). Everything an update does before the stop to get one is here, in order.

A pre-warmed update runs its dry run inside its standby's driver, so one driver start serves
both (an update by snapshot: on a scratch copy of the state; by drain or stateless: a trial
batch on scratch checkpoints, app/worker/dry_run/scratch_copy.py::plan_trial). The standby
runs the new version's code there (as a dry-run driver would, tidegate_runtime/dry_run.py),
writes the verdict, and only then waits for go; at go the same session runs the job's code
again, for real, its plan's code generated and its source planned already
(tidegate_runtime/standby.py).

Steps, before anything stops:
1. ``dry_run_prepare``: the scratch copy, as a cold dry run's (app/worker/dry_run/attempts.py);
2. ``standby``: the standby run, carrying the scratch root (``runs.standby_dry_run``); the
   reconciler submits its driver;
3. ``standby_ready``: its dry run is done and it waits for go;
4. ``dry_run``: the verdict read. A refusal releases the standby and fails the update: the old
   run was never touched.

A dry run that hit a Spark infrastructure error proves nothing either way: the standby is
released (``cold_dry_run``), dry-run drivers of their own try again (attempts 2 and 3, as
without prewarm), and a second standby starts after them (``standby_2``, ``standby_ready_2``):
never beside a dry-run driver, whose executors it would take on a cluster with room for one
more driver. Without prewarm, or with ``dry_run: false``, the dry run (if any) runs in drivers
of its own and the standby starts after it.
"""

from __future__ import annotations

import logging
from typing import Any

from app.core import run_states as states
from app.core.db import transaction
from app.core.plans import StoredPlan
from app.jobs.models import Job
from app.operations.models import Operation
from app.runs import service as runs
from app.runs.models import Run
from app.worker.core.context import WorkerContext
from app.worker.core.steps import OperationFailed, Steps, detail, set_result
from app.worker.core.version import Target
from app.worker.dry_run import attempts, driver, scratch_copy
from app.worker.reconcile.reconciler import wait_for_run
from app.worker.standby.standby import READY_SECONDS, release, wanted

log = logging.getLogger(__name__)


def dry_run_then_standby(
    ctx: WorkerContext,
    op: Operation,
    steps: Steps,
    target: Target,
    plan: StoredPlan,
    positions: dict[str, dict[str, int]] | None = None,
) -> int | None:
    """An update's dry run (``positions``: a version on fresh state, its trial), then,
    pre-warmed (``standby.wanted``), the ready standby's run id (None without prewarm): in one
    driver when the dry run is wanted, else the dry run's own drivers and then the standby."""
    prewarm = wanted(op)
    if prewarm and op.params.get("dry_run") is not False:
        return _dry_run_in_standby(ctx, op, steps, target, plan, positions)
    attempts.dry_run(ctx, op, steps, target, plan, positions=positions)
    return ready_standby(ctx, op, steps, target) if prewarm else None


def _dry_run_in_standby(
    ctx: WorkerContext,
    op: Operation,
    steps: Steps,
    target: Target,
    plan: StoredPlan,
    positions: dict[str, dict[str, int]] | None = None,
) -> int:
    """The ready standby's run id once the dry run passed: the one that ran it, or a second
    one when its dry run was inconclusive (separate drivers retried it). OperationFailed on a
    refusal, or when no standby became ready (nothing was stopped). ``positions``: the old
    run's committed offsets, for a version that starts on fresh state (its trial)."""
    scratch, prepared = attempts.prepare_dry_run(ctx, op, steps, target, plan, 1, positions)
    check, trial = attempts.dry_run_checks(prepared), attempts.dry_run_trial(prepared)
    if not check and not trial:
        steps.run("dry_run", lambda: {"skipped": attempts.NOTHING_TO_CHECK})
        return ready_standby(ctx, op, steps, target)
    wanted = {
        "scratch": str(scratch),
        "check": check,
        "trial": trial,
        "timeout": driver.IN_DRIVER_TIMEOUT_SECONDS,
    }
    run_id = start(ctx, op, steps, target, dry_run=wanted)
    try:
        await_ready(ctx, op, steps, run_id, target)
    except OperationFailed:
        scratch_copy.cleanup(scratch)
        raise

    def outcome() -> dict[str, Any]:
        result = scratch_copy.read_result(scratch) or {
            "ok": False,
            "message": f"the standby run {run_id} called in without a dry-run result",
        }
        verdict = attempts.judge_dry_run(op, steps, target.number, prepared, result, 1)
        return {**verdict, "in_standby_run": run_id}

    try:
        steps.run("dry_run", outcome)
    except OperationFailed:
        release(ctx, run_id, "its dry run refused the new version")
        scratch_copy.cleanup(scratch)
        raise
    scratch_copy.cleanup(scratch)
    verdict = detail(steps, "dry_run")
    if verdict.get("ok"):
        return run_id
    steps.run(
        "cold_dry_run",
        lambda: {
            "released_standby": run_id,
            "why": verdict.get("infrastructure_error"),
        },
    )
    release(ctx, run_id, "its dry run hit a Spark infrastructure error")
    attempts.dry_run(ctx, op, steps, target, plan, first_attempt=2, positions=positions)
    return ready_standby(ctx, op, steps, target, "_2")


def ready_standby(
    ctx: WorkerContext, op: Operation, steps: Steps, target: Target, suffix: str = ""
) -> int:
    """Create the standby run (the reconciler submits its driver) and wait until it is ready.
    OperationFailed (the standby released) when its driver fails or is not ready in time:
    nothing was stopped. ``suffix``: a second standby's steps (``standby_2``…), after a first
    was released (``_dry_run_in_standby``)."""
    run_id = start(ctx, op, steps, target, suffix=suffix)
    await_ready(ctx, op, steps, run_id, target, suffix=suffix)
    return run_id


def start(
    ctx: WorkerContext,
    op: Operation,
    steps: Steps,
    target: Target,
    dry_run: dict[str, Any] | None = None,
    suffix: str = "",
) -> int:
    """The standby run, in state standby: the reconciler submits its driver from here on.
    ``dry_run``: its driver runs the update's dry run first (``_dry_run_in_standby``)."""

    def new_run() -> dict[str, Any]:
        with transaction(ctx.factory) as session:
            job = session.get(Job, op.job_id, with_for_update={"key_share": True})
            assert job is not None
            run = runs.create_standby(
                session,
                job,
                target.row(session),
                created_by=op.created_by,
                operation_id=op.id,
                dry_run=dry_run,
            )
            return {"run_id": run.id, "version": target.number, "dry_run": dry_run is not None}

    steps.run(f"standby{suffix}", new_run)
    return int(detail(steps, f"standby{suffix}")["run_id"])


def await_ready(
    ctx: WorkerContext,
    op: Operation,
    steps: Steps,
    run_id: int,
    target: Target,
    suffix: str = "",
) -> None:
    """Until the standby's runtime has called in; OperationFailed (released) otherwise."""
    timeout = float(op.params.get("start_timeout_seconds") or READY_SECONDS)

    def ready() -> dict[str, Any]:
        def settled(run: Run) -> bool:
            queued = run.state == states.STANDBY and run.standby_ready_at is None
            set_result(
                ctx,
                op.id,
                {
                    "phase": "standby-starting" if queued else "standby",
                    "standby_run_id": run.id,
                    # PENDING: the cluster has no room for one more driver yet; the old run
                    # processes on meanwhile.
                    "standby_backend_state": run.observed_state,
                },
            )
            return not queued

        try:
            run = wait_for_run(ctx, run_id, settled, timeout, "become a ready standby")
        except OperationFailed as exc:
            release(ctx, run_id, "not ready in time")
            raise OperationFailed(
                f"the pre-warmed driver of version {target.number} was not ready within "
                f"{timeout:.0f}s ({exc}); nothing was stopped and it was released. Retry when "
                "the cluster has room for one more driver, or with prewarm: false.",
                {"standby_run_id": run_id},
            ) from None
        if run.state != states.STANDBY:
            raise OperationFailed(
                f"the pre-warmed driver of version {target.number} failed before go: "
                f"{run.last_error or run.state}. Nothing was stopped; run {run_id} shows it.",
                {"standby_run_id": run_id},
            )
        assert run.standby_ready_at is not None
        return {
            "run_id": run_id,
            "ready_at": run.standby_ready_at.isoformat(),
            "waited_seconds": round((run.standby_ready_at - run.created_at).total_seconds(), 3),
        }

    steps.run(f"standby_ready{suffix}", ready)
