"""A pre-warmed update runs its dry run inside its standby's driver, so one driver start
serves both (an update by snapshot: on a scratch copy of the state; by drain or stateless: a
trial batch on scratch checkpoints, app/worker/dry_run/scratch_copy.py::plan_trial). The
standby runs the new version's code there (as a dry-run driver would,
tidegate_runtime/dry_run.py), writes the verdict, and only then waits for go; at go the same
session runs the job's code again, for real, its plan's code generated and its source planned
already (tidegate_runtime/standby.py).

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
more driver.
"""

from __future__ import annotations

import logging
from typing import Any

from app.core.plans import StoredPlan
from app.operations.models import Operation
from app.worker.core.context import WorkerContext
from app.worker.core.steps import OperationFailed, Steps, detail
from app.worker.dry_run import attempts, driver, scratch_copy
from app.worker.standby import standby

log = logging.getLogger(__name__)


def ready_after_dry_run(
    ctx: WorkerContext,
    op: Operation,
    steps: Steps,
    version_number: int,
    plan: StoredPlan,
    positions: dict[str, dict[str, int]] | None = None,
) -> int:
    """The ready standby's run id once the dry run passed: the one that ran it, or a second
    one when its dry run was inconclusive (separate drivers retried it). OperationFailed on a
    refusal, or when no standby became ready (nothing was stopped). ``positions``: the old
    run's committed offsets, for a version that starts on fresh state (its trial)."""
    job_name, version = attempts.detached_version(ctx, op, version_number)
    scratch, prepared = attempts.prepare_dry_run(
        ctx, op, steps, version, job_name, plan, 1, positions
    )
    check, trial = attempts.dry_run_checks(prepared), attempts.dry_run_trial(prepared)
    if not check and not trial:
        steps.run("dry_run", lambda: {"skipped": attempts.NOTHING_TO_CHECK})
        return standby.ready_standby(ctx, op, steps, version_number)
    wanted = {
        "scratch": str(scratch),
        "check": check,
        "trial": trial,
        "timeout": driver.IN_DRIVER_TIMEOUT_SECONDS,
    }
    run_id = standby.start(ctx, op, steps, version_number, dry_run=wanted)
    try:
        standby.await_ready(ctx, op, steps, run_id, version_number)
    except OperationFailed:
        scratch_copy.cleanup(scratch)
        raise

    def outcome() -> dict[str, Any]:
        result = scratch_copy.read_result(scratch) or {
            "ok": False,
            "message": f"the standby run {run_id} called in without a dry-run result",
        }
        verdict = attempts.judge_dry_run(op, steps, version_number, prepared, result, 1)
        return {**verdict, "in_standby_run": run_id}

    try:
        steps.run("dry_run", outcome)
    except OperationFailed:
        standby.release(ctx, run_id, "its dry run refused the new version")
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
    standby.release(ctx, run_id, "its dry run hit a Spark infrastructure error")
    attempts.dry_run(ctx, op, steps, version_number, plan, first_attempt=2, positions=positions)
    return standby.ready_standby(ctx, op, steps, version_number, "_2")


def dry_run_then_standby(
    ctx: WorkerContext,
    op: Operation,
    steps: Steps,
    version_number: int,
    plan: StoredPlan,
    positions: dict[str, dict[str, int]] | None = None,
) -> int | None:
    """An update's dry run (``positions``: a version on fresh state, its trial), then,
    pre-warmed, the ready standby's run id (None without prewarm): in one driver when the dry
    run is wanted, else the dry run's own drivers and then the standby."""
    prewarm = standby.wanted(op)
    if prewarm and op.params.get("dry_run") is not False:
        return ready_after_dry_run(ctx, op, steps, version_number, plan, positions)
    attempts.dry_run(ctx, op, steps, version_number, plan, positions=positions)
    return standby.ready_standby(ctx, op, steps, version_number) if prewarm else None
