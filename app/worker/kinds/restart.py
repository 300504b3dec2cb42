"""restart: the run stops if it is active, then starts again from its own checkpoint as a
new attempt."""

from __future__ import annotations

from typing import Any

from app.core import run_states as states
from app.operations.models import Operation
from app.runs.models import Run
from app.worker.context import WorkerContext
from app.worker.runctl import (
    await_started,
    resubmit_run,
    stop_run,
)
from app.worker.steps import OperationFailed, Steps


def do_restart(ctx: WorkerContext, op: Operation, steps: Steps) -> dict[str, Any]:
    if op.run_id is None:
        raise OperationFailed("the job has never run")
    run_id = op.run_id
    with ctx.factory() as session:
        state = session.get(Run, run_id).state  # type: ignore[union-attr]
    done = steps.load()
    # Once resubmitted, the run is active again as the new attempt: resuming after a crash
    # must not wait for it to stop.
    if not done.step_done("resubmit") and (
        state in states.ACTIVE or done.step_done("request_stop")
    ):
        stop_run(ctx, run_id, "restart", steps, 120.0)

    steps.run(
        "resubmit", lambda: resubmit_run(ctx, run_id, f"restart requested by {op.created_by}")
    )
    return await_started(ctx, run_id, 600.0)
