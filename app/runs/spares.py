"""Spares: a run's *next attempt*, its driver submitted ahead of need and waiting for go, so
that a restart (asked for, or after a crash) pays no JVM, session or Python start. The run's
state does not change while it has one; these are the only writers of its ``spare_*`` fields.

The life of a spare:
- ``intend`` (the reconciler, before it submits: a killed worker finds it again by its tag);
- ``submitted``, then ``ready`` (its runtime called in on the standby channel);
- the run's current attempt ends (a crash, or a stop for a pre-warmed restart) and the run
  moves to its next attempt; the reconciler fences the old driver, then ``adopt``: the
  spare's driver *is* that attempt and its long-poll answers go;
- or ``drop``: the run no longer wants it, or it died. Its long-poll answers stop, so its
  driver exits even if the reconciler's kill never reaches it.

Fencing is the attempt's: a spare waits before its queries, so it touches no checkpoint
until it is adopted, which happens only after the previous attempt's driver is gone."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.auth.service import revoke_spare_token
from app.core import run_states as states
from app.core.db import utcnow
from app.runs.models import QueryProgress, Run
from app.runs.service import notify_standby

log = logging.getLogger(__name__)

# A spare whose driver died is not submitted again before this (a crash loop costs a
# driver start each time, and says so in spare_error).
RETRY_AFTER = timedelta(seconds=60)


def attempt_has_run(session: Session, run: Run, queries: Iterable[str]) -> bool:
    """Has the run's current attempt said, since it started running, that one of ``queries``
    committed a batch or idles for want of input? The runtime's own word, recorded by the
    control plane's clock: a checkpoint's files cannot say which attempt wrote them (a rewind
    rewrites an old commit, a remote filesystem has its own clock)."""
    since = run.running_since
    if since is None:
        return False
    names = list(queries)
    batch_at = session.scalar(
        select(func.max(QueryProgress.at)).where(
            QueryProgress.run_id == run.id, QueryProgress.query.in_(names)
        )
    )
    idle_at = [((run.progress or {}).get(name) or {}).get("idle_at") for name in names]
    seen = [batch_at, *(datetime.fromisoformat(at) for at in idle_at if at)]
    return any(at is not None and at >= since for at in seen)


def wanted(run: Run) -> bool:
    """Should the run have a spare now? While its current attempt runs, when its job keeps
    a hot spare or an operation asked for one."""
    return run.state == states.RUNNING and (run.job.hot_spare or run.spare_requested)


def keep(run: Run) -> bool:
    """Is the run's spare still of use? For its next attempt while the current one runs, is
    being stopped for a restart, or has crashed and waits to restart; for the current attempt
    while it is being submitted (the reconciler adopts it)."""
    if run.spare_attempt is None:
        return False
    if run.spare_attempt == run.attempt:
        return run.state == states.SUBMITTING
    if run.spare_attempt != run.attempt + 1:
        return False
    if run.state == states.STOPPING:
        return run.stop_reason == "restart"
    return run.state == states.RESTARTING or wanted(run)


def due(run: Run) -> bool:
    """A spare should be submitted now."""
    return (
        run.spare_attempt is None
        and wanted(run)
        and (run.spare_retry_at is None or run.spare_retry_at <= utcnow())
    )


def ready_for_next(run: Run) -> bool:
    """A spare is waiting, ready, for the attempt after the current one."""
    return (
        run.spare_attempt == run.attempt + 1
        and run.spare_backend_id is not None
        and run.spare_ready_at is not None
    )


def for_next(run: Run) -> bool:
    """A spare is submitted for the attempt after the current one (ready or not yet)."""
    return run.spare_attempt == run.attempt + 1 and run.spare_backend_id is not None


def request(run: Run) -> Run:
    """An operation (a pre-warmed restart) wants a spare for the run's next attempt."""
    run.spare_requested = True
    run.spare_retry_at = None  # asked for now: an earlier spare's failure does not delay it
    return run


def withdraw(run: Run) -> Run:
    """The operation no longer wants it (the reconciler drops it unless the job keeps one)."""
    run.spare_requested = False
    return run


def intend(run: Run) -> Run:
    """A new spare for the next attempt, under a tag never used before. Committed before the
    backend is called."""
    run.spare_seq += 1
    run.spare_attempt = run.attempt + 1
    run.spare_backend_id = None
    run.spare_ready_at = None
    return run


def submitted(run: Run, backend_id: str) -> Run:
    run.spare_backend_id = backend_id
    run.spare_error = None
    log.info(
        "run %s: spare %s for attempt %s is %s",
        run.id,
        run.spare_seq,
        run.spare_attempt,
        backend_id,
    )
    return run


def ready(run: Run, attempt: int, seq: int) -> bool:
    """The spare's runtime called in; False when it is not the run's spare (any more)."""
    if run.spare_attempt != attempt or run.spare_seq != seq or not keep(run):
        return False
    if run.spare_ready_at is None:
        run.spare_ready_at = utcnow()
        log.info("run %s: spare %s ready for attempt %s", run.id, seq, attempt)
    return True


def goes(run: Run, attempt: int, seq: int) -> bool:
    """Has the spare been adopted as the run's current attempt (its previous attempt fenced)?"""
    return (
        run.attempt == attempt
        and run.attempt_spare_seq == seq
        and run.state in (states.SUBMITTING, states.RUNNING)
    )


def adopt(session: Session, run: Run) -> Run:
    """The run's new attempt is its spare's driver (the caller fenced the previous one):
    no submission; the spare's long-poll answers go."""
    assert run.spare_attempt == run.attempt and run.spare_backend_id is not None
    log.info(
        "run %s: attempt %s adopts spare %s (%s)",
        run.id,
        run.attempt,
        run.spare_seq,
        run.spare_backend_id,
    )
    run.backend_id = run.spare_backend_id
    run.attempt_spare_seq = run.spare_seq
    run.submit_intent_attempt = run.attempt
    run.spare_requested = False
    _clear(run)
    notify_standby(session, run.id)
    return run


def drop(session: Session, run: Run, why: str, *, failed: bool = False) -> str | None:
    """The spare goes: its long-poll answers stop. Returns its backend id, for the caller to
    kill. ``failed``: its driver died; the next one waits ``RETRY_AFTER``."""
    backend_id = run.spare_backend_id
    log.info("run %s: spare %s dropped (%s)", run.id, run.spare_seq, why)
    if failed:
        run.spare_error = why[-4000:]
        run.spare_retry_at = utcnow() + RETRY_AFTER
    _clear(run)
    revoke_spare_token(session, run.id, run.spare_seq)
    notify_standby(session, run.id)
    return backend_id


def _clear(run: Run) -> None:
    run.spare_attempt = None
    run.spare_backend_id = None
    run.spare_ready_at = None
