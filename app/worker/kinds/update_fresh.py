"""update with strategy ``drain`` or ``stateless``: the new version starts on fresh
checkpoints at the old run's end offsets; on failure the old version starts again there.
Before anything stops, the new version runs a trial batch over the last records the old run
committed (pre-warmed: in its standby), so a version whose code fails is refused while the old
run still processes."""

from __future__ import annotations

import json
from typing import Any

from app.auth.service import Principal, Scope
from app.core import run_states as states
from app.core.db import transaction
from app.core.errors import TidegateError
from app.core.paths import checkpoint_path
from app.operations.models import Operation
from app.runs.models import Run
from app.startpoints import service as startpoints
from app.worker.core.context import WorkerContext
from app.worker.core.steps import OperationFailed, Steps, detail, planned
from app.worker.core.version import Target, read_target
from app.worker.runs.control import (
    drain_run,
    new_run_of_a_failed_update,
    restart_old_run,
    stop_for_rollback,
    stop_run,
)
from app.worker.runs.plan import fresh_plan
from app.worker.runs.start import start_planned
from app.worker.runs.verify import committed_batches, verify, verify_bounds
from app.worker.standby import ready, standby
from tidegate_runtime.checkpoint import latest_commit_batch, read_offsets


def update_on_fresh_state(ctx: WorkerContext, op: Operation, steps: Steps) -> dict[str, Any]:
    """The new version starts on fresh checkpoints, with OFFSET startpoints exactly where the
    old run ended, so no record is lost or read twice although no state is carried over.
    ``drain`` (Samza/Dataflow's drain-and-replace): the old run drains first, every window
    flushed, for an incompatible change of state. ``stateless``: the old run (which holds no
    state) just stops at a batch boundary."""
    strategy = str(op.params.get("strategy"))

    def target() -> dict[str, Any]:
        # Recorded first: the operation's run_id moves to the new run once it exists.
        assert op.run_id is not None
        with ctx.factory() as session:
            old = session.get(Run, op.run_id)
            assert old is not None
            return {"run_id": old.id, "version": old.version.number}

    steps.run("target", target)
    old_run_id = int(detail(steps, "target")["run_id"])
    old_version = int(detail(steps, "target")["version"])
    new = read_target(ctx, op.job_id, int(op.params["version"]))
    new_version = new.number
    standby_run = _trial_and_standby(ctx, op, steps, old_run_id, new)
    try:
        end_offsets = _end_old_run(ctx, op, steps, strategy, old_run_id, old_version, new_version)
        steps.run("hand_off", lambda: hand_off(ctx, op, new, end_offsets))
    except OperationFailed:
        standby.release(ctx, standby_run, "the old run did not end cleanly")
        raise

    def start(target: Target, prefix: str = "") -> dict[str, Any]:
        # The API stored the new version's fresh plan (nothing in it to re-validate: no
        # sources); the way back to the old version is planned here.
        stored = op.plan if not prefix and op.plan is not None else None
        steps.run(f"{prefix}plan", lambda: stored or fresh_plan(target))
        plan = planned(steps, f"{prefix}plan")
        started = (
            standby.take_over(ctx, op, steps, plan, target, standby_run)
            if standby_run is not None and not prefix
            else start_planned(ctx, op, steps, plan, target, prefix)
        )
        steps.run(
            f"{prefix}verify",
            lambda: verify(ctx, started["run_id"], plan, *verify_bounds(op)),
        )
        return started

    try:
        started = start(new)
    except OperationFailed as exc:
        failed_run = new_run_of_a_failed_update(steps, standby_run)
        stop_for_rollback(ctx, steps, failed_run)
        if failed_run is not None and any(
            b is not None for b in committed_batches(ctx, failed_run).values()
        ):
            # Its startpoints are spent and its output written: starting the old version at
            # the drained offsets would process those records twice.
            raise OperationFailed(
                f"update to version {new_version} failed after its run {failed_run} had "
                f"committed batches: {exc}. Not rolled back (version {old_version} would "
                f"process those records again); restart run {failed_run} or submit a version.",
                {"rolled_back": False, "failed_run_id": failed_run, "end_offsets": end_offsets},
            ) from None
        try:
            back_to = read_target(ctx, op.job_id, old_version)
            steps.run("rollback_hand_off", lambda: hand_off(ctx, op, back_to, end_offsets))
            back = start(back_to, "rollback_")
        except OperationFailed as again:
            raise OperationFailed(
                f"update to version {new_version} failed: {exc}; starting version {old_version} "
                f"again at the drained offsets failed too: {again}. The job is down; its "
                "startpoints at the drained offsets are still set: submit a version.",
                {"rolled_back": False, "failed_run_id": failed_run, "end_offsets": end_offsets},
            ) from None
        raise OperationFailed(
            f"update to version {new_version} failed: {exc}. Rolled back: version {old_version} "
            f"runs again, fresh, from the drained offsets as run {back['run_id']}.",
            {
                "rolled_back": True,
                "failed_run_id": failed_run,
                "run_id": back["run_id"],
                "version": old_version,
                "end_offsets": end_offsets,
            },
        ) from None
    return {
        **started,
        "strategy": strategy,
        "phase": "done",
        "version": new_version,
        "previous_run_id": old_run_id,
        "previous_version": old_version,
        "end_offsets": end_offsets,
        "startpoints": detail(steps, "hand_off")["startpoints"],
        **detail(steps, "verify"),
    }


def _trial_and_standby(
    ctx: WorkerContext, op: Operation, steps: Steps, old_run_id: int, new: Target
) -> int | None:
    """Before anything stops, the new version runs a trial batch on scratch checkpoints over
    the last records the old run committed (app/worker/dry_run/scratch_copy.py::plan_trial);
    pre-warmed, inside its standby, which then waits warm for go (its standby run id). A
    version whose code fails there is refused while the old run still processes."""
    positions = committed_positions(ctx, old_run_id)
    return ready.dry_run_then_standby(
        ready.Readying(ctx, op, steps, new, fresh_plan(new), positions)
    )


def _end_old_run(
    ctx: WorkerContext,
    op: Operation,
    steps: Steps,
    strategy: str,
    old_run_id: int,
    old_version: int,
    new_version: int,
) -> dict[str, Any]:
    """Stop (stateless) or drain the old run; its end offsets, per eventlog source."""
    if strategy == "stateless":
        stop_run(ctx, old_run_id, "update", steps, float(op.params.get("timeout_seconds", 120)))
        steps.run("positions", lambda: {"end_offsets": committed_positions(ctx, old_run_id)})
        return dict(detail(steps, "positions")["end_offsets"])
    try:
        drained = drain_run(
            ctx, op.id, old_run_id, steps, float(op.params.get("timeout_seconds", 1800))
        )
    except OperationFailed as exc:
        with ctx.factory() as session:
            state = session.get(Run, old_run_id).state  # type: ignore[union-attr]
        # Stopped at a batch boundary (the drain's timeout): it starts again from there. Not
        # when cancelled: a person took the job down during the update.
        if state != states.STOPPED and not steps.load().step_done("rollback_resubmit"):
            raise  # failed while draining, or cancelled: nothing to start again
        raise restart_old_run(ctx, steps, old_run_id, old_version, new_version, exc) from None
    return dict((drained.drain or {}).get("end_offsets") or {})


def hand_off(
    ctx: WorkerContext, op: Operation, target: Target, end_offsets: dict[str, Any]
) -> dict[str, Any]:

    how = op.params.get("strategy")
    actor = Principal(f"{op.created_by} (update, {how}, operation {op.id})", Scope.OPERATE)
    with transaction(ctx.factory) as session:
        try:
            handed = startpoints.hand_off(
                session, target.job_name, target.row(session), end_offsets, actor
            )
        except TidegateError as exc:
            raise OperationFailed(
                f"the drained offsets could not be handed on: {exc.detail}"
            ) from None
        return {"startpoints": handed}


def committed_positions(ctx: WorkerContext, run_id: int) -> dict[str, Any]:
    """Where a stopped run's queries are, per eventlog source, from their checkpoints (the
    latest committed batch). A source two queries read at different places gets the lower
    offset per partition: the faster query reads a few records again rather than skip any."""

    with ctx.factory() as session:
        run = session.get(Run, run_id)
        assert run is not None
        job_name, queries = run.job.name, list(run.version.queries)
    positions: dict[str, dict[str, int]] = {}
    for spec in queries:
        path = checkpoint_path(ctx.settings.resolved_checkpoint_root, job_name, run_id, spec)
        batch = latest_commit_batch(str(path)) if path.is_dir() else None
        for index, source in enumerate(spec["sources"]):
            if source["kind"] != "eventlog":
                continue
            at: dict[str, int] = {}
            if batch is not None:
                line = read_offsets(str(path), batch)[1][index]
                at = {p: int(o) for p, o in json.loads(line).items()} if line else {}
            known = positions.setdefault(source["name"], at)
            for p in set(known) | set(at):
                known[p] = min(known.get(p, 0), at.get(p, 0))
    return positions
