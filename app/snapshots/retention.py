"""Snapshot retention (each job's policy, after an export and now and then) and garbage
collection of the store (manifests the catalog no longer has, then unreferenced blobs).

Garbage collection must not delete a blob an export has just written but not yet named in a
manifest: exports hold a shared PostgreSQL advisory lock while they write, and gc runs only
when it gets the exclusive one (otherwise the next export's gc collects).
"""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from app.audit import service as audit
from app.core.config import Settings
from app.core.db import transaction
from app.jobs.models import Job
from app.snapshots import service
from app.snapshots.models import FAILED, Snapshot, SnapshotRetention
from app.snapshots.store.access import LOCK_NAMESPACE, RETENTION_LOCK, store_for, store_lock

log = logging.getLogger(__name__)

RETENTION_ACTOR = "tidegate-retention"


def _apply_retention(session: Session, job_id: int, keep: frozenset[int]) -> list[str]:
    deleted = []
    for snapshot, reason in service.expired(session, job_id, keep=keep):
        deleted.append(snapshot.name)
        audit.record(
            session,
            RETENTION_ACTOR,
            "snapshot.delete",
            job=snapshot.job.name,
            target=f"snapshot {snapshot.name}",
            detail={"reason": f"retention: {reason}"},
        )
        session.delete(snapshot)
    return deleted


def retention_and_gc(
    factory: sessionmaker[Session], settings: Settings, job_id: int, keep: int
) -> dict[str, Any]:
    """Apply the job's retention (never to ``keep``, the snapshot just made), then gc."""
    with transaction(factory) as session:
        deleted = _apply_retention(session, job_id, frozenset({keep}))
    return {"deleted": deleted, "gc": collect_garbage(factory, settings)}


def retention_sweep(factory: sessionmaker[Session], settings: Settings) -> dict[str, Any] | None:
    """Every job's retention, between exports too (``max_age`` expires snapshots while no
    export runs); then gc when something went. The worker loop calls it now and then; None
    when another worker is sweeping (one at a time: a transaction-level advisory lock)."""
    deleted: dict[str, list[str]] = {}
    with transaction(factory) as session:
        got = session.scalar(select(func.pg_try_advisory_xact_lock(LOCK_NAMESPACE, RETENTION_LOCK)))
        if not got:
            return None
        job_ids = list(
            session.scalars(
                select(SnapshotRetention.job_id).where(
                    (SnapshotRetention.keep_last.is_not(None))
                    | (SnapshotRetention.max_age_seconds.is_not(None))
                )
            )
        )
        for job_id in job_ids:
            names = _apply_retention(session, job_id, frozenset())
            if names:
                job = session.get(Job, job_id)
                deleted[job.name if job else str(job_id)] = names
    if not deleted:
        return {"deleted": {}}
    log.info("retention deleted %s", deleted)
    return {"deleted": deleted, "gc": collect_garbage(factory, settings)}


def collect_garbage(factory: sessionmaker[Session], settings: Settings) -> dict[str, Any] | None:
    """Delete manifests of snapshots the catalog no longer has, then unreferenced blobs.
    None when an export holds the store (it will collect afterwards)."""
    with store_lock(factory, exclusive=True) as got:
        if not got:
            return None
        with factory() as session:
            # A failed export's manifest (its PUT may have landed after the client gave up)
            # names nothing anyone may restore: collected with its blobs.
            live = {
                (str(job), str(name))
                for job, name in session.execute(
                    select(Job.name, Snapshot.name)
                    .join(Job, Job.id == Snapshot.job_id)
                    .where(Snapshot.state != FAILED)
                )
            }
        result = store_for(settings).gc(live)
    return {
        "manifests_deleted": result.manifests_deleted,
        "blobs_deleted": result.blobs_deleted,
        "bytes_freed": result.bytes_freed,
    }
