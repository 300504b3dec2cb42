"""Restoring into a new run: each resumed query's checkpoint built from a snapshot in the
store or a run's committed batch, beside its final place and renamed into it (so it is
complete or absent, and a retried step leaves one in place alone); and the record of which
snapshots a run started from."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from app.core.config import Settings
from app.core.paths import CheckpointRoot, PathOutsideRoot, open_checkpoint
from app.core.plans import PlannedQuery, PlannedSource, StoredPlan
from app.snapshots import restore_objects, restored_hints
from app.snapshots.checkpoint_files import checkpoint_path
from app.snapshots.errors import SnapshotError, SnapshotFailed
from app.snapshots.models import Snapshot, SnapshotUse
from app.snapshots.restore_sources import (
    PRESTAGED,
    checkpoint_root,
    failure,
    fill,
    summary,
)
from app.snapshots.store import digests
from app.snapshots.store.access import store_for
from app.snapshots.store.blobs import SnapshotStore
from tidegate_runtime.checkpoints.checkpoint import CheckpointError
from tidegate_runtime.checkpoints.held_dir import HeldDir
from tidegate_runtime.checkpoints.object_dir import ObjectDir, UrlPath

log = logging.getLogger(__name__)

# The suffix of the folder, beside a query's checkpoint, it is assembled in before the rename.
STAGING_SUFFIX = ".tidegate-restoring"


def _staging(dest: Path | UrlPath) -> str:
    """The name, beside ``dest``, of the folder its checkpoint is assembled in."""
    return f".{dest.name}{STAGING_SUFFIX}"


def _holding(settings: Settings, query: str, folder: CheckpointRoot) -> HeldDir | ObjectDir:
    """``folder`` (a checkpoint's parent) held open, made if missing, reached without a link;
    in object storage, its prefix. A dry run's scratch copy is local under the scratch root
    wherever the checkpoints are."""
    root = checkpoint_root(settings)
    if not isinstance(folder, UrlPath) and isinstance(root, UrlPath):
        root = settings.scratch_root
    try:
        return open_checkpoint(root, folder, create=True)
    except PathOutsideRoot as exc:
        raise SnapshotFailed(f"query '{query}': {exc}") from None


def _in_place(parent: HeldDir | ObjectDir, dest: CheckpointRoot) -> bool:
    """Whether ``dest`` holds a checkpoint a restore finished (left alone by a retried step)."""
    if isinstance(parent, ObjectDir):
        return restore_objects.in_place(parent, dest.name)
    return bool(parent.names(dest.name))


def materialise(
    factory: sessionmaker[Session],
    settings: Settings,
    plan: StoredPlan,
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
    either complete or absent; one already in place is left alone (a retried step). Every
    file is read and written below folders held open from the checkpoint root, never through
    a link a driver planted or swapped in (issue 51 M4)."""
    store = store_for(settings)
    specs = {q["name"]: q for q in queries}
    done: dict[str, Any] = {}
    for item in plan["queries"]:
        source = item.get("source")
        if source is None:
            continue
        spec = specs[item["query"]]
        dest: CheckpointRoot = (
            scratch / str(spec["name"])
            if scratch is not None
            else checkpoint_path(checkpoint_root(settings), job_name, run_id, spec)
        )
        with _holding(settings, item["query"], dest.parent) as parent:
            if _in_place(parent, dest):
                if (
                    scratch is None
                    and spec.get("checkpoint_location")
                    and not restored_hints.exists(settings, dest)
                ):
                    raise SnapshotFailed(
                        f"query '{item['query']}': its fixed checkpoint_location {dest} is not "
                        "empty; a snapshot can only be restored into an empty checkpoint"
                    )
                done[item["query"]] = {"already": True}
                continue
            assemble = restore_objects.assemble if isinstance(parent, ObjectDir) else _assemble
            done[item["query"]] = assemble(
                factory,
                settings,
                store,
                item,
                source,
                parent,  # type: ignore[arg-type]
                dest,  # type: ignore[arg-type]
                keep_hints=scratch is None,
            )
    return done


def _assemble(
    factory: sessionmaker[Session],
    settings: Settings,
    store: SnapshotStore,
    item: PlannedQuery,
    source: PlannedSource,
    parent: HeldDir,
    dest: Path,
    *,
    keep_hints: bool,
) -> dict[str, Any]:
    """One query's checkpoint assembled in its staging folder in ``parent`` and renamed to
    ``dest``; what it holds. ``keep_hints``: what was restored is remembered for the next
    export (``restored_hints``; not for a dry run's scratch copy)."""
    staging = _staging(dest)
    present = _take_prestaged(parent, staging) if source.get("snapshot") is not None else {}
    if not present:
        parent.remove_tree(staging)
    try:
        with parent.child(staging, create=True) as folder:
            files, hints = fill(factory, settings, store, item, source, folder, present)
        if keep_hints:
            restored_hints.save(settings, dest, hints)
        if parent.is_dir(dest.name):
            os.rmdir(dest.name, dir_fd=parent.fd)  # an empty fixed checkpoint_location
        parent.rename(staging, dest.name)
    except SnapshotFailed:  # says what failed already
        parent.remove_tree(staging)
        raise
    except (SnapshotError, CheckpointError, OSError) as exc:
        parent.remove_tree(staging)
        raise failure(item, source, exc) from exc
    return summary(source, files, dest, present)


def _take_prestaged(parent: HeldDir, staging: str) -> dict[str, str]:
    """The files ``prestage`` left in ``staging`` (path -> content id), its mark removed first: a
    materialise cut short from here on leaves a folder that the next one starts anew. A
    staging folder that is not a plain folder (a link driver code put there) is removed and
    never read through."""
    try:
        if not parent.is_dir(staging):
            parent.remove_tree(staging)
            return {}
        with parent.child(staging) as folder:
            present = json.loads(folder.read(PRESTAGED))
            folder.unlink(PRESTAGED)
    except (OSError, ValueError):
        return {}
    if not isinstance(present, dict):
        return {}
    return {str(k): digests.from_mark(str(v)) for k, v in present.items()}


def prestage(
    factory: sessionmaker[Session],
    settings: Settings,
    snapshot_id: int,
    plan: StoredPlan,
    run_id: int,
    queries: list[dict[str, Any]],
) -> dict[str, Any]:
    """Before the stop of an update by snapshot (issue 25): what the snapshot's pre-copy holds
    of each query the plan resumes, restored where ``materialise`` assembles run ``run_id``'s
    checkpoints, while the old run still processes. After the stop ``materialise`` then
    restores only what the last batches changed (at 1 GB a restore by copy is about a second,
    inside the pause). ``plan`` binds the new queries to the old run's (the plan before the
    stop); a query it cannot prestage is restored whole after the stop, as without this."""
    with factory() as session:
        snapshot = session.get(Snapshot, snapshot_id)
        if snapshot is None or snapshot.run_id is None:
            return {}
        job_name, name, old_run = snapshot.job.name, snapshot.name, snapshot.run_id
    try:
        store = store_for(settings)
        manifest = store.read_manifest(job_name, name)
    except (SnapshotError, OSError, ValueError) as exc:
        return {"error": str(exc)}
    if manifest is None or not manifest.get("pre_copy"):
        return {}
    specs = {q["name"]: q for q in queries}
    done: dict[str, Any] = {}
    for item in plan["queries"]:
        source = item.get("source") or {}
        pre_copied = (manifest.get("queries") or {}).get(source.get("query"))
        if source.get("run") != old_run or pre_copied is None or item["query"] not in specs:
            continue
        files = {
            rel: entry
            for rel, entry in pre_copied["files"].items()
            if "state" in item["parts"] or not rel.startswith("state/")
        }
        root = checkpoint_root(settings)
        if isinstance(root, UrlPath):
            done[item["query"]] = restore_objects.prestage(
                store, root, job_name, run_id, specs, item, files
            )
            continue
        parent: HeldDir | None = None
        staging = ""
        try:
            dest = checkpoint_path(root, job_name, run_id, specs[item["query"]])
            held = _holding(settings, item["query"], dest.parent)
            assert isinstance(held, HeldDir)
            parent = held
            staging = _staging(dest)
            parent.remove_tree(staging)
            with parent.child(staging, create=True) as folder:
                store.restore(files, folder, link=settings.snapshot_restore_links)
                present = {rel: digests.content_id(entry) for rel, entry in files.items()}
                folder.write_atomic(PRESTAGED, json.dumps(present).encode())
        except (SnapshotError, OSError, KeyError, TypeError, ValueError) as exc:
            if parent is not None and staging:
                parent.remove_tree(staging)
            done[item["query"]] = {"error": str(exc)}
            continue
        finally:
            if parent is not None:
                parent.close()
        done[item["query"]] = {
            "files": len(files),
            "bytes": sum(int(e.get("size") or 0) for e in files.values()),
        }
    return done


def discard_prestaged(
    settings: Settings, job_name: str, run_id: int, queries: list[dict[str, Any]]
) -> None:
    """What ``prestage`` left for run ``run_id`` (whole or cut short), removed: its update
    failed before ``materialise`` used it. Never raises: it tidies up after a failure."""
    root = checkpoint_root(settings)
    for spec in queries:
        try:
            dest = checkpoint_path(root, job_name, run_id, spec)
            with open_checkpoint(root, dest.parent) as parent:
                if isinstance(parent, ObjectDir):  # prestaged in place, marked
                    restore_objects.discard(parent, dest.name)
                    continue
                parent.remove_tree(_staging(dest))
        except FileNotFoundError:
            continue
        except (PathOutsideRoot, SnapshotFailed, OSError, KeyError, ValueError) as exc:
            log.warning("run %s: a prestaged checkpoint was not removed: %s", run_id, exc)


def record_uses(session: Session, run_id: int, plan: StoredPlan) -> None:
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
