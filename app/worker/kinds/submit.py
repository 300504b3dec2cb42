"""submit: a new run of a version, fresh or from a snapshot / resume point."""

from __future__ import annotations

from typing import Any

from app.core.db import transaction
from app.core.plans import sources
from app.jobs.models import Job, JobVersion
from app.operations import state as op_state
from app.operations.models import Operation
from app.runs import service as runs
from app.worker.core.context import WorkerContext
from app.worker.core.steps import Steps, planned
from app.worker.core.version import read_target
from app.worker.dry_run.attempts import dry_run
from app.worker.runs.plan import checked_plan, replan
from app.worker.runs.start import await_started, await_submitted, start_planned


def do_submit(ctx: WorkerContext, op: Operation, steps: Steps) -> dict[str, Any]:
    if op.params.get("snapshot") is not None or op.params.get("resume_point") is not None:
        return submit_from_snapshot(ctx, op, steps)

    def create_run() -> dict[str, Any]:
        with transaction(ctx.factory) as session:
            current = session.get(Operation, op.id)
            assert current is not None
            if current.run_id is not None:  # created before a crash, recorded with the step
                return {"run_id": current.run_id}

            job = session.get(Job, op.job_id, with_for_update={"key_share": True})
            assert job is not None
            version = (
                session.query(JobVersion)
                .filter_by(job_id=job.id, number=op.params["version"])
                .one()
            )
            run = runs.create_run(session, job, version, created_by=op.created_by)
            op_state.move_to_run(session, op.id, run.id)
            return {"run_id": run.id}

    steps.run("create_run", create_run)
    run_id = steps.load().run_id
    assert run_id is not None
    steps.run("await_submitted", lambda: await_submitted(ctx, run_id, op))
    return await_started(ctx, run_id, float(op.params.get("timeout_seconds", 600)))


def submit_from_snapshot(ctx: WorkerContext, op: Operation, steps: Steps) -> dict[str, Any]:
    target = read_target(ctx, op.job_id, int(op.params["version"]))
    snapshot = op.params.get("snapshot")
    steps.run(
        "plan",
        lambda: (
            checked_plan(
                ctx,
                op,
                target,
                f"snapshot '{snapshot}'" if snapshot else "the resume point",
            )
            or replan(
                ctx,
                op,
                target,
                snapshot=snapshot,
                snapshot_job=op.params.get("snapshot_job"),
                resume_point=op.params.get("resume_point"),
            )
        ),
    )
    plan = planned(steps, "plan")
    # Before the new run exists: nothing is running for this job (submit refuses otherwise).
    dry_run(ctx, op, steps, target, plan)
    started = start_planned(ctx, op, steps, plan, target)
    return {**started, "from": sources(plan)}
