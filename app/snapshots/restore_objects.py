"""Restoring into a checkpoint root in object storage (``s3a://…``), for ``restore.py``: no
folder can be renamed there (a rename is a copy per object), so a query's checkpoint is built
in place, marked ``RESTORING`` from before its first file to after its last; the new run's
driver is submitted only after the mark is gone. A marked checkpoint found later was cut short
and is emptied and restored again, unless ``prestage`` left it whole (its ``PRESTAGED`` list,
written last): then ``materialise`` keeps what the snapshot still names."""

from __future__ import annotations

import contextlib
import json
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from app.core.config import Settings
from app.core.paths import PathOutsideRoot, open_checkpoint
from app.core.plans import PlannedQuery, PlannedSource
from app.snapshots import restored_hints
from app.snapshots.checkpoint_files import checkpoint_path
from app.snapshots.errors import SnapshotError, SnapshotFailed
from app.snapshots.restore_sources import (
    PRESTAGED,
    failure,
    fill,
    summary,
)
from app.snapshots.store import digests
from app.snapshots.store.blobs import SnapshotStore
from app.snapshots.store.object_files import RESTORING
from tidegate_runtime.checkpoints.checkpoint import CheckpointError
from tidegate_runtime.checkpoints.object_dir import ObjectDir, UrlPath


def in_place(parent: ObjectDir, name: str) -> bool:
    """Whether the checkpoint ``name`` in ``parent`` is one a restore finished. A marked one is
    not: what ``prestage`` left whole is kept for ``materialise``; anything else was cut short
    and is emptied."""
    if not parent.names(name):
        return False
    if parent.exists(f"{name}/{RESTORING}"):
        if not parent.exists(f"{name}/{PRESTAGED}"):
            parent.remove_tree(name)
        return False
    return True


def discard(parent: ObjectDir, name: str) -> None:
    """What ``prestage`` left of the checkpoint ``name`` (still marked), removed."""
    if parent.exists(f"{name}/{RESTORING}"):
        parent.remove_tree(name)


def assemble(
    factory: sessionmaker[Session],
    settings: Settings,
    store: SnapshotStore,
    item: PlannedQuery,
    source: PlannedSource,
    parent: ObjectDir,
    dest: UrlPath,
    *,
    keep_hints: bool,
) -> dict[str, Any]:
    """``_assemble`` in object storage: no folder to rename there, so the checkpoint is built in
    place, marked ``RESTORING`` from before its first file to after its last (complete or
    marked; a marked one is emptied and restored again, ``in_place``). The new run's driver
    is submitted only after this returns."""
    folder = parent.child(dest.name)
    present: dict[str, str] = {}
    try:
        if source.get("snapshot") is not None:
            present = take_prestaged(folder)
        if not present:
            parent.remove_tree(dest.name)
        folder.write_atomic(RESTORING, b"")
        files, hints = fill(factory, settings, store, item, source, folder, present)
        if keep_hints:
            restored_hints.save(settings, dest, hints)
        folder.unlink(RESTORING)  # the commit point
    except SnapshotFailed:
        parent.remove_tree(dest.name)
        raise
    except (SnapshotError, CheckpointError, OSError) as exc:
        parent.remove_tree(dest.name)
        raise failure(item, source, exc) from exc
    return summary(source, files, dest, present)


def take_prestaged(folder: ObjectDir) -> dict[str, str]:
    """What ``prestage`` left in ``folder`` (path -> content id), its list removed first (as
    ``restore._take_prestaged``): a materialise cut short from here on leaves a marked folder
    without the list, which the next one empties."""
    try:
        present = json.loads(folder.read(PRESTAGED))
        folder.unlink(PRESTAGED)
    except (OSError, ValueError):
        return {}
    if not isinstance(present, dict):
        return {}
    return {str(k): digests.from_mark(str(v)) for k, v in present.items()}


def prestage(
    store: SnapshotStore,
    root: UrlPath,
    job_name: str,
    run_id: int,
    specs: dict[str, dict[str, Any]],
    item: PlannedQuery,
    files: dict[str, Any],
) -> dict[str, Any]:
    """``prestage`` in object storage: restored in place, inside the marker ``RESTORING`` (no
    driver is started from a marked folder), the ``PRESTAGED`` list written last."""
    folder: ObjectDir | None = None
    try:
        dest = checkpoint_path(root, job_name, run_id, specs[item["query"]])
        folder = open_checkpoint(root, dest, create=True)
        folder.remove_tree_below()
        folder.write_atomic(RESTORING, b"")
        store.restore(files, folder)
        present = {rel: digests.content_id(entry) for rel, entry in files.items()}
        folder.write_atomic(PRESTAGED, json.dumps(present).encode())
    except (SnapshotError, PathOutsideRoot, OSError, KeyError, TypeError, ValueError) as exc:
        if folder is not None:
            with contextlib.suppress(OSError):
                folder.remove_tree_below()
        return {"error": str(exc)}
    return {"files": len(files), "bytes": sum(int(e.get("size") or 0) for e in files.values())}
