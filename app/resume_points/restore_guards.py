"""Refusals before a restore: a non-empty fixed checkpoint_location, a file sink past the batch."""

from __future__ import annotations

import contextlib
import os
import re

from sqlalchemy.orm import Session

from app.core.config import Settings
from app.core.errors import Conflict, Unprocessable
from app.jobs.models import Job
from app.jobs.service import get_version
from app.resume_points.plan import Plan, QueryPlan
from app.runs.models import Run
from app.snapshots.export import checkpoint_path
from app.snapshots.models import Snapshot


def require_restorable(session: Session, settings: Settings, job: Job, plan: Plan) -> None:
    """A query with its own fixed checkpoint_location can only be restored into an empty one
    (a per-run location by convention never exists yet)."""
    version = get_version(session, job.name, plan.version)
    specs = {q["name"]: q for q in version.queries}
    for q in plan.queries:
        location = specs[q.query].get("checkpoint_location")
        if q.source is None or not location:
            continue
        path = checkpoint_path(settings.resolved_checkpoint_root, job.name, 0, specs[q.query])
        if path.exists() and any(path.iterdir()):
            raise Unprocessable(
                f"Query '{q.query}' has a fixed checkpoint_location ({location}) that already "
                "holds a checkpoint; a snapshot can only be restored into an empty one. Omit "
                "checkpoint_location (per-run checkpoints) or empty it first."
            )
    require_sink_not_ahead(session, job, plan)


_FILE_SINK = re.compile(r"^FileSink\[(?P<path>.+)\]$")


# Spark's default spark.sql.streaming.fileSink.log.compactInterval.
COMPACT_INTERVAL = 10


def _sink_log(description: str | None) -> tuple[str, set[int]] | None:
    """A file sink (from its progress description, ``FileSink[<path>]``) on this machine and
    the batch ids its ``_spark_metadata`` log holds (plain or compacted)."""
    match = _FILE_SINK.match(description or "")
    if match is None:
        return None
    path = match.group("path")
    local = path[len("file:") :] if path.startswith("file:") else path
    if "://" in local:
        return None
    batches = set()
    with contextlib.suppress(OSError):
        for name in os.listdir(os.path.join(local, "_spark_metadata")):
            if (found := re.fullmatch(r"(\d+)(?:\.compact)?", name)) is not None:
                batches.add(int(found.group(1)))
    return path, batches


def file_sink_batch(description: str | None) -> tuple[str, int] | None:
    """A local file sink and the latest batch id in its ``_spark_metadata`` log: Spark's file
    sink skips every batch id at or below it."""
    log = _sink_log(description)
    return (log[0], max(log[1])) if log is not None and log[1] else None


def sink_missing_for_compaction(
    description: str | None, restored: int, interval: int = COMPACT_INTERVAL
) -> tuple[str, int, list[int]] | None:
    """(path, compaction batch, missing batch ids) when a local file sink cannot compact.

    Spark's file sink compacts its log at every batch K with ``(K + 1) % interval == 0`` and
    reads for it the previous compaction (``K - interval``) and every batch after it. A run
    restored at batch ``restored`` writes ``restored + 1`` on, so the batches up to
    ``restored`` must already be in the sink's log: in a new, empty output directory they are
    not, and the run fails at K (BATCH_METADATA_NOT_FOUND) -- ten batches after it started."""
    log = _sink_log(description)
    if log is None or restored < 0 or interval < 1:
        return None
    first = restored + 1
    compaction = first + (-(first + 1)) % interval
    needed = range(max(0, compaction - interval), restored + 1)
    missing = [b for b in needed if b not in log[1]]
    return (log[0], compaction, missing) if missing else None


def _sink_runs(session: Session, job: Job, q: QueryPlan) -> list[tuple[Run, str]]:
    """Runs whose sink for this query may hold later batches: the run the state comes from
    (its query as the source named it) and the job's current or last run."""
    assert q.source is not None
    runs: list[tuple[Run, str]] = []
    run_id = q.source.ref.run
    if run_id is None and q.source.snapshot_id is not None:
        snapshot = session.get(Snapshot, q.source.snapshot_id)
        run_id = snapshot.run_id if snapshot is not None else None
    if run_id is not None and (run := session.get(Run, run_id)) is not None:
        runs.append((run, q.source.ref.query))
    current = session.get(Run, job.current_run_id) if job.current_run_id is not None else None
    if current is not None and current.id != run_id:
        runs.append((current, q.query))
    return runs


def require_sink_not_ahead(session: Session, job: Job, plan: Plan) -> None:
    """Restoring at batch N a query whose file sink already holds batch M > N loses output:
    Spark's file sink skips the re-run batch ids N+1..M. Refused (409) when a run's progress
    names a local file sink whose ``_spark_metadata`` is past the restored batch."""
    for q in plan.queries:
        if q.source is None or q.source.info.get("batch_id") is None:
            continue
        if q.source.snapshot_id is None and q.source.ref.run == job.current_run_id:
            continue  # an update from the live run: its stop finishes the batch in flight
        restored = int(q.source.info["batch_id"])
        for run, name in _sink_runs(session, job, q):
            sink = file_sink_batch(((run.progress or {}).get(name) or {}).get("sink"))
            if sink is not None and sink[1] > restored:
                raise Conflict(
                    f"Query '{q.query}' would restart at batch {restored + 1} from "
                    f"{q.source.ref.label}, but the file sink {sink[0]} that run {run.id} wrote "
                    f"already holds batches up to {sink[1]}: Spark's file sink skips batch ids it "
                    f"has written, so batches {restored + 1}..{sink[1]} of the new run would be "
                    "lost. Start from a snapshot at or after that batch, or update by drain "
                    "(the new version starts a fresh query, which may write to a new path).",
                    query=q.query,
                    restored_batch=restored,
                    sink=sink[0],
                    sink_batch=sink[1],
                )
