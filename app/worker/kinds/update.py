"""update (strategy ``snapshot``, the default), Hazelcast's job update: the new version's dry
run and, pre-warmed, its driver, while the old run still processes; a snapshot that stops the
old run; the new version started from it and verified. On failure the old version starts
again from the same snapshot and the operation says so. The other strategies are in
app/worker/kinds/update_fresh.py.

The steps are the list ``UPDATE_BY_SNAPSHOT`` at the end of this module, read top to bottom;
each is recorded, and a worker resuming the update skips what is done. Each phase's
``on_failure`` says what a failure there leaves: before the stop, nothing touched; at the stop,
the old version again from its own checkpoint; after it, the old version again from the
snapshot.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from app.core import run_states as states
from app.core.db import transaction
from app.core.plans import StoredPlan, sources
from app.operations.models import Operation
from app.runs.models import Run
from app.snapshots import restore
from app.snapshots import service as snapshots
from app.snapshots.errors import SnapshotFailed
from app.worker.core.context import WorkerContext
from app.worker.core.steps import (
    OperationFailed,
    Part,
    Phase,
    Step,
    Steps,
    planned,
    run_phases,
)
from app.worker.core.version import read_target
from app.worker.kinds import new_version
from app.worker.kinds.new_version import NewVersion
from app.worker.kinds.snapshot import apply_retention, save_snapshot
from app.worker.kinds.update_fresh import update_on_fresh_state
from app.worker.runs.control import (
    new_run_of_a_failed_update,
    restart_old_run,
    stop_for_rollback,
)
from app.worker.runs.plan import plan_from_run, plan_from_snapshot, replan
from app.worker.runs.start import start_planned
from app.worker.standby import ready, standby


def do_update(ctx: WorkerContext, op: Operation, steps: Steps) -> dict[str, Any]:
    if op.params.get("strategy") in ("drain", "stateless"):
        return update_on_fresh_state(ctx, op, steps)
    return update_by_snapshot(ctx, op, steps)


def update_by_snapshot(ctx: WorkerContext, op: Operation, steps: Steps) -> dict[str, Any]:
    """The steps of ``UPDATE_BY_SNAPSHOT``, in order; what the operation returns."""
    update = _update(ctx, op, steps)
    if op.steps:  # resumed: the standby made ready before, if any, is in the record
        update.standby_run = ready.recorded(op.step_details())
    return update.result(run_phases(steps, update, UPDATE_BY_SNAPSHOT))


@dataclass
class Update(NewVersion):
    """What every step of one update reads, read once when it begins: the old run, the
    snapshot that will hold its state, the version to start (``NewVersion``); and, once it
    has started, the new run."""

    snapshot_id: int
    snapshot: str
    old_run_id: int
    old_version: int

    @property
    def stop_requested(self) -> bool:
        """Resumed after the stop: everything before it is done."""
        return self.steps.load().step_done("request_stop")

    def result(self, done: dict[str, dict[str, Any]]) -> dict[str, Any]:
        """What the operation returns, from what its steps recorded (``done``)."""
        return {
            **self.started,
            "version": self.target.number,
            "previous_run_id": self.old_run_id,
            "previous_version": self.old_version,
            "snapshot": self.snapshot,
            "snapshot_bytes": done["export"].get("size_bytes"),
            "from": sources(cast(StoredPlan, done["plan"])),
            **done["verify"],
        }


def _update(ctx: WorkerContext, op: Operation, steps: Steps) -> Update:
    """The snapshot this update saves (named when the operation was accepted), the run it
    stops and the version it starts."""
    with ctx.factory() as session:
        try:
            snapshot = snapshots.for_operation(session, op.id)
        except SnapshotFailed as exc:
            raise OperationFailed(str(exc)) from None
        assert snapshot.run_id is not None
        snapshot_id, name, old_run_id = snapshot.id, snapshot.name, snapshot.run_id
        old_version = int(snapshot.version_number or 0)
    return Update(
        ctx=ctx,
        op=op,
        steps=steps,
        snapshot_id=snapshot_id,
        snapshot=name,
        old_run_id=old_run_id,
        old_version=old_version,
        target=read_target(ctx, op.job_id, int(op.params["version"])),
    )


# 1. Before the stop ------------------------------------------------------------------------


def _plan_before_the_stop(u: Update) -> dict[str, Any]:
    return dict(plan_from_run(u.ctx, u.op, u.target, u.old_run_id))


def _dry_run_and_standby(u: Update) -> None:
    """The dry run works on a scratch copy of the running run's committed prefix (what a
    ``stop: false`` export would hold), not on the snapshot this update saves: saving it stops
    the run, and a refusal must leave the old run as it was. Pre-warmed, one driver start
    serves both: the standby runs the dry run, then waits for go."""
    plan = planned(u.steps, "dry_run_plan")
    readying = ready.Readying(u.ctx, u.op, u.steps, u.target, plan)
    u.standby_run = ready.dry_run_then_standby(readying)


def _mark_failed(u: Update, exc: OperationFailed) -> None:
    with transaction(u.ctx.factory) as session:
        snapshots.mark_failed(session, u.snapshot_id, str(exc))


def _nothing_stopped(u: Update, exc: OperationFailed) -> OperationFailed:
    """Refused, or its driver not ready: the old run was never touched."""
    _mark_failed(u, exc)
    return exc


# 2. The stop -------------------------------------------------------------------------------


def _save_snapshot(u: Update) -> None:
    save_snapshot(
        u.ctx,
        u.steps,
        u.snapshot_id,
        stop=True,
        timeout=float(u.op.params.get("timeout_seconds", 120)),
        after_pre_copy=lambda: u.steps.run("prestage", lambda: _prestage(u)),
        retention=False,  # after go (phase 4): out of the pause
    )


def _prestage(u: Update) -> dict[str, Any]:
    """Pre-warmed, while the old run still processes: the pre-copy restored where the
    standby's checkpoints will be, so that after the stop ``materialise`` restores only what
    the last batches changed. Best effort: a query not prestaged is restored whole."""
    standby_run = u.standby_run
    if standby_run is None:
        return {"skipped": "not pre-warmed: the new run is made after the stop"}
    plan = planned(u.steps, "dry_run_plan")
    queries = list(u.target.version.queries)
    return restore.prestage(
        u.ctx.factory, u.ctx.settings, u.snapshot_id, plan, standby_run, queries
    )


def _discard_prestaged(u: Update, run_id: int | None) -> None:
    """After the failure was handled (it never raises): what ``prestage`` left unused."""
    if run_id is not None:
        queries = list(u.target.version.queries)
        restore.discard_prestaged(u.ctx.settings, u.target.job_name, run_id, queries)


def _old_version_again(u: Update, exc: OperationFailed) -> OperationFailed:
    """The snapshot that stops the old run failed: the standby released, the old version starts
    again from its own checkpoint, unless a person cancelled the job meanwhile."""
    _mark_failed(u, exc)
    standby_run = u.standby_run
    standby.release(u.ctx, standby_run, "the snapshot that stops the old run failed")
    try:
        if _cancelled(u):
            return exc
        return restart_old_run(u.ctx, u.steps, u.old_run_id, u.old_version, u.target.number, exc)
    finally:
        _discard_prestaged(u, standby_run)


def _unless_cancelled(u: Update) -> None:
    if _cancelled(u):
        standby_run = u.standby_run
        standby.release(u.ctx, standby_run, "the job was cancelled")
        _discard_prestaged(u, standby_run)
        raise OperationFailed(
            f"the job was cancelled during the update: run {u.old_run_id} is cancelled "
            f"and version {u.target.number} was not started (snapshot '{u.snapshot}' "
            "holds the state).",
            {"rolled_back": False, "snapshot": u.snapshot},
        )


def _cancelled(u: Update) -> bool:
    with u.ctx.factory() as session:
        run = session.get(Run, u.old_run_id)
        return run is not None and run.state == states.CANCELLED


# 3. The start, 4. after it -----------------------------------------------------------------


def _plan_after_the_stop(u: Update) -> dict[str, Any]:
    """The stored plan bound to the snapshot that stopped the old run, and re-validated."""
    return dict(plan_from_snapshot(u.ctx, u.op, u.target, u.old_run_id, u.snapshot_id))


def _retention(u: Update) -> None:
    apply_retention(u.ctx, u.steps, u.snapshot_id)


def _roll_back(u: Update, exc: OperationFailed) -> OperationFailed:
    """The new version failed after the stop: it stops, and the old version starts again
    from the same snapshot. The error to end the operation with, saying which happened."""
    why = str(exc)
    try:
        return _roll_back_from_the_snapshot(u, why)
    finally:
        _discard_prestaged(u, u.standby_run)  # unless materialise used it


def _roll_back_from_the_snapshot(u: Update, why: str) -> OperationFailed:
    failed_run = new_run_of_a_failed_update(u.steps, u.standby_run)
    new_version, old_version, name = u.target.number, u.old_version, u.snapshot
    stop_for_rollback(u.ctx, u.steps, failed_run)
    try:
        # The one plan the API never made (it planned the new version, not the way back): by
        # name, the old version from its own snapshot.
        back_to = read_target(u.ctx, u.op.job_id, old_version)
        u.steps.run("rollback_plan", lambda: replan(u.ctx, u.op, back_to, snapshot=name))
        back = start_planned(
            u.ctx, u.op, u.steps, planned(u.steps, "rollback_plan"), back_to, "rollback_"
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


UPDATE_BY_SNAPSHOT: tuple[Phase[Update], ...] = (
    Phase(
        "1. before the stop: the new version's plan, its dry run and its ready standby "
        "(app/worker/standby/ready.py::READYING: dry_run_prepare, standby, standby_ready, "
        "dry_run; without prewarm, drivers of its own); skipped when resumed after the stop",
        (
            Step("dry_run_plan", _plan_before_the_stop),
            Part(_dry_run_and_standby),
        ),
        when=lambda u: not u.stop_requested,
        on_failure=_nothing_stopped,
    ),
    Phase(
        "2. the stop: the snapshot, pre-copied while the old run processes, then the old run "
        "stopped at a batch boundary and the rest exported (app/worker/kinds/snapshot.py::"
        "save_snapshot: pre_copy, then prestage (the pre-copy restored where the standby's "
        "checkpoints will be), request_stop, graceful_stop, kill, stopped, export)",
        (Part(_save_snapshot),),
        on_failure=_old_version_again,
    ),
    Phase("unless a person cancelled the job meanwhile", (Part(_unless_cancelled),)),
    Phase(
        "3. the start: the new version on the snapshot, verified",
        (
            Step("plan", _plan_after_the_stop),
            Part(new_version.start),
            Step("verify", new_version.verify_started),
        ),
        on_failure=_roll_back,
    ),
    Phase(
        "4. after go, out of the pause: the job's snapshot retention and the store's garbage "
        "collection (which reads every manifest and lists every blob: on an object store, "
        "seconds at size)",
        (Part(_retention),),
    ),
)
