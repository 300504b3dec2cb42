"""snapshot: export the run's checkpoints (after stopping it at a batch boundary, with
``stop``), then apply the job's retention."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from app.core import run_states as states
from app.core.db import transaction
from app.core.errors import TidegateError
from app.operations.models import Operation
from app.runs.models import Run
from app.snapshots import retention as snapshot_retention
from app.snapshots import service as snapshots
from app.snapshots.errors import SnapshotError, SnapshotFailed
from app.snapshots.export import export
from app.snapshots.models import Snapshot
from app.worker.core.context import WorkerContext, fault_point
from app.worker.core.steps import OperationFailed, Steps, detail, set_result
from app.worker.runs.control import (
    stop_run,
)
from tidegate_runtime.checkpoints.checkpoint import CheckpointError

log = logging.getLogger(__name__)


# The snapshot family, and what reading a checkpoint or a file may raise on the way there.
SNAPSHOT_ERRORS = (SnapshotError, CheckpointError, OSError, ValueError)


def snapshot_failed(exc: Exception) -> OperationFailed:
    return OperationFailed(str(exc.detail) if isinstance(exc, TidegateError) else str(exc))


def save_snapshot(
    ctx: WorkerContext,
    steps: Steps,
    snapshot_id: int,
    *,
    stop: bool,
    timeout: float,
    after_pre_copy: Callable[[], None] | None = None,
    retention: bool = True,
) -> dict[str, Any]:
    """Export (after stopping the run at a batch boundary, with ``stop``), then retention.
    ``after_pre_copy``: what the caller does next while the run still processes. Without
    ``retention`` the caller applies it (``apply_retention``) when it suits: an update, after
    go, since its garbage collection reads every manifest and lists every blob of the store."""
    with ctx.factory() as session:
        snapshot = session.get(Snapshot, snapshot_id)
        if snapshot is None or snapshot.run_id is None:
            raise OperationFailed(f"snapshot {snapshot_id} or its run was deleted")
        run_id, name = snapshot.run_id, snapshot.name
        run_state = session.get(Run, run_id).state  # type: ignore[union-attr]
    done = steps.load()
    mid_copy = f"{done.kind}:pre_copy:copying"  # where chaos tests kill a pre-copying worker

    def progress(figures: dict[str, Any]) -> None:
        # Bytes and files copied so far, on the operation while it runs (--wait shows it).
        set_result(ctx, steps.op_id, {"snapshot": name, "run_id": run_id, **figures})
        if figures["phase"].startswith("pre-cop") and figures["bytes_copied"]:
            fault_point(mid_copy)

    def pre_copy() -> dict[str, Any]:
        # What the run has committed so far goes into the store while it still processes:
        # after the stop, the export copies only what the last batches added. Best effort:
        # if it fails, the export after the stop copies everything, as it would without.
        try:
            return export(ctx.factory, ctx.settings, snapshot_id, progress, pre_copy=True)
        except SNAPSHOT_ERRORS as exc:
            log.warning("snapshot %s: pre-copy failed (the export copies all): %s", name, exc)
            return {"error": str(exc)}

    stopping = done.step_done("request_stop")
    if stop and run_state == states.RUNNING and not stopping:
        steps.run("pre_copy", pre_copy)
        if after_pre_copy is not None:
            after_pre_copy()
    if stop and (run_state in states.ACTIVE or stopping):
        run_state = stop_run(ctx, run_id, "snapshot", steps, timeout).state

    def export_after_the_stop() -> dict[str, Any]:
        try:
            return export(ctx.factory, ctx.settings, snapshot_id, progress)
        except SNAPSHOT_ERRORS as exc:
            raise snapshot_failed(exc) from exc

    steps.run("export", export_after_the_stop)
    if retention:
        apply_retention(ctx, steps, snapshot_id)
    return {"snapshot": name, "run_id": run_id, "run_state": run_state, **detail(steps, "export")}


def apply_retention(ctx: WorkerContext, steps: Steps, snapshot_id: int) -> None:
    """Step ``retention``: the job's retention, never to the snapshot just made, then gc."""

    def retention() -> dict[str, Any]:
        with ctx.factory() as session:
            snapshot = session.get(Snapshot, snapshot_id)
            if snapshot is None:
                return {"skipped": f"snapshot {snapshot_id} was deleted"}
            job_id = snapshot.job_id
        try:
            return snapshot_retention.retention_and_gc(
                ctx.factory, ctx.settings, job_id, snapshot_id
            )
        except SNAPSHOT_ERRORS as exc:  # the snapshot is made; tidy up next time
            log.warning("snapshot retention/gc failed: %s", exc)
            return {"error": str(exc)}

    steps.run("retention", retention)


def do_snapshot(ctx: WorkerContext, op: Operation, steps: Steps) -> dict[str, Any]:
    with ctx.factory() as session:
        try:
            snapshot_id = snapshots.for_operation(session, op.id).id
        except SnapshotFailed as exc:
            raise OperationFailed(str(exc)) from None
    try:
        return save_snapshot(
            ctx,
            steps,
            snapshot_id,
            stop=bool(op.params.get("stop")),
            timeout=float(op.params.get("timeout_seconds", 120)),
        )
    except OperationFailed as exc:
        with transaction(ctx.factory) as session:
            snapshots.mark_failed(session, snapshot_id, str(exc))
        raise
