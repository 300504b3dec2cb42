"""The snapshot catalog: names, listing, deletion (never while in use), retention, and the
latest coordinates of a job. Services take the session first and never commit; the export
itself (long file IO between short transactions) is in ``snapshots.export``."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import select
from sqlalchemy.orm import Session, joinedload

from app.audit import service as audit
from app.auth.service import Principal
from app.core import run_states as states
from app.core.config import Settings
from app.core.db import utcnow
from app.core.durations import parse_duration
from app.core.errors import Conflict, NotFound, Unprocessable
from app.core.pagination import keyset_page
from app.core.paths import PathOutsideRoot, read_checkpoint
from app.jobs.models import Job
from app.jobs.service import get_job
from app.runs.models import Run
from app.runs.service import current_run
from app.snapshots.checkpoint_files import checkpoint_path
from app.snapshots.errors import SnapshotFailed
from app.snapshots.models import CREATING, FAILED, READY, Snapshot, SnapshotRetention, SnapshotUse
from app.snapshots.pins import pin, pinned_by
from app.snapshots.schemas import (
    Coordinates,
    CoordinatesResponse,
    OperatorInfo,
    QuerySnapshot,
    RetentionBody,
    RetentionResponse,
    SnapshotResponse,
    SnapshotSummary,
    SnapshotUseResponse,
)
from tidegate_runtime.checkpoints.checkpoint import latest_commit_batch

ERROR_LIMIT = 4000  # characters of a failed snapshot's error kept (its end: the cause)


def get_snapshot(session: Session, job_name: str, name: str, *, lock: bool = False) -> Snapshot:
    job = get_job(session, job_name)
    stmt = select(Snapshot).where(Snapshot.job_id == job.id, Snapshot.name == name)
    if lock:
        stmt = stmt.with_for_update(of=Snapshot)
    snapshot = session.scalar(stmt)
    if snapshot is None:
        raise NotFound(
            f"Job '{job_name}' has no snapshot named '{name}'. "
            f"List them with GET /api/v1/snapshots?job={job_name}."
        )
    return snapshot


def list_snapshots(
    session: Session, *, job: str | None, limit: int, cursor: str | None
) -> tuple[list[Snapshot], str | None]:
    # The job's name is on every row: one joined statement, not one more per snapshot.
    stmt = select(Snapshot).options(joinedload(Snapshot.job))
    if job is not None:
        stmt = stmt.where(Snapshot.job_id == get_job(session, job).id)
    return keyset_page(session, stmt, Snapshot.id, limit=limit, cursor=cursor, descending=True)


def reserve(
    session: Session,
    job: Job,
    name: str,
    *,
    run: Run,
    operation_id: int,
    actor: Principal,
    stop: bool,
) -> Snapshot:
    """Claim the name for an export by operation ``operation_id``, which pins it: 409 if a
    usable or in-progress snapshot has it (a failed one is replaced)."""
    existing = session.scalar(
        select(Snapshot).where(Snapshot.job_id == job.id, Snapshot.name == name)
    )
    if existing is not None:
        if existing.state != FAILED:
            raise Conflict(
                f"Job '{job.name}' already has a snapshot named '{name}' ({existing.state}, "
                f"{existing.created_at.isoformat()}); choose another name or delete it first.",
                snapshot=name,
            )
        session.delete(existing)
        session.flush()
    snapshot = Snapshot(
        job_id=job.id,
        name=name,
        state=CREATING,
        stop=stop,
        run_id=run.id,
        version_number=run.version.number,
        operation_id=operation_id,
        queries={},
        size_bytes=0,
        bytes_written=0,
        file_count=0,
        created_by=actor.name,
    )
    session.add(snapshot)
    session.flush()
    pin(session, operation_id, [snapshot.id])
    return snapshot


def for_operation(session: Session, op_id: int) -> Snapshot:
    """The snapshot an operation saves (reserved when its request was accepted)."""
    snapshot = session.scalar(select(Snapshot).where(Snapshot.operation_id == op_id))
    if snapshot is None:
        raise SnapshotFailed(f"operation {op_id} has no snapshot (was it deleted?)")
    return snapshot


def mark_failed(session: Session, snapshot_id: int, error: str) -> None:
    """A snapshot that will not be ready: failed, with the end of its error (unless it is
    ready already)."""
    snapshot = session.get(Snapshot, snapshot_id, with_for_update=True)
    if snapshot is not None and snapshot.state != READY:
        snapshot.state, snapshot.error = FAILED, error[-ERROR_LIMIT:]
        snapshot.completed_at = utcnow()


def active_users(session: Session, snapshot_ids: list[int]) -> dict[int, list[int]]:
    """Snapshot id -> runs in an active state that started from it."""
    if not snapshot_ids:
        return {}
    rows = session.execute(
        select(SnapshotUse.snapshot_id, Run.id)
        .join(Run, Run.id == SnapshotUse.run_id)
        .where(SnapshotUse.snapshot_id.in_(snapshot_ids), Run.state.in_(states.ACTIVE))
    )
    out: dict[int, list[int]] = {}
    for snapshot_id, run_id in rows:
        out.setdefault(snapshot_id, []).append(run_id)
    return out


def delete_snapshot(session: Session, job_name: str, name: str, actor: Principal) -> None:
    snapshot = get_snapshot(session, job_name, name, lock=True)
    if snapshot.state == CREATING:
        raise Conflict(
            f"Snapshot '{name}' is still being created (operation {snapshot.operation_id}); "
            "wait for it to finish.",
            operation_id=snapshot.operation_id,
        )
    users = active_users(session, [snapshot.id]).get(snapshot.id, [])
    if users:
        raise Conflict(
            f"Snapshot '{name}' is in use: run(s) {', '.join(map(str, users))} started from it "
            "and are active. Stop them first (a run may need its snapshot to be started again).",
            runs=users,
        )
    pending = pinned_by(session, snapshot.id)
    if pending:
        raise Conflict(
            f"Snapshot '{name}' is about to be used by operation(s) "
            f"{', '.join(map(str, pending))}; wait for them to finish.",
            operations=pending,
        )
    session.delete(snapshot)
    session.flush()
    audit.record(
        session,
        actor,
        "snapshot.delete",
        job=job_name,
        target=f"snapshot {name}",
        status_code=204,
        detail={"size_bytes": snapshot.size_bytes},
    )


# ---- responses ----------------------------------------------------------------------------


def summary(snapshot: Snapshot) -> SnapshotSummary:
    return SnapshotSummary(
        job=snapshot.job.name,
        name=snapshot.name,
        state=snapshot.state,  # type: ignore[arg-type]
        created_at=snapshot.created_at,
        completed_at=snapshot.completed_at,
        size_bytes=snapshot.size_bytes,
        bytes_written=snapshot.bytes_written,
        file_count=snapshot.file_count,
        run_id=snapshot.run_id,
        version=snapshot.version_number,
        stop=snapshot.stop,
    )


def snapshot_response(session: Session, snapshot: Snapshot) -> SnapshotResponse:
    uses = session.execute(
        select(SnapshotUse, Run)
        .join(Run, Run.id == SnapshotUse.run_id)
        .where(SnapshotUse.snapshot_id == snapshot.id)
        .order_by(SnapshotUse.id)
    ).all()
    queries = [
        QuerySnapshot(
            query=name,
            batch_id=info.get("batch_id"),
            offsets={s["name"]: s.get("offset") for s in info.get("sources") or []},
            watermark_ms=info.get("watermark_ms"),
            next_watermark_ms=info.get("next_watermark_ms"),
            operators=[OperatorInfo.model_validate(o) for o in info.get("operators") or []],
            declared_operators=(info.get("declared") or {}).get("stateful_operators") or [],
            files=int(info.get("files") or 0),
            size_bytes=int(info.get("size_bytes") or 0),
        )
        for name, info in sorted((snapshot.queries or {}).items())
    ]
    return SnapshotResponse(
        **summary(snapshot).model_dump(),
        queries=queries,
        started_runs=[
            SnapshotUseResponse(
                run_id=run.id,
                job=run.job.name,
                run_state=run.state,
                query=use.query,
                source_query=use.source_query,
                parts=use.parts,
                at=use.created_at,
            )
            for use, run in uses
        ],
        operation_id=snapshot.operation_id,
        error=snapshot.error,
        manifest=snapshot.manifest,
    )


# ---- coordinates ----------------------------------------------------------------------------


def coordinates(session: Session, settings: Settings, job_name: str) -> CoordinatesResponse:
    """Onyx's job-snapshot-coordinates: the latest committed batch of each query of the job's
    current (or last) run, read from its checkpoints."""
    job = get_job(session, job_name)
    run = current_run(session, job)
    if run is None:
        raise Conflict(f"Job '{job_name}' has never run; there are no coordinates yet.")
    found, uncommitted = [], []
    for spec in run.version.queries:
        root = settings.resolved_checkpoint_root
        try:
            with read_checkpoint(root, checkpoint_path(root, job.name, run.id, spec)) as folder:
                batch = latest_commit_batch(folder, planned=True)
        except PathOutsideRoot as exc:
            raise Unprocessable(f"Run {run.id}'s checkpoint cannot be read: {exc}") from None
        if batch is None:
            uncommitted.append(spec["name"])
        else:
            found.append(Coordinates(job=job.name, run=run.id, query=spec["name"], batch_id=batch))
    return CoordinatesResponse(
        job=job.name,
        run=run.id,
        version=run.version.number,
        run_state=run.state,
        coordinates=found,
        uncommitted=uncommitted,
    )


# ---- retention ------------------------------------------------------------------------------


def get_retention(session: Session, job_name: str) -> RetentionResponse:
    job = get_job(session, job_name)
    policy = session.get(SnapshotRetention, job.id)
    return RetentionResponse(
        job=job.name,
        keep_last=policy.keep_last if policy else None,
        max_age_seconds=policy.max_age_seconds if policy else None,
    )


def set_retention(
    session: Session, job_name: str, body: RetentionBody, actor: Principal
) -> RetentionResponse:
    job = get_job(session, job_name, lock=True)
    policy = session.get(SnapshotRetention, job.id)
    max_age = int(parse_duration(body.max_age).total_seconds()) if body.max_age else None
    if policy is None:
        policy = SnapshotRetention(job_id=job.id, updated_by=actor.name)
        session.add(policy)
    policy.keep_last, policy.max_age_seconds = body.keep_last, max_age
    policy.updated_by = actor.name
    session.flush()
    audit.record(
        session,
        actor,
        "snapshot.retention",
        job=job.name,
        detail={"keep_last": body.keep_last, "max_age_seconds": max_age},
    )
    return get_retention(session, job_name)


def expired(
    session: Session,
    job_id: int,
    *,
    now: datetime | None = None,
    keep: frozenset[int] = frozenset(),
) -> list[tuple[Snapshot, str]]:
    """Ready snapshots the job's retention lets go: a snapshot is kept if any rule keeps it
    (among the newest keep_last, or younger than max_age, like restic's --keep-last and
    --keep-within), and always while a run in an active state started from it."""
    policy = session.get(SnapshotRetention, job_id)
    if policy is None or (policy.keep_last is None and policy.max_age_seconds is None):
        return []
    now = now or datetime.now(UTC)
    rows = list(
        session.scalars(
            select(Snapshot)
            .where(Snapshot.job_id == job_id, Snapshot.state == READY)
            .order_by(Snapshot.created_at.desc(), Snapshot.id.desc())
        )
    )
    in_use = active_users(session, [s.id for s in rows])
    out = []
    for index, snapshot in enumerate(rows):
        kept_by_count = policy.keep_last is not None and index < policy.keep_last
        age = (now - snapshot.created_at).total_seconds()
        kept_by_age = policy.max_age_seconds is not None and age < policy.max_age_seconds
        if kept_by_count or kept_by_age or snapshot.id in keep or snapshot.id in in_use:
            continue
        if pinned_by(session, snapshot.id):
            continue
        reasons = []
        if policy.keep_last is not None:
            reasons.append(f"not among the newest {policy.keep_last}")
        if policy.max_age_seconds is not None:
            reasons.append(f"older than {policy.max_age_seconds}s")
        out.append((snapshot, " and ".join(reasons)))
    return out
