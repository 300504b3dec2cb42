"""update (strategy ``snapshot``, the default): dry run (pre-warmed: inside the standby's
driver), save a snapshot stopping the old run, start the new version from it; on failure start
the old version again from the same snapshot. The other strategies are in
app/worker/kinds/update_fresh.py."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from app.core import run_states as states
from app.operations.models import Operation
from app.resume_points.plan import bind_to_latest, bind_to_snapshot
from app.runs.models import Run
from app.snapshots import transfer as snapshot_worker
from app.snapshots.models import Snapshot
from app.snapshots.store_access import SnapshotFailed
from app.worker import standby, standby_dry_run
from app.worker.context import WorkerContext
from app.worker.kinds.snapshot import save_snapshot
from app.worker.kinds.update_fresh import update_on_fresh_state
from app.worker.runctl import (
    restart_old_run,
    stop_run,
)
from app.worker.startup import (
    checked_plan,
    dry_run,
    live_plan,
    replan,
    sources,
    start_planned,
)
from app.worker.steps import OperationFailed, Steps, detail
from app.worker.verify import verify, verify_bounds


def held_queries(session: Session, snapshot_id: int) -> set[str]:
    """The queries a saved snapshot holds a committed batch of."""
    snapshot = session.get(Snapshot, snapshot_id)
    assert snapshot is not None
    return {q for q, info in (snapshot.queries or {}).items() if info.get("batch_id") is not None}


def do_update(ctx: WorkerContext, op: Operation, steps: Steps) -> dict[str, Any]:
    """Hazelcast's job update: save-snapshot, start the new version from it; if that fails,
    start the old version again from the same snapshot and say so."""
    if op.params.get("strategy") in ("drain", "stateless"):
        return update_on_fresh_state(ctx, op, steps)
    try:
        snapshot_id = snapshot_worker.snapshot_for_operation(ctx.factory, op.id)
    except SnapshotFailed as exc:
        raise OperationFailed(str(exc)) from None
    with ctx.factory() as session:
        snapshot = session.get(Snapshot, snapshot_id)
        assert snapshot is not None and snapshot.run_id is not None
        old_run_id, old_version = snapshot.run_id, int(snapshot.version_number or 0)
        name = snapshot.name
    new_version = int(op.params["version"])
    # Where the declarations are not enough, a dry run of the new version, before the old
    # run is touched. It runs on a scratch copy of the running run's committed prefix (what
    # a `stop: false` export would hold: immutable files of its latest committed batch), not
    # on the snapshot this update saves: saving it stops the run first (hz-cli save-snapshot),
    # and a refusal must leave the old run as it was.
    # Pre-warmed, the dry run runs inside the standby's driver (app/worker/standby_dry_run.py):
    # one driver start for both, and the standby is ready when the dry run has passed.
    in_standby = standby.wanted(op) and op.params.get("dry_run") is not False
    if not steps.load().step_done("request_stop"):
        try:
            steps.run(
                "dry_run_plan",
                lambda: (
                    checked_plan(
                        ctx,
                        op,
                        new_version,
                        f"the state of run {old_run_id}",
                        lambda _, stored: bind_to_latest(stored, old_run_id),
                    )
                    or live_plan(ctx, op, new_version, old_run_id)
                ),
            )
            if in_standby:
                standby_dry_run.prepare(ctx, op, steps, new_version, detail(steps, "dry_run_plan"))
            else:
                dry_run(ctx, op, steps, new_version, detail(steps, "dry_run_plan"))
        except OperationFailed as exc:
            snapshot_worker.mark_failed(ctx.factory, snapshot_id, str(exc))
            raise
    # Pre-warmed: the new version's driver starts while the old run still processes (ready
    # already when it ran the dry run: the steps are recorded, so this finds it again). Never
    # beside a separate dry-run driver: on a cluster with room for one more driver, a standby
    # started beside it took the executors the dry run needed (it timed out).
    # (After a standby's inconclusive dry run, released, a second standby: ``standby_2``.)
    again = "_2" if standby_dry_run.fell_back(steps) else ""
    try:
        warm = standby.prepare(ctx, op, steps, new_version, again) if standby.wanted(op) else None
    except OperationFailed as exc:
        snapshot_worker.mark_failed(ctx.factory, snapshot_id, str(exc))
        raise
    try:
        saved = save_snapshot(
            ctx, steps, snapshot_id, stop=True, timeout=float(op.params.get("timeout_seconds", 120))
        )
    except OperationFailed as exc:
        snapshot_worker.mark_failed(ctx.factory, snapshot_id, str(exc))
        standby.release(ctx, warm, "the snapshot that stops the old run failed")
        if _cancelled(ctx, old_run_id):
            raise
        raise restart_old_run(ctx, steps, old_run_id, old_version, new_version, exc) from None
    if _cancelled(ctx, old_run_id):  # a person took the job down meanwhile: nothing starts
        standby.release(ctx, warm, "the job was cancelled")
        raise OperationFailed(
            f"the job was cancelled during the update: run {old_run_id} is cancelled and "
            f"version {new_version} was not started (snapshot '{name}' holds the state).",
            {"rolled_back": False, "snapshot": name},
        )

    def rollback(why: str, failed_run: int | None) -> OperationFailed:
        if failed_run is not None:
            with ctx.factory() as session:
                failed = session.get(Run, failed_run)
                active = failed is not None and failed.state in states.ACTIVE
            if active or steps.load().step_done("rollback_request_stop"):
                stop_run(ctx, failed_run, "rollback", steps, 60.0, prefix="rollback_")
        try:
            # The one plan the API never made (it planned the new version, not the way back):
            # by name, the old version from its own snapshot.
            steps.run("rollback_plan", lambda: replan(ctx, op, old_version, snapshot=name))
            back = start_planned(
                ctx, op, steps, detail(steps, "rollback_plan"), old_version, "rollback_"
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

    try:
        steps.run(
            "plan",
            lambda: (
                checked_plan(
                    ctx,
                    op,
                    new_version,
                    f"snapshot '{name}'",
                    lambda session, stored: bind_to_snapshot(
                        stored, old_run_id, name, held_queries(session, snapshot_id)
                    ),
                )
                or replan(ctx, op, new_version, snapshot=name)
            ),
        )
    except OperationFailed as exc:
        raise rollback(str(exc), warm) from None
    plan = detail(steps, "plan")
    try:
        started = start_planned(ctx, op, steps, plan, new_version, standby_run=warm)
        steps.run(
            "verify",
            lambda: verify(ctx, started["run_id"], plan, *verify_bounds(op)),
        )
    except OperationFailed as exc:
        reserved = (
            detail(steps, "reserve_run").get("run_id")
            if steps.load().step_done("reserve_run")
            else warm
        )
        raise rollback(str(exc), reserved) from None
    return {
        **started,
        "version": new_version,
        "previous_run_id": old_run_id,
        "previous_version": old_version,
        "snapshot": name,
        "snapshot_bytes": saved.get("size_bytes"),
        "from": sources(plan),
        **detail(steps, "verify"),
    }


def _cancelled(ctx: WorkerContext, run_id: int) -> bool:
    with ctx.factory() as session:
        run = session.get(Run, run_id)
        return run is not None and run.state == states.CANCELLED
