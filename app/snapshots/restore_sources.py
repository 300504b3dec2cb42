"""Where a restored checkpoint's files come from, for ``restore.py`` (a local checkpoint root)
and ``restore_objects.py`` (one in object storage): a snapshot's manifest, a run's committed
batch; and the fresh query id a copy of a query gets."""

from __future__ import annotations

import json
import uuid
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from app.core.config import Settings
from app.core.paths import CheckpointRoot, PathOutsideRoot, checkpoint_location, open_checkpoint
from app.core.plans import PlannedQuery, PlannedSource
from app.snapshots.checkpoint_files import select_files
from app.snapshots.errors import SnapshotFailed
from app.snapshots.models import READY, Snapshot
from app.snapshots.store import digests
from app.snapshots.store.blobs import SnapshotStore
from app.snapshots.store.local_tree import copy_tree_files
from app.snapshots.store.object_files import copy_between
from app.snapshots.store.safe_files import regular_size
from tidegate_runtime.checkpoints.checkpoint import hadoop_crc
from tidegate_runtime.checkpoints.held_dir import HeldDir
from tidegate_runtime.checkpoints.object_dir import ObjectDir

# In a query's staging folder (in object storage: its prefix): the files restored ahead of its
# materialise (``prestage``), path -> content id. Written last, so a folder with it holds
# every file it names, whole.
PRESTAGED = ".tidegate-prestaged.json"


def fresh_query_id(directory: HeldDir | ObjectDir) -> None:
    # Written anew, never in place: a restored file may be a hard link to a snapshot's blob.
    data = json.dumps({"id": str(uuid.uuid4())}).encode()
    directory.write_atomic("metadata", data)
    if not isinstance(directory, ObjectDir):  # Hadoop's S3A keeps no .crc sidecars
        directory.write_atomic(".metadata.crc", hadoop_crc(data))


def checkpoint_root(settings: Settings) -> CheckpointRoot:
    return settings.resolved_checkpoint_root


def copy_run(
    settings: Settings,
    item: PlannedQuery,
    source: PlannedSource,
    staging: HeldDir | ObjectDir,
    *,
    with_state: bool,
) -> dict[str, Any]:
    """A run's committed batch copied into ``staging`` (resume from run coordinates)."""
    at, batch = source.get("checkpoint"), source.get("batch_id")
    if at is None or batch is None:  # a plan revalidated names both
        raise SnapshotFailed(
            f"query '{item['query']}': its plan names no checkpoint and batch of "
            f"run {source.get('run')} to start from"
        )
    try:
        checkpoint = open_checkpoint(checkpoint_root(settings), checkpoint_location(at))
    except PathOutsideRoot as exc:
        raise SnapshotFailed(f"query '{item['query']}': {exc}") from None
    with checkpoint:
        selected = select_files(checkpoint, int(batch)).files
        files_list = [f for f in selected if with_state or not f.startswith("state/")]
        if isinstance(checkpoint, HeldDir) and isinstance(staging, HeldDir):
            copy_tree_files(checkpoint, files_list, staging)
        else:
            copy_between(checkpoint, files_list, staging)
    return {f: {"size": regular_size(staging, f)} for f in files_list}


def snapshot_files(
    factory: sessionmaker[Session], store: SnapshotStore, source: PlannedSource
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


def summary(
    source: PlannedSource, files: dict[str, Any], dest: object, present: dict[str, str]
) -> dict[str, Any]:
    """What a query's restore reports: where from, how many files and bytes, where to; with a
    prestage (``present``), how many of those bytes were in place before the stop."""
    restored: dict[str, Any] = {
        "from": {k: source.get(k) for k in ("job", "snapshot", "run", "query", "batch_id")},
        "files": len(files),
        "bytes": sum(int(e.get("size") or 0) for e in files.values()),
        "checkpoint": str(dest),
    }
    if present:
        restored["prestaged_bytes"] = sum(
            int(e.get("size") or 0)
            for rel, e in files.items()
            if present.get(rel) == digests.content_id(e)
        )
    return restored


def failure(item: PlannedQuery, source: PlannedSource, exc: BaseException) -> SnapshotFailed:
    """The error a query's restore fails with: which query, from what, and why."""
    origin = source.get("snapshot") or f"run {source.get('run')}"
    return SnapshotFailed(f"restoring query '{item['query']}' from {origin}: {exc}")


def fill(
    factory: sessionmaker[Session],
    settings: Settings,
    store: SnapshotStore,
    item: PlannedQuery,
    source: PlannedSource,
    folder: HeldDir | ObjectDir,
    present: dict[str, str],
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A query's files put in ``folder`` (its staging folder, or its prefix in object storage):
    a snapshot's, restored by the store (``present``: what a prestage left there), or a run's
    committed batch, copied; state left out where the plan does not carry it, and a fresh query
    id where it asks. The files and the restore's hints."""
    with_state = "state" in item["parts"]
    if source.get("snapshot") is not None:
        files = snapshot_files(factory, store, source)
        if not with_state:
            files = {k: v for k, v in files.items() if not k.startswith("state/")}
        hints = store.restore(files, folder, link=settings.snapshot_restore_links, present=present)
    else:
        files = copy_run(settings, item, source, folder, with_state=with_state)
        hints = {}
    if item.get("fresh_id"):
        fresh_query_id(folder)
        hints.pop("metadata", None)
        hints.pop(".metadata.crc", None)
    return files, hints
