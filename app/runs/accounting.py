"""``tidegate verify``: did a run lose anything? Per query and batch, the records its
checkpoint says it read (the offsets of ``offsets/N`` less those of ``offsets/N-1``, per source
and partition) against what Spark counted in (the batch's ``numInputRows``) and what its
stateful operators dropped as late (``numRowsDroppedByWatermark``), from the progress the run
reported (the last 100 batches of each query are kept, and Spark keeps about as many offset
files). Reads the checkpoint; changes nothing."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.core.paths import CheckpointRoot, checkpoint_path, read_checkpoint
from app.runs.models import QueryProgress, Run
from app.runs.schemas import BatchAccount, QueryAccount, RunAccount
from app.runs.service import get_run
from tidegate_runtime.checkpoints import checkpoint as cp
from tidegate_runtime.sources import positions as rt


def _records(source: dict[str, Any], before: str | None, after: str | None) -> int | None:
    """Records between two offset lines of one source (None: not per-partition numbers)."""
    if before is None or after is None:
        return None
    options = source.get("options") or {}
    try:
        start = rt.parse_line(source["kind"], before, options)
        end = rt.parse_line(source["kind"], after, options)
    except Exception:
        return None
    if any(o < 0 for o in (*start.values(), *end.values())):
        return None  # Kafka's "earliest"/"latest" markers: no position to count from
    return sum(o - start.get(p, 0) for p, o in end.items())


def _read_per_batch(
    checkpoint: Any, sources: list[dict[str, Any]], batches: list[int]
) -> dict[int, int | None]:
    """Records read by each batch per its checkpoint; None where it cannot say: the first
    batch (where it started is not in the checkpoint), a previous offsets file Spark no longer
    keeps, offsets that are not per-partition numbers."""
    lines: dict[int, list[str | None] | None] = {}
    for b in {b for n in batches for b in (n - 1, n) if b >= 0}:
        try:
            lines[b] = cp.read_offsets(checkpoint, b)[1]
        except (OSError, cp.CheckpointError, ValueError):
            lines[b] = None
    read: dict[int, int | None] = {}
    for n in batches:
        before, after = lines.get(n - 1), lines.get(n)
        if before is None or after is None or len(before) != len(after):
            read[n] = None
            continue
        counts = [_records(s, before[i], after[i]) for i, s in enumerate(sources[: len(after)])]
        read[n] = None if None in counts else sum(c for c in counts if c is not None)
    return read


def _account(
    root: CheckpointRoot, run: Run, spec: dict[str, Any], progress: list[QueryProgress]
) -> QueryAccount:
    by_batch = {row.batch_id: row.payload for row in progress}  # the latest report of a batch
    batches = sorted(by_batch)
    with read_checkpoint(root, checkpoint_path(root, run.job.name, run.id, spec)) as checkpoint:
        read = _read_per_batch(checkpoint, spec.get("sources") or [], batches) if checkpoint else {}
    rows = []
    for n in batches:
        payload = by_batch[n]
        counted, dropped = payload.get("num_input_rows"), payload.get("rows_dropped_late") or 0
        got = read.get(n)
        rows.append(
            BatchAccount(
                batch_id=n,
                read=got,
                counted_in=counted,
                dropped_late=dropped,
                not_counted=None if got is None or counted is None else got - counted,
            )
        )
    return QueryAccount(
        query=spec["name"],
        batches=rows,
        read=sum(r.read or 0 for r in rows),
        counted_in=sum(r.counted_in or 0 for r in rows),
        dropped_late=sum(r.dropped_late for r in rows),
        not_counted=sum(r.not_counted or 0 for r in rows),
        unknown=[r.batch_id for r in rows if r.not_counted is None],
    )


def account(session: Session, run_id: int, checkpoint_root: CheckpointRoot) -> RunAccount:
    run = get_run(session, run_id)
    queries = []
    for spec in run.version.queries:
        progress = session.scalars(
            select(QueryProgress)
            .where(QueryProgress.run_id == run.id, QueryProgress.query == spec["name"])
            .order_by(QueryProgress.id)
        ).all()
        queries.append(_account(checkpoint_root, run, spec, list(progress)))
    lost = any(q.dropped_late or q.not_counted for q in queries)
    return RunAccount(
        run_id=run.id,
        job=run.job.name,
        queries=queries,
        complete=not lost and not any(q.unknown for q in queries),
        verdict=_verdict(queries),
    )


def _verdict(queries: list[QueryAccount]) -> str:
    said = []
    for q in queries:
        if q.not_counted:
            said.append(f"{q.query}: {q.not_counted} records read were not counted in by Spark")
        if q.dropped_late:
            said.append(f"{q.query}: {q.dropped_late} rows dropped as late (docs/late-data.md)")
        if q.unknown:
            said.append(f"{q.query}: batches {q.unknown} cannot be checked (offsets not kept)")
    return "; ".join(said) or "every record read was counted in; none dropped as late"
