"""Startpoints: stored apart from checkpoints, previewed, applied by the runtime, undone."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from sqlalchemy import func, select, text, tuple_
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.orm import Session

from app.audit import service as audit
from app.auth.service import Principal
from app.core.errors import BadRequest, Conflict, NotFound, Unprocessable
from app.core.pagination import decode_cursor, take_page
from app.core.paths import within_any
from app.jobs.models import Job, JobVersion
from app.jobs.service import get_job
from app.runs.service import current_run
from app.startpoints.models import APPLIED, PENDING, Startpoint, StartpointApplication
from app.startpoints.schemas import (
    StartpointSet,
)
from tidegate_runtime.sources import positions as rt

log = logging.getLogger(__name__)

RECENT_APPLICATIONS = 50


def version_for(session: Session, job: Job) -> JobVersion:
    """The job's current version: its current run's, else the newest one."""
    run = current_run(session, job)
    if run is not None:
        return run.version
    version = session.scalar(
        select(JobVersion).where(JobVersion.job_id == job.id).order_by(JobVersion.number.desc())
    )
    if version is None:
        raise Unprocessable(
            f"Job '{job.name}' has no version yet, so it has no sources to set startpoints on."
        )
    return version


def declared_sources(version: JobVersion) -> dict[str, dict[str, Any]]:
    """Source name -> {kind, options, queries: [(query, source index)]}."""
    out: dict[str, dict[str, Any]] = {}
    for q in version.queries:
        for index, s in enumerate(q["sources"]):
            entry = out.setdefault(
                s["name"], {"kind": s["kind"], "options": s["options"], "queries": []}
            )
            entry["queries"].append((q["name"], index))
    return out


def readable_eventlog(options: dict[str, Any], roots: list[Path] | None) -> str | None:
    """Why the API may not read this event-log source (None: it may). Only logs inside the
    allowed roots (TIDEGATE_EVENTLOG_ROOTS): a version names any folder it likes."""
    root = options.get("root") or options.get("path")
    if roots is None or not root:
        return "the API reads no event log here"
    if within_any(str(root), roots):
        return None
    return (
        f"the API reads event logs only inside TIDEGATE_EVENTLOG_ROOTS "
        f"({', '.join(str(r) for r in roots)}); this source's root is not; the runtime "
        "resolves it when the query starts"
    )


def _partition_count(kind: str, options: dict[str, Any], roots: list[Path] | None) -> int | None:
    if kind != "eventlog" or readable_eventlog(options, roots) is not None:
        return None
    try:
        return len(rt.EventLogPositions(options).partitions())
    except Exception:  # the log may not be readable from here; the runtime checks again
        return None


def upsert(
    session: Session,
    job_name: str,
    items: list[StartpointSet],
    actor: Principal,
    version: JobVersion | None = None,
    eventlog_roots: list[Path] | None = None,
) -> int:
    """Store startpoints for the sources of ``version`` (default: the job's current one).
    Partitions of event-log sources inside ``eventlog_roots`` are checked against the log."""
    job = get_job(session, job_name, lock=True)
    sources = declared_sources(version or version_for(session, job))
    seen: set[tuple[str, int | None]] = set()
    counts: dict[str, int | None] = {}
    errors = []
    for i, sp in enumerate(items):
        key = (sp.source, sp.partition)
        if key in seen:
            errors.append(
                {
                    "field": f"startpoints.{i}",
                    "message": f"source '{sp.source}' partition {sp.partition} is set twice",
                }
            )
        seen.add(key)
        if sp.source not in sources:
            errors.append(
                {"field": f"startpoints.{i}.source", "message": f"unknown source '{sp.source}'"}
            )
            continue
        kind = sources[sp.source]["kind"]
        if kind not in ("eventlog", "kafka", "file"):
            errors.append(
                {"field": f"startpoints.{i}.source", "message": str(rt.unsupported(kind))}
            )
        elif kind == "file" and sp.type not in ("OLDEST", "OFFSET"):
            errors.append(
                {
                    "field": f"startpoints.{i}.type",
                    "message": f"a file source supports OLDEST and OFFSET, not {sp.type}",
                }
            )
        if kind == "file" and sp.partition not in (None, 0):
            errors.append(
                {
                    "field": f"startpoints.{i}.partition",
                    "message": f"source '{sp.source}' is a file source: it has one position "
                    "(partition 0, or omit the partition)",
                }
            )
        elif sp.partition is not None:
            if sp.source not in counts:
                counts[sp.source] = _partition_count(
                    kind, sources[sp.source]["options"], eventlog_roots
                )
            total = counts[sp.source]
            if total is not None and sp.partition >= total:
                errors.append(
                    {
                        "field": f"startpoints.{i}.partition",
                        "message": f"source '{sp.source}' has partitions 0..{total - 1}",
                    }
                )
    if errors:
        shown = "; ".join(e["message"] for e in errors[:5])
        more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
        raise Unprocessable(
            f"{len(errors)} startpoint(s) refused, nothing was stored: {shown}{more}. "
            f"Declared sources: {', '.join(sorted(sources))}.",
            errors=errors[:100],
        )
    rows = [
        {
            "job_id": job.id,
            "source": sp.source,
            "partition": sp.partition,
            "type": sp.type,
            "value": sp.value,
            "state": PENDING,
            "created_by": actor.name,
        }
        for sp in items
    ]
    # The job's startpoints locked in id order before the upsert (which locks the rows it
    # replaces in the request's order): the runtime channel settles them in id order too.
    session.execute(
        select(Startpoint.id)
        .where(Startpoint.job_id == job.id)
        .order_by(Startpoint.id)
        .with_for_update(key_share=True)
    )
    stmt = pg_insert(Startpoint)
    stmt = stmt.on_conflict_do_update(
        # Literal -1, as in the unique index: a bound parameter would not match it.
        index_elements=[Startpoint.job_id, Startpoint.source, text("coalesce(partition, -1)")],
        set_={
            "type": stmt.excluded.type,
            "value": stmt.excluded.value,
            "state": PENDING,
            "created_by": stmt.excluded.created_by,
            "updated_at": func.now(),
        },
    )
    session.execute(stmt, rows)
    audit.record(
        session,
        actor,
        "startpoints.set",
        job=job.name,
        detail={"count": len(rows), "sources": sorted({r["source"] for r in rows})},
    )
    return len(rows)


def hand_off(
    session: Session,
    job_name: str,
    version: JobVersion,
    end_offsets: dict[str, dict[str, int]],
    actor: Principal,
) -> dict[str, dict[str, int]]:
    """After a drain: OFFSET startpoints at the drained end offsets for every source the next
    version reads too, so it starts exactly at the next record of each partition."""
    declared = declared_sources(version)
    handed = {name: end for name, end in end_offsets.items() if name in declared}
    items = [
        StartpointSet(source=name, partition=int(p), type="OFFSET", value=int(o))
        for name, end in sorted(handed.items())
        for p, o in sorted(end.items(), key=lambda item: int(item[0]))
    ]
    if items:
        upsert(session, job_name, items, actor, version=version)
    return handed


def list_pending(session: Session, job: Job) -> list[Startpoint]:
    return list(
        session.scalars(
            select(Startpoint)
            .where(Startpoint.job_id == job.id)
            .order_by(Startpoint.source, Startpoint.partition.nulls_first())
        )
    )


def page_pending(
    session: Session, job: Job, *, limit: int, cursor: str | None
) -> tuple[list[Startpoint], str | None]:
    """A page of ``list_pending``: keyset on (source, partition), the job's unique key."""
    partition = func.coalesce(Startpoint.partition, -1)
    stmt = (
        select(Startpoint).where(Startpoint.job_id == job.id).order_by(Startpoint.source, partition)
    )
    after = decode_cursor(cursor)
    if after is not None:
        if not (
            isinstance(after, list)
            and len(after) == 2
            and isinstance(after[0], str)
            and isinstance(after[1], int)
        ):
            raise BadRequest("The cursor is not one this API issued.")
        stmt = stmt.where(tuple_(Startpoint.source, partition) > tuple_(after[0], after[1]))
    return take_page(
        session,
        stmt,
        limit,
        lambda last: [last.source, -1 if last.partition is None else last.partition],
    )


def recent_applications(session: Session, job: Job) -> list[StartpointApplication]:
    return list(
        session.scalars(
            select(StartpointApplication)
            .where(StartpointApplication.job_id == job.id)
            .order_by(StartpointApplication.id.desc())
            .limit(RECENT_APPLICATIONS)
        )
    )


def withdraw(
    session: Session, job_name: str, source: str, partition: int | None, actor: Principal
) -> None:
    job = get_job(session, job_name)
    cond = [Startpoint.job_id == job.id, Startpoint.source == source]
    cond.append(
        Startpoint.partition.is_(None) if partition is None else Startpoint.partition == partition
    )
    row = session.scalar(select(Startpoint).where(*cond).with_for_update())
    where = f"source '{source}'" + (f" partition {partition}" if partition is not None else "")
    if row is None:
        raise NotFound(f"Job '{job_name}' has no startpoint for {where}.")
    if row.state == APPLIED:
        raise Conflict(
            f"The startpoint for {where} was already applied to the checkpoint; undo it with "
            "POST …/startpoints/{application id}/revert while the job is stopped."
        )
    session.delete(row)
    audit.record(
        session, actor, "startpoints.withdraw", job=job.name, target=where, status_code=204
    )
