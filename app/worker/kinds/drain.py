"""drain: the run processes its input up to fixed end offsets, flushes every window and stops."""

from __future__ import annotations

from typing import Any

from app.operations.models import Operation
from app.worker.core.context import WorkerContext
from app.worker.core.steps import OperationFailed, Steps
from app.worker.runs.control import (
    drain_backlog,
    drain_run,
)


def do_drain(ctx: WorkerContext, op: Operation, steps: Steps) -> dict[str, Any]:
    if op.run_id is None:
        raise OperationFailed("the job had no running run when the drain was requested")
    timeout = float(op.params.get("timeout_seconds", 1800))
    run = drain_run(ctx, op.id, op.run_id, steps, timeout)
    return {
        "run_id": run.id,
        "run_state": run.state,
        "phase": "drained",
        "backlog": drain_backlog(run),
        "end_offsets": (run.drain or {}).get("end_offsets"),
    }
