"""The runtime channel: what the in-job runtime reads (directives) and writes (progress)."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from app.core import run_states as states
from app.core.db import utcnow
from app.core.errors import Conflict, NotFound
from app.core.paths import CheckpointRoot
from app.jobs.schemas import RestartPolicy
from app.runs import ending, late, spares
from app.runs import service as runs
from app.runs.models import QueryProgress, Run
from app.runs.schemas import (
    Directives,
    DrainReport,
    FenceReport,
    ProgressReport,
    QueryFailureReport,
    StandbyAnswer,
)
from app.runs.service import get_run
from app.startpoints import applications as startpoints
from tidegate_runtime import contract

log = logging.getLogger(__name__)

HISTORY_PER_QUERY = 100
ERROR_LIMIT = 4000  # characters of a failed query's error kept (its head: the cause)


def directives(
    session: Session, run_id: int, attempt: int | None, checkpoint_root: CheckpointRoot
) -> Directives:
    run = get_run(session, run_id)
    if run.runtime_seen_at is None:
        runs.notify_run(session, run.id)  # a drain may be waiting for the runtime to call in
    run.runtime_seen_at = utcnow()
    # An older attempt still alive (being fenced) must stop, whatever the run's state.
    superseded = attempt is not None and attempt != run.attempt
    stop = superseded or run.state in (states.STOPPING, *states.TERMINAL)
    answer: contract.Directives = {
        "run_id": run.id,
        "attempt": run.attempt,
        "state": run.state,
        "stop": stop,
        "reason": f"superseded by attempt {run.attempt}" if superseded else run.stop_reason,
        "drain": (
            {"end_offsets": (run.drain or {}).get("end_offsets")}
            if run.state == states.DRAINING and not superseded
            else None
        ),
        # Startpoints apply when a query starts; a stopping run gets none.
        "startpoints": [] if stop else startpoints.for_directives(session, run, checkpoint_root),
        "sources": {
            s["name"]: {"kind": s["kind"], "options": s["options"]}
            for q in run.version.queries
            for s in q["sources"]
        },
        "sink_options": {
            q["name"]: q["sink"]["options"]
            for q in run.version.queries
            if (q.get("sink") or {}).get("options")
        },
        "query_restart_policy": RestartPolicy.model_validate(run.job.restart_policy).in_seconds(),
    }
    return Directives.model_validate(answer)


def standby(
    session: Session, run_id: int, attempt: int | None, spare: int | None = None
) -> StandbyAnswer:
    """A standby's question: go yet? Its first call says it is ready (session built, Python
    started): the operation waits for that before it stops the run this one replaces."""
    run = get_run(session, run_id)
    if spare is not None:
        return _spare_answer(session, run, attempt, spare)
    run.runtime_seen_at = utcnow()
    go = stop = False
    reason = None
    if attempt is not None and attempt != run.attempt:
        stop, reason = True, f"superseded by attempt {run.attempt}"
    elif run.state == states.STANDBY:
        runs.standby_ready(session, run)
    elif run.go_at is not None and run.state not in (states.STOPPING, *states.TERMINAL):
        go = True
    else:
        stop, reason = True, run.stop_reason or f"the run is {run.state}"
    return _standby_answer(run, go, stop, reason)


def _standby_answer(run: Run, go: bool, stop: bool, reason: str | None) -> StandbyAnswer:
    answer: contract.StandbyAnswer = {
        "run_id": run.id,
        "attempt": run.attempt,
        "state": run.state,
        "go": go,
        "stop": stop,
        "reason": reason,
    }
    return StandbyAnswer.model_validate(answer)


def _spare_answer(session: Session, run: Run, attempt: int | None, seq: int) -> StandbyAnswer:
    """A spare waits while it is the run's spare for its next attempt, goes once it has been
    adopted as the current attempt, and stops otherwise."""
    go = stop = False
    reason = None
    was_ready = run.spare_ready_at is not None
    if attempt is not None and spares.goes(run, attempt, seq):
        go = True
    elif attempt is None or not spares.ready(run, attempt, seq):
        stop = True
    elif not was_ready:
        runs.notify_run(session, run.id)  # a restart may be waiting for its spare
    if stop:
        reason = f"spare {seq} is no longer wanted (the run is {run.state}, attempt {run.attempt})"
    return _standby_answer(run, go, stop, reason)


def live_run(session: Session, run_id: int) -> Run:
    """The run, if its runtime may still report: writes for a run that ended are refused
    (its token is revoked when it ends, so this guards what raced with that)."""
    return _still_live(get_run(session, run_id))


def _still_live(run: Run) -> Run:
    if run.state not in states.ACTIVE:
        raise Conflict(
            f"Run {run.id} has ended ({run.state}); its runtime channel takes no more reports. "
            "A driver still running for it is left over from an earlier attempt and should exit."
        )
    return run


def record_progress(session: Session, run_id: int, report: ProgressReport) -> Run:
    dropped = late.rows_dropped([op.model_dump() for op in report.state_operators])
    if dropped and not report.idle:
        # Counted once per batch: two posts of one batch (a retry) must not both add it.
        locked = runs.lock_run(session, run_id)
        if locked is None:
            raise NotFound(f"No run with id {run_id}.")
        run = _still_live(locked)
    else:
        run = live_run(session, run_id)
    declared = {q["name"] for q in run.version.queries}
    if report.query not in declared:
        raise Conflict(
            f"Query '{report.query}' is not declared by version {run.version.number}; "
            f"declared: {', '.join(sorted(declared))}."
        )
    if report.idle:  # no batch ran: keep the latest progress, note when it was idle
        latest = dict((run.progress or {}).get(report.query) or {})
        latest["idle_at"] = utcnow().isoformat()
        run.progress = {**(run.progress or {}), report.query: latest}
        return run
    entry = (run.late_rows or {}).get(report.query)
    counted = late.count_batch(entry, report.batch_id, dropped)
    if counted is not entry and counted is not None:
        run.late_rows = {**(run.late_rows or {}), report.query: counted}
    payload = late.annotate(report.model_dump(mode="json", exclude={"idle"}), counted)
    run.progress = {**(run.progress or {}), report.query: payload}
    session.add(
        QueryProgress(run_id=run.id, query=report.query, batch_id=report.batch_id, payload=payload)
    )
    session.flush()
    startpoints.on_batch_committed(session, run, report.query, report.batch_id)
    keep = (
        select(QueryProgress.id)
        .where(QueryProgress.run_id == run.id, QueryProgress.query == report.query)
        .order_by(QueryProgress.id.desc())
        .limit(HISTORY_PER_QUERY)
    )
    session.execute(
        delete(QueryProgress).where(
            QueryProgress.run_id == run.id,
            QueryProgress.query == report.query,
            QueryProgress.id.not_in(keep.scalar_subquery()),
        )
    )
    return run


def progress_history(
    session: Session, run_id: int, query: str | None, limit: int
) -> list[QueryProgress]:
    get_run(session, run_id)
    stmt = select(QueryProgress).where(QueryProgress.run_id == run_id)
    if query is not None:
        stmt = stmt.where(QueryProgress.query == query)
    return list(session.scalars(stmt.order_by(QueryProgress.id.desc()).limit(limit)))


def record_drain(session: Session, run_id: int, report: DrainReport) -> Run:
    """The runtime fixed end offsets for some sources (a chain fixes its downstream sources
    once the upstream queries are done; the first value per source wins, so a restarted
    driver drains to the same place), or finished draining."""
    run = live_run(session, run_id)
    if run.state != states.DRAINING and not report.drained:
        raise Conflict(f"Run {run_id} is {run.state}, not draining.")
    drain = dict(run.drain or {})
    drain["end_offsets"] = {**report.end_offsets, **(drain.get("end_offsets") or {})}
    if report.drained:
        drain["drained_at"] = utcnow().isoformat()
    run.drain = drain
    return run


def record_query_failure(session: Session, run_id: int, report: QueryFailureReport) -> Run:
    """A query of the run's driver failed and the runtime restarts it alone (or gave up, and
    the driver ends). Kept per query on the run; a report from an attempt that is not the
    run's current one changes nothing."""
    run = runs.lock_run(session, run_id)  # two queries may fail at once: no lost update
    if run is None:
        raise NotFound(f"No run with id {run_id}.")
    _still_live(run)
    declared = {q["name"] for q in run.version.queries}
    if report.query not in declared:  # as for a progress report
        raise Conflict(
            f"Query '{report.query}' is not declared by version {run.version.number}; "
            f"declared: {', '.join(sorted(declared))}."
        )
    if report.attempt != run.attempt:
        return run
    now = utcnow()
    restart_in = report.restart_in_seconds
    gave_up = restart_in is None
    entries = dict(run.query_restarts or {})
    before = entries.get(report.query) or {}
    entries[report.query] = {
        "attempt": report.attempt,
        "restarts": int(before.get("restarts", 0)) + (0 if gave_up else 1),
        "failures": report.failures,
        "last_error": report.error[:ERROR_LIMIT],
        "last_failed_at": now.isoformat(),
        "next_restart_at": (
            None if restart_in is None else (now + timedelta(seconds=restart_in)).isoformat()
        ),
        "gave_up": gave_up,
    }
    run.query_restarts = entries
    what = "gave up" if gave_up else f"restarts it alone in {restart_in}s"
    log.warning(
        "run %s: query %s failed (%s in a row); the driver %s",
        run.id,
        report.query,
        report.failures,
        what,
    )
    return run


def record_fence(session: Session, run_id: int, report: FenceReport) -> Run:
    """The run's driver stopped every query at a batch boundary (a stop directive, or a drain
    that finished), then its Spark session: nothing of it can write a checkpoint any more,
    so the run ends now rather than when the backend sees the process exit (most of a
    second, more at size). Idempotent: a repeat, or a report from an attempt that is not
    the run's current one, changes nothing."""
    run = runs.lock_run(session, run_id)
    if run is None:
        raise NotFound(f"No run with id {run_id}.")
    if report.attempt != run.attempt:
        return run
    why = f"attempt {run.attempt} stopped at a batch boundary and stopped its Spark session"
    if run.state == states.STOPPING:
        return ending.stopped(session, run, f"{why} (fenced)", fenced=True)
    if run.state == states.DRAINING and (run.drain or {}).get("drained_at"):
        return ending.drained(session, run, f"{why} after its drain (fenced)", fenced=True)
    return run


def recent_progress(
    session: Session, run_ids: list[int], since: datetime
) -> dict[int, list[QueryProgress]]:
    """Every run's stored reports since ``since``, oldest first: one statement for a page of
    runs (the history is bounded per query, so this is too)."""
    found: dict[int, list[QueryProgress]] = {run_id: [] for run_id in run_ids}
    if not run_ids:
        return found
    stmt = (
        select(QueryProgress)
        .where(QueryProgress.run_id.in_(run_ids), QueryProgress.at >= since)
        .order_by(QueryProgress.run_id, QueryProgress.id)
    )
    for row in session.scalars(stmt):
        found[row.run_id].append(row)
    return found
