"""Carrying out lifecycle operations, step by step. Each step is idempotent and its completion
is committed, so a worker killed at any point resumes the operation where it stopped."""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import update

from app.backends.base import BackendError
from app.core.db import transaction, utcnow
from app.core.errors import TidegateError
from app.operations.models import Operation
from app.runs import states
from app.runs.models import Run
from app.runs.service import lock_run, transition
from app.runtime.checkpoint import CheckpointError
from app.snapshots import transfer as snapshot_worker
from app.snapshots.export import ExportError
from app.snapshots.models import Snapshot
from app.snapshots.store import StoreError
from app.worker import dryrun
from app.worker.context import WorkerContext, fault_point
from app.worker.reconcile import reconcile_run

log = logging.getLogger(__name__)

SNAPSHOT_ERRORS = (
    snapshot_worker.SnapshotFailed,
    ExportError,
    StoreError,
    CheckpointError,
    OSError,
    ValueError,
)


# How long a drain waits for a just-started driver's runtime to call in before refusing.
RUNTIME_HELLO_SECONDS = 60.0
# How long an update waits for every query of the new run to commit its first batch.
FIRST_BATCH_SECONDS = 600.0


class LeaseLost(Exception):
    """Another worker took the operation over (our lease expired): stop touching it."""


class OperationFailed(Exception):
    def __init__(self, message: str, result: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.result = result


class Steps:
    """Runs named steps once each, committing each completion under our lease."""

    def __init__(self, ctx: WorkerContext, op_id: int) -> None:
        self.ctx = ctx
        self.op_id = op_id

    def load(self) -> Operation:
        with self.ctx.factory() as session:
            op = session.get(Operation, self.op_id)
            assert op is not None
            session.expunge(op)
            return op

    def run(self, name: str, fn: Callable[[], dict[str, Any] | None]) -> None:
        if self.load().step_done(name):
            return
        detail = fn()
        with transaction(self.ctx.factory) as session:
            op = session.get(Operation, self.op_id, with_for_update=True, populate_existing=True)
            assert op is not None
            if op.lease_owner != self.ctx.worker_id:
                raise LeaseLost(f"operation {self.op_id} is now {op.lease_owner}'s")
            op.steps = [*op.steps, {"name": name, "at": utcnow().isoformat(), "detail": detail}]
        fault_point(f"{self.load().kind}:{name}")

    def set_run(self, run_id: int) -> None:
        with transaction(self.ctx.factory) as session:
            session.execute(
                update(Operation).where(Operation.id == self.op_id).values(run_id=run_id)
            )


def wait_for_run(
    ctx: WorkerContext, run_id: int, done: Callable[[Run], bool], timeout: float, what: str
) -> Run:
    """Reconcile the run until ``done`` says so; the supervisor may be doing the same."""
    deadline = time.monotonic() + timeout
    while True:
        reconcile_run(ctx, run_id)
        with ctx.factory() as session:
            run = session.get(Run, run_id)
            assert run is not None
            session.expunge(run)
        if done(run):
            return run
        if time.monotonic() >= deadline:
            raise OperationFailed(
                f"run {run_id} did not {what} within {timeout:.0f}s (it is {run.state}); "
                "it stays under supervision."
            )
        time.sleep(ctx.poll_seconds)


def _await_started(ctx: WorkerContext, run_id: int, timeout: float) -> dict[str, Any]:
    run = wait_for_run(
        ctx, run_id, lambda r: r.state != states.SUBMITTING, timeout, "start running"
    )
    if run.state == states.RUNNING:
        return {"run_id": run.id, "backend_id": run.backend_id, "attempt": run.attempt}
    note = (
        f" It will be restarted at {run.next_restart_at.isoformat()} per the restart policy."
        if run.state == states.RESTARTING and run.next_restart_at
        else ""
    )
    raise OperationFailed(
        f"run {run.id} failed to start: {run.last_error or run.state}.{note}",
        {"run_id": run.id, "run_state": run.state},
    )


# ---- the operations ----------------------------------------------------------------------


def do_submit(ctx: WorkerContext, op: Operation, steps: Steps) -> dict[str, Any]:
    if op.params.get("snapshot") is not None or op.params.get("resume_point") is not None:
        return _submit_from_snapshot(ctx, op, steps)

    def create_run() -> dict[str, Any]:
        with transaction(ctx.factory) as session:
            current = session.get(Operation, op.id)
            assert current is not None
            if current.run_id is not None:  # created before a crash, recorded with the step
                return {"run_id": current.run_id}
            from app.jobs.models import Job, JobVersion

            job = session.get(Job, op.job_id, with_for_update=True)
            assert job is not None
            version = (
                session.query(JobVersion)
                .filter_by(job_id=job.id, number=op.params["version"])
                .one()
            )
            run = Run(
                job_id=job.id,
                version_id=version.id,
                state=states.SUBMITTING,
                attempt=0,
                failures=0,
                created_by=op.created_by,
                progress={},
            )
            session.add(run)
            session.flush()
            job.current_run_id = run.id
            job.state = states.SUBMITTING
            current.run_id = run.id
            return {"run_id": run.id}

    steps.run("create_run", create_run)
    run_id = steps.load().run_id
    assert run_id is not None
    steps.run("await_submitted", lambda: _await_submitted(ctx, run_id, op))
    return _await_started(ctx, run_id, float(op.params.get("timeout_seconds", 600)))


def _await_submitted(ctx: WorkerContext, run_id: int, op: Operation) -> dict[str, Any]:
    run = wait_for_run(
        ctx,
        run_id,
        lambda r: r.backend_id is not None or r.state != states.SUBMITTING,
        float(op.params.get("timeout_seconds", 600)),
        "reach the backend",
    )
    return {"backend_id": run.backend_id, "tag": run.tag}


def _stop_run(
    ctx: WorkerContext, run_id: int, reason: str, steps: Steps, timeout: float, prefix: str = ""
) -> Run:
    def request() -> dict[str, Any]:
        with transaction(ctx.factory) as session:
            run = lock_run(session, run_id)
            assert run is not None
            if run.state == states.RESTARTING:
                # Waiting out a backoff: nothing runs, so it simply stops here.
                to = states.CANCELLED if reason == "cancel" else states.STOPPED
                transition(
                    session,
                    run,
                    to,
                    reason=f"{reason} requested during backoff",
                    stop_reason=reason,
                )
            elif run.state in (states.SUBMITTING, states.RUNNING, states.DRAINING):
                transition(
                    session, run, states.STOPPING, reason=f"{reason} requested", stop_reason=reason
                )
            return {"run_state": run.state}

    steps.run(f"{prefix}request_stop", request)

    def graceful() -> dict[str, Any]:
        # A run whose runtime talks to us stops each query at a batch boundary when its
        # directives say stop; wait for that before reaching for kill.
        with ctx.factory() as session:
            run = session.get(Run, run_id)
            assert run is not None
            cooperative = run.runtime_seen_at is not None
        if reason == "cancel" or not cooperative:
            return {"graceful": False, "why": "cancel" if reason == "cancel" else "no runtime"}
        try:
            done = wait_for_run(
                ctx, run_id, lambda r: r.state in states.TERMINAL, timeout, "stop gracefully"
            )
            return {"graceful": True, "run_state": done.state}
        except OperationFailed:
            return {"graceful": False, "why": f"no clean stop within {timeout:.0f}s"}

    steps.run(f"{prefix}graceful_stop", graceful)

    def kill() -> dict[str, Any]:
        with ctx.factory() as session:
            run = session.get(Run, run_id)
            assert run is not None
            backend_id, state = run.backend_id, run.state
            backend = ctx.backend(run.version.cluster)
        if state == states.STOPPING:
            if backend_id is None:
                reconcile_run(ctx, run_id)  # it may have been submitted meanwhile
                with ctx.factory() as session:
                    backend_id = session.get(Run, run_id).backend_id  # type: ignore[union-attr]
            if backend_id is not None:
                backend.kill(backend_id)
        return {"backend_id": backend_id, "killed": state == states.STOPPING}

    steps.run(f"{prefix}kill", kill)
    run = wait_for_run(ctx, run_id, lambda r: r.state in states.TERMINAL, 120.0, "stop")
    steps.run(f"{prefix}stopped", lambda: {"run_state": run.state})
    return run


def do_stop(ctx: WorkerContext, op: Operation, steps: Steps) -> dict[str, Any]:
    if op.run_id is None:
        raise OperationFailed("the job had no active run when the stop was requested")
    run = _stop_run(ctx, op.run_id, op.kind, steps, float(op.params.get("timeout_seconds", 120)))
    return {"run_id": run.id, "run_state": run.state}


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
        _stop_run(ctx, run_id, "restart", steps, 120.0)

    steps.run(
        "resubmit", lambda: _resubmit_run(ctx, run_id, f"restart requested by {op.created_by}")
    )
    return _await_started(ctx, run_id, 600.0)


def _resubmit_run(ctx: WorkerContext, run_id: int, reason: str) -> dict[str, Any]:
    """A run that ended starts again from its own checkpoint, as a new attempt."""
    with transaction(ctx.factory) as session:
        run = lock_run(session, run_id)
        assert run is not None
        if run.state in states.TERMINAL:
            transition(
                session,
                run,
                states.SUBMITTING,
                reason=reason,
                attempt=run.attempt + 1,
                previous_backend_id=run.backend_id,
                backend_id=None,
                observed_state=None,
                unknown_since=None,
                running_since=None,
                stop_reason=None,
                failures=0,
            )
            from app.jobs.models import Job

            job = session.get(Job, run.job_id)
            assert job is not None
            job.current_run_id, job.state = run.id, run.state
        return {"attempt": run.attempt}


def drain_backlog(run: Run) -> dict[str, Any]:
    """Per query: records left between its last progress and the drain's end, and the
    micro-batches that still takes (the data, capped by maxRecordsPerBatch, then the marker
    batch, then for a stateful query the batch that emits its last windows)."""
    end = (run.drain or {}).get("end_offsets") or {}
    if (run.drain or {}).get("drained_at"):  # its runtime says all is done (progress may lag)
        end = {}
    backlog: dict[str, Any] = {}
    for query in run.version.queries:
        sources = (run.progress or {}).get(query["name"], {}).get("sources") or []
        per_source = {}
        data_batches = 0
        for index, source in enumerate(query["sources"]):
            target = end.get(source["name"])
            if target is None:
                continue
            if source["kind"] != "eventlog":  # bounded: its own format; AvailableNow knows
                continue
            done = (sources[index].get("end_offset") if index < len(sources) else None) or {}
            left = sum(max(0, int(o) - int(done.get(p, 0))) for p, o in target.items())
            per_source[source["name"]] = left
            limit = int(source.get("options", {}).get("maxRecordsPerBatch") or 0)
            data_batches = max(data_batches, -(-left // limit) if limit else int(left > 0))
        flush = 0 if not end else 1 + bool(query.get("stateful_operators"))
        backlog[query["name"]] = {
            "records": sum(per_source.values()),
            "batches": data_batches + flush,
            "sources": per_source,
        }
    return backlog


def _drain_run(
    ctx: WorkerContext, op_id: int, run_id: int, steps: Steps, timeout: float, prefix: str = ""
) -> Run:
    """Drain run ``run_id``: ask its runtime to fix end offsets, process up to them, flush
    every window and stop. Too slow, and it is stopped at a batch boundary instead (before
    the marker, so its checkpoint resumes exactly) and OperationFailed says so."""

    def request() -> dict[str, Any]:
        # A driver that has just started may not have called in yet: give it a moment.
        with contextlib.suppress(OperationFailed):  # refused below, with the reason
            wait_for_run(
                ctx,
                run_id,
                lambda r: r.runtime_seen_at is not None or r.state != states.RUNNING,
                min(timeout, RUNTIME_HELLO_SECONDS),
                "call in",
            )
        with transaction(ctx.factory) as session:
            run = lock_run(session, run_id)
            assert run is not None
            if run.runtime_seen_at is None:
                raise OperationFailed(
                    "this job does not run the tidegate runtime, which a drain needs "
                    "(app.runtime.control.Runtime); use stop instead"
                )
            if run.state == states.RUNNING:
                transition(
                    session,
                    run,
                    states.DRAINING,
                    reason="drain requested",
                    stop_reason="drain",
                    drain={"requested_at": utcnow().isoformat()},
                )
            elif run.state not in (states.DRAINING, states.DRAINED):
                raise OperationFailed(
                    f"run {run_id} is {run.state}, not running: there is nothing to drain",
                    {"run_id": run_id, "run_state": run.state},
                )
            return {"run_state": run.state}

    steps.run(f"{prefix}request_drain", request)
    # The timeout counts from the request, not from this worker's start: a worker that takes
    # the drain over after a crash does not grant it a fresh timeout.
    with ctx.factory() as session:
        requested = session.get(Run, run_id)
        requested_at = (requested.drain or {}).get("requested_at") if requested else None
    if requested_at:
        waited = (utcnow() - datetime.fromisoformat(requested_at)).total_seconds()
        timeout = max(0.0, timeout - waited)

    def progress(run: Run) -> bool:
        _set_result(
            ctx,
            op_id,
            {
                "run_id": run.id,
                "phase": "draining" if run.state == states.DRAINING else run.state,
                "backlog": drain_backlog(run),
                "end_offsets": (run.drain or {}).get("end_offsets"),
            },
        )
        return run.state in states.TERMINAL

    try:
        run = wait_for_run(ctx, run_id, progress, timeout, "drain")
    except OperationFailed:
        # Too slow: stop cleanly at a batch boundary instead. Nothing is lost: the next
        # start resumes from the checkpoint.
        with transaction(ctx.factory) as session:
            locked = lock_run(session, run_id)
            assert locked is not None
            if locked.state == states.DRAINING:
                transition(
                    session,
                    locked,
                    states.STOPPING,
                    reason="drain timed out",
                    stop_reason="drain-timeout",
                )
        stopped = wait_for_run(ctx, run_id, lambda r: r.state in states.TERMINAL, 300.0, "stop")
        if stopped.state == states.DRAINED:  # the marker had gone out: it drained, late
            steps.run(
                f"{prefix}drained",
                lambda: {
                    "end_offsets": (stopped.drain or {}).get("end_offsets"),
                    "late": "finished after its timeout (the drain marker had gone out)",
                },
            )
            return stopped
        raise OperationFailed(
            f"the drain did not finish within {timeout:.0f}s (backlog: "
            f"{drain_backlog(stopped)}); the run was stopped at a batch boundary instead "
            f"({stopped.state}) and can be restarted from its checkpoint",
            {"run_id": run_id, "run_state": stopped.state, "backlog": drain_backlog(stopped)},
        ) from None
    if run.state != states.DRAINED:
        raise OperationFailed(
            f"run {run_id} ended {run.state} while draining: {run.last_error or ''}".strip(),
            {"run_id": run_id, "run_state": run.state},
        )
    steps.run(f"{prefix}drained", lambda: {"end_offsets": (run.drain or {}).get("end_offsets")})
    return run


def do_drain(ctx: WorkerContext, op: Operation, steps: Steps) -> dict[str, Any]:
    if op.run_id is None:
        raise OperationFailed("the job had no running run when the drain was requested")
    timeout = float(op.params.get("timeout_seconds", 1800))
    run = _drain_run(ctx, op.id, op.run_id, steps, timeout)
    return {
        "run_id": run.id,
        "run_state": run.state,
        "phase": "drained",
        "backlog": drain_backlog(run),
        "end_offsets": (run.drain or {}).get("end_offsets"),
    }


def _set_result(ctx: WorkerContext, op_id: int, result: dict[str, Any]) -> None:
    """Progress of a long operation, visible on GET /operations/{id} while it runs."""
    with transaction(ctx.factory) as session:
        session.execute(
            update(Operation)
            .where(Operation.id == op_id, Operation.state == "running")
            .values(result=result)
        )


# ---- snapshots: export, submit from a snapshot or resume point, update ----------------------


def _detail(steps: Steps, name: str) -> dict[str, Any]:
    for step in steps.load().steps:
        if step["name"] == name:
            return dict(step.get("detail") or {})
    raise KeyError(name)


def _snapshot_failed(exc: Exception) -> OperationFailed:
    return OperationFailed(str(exc.detail) if isinstance(exc, TidegateError) else str(exc))


def _save_snapshot(
    ctx: WorkerContext, steps: Steps, snapshot_id: int, *, stop: bool, timeout: float
) -> dict[str, Any]:
    """Export (after stopping the run at a batch boundary, with ``stop``), then retention."""
    with ctx.factory() as session:
        snapshot = session.get(Snapshot, snapshot_id)
        if snapshot is None or snapshot.run_id is None:
            raise OperationFailed(f"snapshot {snapshot_id} or its run was deleted")
        run_id, name, job_id = snapshot.run_id, snapshot.name, snapshot.job_id
        run_state = session.get(Run, run_id).state  # type: ignore[union-attr]
    if stop and (run_state in states.ACTIVE or steps.load().step_done("request_stop")):
        run_state = _stop_run(ctx, run_id, "snapshot", steps, timeout).state

    def export() -> dict[str, Any]:
        def progress(figures: dict[str, Any]) -> None:
            # Bytes and files copied so far, on the operation while it runs (--wait shows it).
            _set_result(ctx, steps.op_id, {"snapshot": name, "run_id": run_id, **figures})

        try:
            return snapshot_worker.export(ctx.factory, ctx.settings, snapshot_id, progress)
        except SNAPSHOT_ERRORS as exc:
            raise _snapshot_failed(exc) from exc

    def retention() -> dict[str, Any]:
        try:
            return snapshot_worker.retention_and_gc(ctx.factory, ctx.settings, job_id, snapshot_id)
        except SNAPSHOT_ERRORS as exc:  # the snapshot is made; tidy up next time
            log.warning("snapshot retention/gc failed: %s", exc)
            return {"error": str(exc)}

    steps.run("export", export)
    steps.run("retention", retention)
    return {"snapshot": name, "run_id": run_id, "run_state": run_state, **_detail(steps, "export")}


def do_snapshot(ctx: WorkerContext, op: Operation, steps: Steps) -> dict[str, Any]:
    try:
        snapshot_id = snapshot_worker.snapshot_for_operation(ctx.factory, op.id)
    except snapshot_worker.SnapshotFailed as exc:
        raise OperationFailed(str(exc)) from None
    try:
        return _save_snapshot(
            ctx,
            steps,
            snapshot_id,
            stop=bool(op.params.get("stop")),
            timeout=float(op.params.get("timeout_seconds", 120)),
        )
    except OperationFailed as exc:
        snapshot_worker.mark_failed(ctx.factory, snapshot_id, str(exc))
        raise


def _plan(
    ctx: WorkerContext,
    op: Operation,
    version_number: int,
    *,
    snapshot: str | None = None,
    snapshot_job: str | None = None,
    resume_point: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The plan again, on the worker: the catalog may have changed since the API checked."""
    from app.jobs.models import Job
    from app.jobs.service import get_version
    from app.resume_points import service as resume_points
    from app.resume_points.schemas import ResumePointModel

    with ctx.factory() as session:
        job = session.get(Job, op.job_id)
        assert job is not None
        try:
            version = get_version(session, job.name, version_number)
            plan = resume_points.plan_for_request(
                session,
                ctx.settings,
                job,
                version,
                snapshot=snapshot,
                snapshot_job=snapshot_job,
                resume_point=(
                    ResumePointModel.validate_python(resume_point) if resume_point else None
                ),
            )
            resume_points.require_compatible(plan, (snapshot and f"snapshot '{snapshot}'") or "it")
        except TidegateError as exc:
            raise OperationFailed(exc.detail, {"problems": exc.extra.get("problems")}) from None
        return plan.to_json()


def _live_plan(
    ctx: WorkerContext, op: Operation, version_number: int, run_id: int
) -> dict[str, Any]:
    """The plan by name from a run's live checkpoints (its latest committed batches)."""
    from app.jobs.models import Job
    from app.jobs.service import get_version
    from app.resume_points import service as resume_points

    with ctx.factory() as session:
        job = session.get(Job, op.job_id)
        run = session.get(Run, run_id)
        assert job is not None and run is not None
        try:
            version = get_version(session, job.name, version_number)
            plan = resume_points.plan_from_run(session, ctx.settings, version, run)
            resume_points.require_compatible(plan, f"the state of run {run_id}")
        except TidegateError as exc:
            raise OperationFailed(exc.detail, {"problems": exc.extra.get("problems")}) from None
        return plan.to_json()


def _create_planned_run(
    ctx: WorkerContext, op: Operation, run_id: int, version_number: int, plan: dict[str, Any]
) -> dict[str, Any]:
    from app.jobs.models import Job, JobVersion

    with transaction(ctx.factory) as session:
        if session.get(Run, run_id) is not None:  # created before a crash
            return {"run_id": run_id}
        job = session.get(Job, op.job_id, with_for_update=True)
        assert job is not None
        version = session.query(JobVersion).filter_by(job_id=job.id, number=version_number).one()
        session.add(
            Run(
                id=run_id,
                job_id=job.id,
                version_id=version.id,
                state=states.SUBMITTING,
                attempt=0,
                failures=0,
                created_by=op.created_by,
                progress={},
            )
        )
        session.flush()
        snapshot_worker.record_uses(session, run_id, plan)
        job.current_run_id, job.state = run_id, states.SUBMITTING
        session.execute(update(Operation).where(Operation.id == op.id).values(run_id=run_id))
        return {"run_id": run_id, "version": version_number}


def _start_planned(
    ctx: WorkerContext,
    op: Operation,
    steps: Steps,
    plan: dict[str, Any],
    version_number: int,
    prefix: str = "",
) -> dict[str, Any]:
    """Reserve the run's id, restore its checkpoints, and only then create the run: the
    supervisor never sees a run to submit whose checkpoints are not in place."""
    from sqlalchemy import text

    def reserve() -> dict[str, Any]:
        with transaction(ctx.factory) as session:
            run_id = session.scalar(text("select nextval(pg_get_serial_sequence('runs', 'id'))"))
        return {"run_id": int(run_id)}

    steps.run(f"{prefix}reserve_run", reserve)
    run_id = int(_detail(steps, f"{prefix}reserve_run")["run_id"])

    def materialise() -> dict[str, Any]:
        with ctx.factory() as session:
            from app.jobs.models import Job
            from app.jobs.service import get_version

            job = session.get(Job, op.job_id)
            assert job is not None
            job_name = job.name
            queries = list(get_version(session, job_name, version_number).queries)
        try:
            restored = snapshot_worker.materialise(
                ctx.factory, ctx.settings, plan, job_name, run_id, queries
            )
        except snapshot_worker.SnapshotFailed as exc:
            raise OperationFailed(str(exc)) from None
        return {"run_id": run_id, "queries": restored}

    steps.run(f"{prefix}materialise", materialise)
    steps.run(
        f"{prefix}create_run", lambda: _create_planned_run(ctx, op, run_id, version_number, plan)
    )
    steps.run(f"{prefix}await_submitted", lambda: _await_submitted(ctx, run_id, op))
    return _await_started(ctx, run_id, float(op.params.get("start_timeout_seconds", 600)))


def _dry_run(
    ctx: WorkerContext, op: Operation, steps: Steps, version_number: int, plan: dict[str, Any]
) -> None:
    """Run the new version's app on a scratch copy of the state it would resume (see
    app/worker/dryrun.py); OperationFailed naming query, operator and what differs when Spark
    refuses it. Skipped with ``dry_run: false`` or when no resumed query holds state."""
    from app.jobs.models import Job
    from app.jobs.service import get_version

    if op.params.get("dry_run") is False:
        steps.run("dry_run", lambda: {"skipped": "dry_run: false in the request"})
        return
    with ctx.factory() as session:
        job = session.get(Job, op.job_id)
        assert job is not None
        job_name = job.name
        version = get_version(session, job_name, version_number)
        session.expunge(version)
    scratch = dryrun.scratch_dir(ctx, job_name, op.id)

    def prepare() -> dict[str, Any]:
        try:
            return dryrun.prepare(ctx, plan, job_name, list(version.queries), scratch)
        except snapshot_worker.SnapshotFailed as exc:
            raise OperationFailed(f"the dry run's scratch copy failed: {exc}") from None

    steps.run("dry_run_prepare", prepare)
    prepared = _detail(steps, "dry_run_prepare")
    check = {q: int(b) for q, b in (prepared.get("check") or {}).items()}
    if not check:
        steps.run("dry_run", lambda: {"skipped": "no resumed query holds state"})
        return
    steps.run(
        "dry_run_submit", lambda: dryrun.submit(ctx, op.id, version, job_name, scratch, check)
    )
    submitted = _detail(steps, "dry_run_submit")

    def outcome() -> dict[str, Any]:
        result = dryrun.await_outcome(
            ctx,
            version,
            str(submitted["backend_id"]),
            float(submitted["at"]),
            scratch,
            float(op.params.get("dry_run_timeout_seconds") or dryrun.DRY_RUN_TIMEOUT_SECONDS),
        )
        if not result.get("ok"):
            lines = dryrun.problems(result, prepared.get("operators") or {})
            raise OperationFailed(
                f"version {version_number} was refused by a dry run on a scratch copy of the "
                "state it would resume (nothing was stopped): "
                + "; ".join(lines)
                + ". Keep the state's operators and schemas, or start those queries with fresh "
                "state (a resume point with mode 'initialize', or update strategy 'drain').",
                {"dry_run": result},
            )
        return {"ok": True, "checked": check, "queries": result.get("queries")}

    try:
        steps.run("dry_run", outcome)
    except OperationFailed:
        dryrun.cleanup(scratch)
        raise
    dryrun.cleanup(scratch)  # (a temporary backend error keeps it: the step resumes)


def _submit_from_snapshot(ctx: WorkerContext, op: Operation, steps: Steps) -> dict[str, Any]:
    version_number = int(op.params["version"])
    steps.run(
        "plan",
        lambda: _plan(
            ctx,
            op,
            version_number,
            snapshot=op.params.get("snapshot"),
            snapshot_job=op.params.get("snapshot_job"),
            resume_point=op.params.get("resume_point"),
        ),
    )
    plan = _detail(steps, "plan")
    # Before the new run exists: nothing is running for this job (submit refuses otherwise).
    _dry_run(ctx, op, steps, version_number, plan)
    started = _start_planned(ctx, op, steps, plan, version_number)
    return {**started, "from": _sources(plan)}


def _sources(plan: dict[str, Any]) -> dict[str, Any]:
    return {
        q["query"]: (
            {k: v for k, v in q["source"].items() if k not in ("snapshot_id", "checkpoint")}
            if q.get("source")
            else {"mode": "initialize"}
        )
        for q in plan["queries"]
    }


def _committed_batches(ctx: WorkerContext, run_id: int) -> dict[str, int | None]:
    """Each query's latest committed batch, from its checkpoint (the runtime's progress when
    the checkpoint is not on this machine)."""
    from app.runtime.checkpoint import latest_commit_batch
    from app.snapshots.export import checkpoint_path

    with ctx.factory() as session:
        run = session.get(Run, run_id)
        assert run is not None
        job_name, queries = run.job.name, list(run.version.queries)
        progress = dict(run.progress or {})
    root = ctx.settings.resolved_checkpoint_root
    batches: dict[str, int | None] = {}
    for spec in queries:
        path = checkpoint_path(root, job_name, run_id, spec)
        if path.is_dir():
            batches[spec["name"]] = latest_commit_batch(str(path))
        else:
            batch = (progress.get(spec["name"]) or {}).get("batch_id")
            batches[spec["name"]] = int(batch) if batch is not None else None
    return batches


def _verify(
    ctx: WorkerContext, run_id: int, plan: dict[str, Any], seconds: float, first_batch: float
) -> dict[str, Any]:
    """The new run is verified once every query has committed its first batch past the one
    it was restored at (a fresh query: its batch 0) or, with no new input, reported itself
    idle, and it has kept running for ``seconds``.
    A failing batch kills the driver; no commit within ``first_batch`` seconds fails too, so
    the caller rolls back. ``seconds`` = 0: only that it started (no batch is awaited)."""
    if seconds <= 0:
        return {"verified": "not verified (verify_seconds = 0)"}
    restored: dict[str, int] = {
        q["query"]: int(q["source"]["batch_id"])
        if q.get("source") and q["source"].get("batch_id") is not None
        else -1
        for q in plan["queries"]
    }
    with ctx.factory() as session:
        started = session.get(Run, run_id)
        assert started is not None
        attempt = started.attempt
    begin = time.monotonic()
    deadline = begin + max(first_batch, seconds)
    while True:
        reconcile_run(ctx, run_id)
        with ctx.factory() as session:
            run = session.get(Run, run_id)
            assert run is not None
            state, error, now_attempt = run.state, run.last_error, run.attempt
            idle = _idle_since_start(run)
        if state != states.RUNNING or now_attempt != attempt:
            raise OperationFailed(
                f"run {run_id} stopped running after it started ({state}), before every query "
                f"committed its first batch: {error or 'no error'}",
                {"run_id": run_id, "run_state": state},
            )
        committed = _committed_batches(ctx, run_id)
        batches = {q: committed.get(q) for q in restored}
        waiting = sorted(q for q, b in batches.items() if b is None or b <= restored[q])
        elapsed = time.monotonic() - begin
        # A query with no new input runs no batch: Spark's idle event says it started fine.
        if elapsed >= seconds and set(waiting) <= idle:
            return {
                "verified": "every query committed its first batch past the restored one"
                + (f", or runs idle with no new input ({', '.join(waiting)})" if waiting else ""),
                "restored": restored,
                "batches": batches,
            }
        if time.monotonic() >= deadline:
            raise OperationFailed(
                f"run {run_id}: {', '.join(waiting)} did not commit a first batch past the "
                f"restored one within {max(first_batch, seconds):.0f}s (committed: {batches}, "
                f"restored at: {restored})",
                {"run_id": run_id, "run_state": state, "batches": batches},
            )
        time.sleep(ctx.poll_seconds)


def _idle_since_start(run: Run) -> set[str]:
    """Queries whose runtime reported Spark's idle event since this attempt started."""
    if run.running_since is None:
        return set()
    idle = set()
    for query, progress in (run.progress or {}).items():
        at = (progress or {}).get("idle_at")
        if at and datetime.fromisoformat(at) >= run.running_since:
            idle.add(query)
    return idle


def _verify_bounds(op: Operation) -> tuple[float, float]:
    return (
        float(op.params.get("verify_seconds", 20)),
        float(op.params.get("first_batch_seconds") or FIRST_BATCH_SECONDS),
    )


def _restart_old_run(
    ctx: WorkerContext,
    steps: Steps,
    old_run_id: int,
    old_version: int,
    new_version: int,
    why: Exception,
) -> OperationFailed:
    """An update failed before anything new started: the old run starts again from its own
    checkpoint (stopped at a batch boundary, so it resumes exactly)."""
    steps.run(
        "rollback_resubmit",
        lambda: _resubmit_run(ctx, old_run_id, f"update to version {new_version} failed"),
    )
    _await_started(ctx, old_run_id, 600.0)
    return OperationFailed(
        f"update to version {new_version} failed before anything new started: {why}. "
        f"Run {old_run_id} (version {old_version}) was started again from its own checkpoint.",
        {"rolled_back": True, "run_id": old_run_id, "version": old_version},
    )


def _fresh_plan(ctx: WorkerContext, op: Operation, version_number: int) -> dict[str, Any]:
    """Every query of ``version_number`` starts with a new, empty checkpoint."""
    from app.jobs.models import Job
    from app.jobs.service import get_version

    with ctx.factory() as session:
        job = session.get(Job, op.job_id)
        assert job is not None
        version = get_version(session, job.name, version_number)
        return {
            "queries": [{"query": q["name"], "source": None, "parts": []} for q in version.queries]
        }


def _hand_off(
    ctx: WorkerContext, op: Operation, version_number: int, end_offsets: dict[str, Any]
) -> dict[str, Any]:
    from app.auth.service import Principal, Scope
    from app.jobs.models import Job
    from app.jobs.service import get_version
    from app.startpoints import service as startpoints

    how = op.params.get("strategy")
    actor = Principal(f"{op.created_by} (update, {how}, operation {op.id})", Scope.OPERATE)
    with transaction(ctx.factory) as session:
        job = session.get(Job, op.job_id)
        assert job is not None
        version = get_version(session, job.name, version_number)
        try:
            handed = startpoints.hand_off(session, job.name, version, end_offsets, actor)
        except TidegateError as exc:
            raise OperationFailed(
                f"the drained offsets could not be handed on: {exc.detail}"
            ) from None
        return {"startpoints": handed}


def _has_committed(ctx: WorkerContext, run_id: int) -> bool:
    """Did any query of the run commit a batch (so it consumed its startpoints)?"""
    from app.runtime.checkpoint import latest_commit_batch
    from app.snapshots.export import checkpoint_path

    with ctx.factory() as session:
        run = session.get(Run, run_id)
        assert run is not None
        job_name, queries = run.job.name, list(run.version.queries)
    root = ctx.settings.resolved_checkpoint_root
    for spec in queries:
        path = checkpoint_path(root, job_name, run_id, spec)
        if path.is_dir() and latest_commit_batch(str(path)) is not None:
            return True
    return False


def _committed_positions(ctx: WorkerContext, run_id: int) -> dict[str, Any]:
    """Where a stopped run's queries are, per eventlog source, from their checkpoints (the
    latest committed batch). A source two queries read at different places gets the lower
    offset per partition: the faster query reads a few records again rather than skip any."""
    from app.runtime.checkpoint import latest_commit_batch, read_offsets
    from app.snapshots.export import checkpoint_path

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


def _update_fresh(ctx: WorkerContext, op: Operation, steps: Steps) -> dict[str, Any]:
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
    old_run_id = int(_detail(steps, "target")["run_id"])
    old_version = int(_detail(steps, "target")["version"])
    new_version = int(op.params["version"])
    if strategy == "stateless":
        _stop_run(ctx, old_run_id, "update", steps, float(op.params.get("timeout_seconds", 120)))
        steps.run("positions", lambda: {"end_offsets": _committed_positions(ctx, old_run_id)})
        end_offsets = _detail(steps, "positions")["end_offsets"]
    else:
        try:
            drained = _drain_run(
                ctx, op.id, old_run_id, steps, float(op.params.get("timeout_seconds", 1800))
            )
        except OperationFailed as exc:
            with ctx.factory() as session:
                state = session.get(Run, old_run_id).state  # type: ignore[union-attr]
            if state not in (states.STOPPED, states.CANCELLED) and not steps.load().step_done(
                "rollback_resubmit"
            ):
                raise  # failed while draining: nothing to start again from
            raise _restart_old_run(ctx, steps, old_run_id, old_version, new_version, exc) from None
        end_offsets = (drained.drain or {}).get("end_offsets") or {}
    steps.run("hand_off", lambda: _hand_off(ctx, op, new_version, end_offsets))

    def start(version_number: int, prefix: str = "") -> dict[str, Any]:
        steps.run(f"{prefix}plan", lambda: _fresh_plan(ctx, op, version_number))
        plan = _detail(steps, f"{prefix}plan")
        started = _start_planned(ctx, op, steps, plan, version_number, prefix)
        steps.run(
            f"{prefix}verify",
            lambda: _verify(ctx, started["run_id"], plan, *_verify_bounds(op)),
        )
        return started

    try:
        started = start(new_version)
    except OperationFailed as exc:
        failed_run = (
            _detail(steps, "reserve_run").get("run_id")
            if steps.load().step_done("reserve_run")
            else None
        )
        if failed_run is not None:
            with ctx.factory() as session:
                failed = session.get(Run, failed_run)
                active = failed is not None and failed.state in states.ACTIVE
            if active or steps.load().step_done("rollback_request_stop"):
                _stop_run(ctx, failed_run, "rollback", steps, 60.0, prefix="rollback_")
            if _has_committed(ctx, failed_run):
                # Its startpoints are spent and its output written: starting the old version
                # at the drained offsets would process those records twice.
                raise OperationFailed(
                    f"update to version {new_version} failed after its run {failed_run} had "
                    f"committed batches: {exc}. Not rolled back (version {old_version} would "
                    f"process those records again); restart run {failed_run} or submit a version.",
                    {"rolled_back": False, "failed_run_id": failed_run, "end_offsets": end_offsets},
                ) from None
        try:
            steps.run("rollback_hand_off", lambda: _hand_off(ctx, op, old_version, end_offsets))
            back = start(old_version, "rollback_")
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
        "startpoints": _detail(steps, "hand_off")["startpoints"],
        **_detail(steps, "verify"),
    }


def do_update(ctx: WorkerContext, op: Operation, steps: Steps) -> dict[str, Any]:
    """Hazelcast's job update: save-snapshot, start the new version from it; if that fails,
    start the old version again from the same snapshot and say so."""
    if op.params.get("strategy") in ("drain", "stateless"):
        return _update_fresh(ctx, op, steps)
    try:
        snapshot_id = snapshot_worker.snapshot_for_operation(ctx.factory, op.id)
    except snapshot_worker.SnapshotFailed as exc:
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
    if not steps.load().step_done("request_stop"):
        try:
            steps.run("dry_run_plan", lambda: _live_plan(ctx, op, new_version, old_run_id))
            _dry_run(ctx, op, steps, new_version, _detail(steps, "dry_run_plan"))
        except OperationFailed as exc:
            snapshot_worker.mark_failed(ctx.factory, snapshot_id, str(exc))
            raise
    try:
        saved = _save_snapshot(
            ctx, steps, snapshot_id, stop=True, timeout=float(op.params.get("timeout_seconds", 120))
        )
    except OperationFailed as exc:
        snapshot_worker.mark_failed(ctx.factory, snapshot_id, str(exc))
        raise _restart_old_run(ctx, steps, old_run_id, old_version, new_version, exc) from None

    def rollback(why: str, failed_run: int | None) -> OperationFailed:
        if failed_run is not None:
            with ctx.factory() as session:
                failed = session.get(Run, failed_run)
                active = failed is not None and failed.state in states.ACTIVE
            if active or steps.load().step_done("rollback_request_stop"):
                _stop_run(ctx, failed_run, "rollback", steps, 60.0, prefix="rollback_")
        try:
            steps.run("rollback_plan", lambda: _plan(ctx, op, old_version, snapshot=name))
            back = _start_planned(
                ctx, op, steps, _detail(steps, "rollback_plan"), old_version, "rollback_"
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
        steps.run("plan", lambda: _plan(ctx, op, new_version, snapshot=name))
    except OperationFailed as exc:
        raise rollback(str(exc), None) from None
    plan = _detail(steps, "plan")
    try:
        started = _start_planned(ctx, op, steps, plan, new_version)
        steps.run(
            "verify",
            lambda: _verify(ctx, started["run_id"], plan, *_verify_bounds(op)),
        )
    except OperationFailed as exc:
        reserved = (
            _detail(steps, "reserve_run").get("run_id")
            if steps.load().step_done("reserve_run")
            else None
        )
        raise rollback(str(exc), reserved) from None
    return {
        **started,
        "version": new_version,
        "previous_run_id": old_run_id,
        "previous_version": old_version,
        "snapshot": name,
        "snapshot_bytes": saved.get("size_bytes"),
        "from": _sources(plan),
        **_detail(steps, "verify"),
    }


HANDLERS: dict[str, Callable[[WorkerContext, Operation, Steps], dict[str, Any]]] = {
    "submit": do_submit,
    "stop": do_stop,
    "cancel": do_stop,
    "restart": do_restart,
    "drain": do_drain,
    "snapshot": do_snapshot,
    "update": do_update,
}


def execute(ctx: WorkerContext, op_id: int) -> None:
    steps = Steps(ctx, op_id)
    op = steps.load()
    handler = HANDLERS.get(op.kind)
    try:
        if handler is None:
            raise OperationFailed(f"this worker cannot carry out '{op.kind}' operations yet")
        result: dict[str, Any] | None = handler(ctx, op, steps)
        state, error = "succeeded", None
    except LeaseLost as exc:
        log.warning("%s", exc)
        return
    except OperationFailed as exc:
        state, error, result = "failed", str(exc), exc.result
    except BackendError as exc:
        if exc.temporary:
            _retry_later(ctx, op_id, exc)
            return
        state, error, result = "failed", f"the Spark backend refused: {exc}", None
    _finish(ctx, op_id, state, error, result)


# A backend that keeps answering with temporary errors (down, 5xx, not ready) is retried with
# exponential backoff — 1 s, 2 s, 4 s … capped at a minute — for about eight minutes in all,
# then the operation fails with the last error. Every step is idempotent, so a retry resumes.
RETRY_MAX_ATTEMPTS = 12
RETRY_MAX_DELAY_SECONDS = 60.0


def retry_delay(attempt: int) -> float:
    """Seconds before claim number ``attempt + 1`` after ``attempt`` temporary failures."""
    return float(min(RETRY_MAX_DELAY_SECONDS, 2 ** max(0, attempt - 1)))


def _retry_later(ctx: WorkerContext, op_id: int, exc: BackendError) -> None:
    """Release the operation until its backoff has passed (the claim query takes it up
    again then), showing why on the operation; past the last attempt, fail it."""
    with transaction(ctx.factory) as session:
        op = session.get(Operation, op_id, with_for_update=True, populate_existing=True)
        assert op is not None
        if op.lease_owner != ctx.worker_id:
            return
        if op.attempts >= RETRY_MAX_ATTEMPTS:
            op.state, op.finished_at = "failed", utcnow()
            op.error = (
                f"the Spark backend kept failing ({op.attempts} attempts with backoff): {exc}. "
                "Check the cluster is up and reachable from the worker, then retry the request."
            )
            op.lease_owner, op.lease_expires_at = None, None
            log.warning("operation %s failed for good: %s", op_id, exc)
            return
        delay = retry_delay(op.attempts)
        op.error = (
            f"temporary backend error (attempt {op.attempts}, retrying in {delay:.0f}s): {exc}"
        )
        op.lease_owner = None
        op.lease_expires_at = utcnow() + timedelta(seconds=delay)
    log.warning("operation %s: temporary backend error, retrying in %.0fs: %s", op_id, delay, exc)


def _finish(
    ctx: WorkerContext, op_id: int, state: str, error: str | None, result: dict[str, Any] | None
) -> None:
    with transaction(ctx.factory) as session:
        op = session.get(Operation, op_id, with_for_update=True, populate_existing=True)
        assert op is not None
        if op.lease_owner != ctx.worker_id:
            return
        op.state, op.error, op.result = state, error, result
        op.finished_at = utcnow()
        op.lease_owner, op.lease_expires_at = None, None
    log.info("operation %s %s%s", op_id, state, f": {error}" if error else "")
