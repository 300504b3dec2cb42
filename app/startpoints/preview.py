"""What the pending startpoints would do if the job started now: per partition, where it would
start and how many records that replays or skips; per query that replays, the event-time
watermark it would start with and how many of the replayed records lie behind it (records
Spark's stateful operators may drop as late). Reads the run's checkpoint and the source;
changes nothing."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

from app.core.paths import CheckpointRoot, checkpoint_path, read_checkpoint
from app.jobs.models import Job
from app.jobs.service import get_job
from app.runs.models import Run
from app.runs.service import current_run
from app.startpoints import kafka_preview
from app.startpoints.models import PENDING
from app.startpoints.schemas import Preview, PreviewError, PreviewLate, PreviewRow
from app.startpoints.service import declared_sources, list_pending, readable_eventlog, version_for
from tidegate_runtime.checkpoints import checkpoint as cp
from tidegate_runtime.sources import positions as rt


class _Committed:
    """A query's latest committed batch: its offsets for one source and the watermark the
    next batch filters late rows with (0: the query has none)."""

    def __init__(self, offsets: dict[int, int], watermark_ms: int) -> None:
        self.offsets = offsets
        self.watermark_ms = watermark_ms


def _committed(
    checkpoint_root: CheckpointRoot,
    job: Job,
    run: Run | None,
    query: str,
    index: int,
    kind: str,
    options: dict[str, Any],
) -> _Committed | None:
    if run is None:
        return None
    spec = next((q for q in run.version.queries if q["name"] == query), {"name": query})
    try:
        root = checkpoint_root
        with read_checkpoint(root, checkpoint_path(root, job.name, run.id, spec)) as checkpoint:
            batch = cp.latest_commit_batch(checkpoint)
            if checkpoint is None or batch is None:
                return None
            _, lines = cp.read_offsets(checkpoint, batch)
            watermark = cp.next_batch_watermark(checkpoint, batch)
        return _Committed(rt.parse_line(kind, lines[index], options), watermark)
    except Exception:
        return None


def _when(ms: int) -> datetime | None:
    return datetime.fromtimestamp(ms / 1000, UTC) if ms > 0 else None


def _late(
    source: str,
    query: str,
    decl: dict[str, Any],
    points: list[rt.Startpoint],
    committed: _Committed,
    target: dict[int, int],
    resolver: rt.KafkaResolver | None,
) -> PreviewLate | None:
    """The watermark a query would start with after these startpoints, and the replayed
    records behind it; None when nothing of this query's is replayed."""
    now = committed.offsets
    ranges = {p: (o, now[p]) for p, o in target.items() if p in now and 0 <= o < now[p]}
    if not ranges:
        return None
    kind, options = decl["kind"], decl["options"]
    replayed = sum(end - start for start, end in ranges.values())
    kept = committed.watermark_ms
    if kept <= 0:
        return PreviewLate(
            source=source,
            query=query,
            replayed=replayed,
            watermark=None,
            start_watermark=None,
            lowered=False,
            behind=0,
            note="The query has no event-time watermark: nothing it replays is dropped as late.",
        )
    try:
        lowered_to = rt.replay_watermark(kind, options, points, now, target, resolver)
        start = kept if lowered_to is None else min(kept, lowered_to)
        behind = rt.count_behind(kind, options, ranges, start, resolver)
    except Exception:
        lowered_to, start, behind = None, kept, None
    lowered = start < kept
    how = (
        f"the rewind lowers it to {_when(start)}, 1 ms before the earliest replayed record"
        if lowered
        else "the rewind keeps it (the replayed records' times cannot be read here)"
        if lowered_to is None
        else "the rewind keeps it (already below the earliest replayed record)"
    )
    counted = (
        "their times could not all be read (a file source, a Kafka resolver that cannot read "
        "records, a range over the preview's limit, or records retention took)"
        if behind is None
        else f"{behind} of the {replayed} replayed records lie behind it and may be dropped as late"
    )
    return PreviewLate(
        source=source,
        query=query,
        replayed=replayed,
        watermark=_when(kept),
        start_watermark=_when(start),
        lowered=lowered,
        behind=behind,
        note=f"Query {query} would start with the watermark at {_when(start)}: {how}; {counted}.",
    )


def _rows(
    name: str,
    points: list[rt.Startpoint],
    target: dict[int, int],
    current: dict[int, int] | None,
) -> list[PreviewRow]:
    by_partition = {p.partition: p for p in points if p.partition is not None}
    fan_out = next((p for p in points if p.partition is None), None)
    rows = []
    for partition, offset in sorted(target.items()):
        sp = by_partition.get(partition, fan_out)
        if sp is None:
            continue
        now = current.get(partition) if current else None
        if now is not None and (now < 0 or offset < 0):
            now = None  # a Kafka "earliest" (-2): Spark binds it when the batch runs
        move = (
            "unknown"
            if now is None
            else ("replay" if offset < now else "skip" if offset > now else "none")
        )
        rows.append(
            PreviewRow(
                source=name,
                partition=partition,
                startpoint_id=sp.id,
                type=sp.type,  # type: ignore[arg-type]
                value=sp.value,
                current=now,
                target=offset,
                move=move,  # type: ignore[arg-type]
                records=abs(offset - now) if now is not None else None,
            )
        )
    return rows


def preview(
    session: Session,
    job_name: str,
    checkpoint_root: CheckpointRoot,
    eventlog_roots: list[Path],
    kafka_brokers: frozenset[str] = frozenset(),
) -> Preview:
    job = get_job(session, job_name)
    version = version_for(session, job)
    sources = declared_sources(version)
    run = current_run(session, job)
    pending = [sp for sp in list_pending(session, job) if sp.state == PENDING]
    result = Preview(rows=[], errors=[], late=[])
    for name in sorted({sp.source for sp in pending}):
        points = [
            rt.Startpoint(sp.id, sp.source, sp.partition, sp.type, sp.value)
            for sp in pending
            if sp.source == name
        ]
        decl = sources.get(name)
        if decl is None:
            error = "the current version has no such source"
            result.errors.append(PreviewError(source=name, error=error))
            continue
        kind, options = decl["kind"], decl["options"]
        by_query = {
            query: _committed(checkpoint_root, job, run, query, index, kind, options)
            for query, index in decl["queries"]
        }
        first = by_query[decl["queries"][0][0]]
        refused = readable_eventlog(options, eventlog_roots) if kind == "eventlog" else None
        if refused is not None:
            result.errors.append(PreviewError(source=name, error=refused))
            continue
        resolver, unasked = (
            kafka_preview.resolver_for(options, kafka_brokers) if kind == "kafka" else (None, "")
        )
        try:
            current = first.offsets if first else None
            target = rt.resolve(kind, options, points, current, resolver)
            result.rows += _rows(name, points, target, current)
            for query, committed in by_query.items():
                late = committed and _late(name, query, decl, points, committed, target, resolver)
                if late:
                    result.late.append(late)
        except rt.ResolverNeeded:
            result.errors.append(PreviewError(source=name, error=unasked))
        except Exception as exc:
            result.errors.append(PreviewError(source=name, error=str(exc)))
        finally:
            if resolver is not None:
                resolver.close()
    return result
