"""The worker's side of snapshots, exporting: a run's checkpoints into the store (restoring is
``restore.py``, retention and garbage collection ``retention.py``). File IO happens between
short transactions; every function is safe to run again after a crash (blobs are
content-addressed, manifests appear by an atomic rename).

Garbage collection must not delete a blob an export has just written but not yet named in a
manifest: exports hold a shared PostgreSQL advisory lock while they write, and gc runs only
when it gets the exclusive one (otherwise the next export's gc collects).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from app.core.config import Settings
from app.core.db import transaction, utcnow
from app.core.paths import PathOutsideRoot, checkpoint_location, open_checkpoint
from app.runs.models import Run
from app.snapshots import restored_hints
from app.snapshots.checkpoint_files import (
    checkpoint_path,
    describe,
    select_files,
)
from app.snapshots.errors import SnapshotFailed, StoreError
from app.snapshots.models import READY, Snapshot
from app.snapshots.store.access import store_for, store_lock
from app.snapshots.store.blobs import SnapshotStore
from app.snapshots.store.local_tree import FileKey, known_hashes
from app.snapshots.store.safe_files import regular_size
from tidegate_runtime.checkpoints.checkpoint import latest_commit_batch
from tidegate_runtime.checkpoints.held_dir import HeldDir
from tidegate_runtime.checkpoints.object_dir import ObjectDir

log = logging.getLogger(__name__)

# An export reports its interim figures (bytes and files copied so far) at most this often.
PROGRESS_SECONDS = 0.5


def _previous_hashes(
    session: Session, store: SnapshotStore, snapshot: Snapshot
) -> dict[FileKey, str]:
    """File hashes the job's latest ready snapshot recorded, and this snapshot's own pre-copy:
    unchanged files of the same checkpoints need not be read again. Read under the store
    lock, each names a blob the store holds: gc, which alone deletes blobs, takes the lock
    exclusively and deletes a manifest before the blobs only it named."""
    previous = session.scalar(
        select(Snapshot)
        .where(Snapshot.job_id == snapshot.job_id, Snapshot.state == READY)
        .order_by(Snapshot.id.desc())
        .limit(1)
    )
    known = _manifest_hashes(store, previous) if previous is not None else {}
    return {**known, **_manifest_hashes(store, snapshot, pre_copy=True)}


def _manifest_hashes(
    store: SnapshotStore, snapshot: Snapshot, *, pre_copy: bool = False
) -> dict[FileKey, str]:
    """The file hashes ``snapshot``'s manifest names (``pre_copy``: only if it is a pre-copy's,
    written before the stop)."""
    try:
        manifest = store.read_manifest(snapshot.job.name, snapshot.name) or {}
    except (StoreError, OSError, ValueError):
        return {}
    if pre_copy and not manifest.get("pre_copy"):
        return {}
    known: dict[FileKey, str] = {}
    for query in (manifest.get("queries") or {}).values():
        if query.get("checkpoint"):
            where = checkpoint_location(query["checkpoint"])
            known.update(known_hashes(where, query.get("files") or {}))
    return known


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
        phases: tuple[str, str] = ("exporting", "exported"),
    ) -> None:
        self.report = report
        self.phases = phases
        self.interval = PROGRESS_SECONDS if interval is None else interval
        self.clock = clock
        self.bytes_total = self.files_total = self.bytes_copied = self.files_copied = 0
        self.done = False
        self._last: float | None = None

    def figures(self) -> dict[str, Any]:
        return {
            "phase": self.phases[1] if self.done else self.phases[0],
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


def _select(checkpoint: HeldDir | ObjectDir, batch: int) -> tuple[tuple[str, ...], int]:
    """The files restarting ``checkpoint`` at ``batch`` and their total size."""
    for attempt in range(3):
        try:
            files = select_files(checkpoint, batch).files
            return files, sum(regular_size(checkpoint, f) for f in files)
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
    *,
    pre_copy: bool = False,
) -> dict[str, Any]:
    """Copy every query's committed prefix into the store, write the manifest, mark ready.
    ``progress`` receives the interim figures (see ``ExportProgress``) while it copies.

    ``pre_copy``: the same copy while the run still processes, before a snapshot that stops
    it: the manifest it writes is marked as a pre-copy and the snapshot stays unready (it
    is never restored from), but its blobs are in the store and its hashes known, so the
    export after the stop hashes and writes only what the last batches added. The snapshot
    is not failed, so garbage collection keeps what it names."""
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

    queries: dict[str, Any] = {}
    manifest_queries: dict[str, Any] = {}
    totals = {"size_bytes": 0, "bytes_written": 0, "files": 0, "files_written": 0, "hashed": 0}
    figures = ExportProgress(
        progress, phases=("pre-copying", "pre-copied") if pre_copy else ("exporting", "exported")
    )
    with store_lock(factory, exclusive=False), contextlib.ExitStack() as held:
        with factory() as session:
            snapshot = session.get(Snapshot, snapshot_id)
            if snapshot is None:
                raise SnapshotFailed(f"snapshot {snapshot_id} was deleted during its export")
            known = _previous_hashes(session, store, snapshot)
        # Not asked of the store again, file by file: on an object store one request each,
        # and after a pre-copy they are most of the state's files, inside the pause.
        in_store = frozenset(known.values())
        # First what there is to copy (so the figures have a total), then the copying.
        # Each checkpoint held open from the root for the whole export: what is copied is
        # below the folder checked, whatever a driver swaps in meanwhile (issue 51 M4).
        planned: list[tuple[dict[str, Any], HeldDir | ObjectDir, int, tuple[str, ...], int]] = []
        root = settings.resolved_checkpoint_root  # a folder or an object store (s3a://)
        for spec in specs:
            path = checkpoint_path(root, job_name, run_id, spec)
            try:
                checkpoint = open_checkpoint(root, path)
                held.callback(checkpoint.close)
            except FileNotFoundError:
                queries[spec["name"]] = {"batch_id": None, "checkpoint": str(path)}
                continue
            except PathOutsideRoot as exc:
                raise SnapshotFailed(f"query '{spec['name']}': {exc}") from None
            batch = latest_commit_batch(checkpoint, planned=True)
            if batch is None:
                queries[spec["name"]] = {"batch_id": None, "checkpoint": str(path)}
                continue
            files, size = _select(checkpoint, batch)
            planned.append((spec, checkpoint, batch, files, size))
            figures.bytes_total += size
            figures.files_total += len(files)
        figures.emit(force=True)
        for spec, checkpoint, batch, files, size in planned:
            cache = {**known, **restored_hints.known(settings, checkpoint.path)}
            for attempt in range(3):
                mark = figures.mark()
                try:
                    if attempt:
                        again, new_size = _select(checkpoint, batch)
                        figures.bytes_total += new_size - size
                        figures.files_total += len(again) - len(files)
                        files, size = again, new_size
                    put = store.put_files(
                        checkpoint, files, cache, on_file=figures.file_done, in_store=in_store
                    )
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
                "checkpoint": str(checkpoint.path),
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
                **({"pre_copy": True} if pre_copy else {}),
            },
        )
    if pre_copy:
        log.info(
            "snapshot %s/%s pre-copied: %d files, %d bytes (%d written)",
            job_name,
            name,
            totals["files"],
            totals["size_bytes"],
            totals["bytes_written"],
        )
        return {**totals, "batches": {q: i.get("batch_id") for q, i in queries.items()}}
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
