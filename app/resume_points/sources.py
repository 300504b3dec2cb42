"""Resolving a resume reference (a snapshot query, or a run query at a batch) to its checkpoint."""

from __future__ import annotations

from dataclasses import replace

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.core.config import Settings
from app.core.errors import Conflict, NotFound, Unprocessable
from app.core.paths import PathOutsideRoot, read_checkpoint
from app.jobs.service import get_job
from app.resume_points.plan import Source, SourceRef
from app.runs.models import Run
from app.snapshots.checkpoint_files import checkpoint_path, describe
from app.snapshots.errors import ExportError
from app.snapshots.models import READY, Snapshot
from tidegate_runtime.checkpoints.checkpoint import latest_commit_batch


def ready_snapshot(session: Session, job_name: str, name: str) -> Snapshot:
    """A snapshot that can be started from, or a 422/409 that says why not."""
    try:
        job = get_job(session, job_name)
    except NotFound:
        raise Unprocessable(f"No job named '{job_name}' to take snapshot '{name}' from.") from None
    snapshot = session.scalar(
        select(Snapshot).where(Snapshot.job_id == job.id, Snapshot.name == name)
    )
    if snapshot is None:
        raise Unprocessable(
            f"Job '{job_name}' has no snapshot named '{name}'. "
            f"List them with GET /api/v1/snapshots?job={job_name}."
        )
    if snapshot.state != READY:
        raise Conflict(
            f"Snapshot '{name}' of job '{job_name}' is {snapshot.state}, not ready"
            + (f": {snapshot.error}" if snapshot.error else "; wait for its operation")
            + ".",
            snapshot_state=snapshot.state,
        )
    return snapshot


def snapshot_sources(snapshot: Snapshot) -> dict[str, Source]:
    return {
        name: Source(SourceRef(snapshot.job.name, name, snapshot=snapshot.name), info, snapshot.id)
        for name, info in snapshot.held_queries.items()
    }


def run_source(session: Session, settings: Settings, ref: SourceRef) -> Source:
    try:
        job = get_job(session, ref.job)
    except NotFound:
        raise Unprocessable(f"No job named '{ref.job}' (resume point for run {ref.run}).") from None
    run = session.get(Run, ref.run)
    if run is None or run.job_id != job.id:
        raise Unprocessable(
            f"Job '{ref.job}' has no run {ref.run}; list them with GET /api/v1/jobs/{ref.job}/runs."
        )
    spec = next((q for q in run.version.queries if q["name"] == ref.query), None)
    if spec is None:
        names = ", ".join(q["name"] for q in run.version.queries)
        raise Unprocessable(f"Run {run.id} has no query '{ref.query}' (it has: {names}).")
    root = settings.resolved_checkpoint_root
    checkpoint = checkpoint_path(root, job.name, run.id, spec)
    try:
        with read_checkpoint(root, checkpoint) as folder:
            latest = latest_commit_batch(folder, planned=True)
            batch = ref.batch_id if ref.batch_id is not None else latest
            if batch is None:
                raise Unprocessable(
                    f"Query '{ref.query}' of run {run.id} has no committed batch yet: "
                    "nothing to resume."
                )
            if (
                folder is None
                or not folder.exists(f"commits/{batch}")
                or not folder.exists(f"offsets/{batch}")
            ):
                raise Unprocessable(
                    f"Batch {batch} of query '{ref.query}' of run {run.id} is not in its "
                    f"checkpoint (latest committed: {latest}); use "
                    f"GET /api/v1/jobs/{ref.job}/snapshot-coordinates."
                )
            info = describe(folder, batch, spec)
    except PathOutsideRoot as exc:
        raise Unprocessable(f"Run {run.id}'s checkpoint cannot be read: {exc}") from None
    except ExportError as exc:
        raise Unprocessable(str(exc)) from None
    return Source(replace(ref, batch_id=batch), info)


def resolve(session: Session, settings: Settings, ref: SourceRef) -> Source:
    if ref.snapshot is not None:
        snapshot = ready_snapshot(session, ref.job, ref.snapshot)
        sources = snapshot_sources(snapshot)
        if ref.query not in sources:
            has = ", ".join(sorted(sources)) or "none"
            raise Unprocessable(
                f"Snapshot '{ref.snapshot}' of job '{ref.job}' has no committed query "
                f"'{ref.query}' (it has: {has})."
            )
        return sources[ref.query]
    return run_source(session, settings, ref)
