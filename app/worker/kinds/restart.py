"""restart: the run stops if it is active, then starts again from its own checkpoint as a
new attempt. Pre-warmed (the default while it runs): the next attempt's driver is started
first as the run's spare, and takes over the moment the current one has stopped."""

from __future__ import annotations

from typing import Any

from app.core import run_states as states
from app.operations.models import Operation
from app.runs.models import Run
from app.worker.core.context import WorkerContext
from app.worker.core.steps import OperationFailed, Steps, detail
from app.worker.runs.control import resubmit_run, stop_run
from app.worker.runs.start import await_started
from app.worker.standby import standby


def do_restart(ctx: WorkerContext, op: Operation, steps: Steps) -> dict[str, Any]:
    if op.run_id is None:
        raise OperationFailed("the job has never run")
    run_id = op.run_id

    def target() -> dict[str, Any]:
        with ctx.factory() as session:
            run = session.get(Run, run_id)
            assert run is not None
            return {"attempt": run.attempt, "state": run.state}

    steps.run("target", target)
    first = int(detail(steps, "target")["attempt"])
    # Only a running attempt can be replaced by a spare; anything else restarts cold.
    prewarmed = standby.wanted(op) and detail(steps, "target")["state"] == states.RUNNING
    try:
        if prewarmed:
            standby.prepare_spare(ctx, op, steps, run_id)
        with ctx.factory() as session:
            run = session.get(Run, run_id)
            assert run is not None
            state, attempt = run.state, run.attempt
        done = steps.load()
        # Once resubmitted (or taken over by its spare), the run is active again as the new
        # attempt: resuming after a crash must not wait for it to stop.
        if (
            attempt == first
            and not done.step_done("resubmit")
            and (state in states.ACTIVE or done.step_done("request_stop"))
        ):
            stop_run(
                ctx,
                run_id,
                "restart",
                steps,
                120.0,
                ended=lambda r: r.state in states.TERMINAL or r.attempt > first,
            )
        with ctx.factory() as session:
            now_at = session.get(Run, run_id).attempt  # type: ignore[union-attr]
        handed_over = now_at > first and not steps.load().step_done("resubmit")
        if not handed_over:
            # Cold, or the spare was gone when the stop came: the ended run starts again.
            why = f"restart requested by {op.created_by}"
            steps.run("resubmit", lambda: resubmit_run(ctx, run_id, why))
    except Exception:
        if prewarmed:  # failed: the operation's spare is not wanted (a killed worker's resumes)
            standby.withdraw_spare(ctx, run_id)
        raise
    if prewarmed:  # taken over (a no-op then) or restarted cold: not wanted any more
        standby.withdraw_spare(ctx, run_id)
    started = await_started(ctx, run_id, 600.0)
    return {**started, "prewarmed": prewarmed, "spare_taken_over": handed_over}
