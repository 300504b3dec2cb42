"""Refusals before a restore: a non-empty fixed checkpoint_location, a file sink past the batch."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

from app.core.config import Settings
from app.core.errors import Conflict, Unprocessable
from app.core.paths import CheckpointRoot, PathOutsideRoot, read_checkpoint, within_any
from app.jobs.models import Job, JobVersion
from app.jobs.schemas import FILE_SINK_FORMATS
from app.jobs.service import get_version
from app.resume_points.compat import Problem
from app.resume_points.plan import Plan, QueryPlan
from app.runs.models import Run
from app.snapshots.checkpoint_files import checkpoint_path
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
        root = settings.resolved_checkpoint_root
        path = checkpoint_path(root, job.name, 0, specs[q.query])
        if _holds_files(root, path):
            raise Unprocessable(
                f"Query '{q.query}' has a fixed checkpoint_location ({location}) that already "
                "holds a checkpoint; a snapshot can only be restored into an empty one. Omit "
                "checkpoint_location (per-run checkpoints) or empty it first."
            )
    require_sink_not_ahead(session, job, plan, settings.resolved_sink_roots)


def _holds_files(root: CheckpointRoot, path: CheckpointRoot) -> bool:
    try:
        with read_checkpoint(root, path) as folder:
            return folder is not None and bool(folder.names())
    except PathOutsideRoot:
        return True  # not a plain folder: not one to restore into either


_FILE_SINK = re.compile(r"^FileSink\[(?P<path>.+)\]$")


# Spark's default spark.sql.streaming.fileSink.log.compactInterval.
COMPACT_INTERVAL = 10
_COMPACT_KEY = "spark.sql.streaming.fileSink.log.compactInterval"


def _sink_log(description: str | None, roots: list[Path]) -> tuple[str, set[int]] | None:
    """A file sink (from its progress description, ``FileSink[<path>]``) on this machine and
    the batch ids its ``_spark_metadata`` log holds (plain or compacted)."""
    match = _FILE_SINK.match(description or "")
    if match is None:
        return None
    path = match.group("path")
    batches = logged_batches(path, roots)
    return None if batches is None else (path, batches)


def logged_batches(path: str, roots: list[Path]) -> set[int] | None:
    """The batch ids a file sink's ``_spark_metadata`` log at ``path`` holds (plain or
    compacted; none for a folder not written yet), or None for a path not on this machine or
    outside ``roots`` (TIDEGATE_SINK_ROOTS): a version, or a driver's report, names any
    folder it likes, and the API lists none outside them."""
    local = path[len("file:") :] if path.startswith("file:") else path
    if "://" in local or not within_any(local, roots):
        return None
    batches: set[int] = set()
    try:
        names = os.listdir(os.path.join(local, "_spark_metadata"))
    except FileNotFoundError:
        return batches  # not written yet: an empty log
    except OSError:
        return None  # unreadable from here (permissions, a mount): not checked
    for name in names:
        if (found := re.fullmatch(r"(\d+)(?:\.compact)?", name)) is not None:
            batches.add(int(found.group(1)))
    return batches


def missing_for_compaction(
    batches: set[int], restored: int, interval: int = COMPACT_INTERVAL
) -> tuple[int, list[int]] | None:
    """(compaction batch, missing batch ids) when a file sink whose log holds ``batches``
    cannot compact after a restore at batch ``restored``.

    Spark's file sink compacts its log at every batch K with ``(K + 1) % interval == 0`` and
    reads for it the previous compaction (``K - interval``) and every batch after it. A run
    restored at batch ``restored`` writes ``restored + 1`` on, so the batches up to
    ``restored`` must already be in the sink's log: in a new, empty output directory they are
    not, and the run fails at K (BATCH_METADATA_NOT_FOUND) -- ten batches after it started."""
    if restored < 0 or interval < 1:
        return None
    first = restored + 1
    compaction = first + (-(first + 1)) % interval
    needed = range(max(0, compaction - interval), restored + 1)
    missing = [b for b in needed if b not in batches]
    return (compaction, missing) if missing else None


def file_sink_batch(description: str | None, roots: list[Path]) -> tuple[str, int] | None:
    """A local file sink and the latest batch id in its ``_spark_metadata`` log: Spark's file
    sink skips every batch id at or below it."""
    log = _sink_log(description, roots)
    return (log[0], max(log[1])) if log is not None and log[1] else None


def sink_missing_for_compaction(
    description: str | None, restored: int, roots: list[Path], interval: int = COMPACT_INTERVAL
) -> tuple[str, int, list[int]] | None:
    """(path, compaction batch, missing batch ids) when the local file sink a run's progress
    names cannot compact (``missing_for_compaction``)."""
    log = _sink_log(description, roots)
    found = None if log is None else missing_for_compaction(log[1], restored, interval)
    return None if found is None or log is None else (log[0], *found)


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


def require_sink_not_ahead(session: Session, job: Job, plan: Plan, roots: list[Path]) -> None:
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
            sink = file_sink_batch(((run.progress or {}).get(name) or {}).get("sink"), roots)
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


def compact_interval(conf: dict[str, Any] | None) -> int:
    """The file sink's log compaction interval a version runs with."""
    try:
        return int((conf or {}).get(_COMPACT_KEY) or COMPACT_INTERVAL)
    except (TypeError, ValueError):
        return COMPACT_INTERVAL  # Spark refuses it at start; nothing to check against here


def declared_sink_problems(
    settings: Settings, version: JobVersion, plan: Plan, *, live: bool = False
) -> list[Problem]:
    """What a version's declared file sinks say before anything stops. Spark's file sink skips
    every batch id its ``_spark_metadata`` log already holds, so a query resuming at batch N
    (or starting fresh, at 0) whose sink holds later batches would lose them (``sink_ahead``;
    not checked for ``live``, an update from the running run, whose sink goes on with it); and
    a query resuming its state whose sink log lacks the batches its next compaction reads
    fails about ten batches in (``sink_log``). Only sinks inside TIDEGATE_SINK_ROOTS are read."""
    specs = {q["name"]: q for q in version.queries}
    interval = compact_interval(version.conf)
    problems = []
    for q in plan.queries:
        sink = specs[q.query].get("sink") or {}
        if sink.get("format") not in FILE_SINK_FORMATS or not sink.get("path"):
            continue
        path = str(sink["path"])
        batches = logged_batches(path, settings.resolved_sink_roots)
        if batches is None:
            continue  # not on this machine, or outside the sink roots: not read
        if q.source is None or q.source.info.get("batch_id") is None:
            if batches:
                problems.append(
                    Problem(
                        q.query,
                        "sink_ahead",
                        f"it starts fresh at batch 0, but its file sink {path} already holds "
                        f"batches up to {max(batches)}: Spark's file sink skips batch ids it "
                        f"holds, so batches 0..{max(batches)} of the new query would be lost. "
                        "Write to a new, empty folder.",
                        expected=-1,
                        actual=max(batches),
                    )
                )
            continue
        restored = int(q.source.info["batch_id"])
        if not live and batches and max(batches) > restored:
            problems.append(
                Problem(
                    q.query,
                    "sink_ahead",
                    f"it resumes at batch {restored + 1} from {q.source.ref.label}, but its "
                    f"file sink {path} already holds batches up to {max(batches)}: Spark's file "
                    f"sink skips batch ids it holds, so batches {restored + 1}..{max(batches)} "
                    "of the new run would be lost. Start from a snapshot at or after that "
                    "batch, or write to a new path and start the query fresh.",
                    expected=restored,
                    actual=max(batches),
                )
            )
        elif (found := missing_for_compaction(batches, restored, interval)) is not None:
            compaction, missing = found
            problems.append(
                Problem(
                    q.query,
                    "sink_log",
                    f"it resumes its state at batch {restored + 1} (or later) but writes to "
                    f"the file sink {path}, whose _spark_metadata lacks batches "
                    f"{missing[0]}..{missing[-1]}: Spark's file sink compacts its log every "
                    f"{interval} batches and at batch {compaction} reads them, so the new run "
                    "would fail there. A query that resumes its state must keep writing to "
                    "the output path it wrote before; to write elsewhere, update by drain "
                    "(the query starts fresh).",
                    expected=[missing[0], missing[-1]],
                    actual=sorted(batches)[-1:] or None,
                )
            )
    return problems


def all_fresh(version: JobVersion) -> Plan:
    """The plan of a version whose every query starts on a new checkpoint."""
    return Plan(
        version.number,
        [QueryPlan(q["name"], bool(q.get("stateful_operators")), None) for q in version.queries],
    )
