"""Observe what the backend says about a run, then reconcile: make the run's recorded state
true and act (submit, fence, kill on request, restart with backoff). Every pass is idempotent
and safe to repeat after a crash at any point: a submission is always looked up by its tag
first.

The reconciler is the one actor on runs (the observe -> reconcile shape of the Flink
Kubernetes operator): operations state what they want through app/runs/service.py (stopping,
draining, a kill request, a new attempt) and wait; only this module calls the backend for a
run. In a worker process one thread does it (app/worker/reconcile/reconciler.py); across
processes the ``run_guard`` advisory lock lets one pass at a time act on a run."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from app.auth.service import Scope, create_run_token, revoke_run_tokens
from app.backends.base import AppState, AppStatus, Backend, BackendError
from app.core import run_states as states
from app.core.db import transaction, utcnow
from app.runs import ending, spares
from app.runs.models import Run
from app.runs.policy import RestartPolicy
from app.runs.service import lock_run, new_attempt, transition
from app.worker.core import submission
from app.worker.core.context import WorkerContext, backend_key, fault_point, run_guard
from app.worker.reconcile.spare import reconcile_spare

log = logging.getLogger(__name__)

ERROR_LIMIT = 4000


def reconcile_run(ctx: WorkerContext, run_id: int, *, fresh: bool = True) -> str | None:
    """One pass over one run. Returns its state afterwards, or None if another worker holds it.
    ``fresh=False`` (the periodic sweep) observes the run through its cluster's listing."""
    with run_guard(ctx, run_id) as mine:
        if not mine:
            return None
        try:
            state = _reconcile(ctx, run_id, fresh)
            if state == states.RESTARTING:
                # A restart due now (a ready spare takes over without backoff) goes on in
                # this pass rather than waiting a sweep: a crash's pause is the fleet's to pay.
                state = _reconcile(ctx, run_id, True)
        except BackendError as exc:
            if not exc.temporary:
                _record_error(ctx, run_id, str(exc))
            log.warning(
                "run %s: backend error (%s): %s",
                run_id,
                "temporary" if exc.temporary else "permanent",
                exc,
            )
            return None
        try:
            reconcile_spare(ctx, run_id)
        except BackendError as exc:
            log.warning("run %s: spare: backend error: %s", run_id, exc)
        try:
            reap_fenced(ctx, run_id)
        except BackendError as exc:
            log.warning("run %s: fenced driver: backend error: %s", run_id, exc)
        return state


def reap_fenced(ctx: WorkerContext, run_id: int) -> None:
    """An attempt that said it is fenced ended its run at once (app/runs/ending.py); its
    process should exit on its own within seconds. Forgotten once the backend says it has;
    killed once it has lingered past TIDEGATE_FENCED_EXIT_SECONDS (it can no longer write,
    but it holds the cluster's cores)."""
    with ctx.factory() as session:
        run = session.get(Run, run_id)
        if run is None or run.fenced_backend_id is None or run.fenced_at is None:
            return
        backend_id, fenced_at = run.fenced_backend_id, run.fenced_at
        backend = ctx.backend(run.version.cluster)
    status = backend.status(backend_id)
    lingered = (utcnow() - fenced_at).total_seconds()
    if status.state == AppState.UNKNOWN and lingered < ctx.lost_after_seconds:
        return  # a backend may not know an app for a while (relaunching, recovering)
    if not (status.state.terminal or status.state == AppState.UNKNOWN):
        if lingered < ctx.settings.fenced_exit_seconds:
            return
        log.warning(
            "run %s: %s still %s %.0fs after it was fenced: killing what is left of it",
            run_id,
            backend_id,
            status.raw_state,
            lingered,
        )
        backend.kill(backend_id)
        if not backend.status(backend_id).state.terminal:
            return  # the next pass looks again
    with transaction(ctx.factory) as session:
        run = lock_run(session, run_id)
        if run is not None and run.fenced_backend_id == backend_id:
            run.fenced_backend_id = run.fenced_at = None


def _reconcile(ctx: WorkerContext, run_id: int, fresh: bool) -> str:
    with transaction(ctx.factory) as session:
        run = lock_run(session, run_id)
        assert run is not None
        if run.state == states.RESTARTING:
            if run.next_restart_at is not None and run.next_restart_at <= utcnow():
                new_attempt(
                    session,
                    run,
                    reason=f"restart attempt {run.attempt + 1} after backoff",
                    previous_backend_id=run.backend_id or run.previous_backend_id,
                    next_restart_at=None,
                )
            else:
                return run.state
        if run.state not in states.ON_BACKEND:
            return run.state
        backend = ctx.backend(run.version.cluster)
        listing_key = backend_key(run.version.cluster)
        backend_id = run.backend_id
        state = run.state
        kill = state == states.STOPPING and run.kill_attempt == run.attempt
        may_exist = run.submit_intent_attempt == run.attempt
        tag = run.tag
    if state in (states.SUBMITTING, states.STANDBY) and backend_id is None:
        return _ensure_submitted(ctx, run_id, backend)
    if backend_id is None and may_exist:
        # Its submission may have gone out before a crash: find it before calling it ended,
        # or a driver would run on with nobody watching it.
        backend_id = backend.find(tag)
        if backend_id is not None:
            with transaction(ctx.factory) as session:
                run = lock_run(session, run_id)
                assert run is not None
                run.backend_id = run.backend_id or backend_id
                return run.state
    if backend_id is None:  # stopping/draining before the app was ever submitted
        with transaction(ctx.factory) as session:
            run = lock_run(session, run_id)
            assert run is not None
            return _ended(session, run, None).state
    # A kill is decided on a current status, never on a listed one.
    status = ctx.listings.status(listing_key, backend, backend_id, fresh=fresh or kill)
    if kill and not (status.state.terminal or status.state == AppState.UNKNOWN):
        # An operation asked for it (runs.service.request_kill): a stop that did not come.
        log.info("run %s: killing %s as requested (%s)", run_id, backend_id, status.raw_state)
        backend.kill(backend_id)
        status = backend.status(backend_id)
    with transaction(ctx.factory) as session:
        run = lock_run(session, run_id)
        assert run is not None
        if run.backend_id != backend_id:  # changed under us: next pass
            return run.state
        return _observe(ctx, session, run, status, backend).state


def _ensure_submitted(ctx: WorkerContext, run_id: int, backend: Backend) -> str:
    with transaction(ctx.factory) as session:
        run = lock_run(session, run_id)
        assert run is not None
        previous, tag = run.previous_backend_id, run.tag
        may_exist = run.submit_intent_attempt == run.attempt
        spare = run.spare_backend_id if run.spare_attempt == run.attempt else None
    # Fencing: Spark does not stop two drivers sharing one checkpoint, so the previous
    # attempt must be gone before the next is submitted.
    if previous is not None:
        prev = backend.status(previous)
        if not (prev.state.terminal or prev.state == AppState.UNKNOWN):
            log.info(
                "run %s: fencing: killing previous attempt %s (%s)",
                run_id,
                previous,
                prev.raw_state,
            )
            backend.kill(previous)
            return states.SUBMITTING
        with transaction(ctx.factory) as session:
            run = lock_run(session, run_id)
            assert run is not None
            run.previous_backend_id = None
    if spare is not None and not backend.status(spare).state.terminal:
        # Its spare, started ahead and waiting: it becomes this attempt (its long-poll
        # answers go), so nothing is submitted.
        with transaction(ctx.factory) as session:
            run = lock_run(session, run_id)
            assert run is not None
            if run.spare_attempt == run.attempt and run.spare_backend_id == spare:
                spares.adopt(session, run)
            return run.state
    # Only an attempt whose submission may have gone out is looked up: one never sent cannot
    # be on the backend, and a lookup can be slow or inconclusive (queued drivers).
    found = backend.find(tag) if may_exist else None
    if found is None:
        with transaction(ctx.factory) as session:
            run = lock_run(session, run_id)
            assert run is not None
            run.submit_intent_attempt = run.attempt  # committed before the backend is called
            revoke_run_tokens(session, run.id)
            secret = create_run_token(session, run.id, f"run-{run.id}", Scope.BOOTSTRAP)
            spec = submission.run_spec(ctx, run, secret)
        fault_point("reconcile:before_backend_submit")
        found = backend.submit(spec)
        fault_point("reconcile:after_backend_submit")
        log.info("run %s: submitted %s as %s", run_id, tag, found)
    else:
        log.info("run %s: found %s already on the backend as %s", run_id, tag, found)
    with transaction(ctx.factory) as session:
        run = lock_run(session, run_id)
        assert run is not None
        run.backend_id = found
        return run.state


def _observe(
    ctx: WorkerContext, session: Session, run: Run, status: AppStatus, backend: Backend
) -> Run:
    now = utcnow()
    # Within an attempt an application only moves forward; a listing a moment old can still
    # say PENDING of a driver a fresh status has seen RUNNING: not shown as a step back.
    if not (status.state == AppState.PENDING and run.observed_state == AppState.RUNNING.value):
        run.observed_state = status.state.value
    run.observed_at = now
    if status.state != AppState.UNKNOWN:
        run.unknown_since = None
    if status.state == AppState.RUNNING:
        if run.state == states.SUBMITTING:
            return transition(
                session,
                run,
                states.RUNNING,
                reason="the backend reports RUNNING",
                running_since=now,
                last_error=None,
            )
        policy = RestartPolicy.from_json(run.job.restart_policy)
        if run.failures and run.running_since and now - run.running_since >= policy.stable_period:
            run.failures = 0  # healthy for the stable period: the backoff starts over
        return run
    if status.state == AppState.PENDING:
        return run
    if status.state == AppState.UNKNOWN and run.state == states.STOPPING:
        return _ended(session, run, status, backend)  # e.g. Livy forgets a deleted batch
    if status.state == AppState.UNKNOWN:
        run.unknown_since = run.unknown_since or now
        if (now - run.unknown_since).total_seconds() < ctx.lost_after_seconds:
            return run
        status = AppStatus(
            status.backend_id,
            AppState.FAILED,
            status.raw_state,
            f"lost: the backend has not known the application for "
            f"{ctx.lost_after_seconds:.0f}s ({status.raw_state})",
        )
    return _ended(session, run, status, backend)


def _ended(
    session: Session, run: Run, status: AppStatus | None, backend: Backend | None = None
) -> Run:
    if run.state == states.STOPPING:
        return ending.stopped(session, run, f"the application ended ({_raw(status)})")
    if run.state == states.DRAINING:
        ok = status is not None and status.state == AppState.SUCCEEDED
        return transition(
            session,
            run,
            states.DRAINED if ok else states.FAILED,
            reason=f"the application ended while draining ({_raw(status)})",
        )
    assert status is not None
    if run.state == states.STANDBY:
        # Before go it touched no checkpoint: nothing to restart; the operation sees it failed.
        detail = status.message or status.raw_state
        return transition(
            session,
            run,
            states.FAILED,
            reason=f"the standby's driver ended before go ({status.raw_state})",
            stop_reason="failure",
            # Its head: the backend puts the exception that ended the driver first.
            last_error=f"the standby's driver ended before go: {detail}"[:ERROR_LIMIT],
        )
    if status.state == AppState.SUCCEEDED:
        return transition(session, run, states.SUCCEEDED, reason="the application finished")
    message = status.message
    if not message and backend is not None:
        try:
            message = backend.log_tail(status.backend_id, 30)
        except BackendError:
            message = None
    error = f"attempt {run.attempt} ended {status.raw_state}" + (f": {message}" if message else "")
    failures = run.failures + 1
    policy = RestartPolicy.from_json(run.job.restart_policy)
    if policy.may_restart(failures):
        # A ready spare takes over at once: the backoff guards against paying for start-ups.
        delay = timedelta(0) if spares.ready_for_next(run) else policy.delay(failures - 1)
        return transition(
            session,
            run,
            states.RESTARTING,
            reason=f"failure {failures}; restarting in {delay.total_seconds():g}s",
            failures=failures,
            last_error=error[-ERROR_LIMIT:],
            next_restart_at=utcnow() + delay,
        )
    why = (
        "restarts are disabled"
        if not policy.enabled
        else (f"the restart policy allows {policy.max_attempts} restart(s)")
    )
    return transition(
        session,
        run,
        states.FAILED,
        reason=f"failure {failures}; {why}",
        failures=failures,
        stop_reason="failure",
        last_error=(error + f" — failed for good: {why}; a person must act")[-ERROR_LIMIT:],
    )


def _raw(status: AppStatus | None) -> str:
    return status.raw_state if status else "never submitted"


def _record_error(ctx: WorkerContext, run_id: int, message: str) -> None:
    with transaction(ctx.factory) as session:
        run = lock_run(session, run_id)
        if run is None:
            return
        if run.state == states.SUBMITTING and run.backend_id is None:
            # The backend refused the submission itself: a failure like any other.
            fake = AppStatus("", AppState.FAILED, "REJECTED", message)
            _ended(session, run, fake)
        else:
            run.last_error = message[-ERROR_LIMIT:]


def due_runs(ctx: WorkerContext, now: datetime | None = None) -> list[int]:
    now = now or utcnow()
    with ctx.factory() as session:
        return list(
            session.scalars(
                select(Run.id)
                .where(
                    or_(
                        Run.state.in_(states.ON_BACKEND),
                        (Run.state == states.RESTARTING) & (Run.next_restart_at <= now),
                        Run.spare_attempt.is_not(None),  # a spare to watch or drop
                        Run.fenced_backend_id.is_not(None),  # a fenced driver yet to exit
                    )
                )
                .order_by(Run.id)
            )
        )
