"""update with strategy ``drain`` or ``stateless``: the new version starts on fresh
checkpoints at the old run's end offsets; on failure the old version starts again there.
Before anything stops, the new version runs a trial batch over the last records the old run
committed (pre-warmed: in its standby), so a version whose code fails is refused while the old
run still processes.

The steps are the list ``UPDATE_ON_FRESH_STATE`` at the end of this module, read top to
bottom; each is recorded, and a worker resuming the update skips what is done."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.auth.service import Principal, Scope
from app.core import run_states as states
from app.core.db import transaction
from app.core.errors import TidegateError
from app.core.paths import checkpoint_path, read_checkpoint
from app.jobs import sources
from app.operations.models import Operation
from app.runs.models import Run
from app.startpoints import service as startpoints
from app.worker.core.context import WorkerContext
from app.worker.core.steps import (
    OperationFailed,
    Part,
    Phase,
    Step,
    Steps,
    detail,
    planned,
    run_phases,
)
from app.worker.core.version import Target, read_target
from app.worker.kinds import new_version
from app.worker.kinds.new_version import NewVersion
from app.worker.runs.control import (
    drain_run,
    new_run_of_a_failed_update,
    restart_old_run,
    stop_for_rollback,
    stop_run,
)
from app.worker.runs.plan import fresh_plan
from app.worker.runs.start import start_planned
from app.worker.runs.verify import committed_batches, verify_for
from app.worker.standby import ready, standby
from tidegate_runtime.checkpoints.checkpoint import latest_commit_batch, read_offsets
from tidegate_runtime.sources.positions import parse_line


def update_on_fresh_state(ctx: WorkerContext, op: Operation, steps: Steps) -> dict[str, Any]:
    """The new version starts on fresh checkpoints, with OFFSET startpoints exactly where the
    old run ended, so no record is lost or read twice although no state is carried over.
    ``drain`` (Samza/Dataflow's drain-and-replace): the old run drains first, every window
    flushed, for an incompatible change of state. ``stateless``: the old run (which holds no
    state) just stops at a batch boundary."""
    update = FreshUpdate(ctx, op, steps, read_target(ctx, op.job_id, int(op.params["version"])))
    # Phase 1 runs again on a resume (its steps skip what is done) and sets the standby.
    return update.result(run_phases(steps, update, UPDATE_ON_FRESH_STATE))


@dataclass
class FreshUpdate(NewVersion):
    """What every step of one update on fresh state reads: the version to start
    (``NewVersion``), and (once the ``target`` step recorded them) the run it replaces and
    that run's version."""

    strategy: str = field(init=False)

    def __post_init__(self) -> None:
        self.strategy = str(self.op.params.get("strategy"))

    @property
    def old_run_id(self) -> int:
        return int(detail(self.steps, "target")["run_id"])

    @property
    def old_version(self) -> int:
        return int(detail(self.steps, "target")["version"])

    @property
    def end_offsets(self) -> dict[str, Any]:
        """Where the old run ended, per eventlog source (recorded when it stopped or drained)."""
        ended = "positions" if self.strategy == "stateless" else "drained"
        return dict(detail(self.steps, ended).get("end_offsets") or {})

    def result(self, done: dict[str, dict[str, Any]]) -> dict[str, Any]:
        """What the operation returns, from what its steps recorded (``done``)."""
        return {
            **self.started,
            "strategy": self.strategy,
            "phase": "done",
            "version": self.target.number,
            "previous_run_id": self.old_run_id,
            "previous_version": self.old_version,
            "end_offsets": self.end_offsets,
            "startpoints": done["hand_off"]["startpoints"],
            **done["verify"],
        }


# 1. Before anything stops ------------------------------------------------------------------


def _old_run(u: FreshUpdate) -> dict[str, Any]:
    # Recorded first: the operation's run_id moves to the new run once it exists.
    assert u.op.run_id is not None
    with u.ctx.factory() as session:
        old = session.get(Run, u.op.run_id)
        assert old is not None
        return {"run_id": old.id, "version": old.version.number}


def _trial_and_standby(u: FreshUpdate) -> None:
    """The new version runs a trial batch on scratch checkpoints over the last records the
    old run committed (app/worker/dry_run/scratch_copy.py::plan_trial); pre-warmed, inside
    its standby, which then waits warm for go. A version whose code fails there is refused
    while the old run still processes."""
    positions = committed_positions(u.ctx, u.old_run_id)
    readying = ready.Readying(u.ctx, u.op, u.steps, u.target, fresh_plan(u.target), positions)
    u.standby_run = ready.dry_run_then_standby(readying)


# 2. The old run ends -----------------------------------------------------------------------


def _end_old_run(u: FreshUpdate) -> None:
    """Stop (stateless: ``request_stop`` … ``stopped``, then ``positions``) or drain
    (``request_drain``, ``drained``) the old run. A drain that ran out of time stopped the run
    at a batch boundary instead: it starts again from there (``rollback_resubmit``)."""
    if u.strategy == "stateless":
        timeout = float(u.op.params.get("timeout_seconds", 120))
        stop_run(u.ctx, u.old_run_id, "update", u.steps, timeout)
        u.steps.run("positions", lambda: {"end_offsets": committed_positions(u.ctx, u.old_run_id)})
        return
    try:
        drain_run(
            u.ctx,
            u.op.id,
            u.old_run_id,
            u.steps,
            float(u.op.params.get("timeout_seconds", 1800)),
        )
    except OperationFailed as exc:
        with u.ctx.factory() as session:
            state = session.get(Run, u.old_run_id).state  # type: ignore[union-attr]
        # Stopped at a batch boundary (the drain's timeout): it starts again from there. Not
        # when cancelled: a person took the job down during the update.
        if state != states.STOPPED and not u.steps.load().step_done("rollback_resubmit"):
            raise  # failed while draining, or cancelled: nothing to start again
        raise restart_old_run(
            u.ctx, u.steps, u.old_run_id, u.old_version, u.target.number, exc
        ) from None


def _hand_off(u: FreshUpdate) -> dict[str, Any]:
    return hand_off(u.ctx, u.op, u.target, u.end_offsets)


def _standby_released(u: FreshUpdate, exc: OperationFailed) -> OperationFailed:
    standby.release(u.ctx, u.standby_run, "the old run did not end cleanly")
    return exc


# 3. The start ------------------------------------------------------------------------------


def _plan(u: FreshUpdate) -> dict[str, Any]:
    # The API stored the new version's fresh plan (nothing in it to re-validate: no sources).
    return dict(u.op.plan or fresh_plan(u.target))


def _roll_back(u: FreshUpdate, exc: OperationFailed) -> OperationFailed:
    """The new version failed: it stops, and the old version starts again, fresh, from the
    same end offsets (``rollback_hand_off``, ``rollback_plan`` …) — unless the new run has
    committed batches: its startpoints are spent and its output written."""
    new_version, old_version, end_offsets = u.target.number, u.old_version, u.end_offsets
    failed_run = new_run_of_a_failed_update(u.steps, u.standby_run)
    stop_for_rollback(u.ctx, u.steps, failed_run)
    if failed_run is not None and any(
        b is not None for b in committed_batches(u.ctx, failed_run).values()
    ):
        # Starting the old version at the drained offsets would process those records twice.
        return OperationFailed(
            f"update to version {new_version} failed after its run {failed_run} had "
            f"committed batches: {exc}. Not rolled back (version {old_version} would "
            f"process those records again); restart run {failed_run} or submit a version.",
            {"rolled_back": False, "failed_run_id": failed_run, "end_offsets": end_offsets},
        )
    try:
        back_to = read_target(u.ctx, u.op.job_id, old_version)
        u.steps.run("rollback_hand_off", lambda: hand_off(u.ctx, u.op, back_to, end_offsets))
        u.steps.run("rollback_plan", lambda: fresh_plan(back_to))
        plan = planned(u.steps, "rollback_plan")
        back = start_planned(u.ctx, u.op, u.steps, plan, back_to, "rollback_")
        u.steps.run(
            "rollback_verify",
            lambda: verify_for(u.ctx, u.op, back["run_id"], plan),
        )
    except OperationFailed as again:
        return OperationFailed(
            f"update to version {new_version} failed: {exc}; starting version {old_version} "
            f"again at the drained offsets failed too: {again}. The job is down; its "
            "startpoints at the drained offsets are still set: submit a version.",
            {"rolled_back": False, "failed_run_id": failed_run, "end_offsets": end_offsets},
        )
    return OperationFailed(
        f"update to version {new_version} failed: {exc}. Rolled back: version {old_version} "
        f"runs again, fresh, from the drained offsets as run {back['run_id']}.",
        {
            "rolled_back": True,
            "failed_run_id": failed_run,
            "run_id": back["run_id"],
            "version": old_version,
            "end_offsets": end_offsets,
        },
    )


UPDATE_ON_FRESH_STATE: tuple[Phase[FreshUpdate], ...] = (
    Phase(
        "1. before anything stops: the run it replaces, then the new version's trial and, "
        "pre-warmed, its ready standby (app/worker/standby/ready.py::READYING)",
        (Step("target", _old_run), Part(_trial_and_standby)),
    ),
    Phase(
        "2. the old run drains (or, stateless, stops) and its end offsets become the new "
        "version's startpoints",
        (Part(_end_old_run), Step("hand_off", _hand_off)),
        on_failure=_standby_released,
    ),
    Phase(
        "3. the start: the new version on fresh checkpoints at those offsets, verified",
        (Step("plan", _plan), Part(new_version.start), Step("verify", new_version.verify_started)),
        on_failure=_roll_back,
    ),
)


FRESH_WATERMARK = (
    "none: the new version starts on fresh checkpoints without an event-time watermark, so "
    "none of the records it reads from these offsets is dropped as late in its first batch "
    "(docs/late-data.md)"
)


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
        # Said with the handoff (issue 53): what the new version's watermark does to them.
        return {"startpoints": handed, "watermark": FRESH_WATERMARK}


def committed_positions(ctx: WorkerContext, run_id: int) -> dict[str, Any]:
    """Where a stopped run's queries are, per source whose offsets can seed the next version
    (sources.py ``drain_handoff``), from their checkpoints (the latest committed batch). A
    source two queries read at different places gets the lower offset per partition: the
    faster query reads a few records again rather than skip any."""

    with ctx.factory() as session:
        run = session.get(Run, run_id)
        assert run is not None
        job_name, queries = run.job.name, list(run.version.queries)
    positions: dict[str, dict[str, int]] = {}
    for spec in queries:
        root = ctx.settings.resolved_checkpoint_root
        with read_checkpoint(root, checkpoint_path(root, job_name, run_id, spec)) as checkpoint:
            batch = latest_commit_batch(checkpoint)
            lines = read_offsets(checkpoint, batch)[1] if checkpoint and batch is not None else []
        for index, source in enumerate(spec["sources"]):
            if not sources.kind(source["kind"]).drain_handoff:
                continue
            at: dict[str, int] = {}
            if batch is not None:
                parsed = parse_line(source["kind"], lines[index], source.get("options") or {})
                at = {str(p): o for p, o in parsed.items()}
            known = positions.setdefault(source["name"], at)
            for p in set(known) | set(at):
                known[p] = min(known.get(p, 0), at.get(p, 0))
    return positions
