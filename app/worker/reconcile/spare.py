"""The reconciler's pass over a run's spare (app/runs/spares.py says what a spare is): submit
one when the run wants it, watch it, and drop it (killing its driver) when it is of no more
use or has died. Adoption (the spare becoming the run's next attempt) is part of the run's
own submission, in reconcile.py, after the previous attempt is fenced.

A spare of a run with state *dry-runs* before it waits: it runs the job's code on a scratch
copy of the run's latest committed state (as an update's dry run does, with noop sinks), so
that at go the plan's code is generated, its source planned and its state store classes
loaded; it removes the copy itself once done. The copy is best effort: without it the spare
only warms up.

Like every reconciler step it is safe to repeat after a crash at any point: the intent is
committed before the backend is called, and a spare whose submission may have gone out is
looked up by its tag (never used twice) before another is submitted."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from sqlalchemy.orm import Session

from app.auth.service import Scope, create_run_token, spare_token_name
from app.backends.base import AppState, Backend, BackendError
from app.core.db import transaction, utcnow
from app.core.errors import TidegateError
from app.core.paths import checkpoint_path, read_checkpoint, spare_scratch_dir
from app.resume_points import service as resume_points
from app.runs import spares
from app.runs.models import Run
from app.runs.service import lock_run
from app.snapshots.errors import SnapshotFailed
from app.worker.core import submission
from app.worker.core.context import WorkerContext, fault_point
from app.worker.dry_run import driver, scratch_copy
from tidegate_runtime.checkpoints.checkpoint import latest_commit_batch

log = logging.getLogger(__name__)

# How long a new run's hot spare may wait for the run's first commit (to dry-run on its state).
DRY_RUN_WAIT = timedelta(seconds=120)


def reconcile_spare(ctx: WorkerContext, run_id: int) -> None:
    """One pass over the run's spare; the caller holds the run's guard. A backend error is the
    spare's alone (logged): the run itself is not touched."""
    with ctx.factory() as session:
        run = session.get(Run, run_id)
        if run is None or (run.spare_attempt is None and not spares.due(run)):
            return  # the common case, decided without a lock
        if run.spare_attempt is None and _state_to_come(ctx, session, run):
            return
        backend = ctx.backend(run.version.cluster)
    dropped: str | None = None
    with transaction(ctx.factory) as session:
        run = lock_run(session, run_id)
        assert run is not None
        watched = run.spare_backend_id
        if run.spare_attempt is not None and not spares.keep(run):
            dropped = run.spare_tag
            spares.drop(session, run, f"the run is {run.state} at attempt {run.attempt}")
        elif run.spare_attempt is None and not spares.due(run):
            return
    if dropped is not None:  # its driver is killed (it also hears stop, and exits)
        _kill(backend, watched or _find(backend, dropped), run_id)
        _forget_dry_run(ctx, run_id, dropped)
    elif watched is not None:
        _observe(ctx, run_id, backend, watched)
    else:  # a new one, or one a worker that died may have submitted
        _submit(ctx, run_id, backend)


def _observe(ctx: WorkerContext, run_id: int, backend: Backend, backend_id: str) -> None:
    status = backend.status(backend_id)
    if not status.state.terminal:
        return
    with transaction(ctx.factory) as session:
        run = lock_run(session, run_id)
        assert run is not None
        if run.spare_backend_id != backend_id:
            return
        tag = run.spare_tag
        detail = status.message or status.raw_state
        spares.drop(session, run, f"its driver ended: {detail}", failed=True)
    _forget_dry_run(ctx, run_id, tag)


def _submit(ctx: WorkerContext, run_id: int, backend: Backend) -> None:
    with transaction(ctx.factory) as session:
        run = lock_run(session, run_id)
        assert run is not None
        look_first = run.spare_attempt is not None
        if not look_first:
            spares.intend(run)  # committed before the backend is called
        tag = run.spare_tag
    found = backend.find(tag) if look_first else None
    if found is None:
        dry_run = _dry_run_copy(ctx, run_id, tag)
        with transaction(ctx.factory) as session:
            run = lock_run(session, run_id)
            assert run is not None
            # Its own token, beside the current attempt's (which must keep working).
            secret = create_run_token(
                session, run.id, spare_token_name(run.id, run.spare_seq), Scope.BOOTSTRAP
            )
            spec = submission.run_spec(ctx, run, secret, spare=True, dry_run=dry_run)
        fault_point("reconcile:before_spare_submit")
        try:
            found = backend.submit(spec)
        except BackendError as exc:
            if exc.temporary:
                raise  # the next pass looks it up, then submits
            with transaction(ctx.factory) as session:
                run = lock_run(session, run_id)
                assert run is not None
                spares.drop(session, run, f"the backend refused it: {exc}", failed=True)
            return
        log.info("run %s: submitted spare %s as %s", run_id, tag, found)
    with transaction(ctx.factory) as session:
        run = lock_run(session, run_id)
        assert run is not None
        if run.spare_tag == tag and run.spare_attempt is not None:
            spares.submitted(run, found)
        else:  # dropped meanwhile: it goes too
            _kill(backend, found, run_id)


def _state_to_come(ctx: WorkerContext, session: Session, run: Run) -> bool:
    """A hot spare of a run that holds state waits until the checkpoint holds a committed
    batch and the run's current attempt has run (a batch committed, or idle), at most
    ``DRY_RUN_WAIT`` after it started running: so that it has state to dry-run on, and so
    that after a crash its JVM does not start beside the recovering driver's first batch, its
    slowest (the crashed attempt's commits are there already). A spare an operation asked
    for never waits."""
    if run.spare_requested or run.running_since is None:
        return False
    if utcnow() - run.running_since > DRY_RUN_WAIT:
        return False
    stateful = [q for q in run.version.queries if q.get("stateful_operators")]
    if not stateful:
        return False
    root = ctx.settings.resolved_checkpoint_root
    committed = False
    for q in stateful:
        with read_checkpoint(root, checkpoint_path(root, run.job.name, run.id, q)) as checkpoint:
            committed = committed or latest_commit_batch(checkpoint) is not None
    return not (committed and spares.attempt_has_run(session, run, (q["name"] for q in stateful)))


def _dry_run_copy(ctx: WorkerContext, run_id: int, tag: str) -> dict[str, Any] | None:
    """A scratch copy of the run's latest committed state for the spare's dry run, or
    None (no state yet, or the copy failed: the spare then only warms up)."""
    with ctx.factory() as session:
        run = session.get(Run, run_id)
        assert run is not None
        job_name, queries = run.job.name, list(run.version.queries)
        try:
            plan = resume_points.plan_from_run(session, ctx.settings, run.version, run).to_json()
        except TidegateError as exc:
            log.warning("run %s: spare %s will not dry-run (%s)", run_id, tag, exc.detail)
            return None
    scratch = spare_scratch_dir(ctx.settings.scratch_root, job_name, tag)
    try:
        prepared = scratch_copy.make_copy(ctx, plan, job_name, queries, scratch)
    except (SnapshotFailed, OSError) as exc:
        log.warning("run %s: spare %s will not dry-run (%s)", run_id, tag, exc)
        scratch_copy.cleanup(scratch)
        return None
    if not prepared.get("check"):
        scratch_copy.cleanup(scratch)
        return None
    return {
        "scratch": str(scratch),
        "check": prepared["check"],
        "timeout": driver.IN_DRIVER_TIMEOUT_SECONDS,
    }


def _forget_dry_run(ctx: WorkerContext, run_id: int, tag: str) -> None:
    """A dropped spare's scratch copy, if it died before removing it itself."""
    with ctx.factory() as session:
        run = session.get(Run, run_id)
        job_name = run.job.name if run is not None else None
    if job_name is not None:
        scratch_copy.cleanup(spare_scratch_dir(ctx.settings.scratch_root, job_name, tag))


def _find(backend: Backend, tag: str) -> str | None:
    try:
        return backend.find(tag)
    except BackendError as exc:  # it hears stop on its long-poll and exits by itself
        log.warning("spare %s: cannot look it up (%s); it exits by itself", tag, exc)
        return None


def _kill(backend: Backend, backend_id: str | None, run_id: int) -> None:
    if backend_id is None:
        return
    try:
        state = backend.status(backend_id).state
        if not (state.terminal or state == AppState.UNKNOWN):
            backend.kill(backend_id)
            log.info("run %s: killed spare %s", run_id, backend_id)
    except BackendError as exc:
        log.warning("run %s: spare %s not killed (%s); it exits by itself", run_id, backend_id, exc)
