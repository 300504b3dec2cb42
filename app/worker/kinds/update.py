"""update (strategy ``snapshot``, the default), Hazelcast's job update: the new version's dry
run and, pre-warmed, its driver, while the old run still processes; a snapshot that stops the
old run; the new version started from it and verified. On failure the old version starts
again from the same snapshot and the operation says so. The other strategies are in
app/worker/kinds/update_fresh.py.

The steps, in order (each recorded; a worker resuming the update skips what is done):

1. ``dry_run_plan``, then the dry run (app/worker/dry_run/): pre-warmed, inside the standby's
   driver, which is then ready and waits for go (app/worker/standby/ready.py; after an
   inconclusive one, ``cold_dry_run``: drivers of its own retry, then a second standby,
   ``standby_2``); otherwise dry-run drivers of their own, then (pre-warmed) the standby;
2. the snapshot: ``pre_copy`` while the old run processes, ``request_stop`` …, ``export``
   (app/worker/kinds/snapshot.py::save_snapshot);
3. ``plan``: the stored plan bound to that snapshot and re-validated;
4. the start: ``reserve_run``, ``materialise``, then ``go`` to the standby or ``create_run``
   and ``await_submitted`` (app/worker/runs/start.py, app/worker/standby/standby.py);
5. ``verify``: every query commits past the state it resumed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.core import run_states as states
from app.operations.models import Operation
from app.runs.models import Run
from app.snapshots.errors import SnapshotFailed
from app.snapshots.export import mark_failed, snapshot_for_operation
from app.snapshots.models import Snapshot
from app.worker.core.context import WorkerContext
from app.worker.core.steps import OperationFailed, Steps, detail, planned
from app.worker.core.version import Target, read_target
from app.worker.kinds.snapshot import save_snapshot
from app.worker.kinds.update_fresh import update_on_fresh_state
from app.worker.runs.control import (
    new_run_of_a_failed_update,
    restart_old_run,
    stop_for_rollback,
)
from app.worker.runs.plan import plan_from_run, plan_from_snapshot, replan, sources
from app.worker.runs.start import start_planned
from app.worker.runs.verify import verify, verify_bounds
from app.worker.standby import ready, standby


@dataclass(frozen=True)
class Update:
    """What every step of one update reads, read once: the old run, the snapshot that will
    hold its state, and the version to start."""

    op: Operation
    snapshot_id: int
    snapshot: str
    old_run_id: int
    old_version: int
    target: Target
    prewarm: bool

    @property
    def new_version(self) -> int:
        return self.target.number


def do_update(ctx: WorkerContext, op: Operation, steps: Steps) -> dict[str, Any]:
    if op.params.get("strategy") in ("drain", "stateless"):
        return update_on_fresh_state(ctx, op, steps)
    return update_by_snapshot(ctx, op, steps)


def update_by_snapshot(ctx: WorkerContext, op: Operation, steps: Steps) -> dict[str, Any]:
    """The steps of the module's docstring, in order."""
    update = _update(ctx, op)
    try:
        standby_run = _before_the_stop(ctx, steps, update)
    except OperationFailed as exc:
        mark_failed(ctx.factory, update.snapshot_id, str(exc))
        raise
    saved = _stop_with_snapshot(ctx, steps, update, standby_run)
    target = update.target
    try:
        steps.run(
            "plan",
            lambda: plan_from_snapshot(ctx, op, target, update.old_run_id, update.snapshot_id),
        )
    except OperationFailed as exc:
        raise _rollback(ctx, steps, update, str(exc), standby_run) from None
    plan = planned(steps, "plan")
    try:
        started = (
            standby.take_over(ctx, op, steps, plan, target, standby_run)
            if standby_run is not None
            else start_planned(ctx, op, steps, plan, target)
        )
        steps.run("verify", lambda: verify(ctx, started["run_id"], plan, *verify_bounds(op)))
    except OperationFailed as exc:
        raise _rollback(
            ctx, steps, update, str(exc), new_run_of_a_failed_update(steps, standby_run)
        ) from None
    return {
        **started,
        "version": update.new_version,
        "previous_run_id": update.old_run_id,
        "previous_version": update.old_version,
        "snapshot": update.snapshot,
        "snapshot_bytes": saved.get("size_bytes"),
        "from": sources(plan),
        **detail(steps, "verify"),
    }


def _update(ctx: WorkerContext, op: Operation) -> Update:
    """The snapshot this update saves (named when the operation was accepted), the run it
    stops and the version it starts."""
    try:
        snapshot_id = snapshot_for_operation(ctx.factory, op.id)
    except SnapshotFailed as exc:
        raise OperationFailed(str(exc)) from None
    with ctx.factory() as session:
        snapshot = session.get(Snapshot, snapshot_id)
        assert snapshot is not None and snapshot.run_id is not None
        name, old_run_id = snapshot.name, snapshot.run_id
        old_version = int(snapshot.version_number or 0)
    return Update(
        op=op,
        snapshot_id=snapshot_id,
        snapshot=name,
        old_run_id=old_run_id,
        old_version=old_version,
        target=read_target(ctx, op.job_id, int(op.params["version"])),
        prewarm=standby.wanted(op),
    )


def _before_the_stop(ctx: WorkerContext, steps: Steps, update: Update) -> int | None:
    """The dry run and, pre-warmed, the ready standby (its run id; None without prewarm).
    OperationFailed when the new version is refused or its driver is not ready: the old run
    was never touched.

    The dry run works on a scratch copy of the running run's committed prefix (what a
    ``stop: false`` export would hold), not on the snapshot this update saves: saving it
    stops the run, and a refusal must leave the old run as it was."""
    if steps.load().step_done("request_stop"):  # resumed after the stop: all of this is done
        return standby.recorded(steps) if update.prewarm else None
    op, target = update.op, update.target
    steps.run("dry_run_plan", lambda: plan_from_run(ctx, op, target, update.old_run_id))
    plan = planned(steps, "dry_run_plan")
    # Pre-warmed, one driver start for both: the standby runs the dry run, then waits for go.
    return ready.dry_run_then_standby(ctx, op, steps, target, plan)


def _stop_with_snapshot(
    ctx: WorkerContext, steps: Steps, update: Update, standby_run: int | None
) -> dict[str, Any]:
    """Save the snapshot, stopping the old run at a batch boundary. If that fails, the old
    version starts again (the standby released); if a person cancelled the job meanwhile,
    nothing starts."""
    op = update.op
    try:
        saved = save_snapshot(
            ctx,
            steps,
            update.snapshot_id,
            stop=True,
            timeout=float(op.params.get("timeout_seconds", 120)),
        )
    except OperationFailed as exc:
        mark_failed(ctx.factory, update.snapshot_id, str(exc))
        standby.release(ctx, standby_run, "the snapshot that stops the old run failed")
        if _cancelled(ctx, update.old_run_id):
            raise
        raise restart_old_run(
            ctx, steps, update.old_run_id, update.old_version, update.new_version, exc
        ) from None
    if _cancelled(ctx, update.old_run_id):
        standby.release(ctx, standby_run, "the job was cancelled")
        raise OperationFailed(
            f"the job was cancelled during the update: run {update.old_run_id} is cancelled "
            f"and version {update.new_version} was not started (snapshot '{update.snapshot}' "
            "holds the state).",
            {"rolled_back": False, "snapshot": update.snapshot},
        )
    return saved


def _rollback(
    ctx: WorkerContext, steps: Steps, update: Update, why: str, failed_run: int | None
) -> OperationFailed:
    """The new version failed after the stop: it stops, and the old version starts again
    from the same snapshot. The error to end the operation with, saying which happened."""
    new_version, old_version, name = update.new_version, update.old_version, update.snapshot
    stop_for_rollback(ctx, steps, failed_run)
    try:
        # The one plan the API never made (it planned the new version, not the way back): by
        # name, the old version from its own snapshot.
        back_to = read_target(ctx, update.op.job_id, old_version)
        steps.run("rollback_plan", lambda: replan(ctx, update.op, back_to, snapshot=name))
        back = start_planned(
            ctx, update.op, steps, planned(steps, "rollback_plan"), back_to, "rollback_"
        )
    except OperationFailed as again:
        return OperationFailed(
            f"update to version {new_version} failed: {why}; the rollback to version "
            f"{old_version} from snapshot '{name}' failed too: {again}. The job is down: "
            f"submit a version with snapshot '{name}'.",
            {"rolled_back": False, "snapshot": name, "failed_run_id": failed_run},
        )
    return OperationFailed(
        f"update to version {new_version} failed: {why}. Rolled back: version "
        f"{old_version} runs again from snapshot '{name}' as run {back['run_id']}.",
        {
            "rolled_back": True,
            "snapshot": name,
            "failed_run_id": failed_run,
            "run_id": back["run_id"],
            "version": old_version,
        },
    )


def _cancelled(ctx: WorkerContext, run_id: int) -> bool:
    with ctx.factory() as session:
        run = session.get(Run, run_id)
        return run is not None and run.state == states.CANCELLED
