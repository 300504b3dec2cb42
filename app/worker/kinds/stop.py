"""stop and cancel: the job's run stops (gracefully where its runtime allows; cancel kills)."""

from __future__ import annotations

from typing import Any

from app.operations.models import Operation
from app.worker.core.context import WorkerContext
from app.worker.core.steps import OperationFailed, Steps
from app.worker.runs.control import (
    stop_run,
)
from app.worker.standby import standby


def do_stop(ctx: WorkerContext, op: Operation, steps: Steps) -> dict[str, Any]:
    if op.run_id is None:
        raise OperationFailed("the job had no active run when the stop was requested")
    if op.kind == "cancel":  # an update's standby must not outlive the job it was for
        steps.run("release_standbys", lambda: standby.release_all(ctx, op.job_id, "job cancelled"))
    run = stop_run(ctx, op.run_id, op.kind, steps, float(op.params.get("timeout_seconds", 120)))
    return {"run_id": run.id, "run_state": run.state}
