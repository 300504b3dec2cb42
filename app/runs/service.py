"""Runs: the one owner of a run row's lifecycle — create a run, start a new attempt of it,
transition it, and mirror the current run's state on its job — and what the API shows of a
run. Nothing outside app/runs/ writes a run's state or attempt, or a job's state."""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import select, text
from sqlalchemy.orm import Session, joinedload

from app.auth.service import revoke_run_tokens
from app.clusters.models import Cluster
from app.core import run_states as states
from app.core.db import utcnow
from app.core.errors import Conflict, NotFound
from app.core.pagination import keyset_page
from app.jobs.models import Job, JobVersion
from app.jobs.service import get_job
from app.runs.models import Run, RunTransition

log = logging.getLogger(__name__)

# PostgreSQL NOTIFY channel: a standby's go or release, so its long-poll answers at once.
STANDBY_CHANNEL = "tidegate_standby"
# ...and any change of a run a worker's operation may be waiting for
# (app/worker/reconcile/reconciler.py::wait_for_run).
RUN_CHANNEL = "tidegate_runs"


class IllegalTransition(Conflict):
    pass


def lock_run(session: Session, run_id: int, *, skip_locked: bool = False) -> Run | None:
    """Lock the run's job, then the run. Every writer takes a job's rows in that order (a
    request locks the job before it records an operation that names the run), so a request
    and a worker step never wait for each other in a circle. Neither lock blocks a row that
    only refers to them (FOR NO KEY UPDATE)."""
    job_id = session.scalar(select(Run.job_id).where(Run.id == run_id))
    if job_id is None:
        return None
    job = select(Job.id).where(Job.id == job_id)
    if session.scalar(job.with_for_update(skip_locked=skip_locked, key_share=True)) is None:
        return None  # skip_locked, and someone else holds the job
    stmt = select(Run).where(Run.id == run_id)
    stmt = stmt.with_for_update(of=Run, skip_locked=skip_locked, key_share=True)
    return session.scalar(stmt.execution_options(populate_existing=True))


def transition(
    session: Session, run: Run, to: str, *, reason: str | None = None, **fields: Any
) -> Run:
    """The only way a run's state changes: locks the row, refuses illegal moves, records the
    change, and keeps the job's state in step. Moving to the state it is already in is a
    no-op, so a retried step is harmless."""
    locked = lock_run(session, run.id)
    assert locked is not None
    if locked.state == to:
        for key, value in fields.items():
            setattr(locked, key, value)
        _mirror_if_current(session, locked)
        notify_run(session, locked.id)
        return locked
    if to not in states.ALLOWED[locked.state]:
        raise IllegalTransition(f"Run {locked.id} is {locked.state}; it cannot become {to}.")
    session.add(
        RunTransition(run_id=locked.id, from_state=locked.state, to_state=to, reason=reason)
    )
    log.info("run %s: %s -> %s (%s)", locked.id, locked.state, to, reason or "")
    locked.state = to
    for key, value in fields.items():
        setattr(locked, key, value)
    if to in states.TERMINAL:
        locked.ended_at = utcnow()
        locked.next_restart_at = None
        # Its driver has exited (or is fenced): the token dies with the run, in this
        # transaction. A resubmission mints a new one.
        revoke_run_tokens(session, locked.id)
    elif to == states.SUBMITTING:
        locked.ended_at = None
        locked.kill_attempt = locked.kill_requested_at = None  # a new attempt: no old request
    _mirror_if_current(session, locked)
    session.flush()
    notify_run(session, locked.id)
    return locked


def _mirror_if_current(session: Session, run: Run) -> None:
    job = session.get(Job, run.job_id, with_for_update={"key_share": True}, populate_existing=True)
    if job is not None and job.current_run_id == run.id:
        job.state, job.next_restart_at = run.state, run.next_restart_at


def request_kill(session: Session, run_id: int, reason: str) -> Run:
    """Ask the reconciler to kill the driver of a stopping run's current attempt (what an
    operation does when a graceful stop did not come); it never calls the backend itself.
    Any other run stays as it is."""
    locked = lock_run(session, run_id)
    assert locked is not None
    if locked.state == states.STOPPING and locked.kill_attempt != locked.attempt:
        locked.kill_attempt, locked.kill_requested_at = locked.attempt, utcnow()
        log.info("run %s: kill of attempt %s requested (%s)", locked.id, locked.attempt, reason)
    return locked


def request_stop(session: Session, run_id: int, reason: str) -> Run:
    """Ask the run to stop at a batch boundary (``stopping``: its runtime stops each query
    between batches). A run waiting out a restart's backoff ends here (``stopped``, or
    ``cancelled`` for a cancel): nothing runs; a standby that never went is released. An
    ended run stays as it is."""
    run = lock_run(session, run_id)
    assert run is not None
    if run.state == states.RESTARTING:
        to = states.CANCELLED if reason == "cancel" else states.STOPPED
        return transition(
            session, run, to, reason=f"{reason} requested during backoff", stop_reason=reason
        )
    if run.state == states.STANDBY:
        return release_standby(session, run, f"{reason} requested")
    if run.state in (states.SUBMITTING, states.RUNNING, states.DRAINING):
        return transition(
            session, run, states.STOPPING, reason=f"{reason} requested", stop_reason=reason
        )
    return run


def _mirror_on_job(session: Session, run: Run) -> None:
    """``run`` becomes its job's current run, and the job shows its state (and next restart)."""
    job = session.get(Job, run.job_id)
    assert job is not None
    job.current_run_id, job.state, job.next_restart_at = run.id, run.state, run.next_restart_at


def create_run(
    session: Session,
    job: Job,
    version: JobVersion,
    *,
    created_by: str,
    run_id: int | None = None,
) -> Run:
    """A new run of ``version``, to be submitted, and now the job's current run. ``run_id``:
    an id reserved beforehand (its checkpoints were restored under it)."""
    run = _new_run(session, job, version, states.SUBMITTING, created_by, id=run_id)
    _mirror_on_job(session, run)
    return run


def _new_run(
    session: Session, job: Job, version: JobVersion, state: str, created_by: str, **fields: Any
) -> Run:
    """A run row at its first attempt, flushed (its id known)."""
    run = Run(
        job_id=job.id,
        version_id=version.id,
        state=state,
        attempt=0,
        failures=0,
        created_by=created_by,
        progress={},
        **{k: v for k, v in fields.items() if v is not None},
    )
    session.add(run)
    session.flush()
    return run


def create_standby(
    session: Session,
    job: Job,
    version: JobVersion,
    *,
    created_by: str,
    operation_id: int,
    dry_run: dict[str, Any] | None = None,
) -> Run:
    """A pre-warmed run of ``version``: its driver is submitted now and waits for go. It is
    not its job's current run until then (the job shows the run it replaces). ``dry_run``: its
    driver first runs the update's dry run on that scratch copy."""
    run = _new_run(
        session,
        job,
        version,
        states.STANDBY,
        created_by,
        standby_operation_id=operation_id,
        standby_dry_run=dry_run,
    )
    session.add(
        RunTransition(
            run_id=run.id,
            from_state=None,
            to_state=states.STANDBY,
            reason=f"pre-warmed for operation {operation_id}",
        )
    )
    return run


def standby_ready(session: Session, run: Run) -> Run:
    """Its runtime called in, its session built and its Python started: ready for go."""
    if run.state == states.STANDBY and run.standby_ready_at is None:
        run.standby_ready_at = utcnow()
        log.info("run %s: standby ready", run.id)
        notify_run(session, run.id)
    return run


def go(session: Session, run_id: int, *, reason: str) -> Run:
    """The standby starts its queries: it is now its job's current, running run. Conflict
    while the run it replaces may still run (never two drivers on one job's output). A run
    no longer waiting is returned as it is: gone already (``go_at`` set), or released or
    failed before go."""
    locked = lock_run(session, run_id)
    assert locked is not None
    if locked.state != states.STANDBY:
        return locked
    job = session.get(Job, locked.job_id)
    replaced = current_run(session, job) if job is not None else None
    if replaced is not None and replaced.id != locked.id and replaced.state in states.ACTIVE:
        raise Conflict(
            f"run {replaced.id} is {replaced.state}: go is never given while the run a "
            "standby replaces may still be running"
        )
    now = utcnow()
    locked = transition(
        session, locked, states.RUNNING, reason=reason, go_at=now, running_since=now
    )
    _mirror_on_job(session, locked)
    notify_standby(session, locked.id)
    return locked


def release_standby(session: Session, run: Run, reason: str) -> Run:
    """A standby whose go will not come: it stops (the reconciler kills its driver, which
    has touched no checkpoint) and its long-poll answers stop."""
    locked = lock_run(session, run.id)
    assert locked is not None
    if locked.state != states.STANDBY:
        return locked
    locked = transition(session, locked, states.STOPPING, reason=reason, stop_reason="released")
    locked = request_kill(session, locked.id, reason)  # nothing to stop at a batch boundary
    notify_standby(session, locked.id)
    return locked


def notify_run(session: Session, run_id: int) -> None:
    """The run changed in a way a worker may be waiting for (its state, its standby or spare
    ready, its runtime calling in): sent on commit, so the waiting operation reads it at once
    instead of at its next poll."""
    session.execute(
        text("select pg_notify(:channel, :run)"), {"channel": RUN_CHANNEL, "run": str(run_id)}
    )


def notify_standby(session: Session, run_id: int) -> None:
    # Delivered when this transaction commits, never before.
    session.execute(
        text("select pg_notify(:channel, :run)"), {"channel": STANDBY_CHANNEL, "run": str(run_id)}
    )


def new_attempt(
    session: Session, run: Run, *, reason: str, previous_backend_id: str | None, **fields: Any
) -> Run:
    """``run`` is submitted again as its next attempt (from its own checkpoint): the backend
    application of the last attempt is remembered as ``previous_backend_id`` (to fence it)."""
    return transition(
        session,
        run,
        states.SUBMITTING,
        reason=reason,
        attempt=run.attempt + 1,
        previous_backend_id=previous_backend_id,
        backend_id=None,
        observed_state=None,
        unknown_since=None,
        running_since=None,
        attempt_spare_seq=None,  # a spare's adoption sets it again
        **fields,
    )


def resubmit(session: Session, run: Run, *, reason: str) -> Run:
    """A person (or a rolled-back update) starts an ended run again, as a new attempt that
    is again its job's current run."""
    locked = new_attempt(
        session,
        run,
        reason=reason,
        previous_backend_id=run.backend_id,
        stop_reason=None,
        failures=0,
    )
    _mirror_on_job(session, locked)
    return locked


def active_run(session: Session, job: Job) -> Run | None:
    if job.current_run_id is None:
        return None
    run = session.get(Run, job.current_run_id)
    return run if run is not None and run.state in states.ACTIVE else None


def current_run(session: Session, job: Job) -> Run | None:
    return session.get(Run, job.current_run_id) if job.current_run_id else None


def get_run(session: Session, run_id: int) -> Run:
    run = session.get(Run, run_id)
    if run is None:
        raise NotFound(f"No run with id {run_id}.")
    return run


# What a run's response names of its job, version and cluster, and nothing more: the whole
# rows (a version's queries and conf, the job's latest-version subquery) cost a read more
# than its query does (bench/fleet.py).
FOR_RESPONSE = (
    joinedload(Run.job).load_only(Job.name, raiseload=True),
    joinedload(Run.version)
    .load_only(JobVersion.number, raiseload=True)
    .joinedload(JobVersion.cluster)
    .load_only(Cluster.name, raiseload=True),
)


def run_for_response(session: Session, run_id: int) -> Run:
    """A run as its response shows it (see FOR_RESPONSE): for reading, not for changing."""
    run = session.scalar(select(Run).where(Run.id == run_id).options(*FOR_RESPONSE))
    if run is None:
        raise NotFound(f"No run with id {run_id}.")
    return run


def list_runs(
    session: Session, job_name: str, *, limit: int, cursor: str | None
) -> tuple[list[Run], str | None]:
    job = get_job(session, job_name)
    stmt = select(Run).where(Run.job_id == job.id).options(*FOR_RESPONSE)
    return keyset_page(session, stmt, Run.id, limit=limit, cursor=cursor, descending=True)


def transitions(session: Session, run_id: int, limit: int = 50) -> list[RunTransition]:
    return list(
        session.scalars(
            select(RunTransition)
            .where(RunTransition.run_id == run_id)
            .order_by(RunTransition.id.desc())
            .limit(limit)
        )
    )
