"""The worker's side of snapshots: export a run's checkpoints into the store, restore them into
a new run's checkpoints, apply retention and collect garbage. File IO happens between short
transactions; every function is safe to run again after a crash (blobs are content-addressed,
manifests and restored checkpoints appear by an atomic rename).

Garbage collection must not delete a blob an export has just written but not yet named in a
manifest: exports hold a shared PostgreSQL advisory lock while they write, and gc runs only
when it gets the exclusive one (otherwise the next export's gc collects).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from app.audit import service as audit
from app.core.config import Settings
from app.core.db import advisory_lock, transaction, utcnow
from app.jobs.models import Job
from app.runs.models import Run
from app.runtime.checkpoint import CheckpointError, hadoop_crc
from app.snapshots import service
from app.snapshots.export import (
    RESTORED_HINTS,
    ExportError,
    checkpoint_path,
    committed_batch,
    describe,
    select_files,
)
from app.snapshots.models import FAILED, READY, Snapshot, SnapshotUse
from app.snapshots.store import FileKey, SnapshotStore, StoreError, copy_tree_files, known_hashes

log = logging.getLogger(__name__)

LOCK_NAMESPACE, STORE_LOCK, RETENTION_LOCK = 7306, 1, 2
RETENTION_ACTOR = "tidegate-retention"
ERROR_LIMIT = 4000
# An export reports its interim figures (bytes and files copied so far) at most this often.
PROGRESS_SECONDS = 0.5


class SnapshotFailed(Exception):
    """The export or restore cannot succeed as asked (permanent: retrying will not help)."""


@contextmanager
def _store_lock(factory: sessionmaker[Session], *, exclusive: bool) -> Iterator[bool]:
    """Session-level advisory lock on its own connection (released if the worker dies)."""
    with advisory_lock(
        factory, LOCK_NAMESPACE, STORE_LOCK, shared=not exclusive, wait=not exclusive
    ) as got:
        yield got


def store_for(settings: Settings) -> SnapshotStore:
    try:
        return SnapshotStore(
            settings.resolved_snapshot_root, settings.snapshot_storage_options_dict
        )
    except StoreError as exc:  # misconfigured (e.g. an unknown option): not worth a retry
        raise SnapshotFailed(str(exc)) from None


def snapshot_for_operation(factory: sessionmaker[Session], op_id: int) -> int:
    with factory() as session:
        snapshot_id = session.scalar(select(Snapshot.id).where(Snapshot.operation_id == op_id))
    if snapshot_id is None:
        raise SnapshotFailed(f"operation {op_id} has no snapshot (was it deleted?)")
    return snapshot_id


def mark_failed(factory: sessionmaker[Session], snapshot_id: int, error: str) -> None:
    with transaction(factory) as session:
        snapshot = session.get(Snapshot, snapshot_id, with_for_update=True)
        if snapshot is not None and snapshot.state != READY:
            snapshot.state, snapshot.error = FAILED, error[-ERROR_LIMIT:]
            snapshot.completed_at = utcnow()


def _previous_hashes(
    session: Session, store: SnapshotStore, snapshot: Snapshot
) -> dict[FileKey, str]:
    """File hashes the job's latest ready snapshot recorded: unchanged files of the same
    checkpoints need not be read again."""
    previous = session.scalar(
        select(Snapshot)
        .where(Snapshot.job_id == snapshot.job_id, Snapshot.state == READY)
        .order_by(Snapshot.id.desc())
        .limit(1)
    )
    if previous is None:
        return {}
    try:
        manifest = store.read_manifest(previous.job.name, previous.name) or {}
    except (StoreError, OSError, ValueError):
        return {}
    known: dict[FileKey, str] = {}
    for query in (manifest.get("queries") or {}).values():
        if query.get("checkpoint"):
            known.update(known_hashes(Path(query["checkpoint"]), query.get("files") or {}))
    return known


def _restored_hashes(checkpoint: Path) -> dict[FileKey, str]:
    try:
        hints = json.loads((checkpoint / RESTORED_HINTS).read_text())
    except (OSError, ValueError):
        return {}
    return known_hashes(checkpoint, hints)


class ExportProgress:
    """An export's running figures, handed to ``report`` as it copies: once at the start,
    then at most every ``interval`` seconds (default ``PROGRESS_SECONDS``), and once at the
    end. Reporting is best effort: a failed report never fails the export."""

    def __init__(
        self,
        report: Callable[[dict[str, Any]], None] | None,
        *,
        interval: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.report = report
        self.interval = PROGRESS_SECONDS if interval is None else interval
        self.clock = clock
        self.bytes_total = self.files_total = self.bytes_copied = self.files_copied = 0
        self.done = False
        self._last: float | None = None

    def figures(self) -> dict[str, Any]:
        return {
            "phase": "exported" if self.done else "exporting",
            "bytes_total": self.bytes_total,
            "bytes_copied": self.bytes_copied,
            "files_total": self.files_total,
            "files_copied": self.files_copied,
        }

    def mark(self) -> tuple[int, int]:
        return self.bytes_copied, self.files_copied

    def rewind(self, mark: tuple[int, int]) -> None:
        """Forget what an attempt that failed had counted (it is copied again)."""
        self.bytes_copied, self.files_copied = mark

    def file_done(self, _rel: str, size: int) -> None:
        self.bytes_copied += size
        self.files_copied += 1
        self.emit()

    def finish(self) -> None:
        self.done = True
        self.emit(force=True)

    def emit(self, *, force: bool = False) -> None:
        if self.report is None:
            return
        now = self.clock()
        if not force and self._last is not None and now - self._last < self.interval:
            return
        self._last = now
        try:
            self.report(self.figures())
        except Exception as exc:  # progress is best effort; the export goes on
            log.warning("could not report export progress: %s", exc)


def _select(checkpoint: Path, batch: int) -> tuple[tuple[str, ...], int]:
    """The files restarting ``checkpoint`` at ``batch`` and their total size."""
    for attempt in range(3):
        try:
            files = select_files(checkpoint, batch).files
            return files, sum((checkpoint / f).lstat().st_size for f in files)
        except FileNotFoundError:
            # Spark's maintenance removed an old file between listing and reading: list again
            # (the files batch N needs are never among those removed).
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def export(
    factory: sessionmaker[Session],
    settings: Settings,
    snapshot_id: int,
    progress: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Copy every query's committed prefix into the store, write the manifest, mark ready.
    ``progress`` receives the interim figures (see ``ExportProgress``) while it copies."""
    store = store_for(settings)
    with factory() as session:
        snapshot = session.get(Snapshot, snapshot_id)
        if snapshot is None:
            raise SnapshotFailed(f"snapshot {snapshot_id} was deleted during its export")
        if snapshot.state == READY:
            return {"size_bytes": snapshot.size_bytes, "bytes_written": snapshot.bytes_written}
        run = session.get(Run, snapshot.run_id) if snapshot.run_id else None
        if run is None:
            raise SnapshotFailed("the run to export no longer exists")
        job_name, name, run_id = snapshot.job.name, snapshot.name, run.id
        specs = list(run.version.queries)
        version_number = run.version.number
        known = _previous_hashes(session, store, snapshot)

    queries: dict[str, Any] = {}
    manifest_queries: dict[str, Any] = {}
    totals = {"size_bytes": 0, "bytes_written": 0, "files": 0, "files_written": 0, "hashed": 0}
    figures = ExportProgress(progress)
    with _store_lock(factory, exclusive=False):
        # First what there is to copy (so the figures have a total), then the copying.
        planned: list[tuple[dict[str, Any], Path, int, tuple[str, ...], int]] = []
        for spec in specs:
            checkpoint = checkpoint_path(settings.resolved_checkpoint_root, job_name, run_id, spec)
            batch = committed_batch(checkpoint)
            if batch is None:
                queries[spec["name"]] = {"batch_id": None, "checkpoint": str(checkpoint)}
                continue
            files, size = _select(checkpoint, batch)
            planned.append((spec, checkpoint, batch, files, size))
            figures.bytes_total += size
            figures.files_total += len(files)
        figures.emit(force=True)
        for spec, checkpoint, batch, files, size in planned:
            cache = {**known, **_restored_hashes(checkpoint)}
            for attempt in range(3):
                mark = figures.mark()
                try:
                    if attempt:
                        again, new_size = _select(checkpoint, batch)
                        figures.bytes_total += new_size - size
                        figures.files_total += len(again) - len(files)
                        files, size = again, new_size
                    put = store.put_files(checkpoint, files, cache, on_file=figures.file_done)
                    info = describe(checkpoint, batch, spec)
                    break
                except FileNotFoundError:
                    # Spark's maintenance removed an old file between listing and copying:
                    # list again (the files batch N needs are never among those removed).
                    figures.rewind(mark)
                    if attempt == 2:
                        raise
            queries[spec["name"]] = {
                **info,
                "files": len(put.entries),
                "size_bytes": put.bytes_referenced,
            }
            manifest_queries[spec["name"]] = {
                "batch_id": batch,
                "checkpoint": str(checkpoint),
                "files": put.entries,
            }
            totals["size_bytes"] += put.bytes_referenced
            totals["bytes_written"] += put.bytes_written
            totals["files"] += len(put.entries)
            totals["files_written"] += put.files_written
            totals["hashed"] += put.files_hashed
        if not manifest_queries:
            raise SnapshotFailed(
                f"no query of run {run_id} has committed a batch yet: there is no state to "
                "export; wait for the first batch to complete"
            )
        figures.finish()
        manifest = store.write_manifest(
            job_name,
            name,
            {
                "job": job_name,
                "name": name,
                "snapshot_id": snapshot_id,
                "run_id": run_id,
                "version": version_number,
                "created_at": utcnow().isoformat(),
                "queries": manifest_queries,
            },
        )
    with transaction(factory) as session:
        snapshot = session.get(Snapshot, snapshot_id, with_for_update=True)
        if snapshot is None:
            raise SnapshotFailed(f"snapshot {snapshot_id} was deleted during its export")
        snapshot.state, snapshot.error, snapshot.completed_at = READY, None, utcnow()
        snapshot.queries = queries
        snapshot.size_bytes, snapshot.bytes_written = totals["size_bytes"], totals["bytes_written"]
        snapshot.file_count, snapshot.manifest = totals["files"], manifest
    log.info(
        "snapshot %s/%s: %d files, %d bytes (%d written)",
        job_name,
        name,
        totals["files"],
        totals["size_bytes"],
        totals["bytes_written"],
    )
    return {
        **totals,
        "batches": {q: i.get("batch_id") for q, i in queries.items()},
        "manifest": manifest,
    }


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
    from sqlalchemy import func

    from app.snapshots.models import SnapshotRetention

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
    with _store_lock(factory, exclusive=True) as got:
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


# ---- restoring into a new run ----------------------------------------------------------------


def _fresh_query_id(directory: Path) -> None:
    data = json.dumps({"id": str(uuid.uuid4())}).encode()
    (directory / "metadata").write_bytes(data)
    (directory / ".metadata.crc").write_bytes(hadoop_crc(data))


def materialise(
    factory: sessionmaker[Session],
    settings: Settings,
    plan: dict[str, Any],
    job_name: str,
    run_id: int,
    queries: list[dict[str, Any]],
    *,
    scratch: Path | None = None,
) -> dict[str, Any]:
    """Build each resumed query's checkpoint for run ``run_id`` from the plan's sources
    (with ``scratch``: into ``scratch/<query>`` instead, never a fixed checkpoint_location;
    a dry run's copy).

    Each is assembled beside its final place and renamed into it, so a query's checkpoint is
    either complete or absent; one already in place is left alone (a retried step)."""
    store = store_for(settings)
    specs = {q["name"]: q for q in queries}
    done: dict[str, Any] = {}
    for item in plan["queries"]:
        source = item.get("source")
        if source is None:
            continue
        spec = specs[item["query"]]
        dest = (
            scratch / str(spec["name"])
            if scratch is not None
            else checkpoint_path(settings.resolved_checkpoint_root, job_name, run_id, spec)
        )
        if dest.exists() and any(dest.iterdir()):
            if (
                scratch is None
                and spec.get("checkpoint_location")
                and not (dest / RESTORED_HINTS).exists()
            ):
                raise SnapshotFailed(
                    f"query '{item['query']}': its fixed checkpoint_location {dest} is not "
                    "empty; a snapshot can only be restored into an empty checkpoint"
                )
            done[item["query"]] = {"already": True}
            continue
        with_state = "state" in item["parts"]
        staging = dest.with_name(f".{dest.name}.tidegate-restoring")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        try:
            if source.get("snapshot") is not None:
                files = _snapshot_files(factory, store, source)
                if not with_state:
                    files = {k: v for k, v in files.items() if not k.startswith("state/")}
                hints = store.restore(files, staging)
            else:
                checkpoint = Path(source["checkpoint"])
                selected = select_files(checkpoint, int(source["batch_id"])).files
                files_list = [f for f in selected if with_state or not f.startswith("state/")]
                copy_tree_files(checkpoint, files_list, staging)
                hints = {}
                files = {f: {"size": (staging / f).stat().st_size} for f in files_list}
            if item.get("fresh_id"):
                _fresh_query_id(staging)
                hints.pop("metadata", None)
                hints.pop(".metadata.crc", None)
            (staging / RESTORED_HINTS).write_text(json.dumps(hints))
            dest.parent.mkdir(parents=True, exist_ok=True)
            if dest.exists():
                dest.rmdir()  # an empty fixed checkpoint_location
            os.replace(staging, dest)
        except (StoreError, ExportError, CheckpointError, OSError) as exc:
            shutil.rmtree(staging, ignore_errors=True)
            raise SnapshotFailed(
                f"restoring query '{item['query']}' from "
                f"{source.get('snapshot') or 'run ' + str(source.get('run'))}: {exc}"
            ) from exc
        done[item["query"]] = {
            "from": {k: source.get(k) for k in ("job", "snapshot", "run", "query", "batch_id")},
            "files": len(files),
            "bytes": sum(int(e.get("size") or 0) for e in files.values()),
            "checkpoint": str(dest),
        }
    return done


def _snapshot_files(
    factory: sessionmaker[Session], store: SnapshotStore, source: dict[str, Any]
) -> dict[str, Any]:
    with factory() as session:
        snapshot = session.get(Snapshot, source.get("snapshot_id"))
        if snapshot is None or snapshot.state != READY:
            raise SnapshotFailed(
                f"snapshot '{source['snapshot']}' of job '{source['job']}' was deleted or is not "
                "ready any more"
            )
    manifest = store.read_manifest(source["job"], source["snapshot"])
    if manifest is None:
        raise SnapshotFailed(
            f"the manifest of snapshot '{source['snapshot']}' is missing from the store"
        )
    query = (manifest.get("queries") or {}).get(source["query"])
    if query is None:
        raise SnapshotFailed(f"snapshot '{source['snapshot']}' has no query '{source['query']}'")
    files: dict[str, Any] = query["files"]
    return files


def record_uses(session: Session, run_id: int, plan: dict[str, Any]) -> None:
    """Which snapshots this run started from (protects them while it is active)."""
    for item in plan["queries"]:
        source = item.get("source") or {}
        if source.get("snapshot_id") is None:
            continue
        session.add(
            SnapshotUse(
                snapshot_id=source["snapshot_id"],
                run_id=run_id,
                query=item["query"],
                source_query=source["query"],
                parts="+".join(item["parts"]),
            )
        )
