"""Restoring into a new run: each resumed query's checkpoint built from a snapshot in the
store or a run's committed batch, beside its final place and renamed into it (so it is
complete or absent, and a retried step leaves one in place alone); and the record of which
snapshots a run started from."""

from __future__ import annotations

import json
import logging
import os
import uuid
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from app.core import checkpoint_store
from app.core.config import Settings
from app.core.paths import PathOutsideRoot, open_checkpoint
from app.core.plans import PlannedQuery, PlannedSource, StoredPlan
from app.snapshots import restored_hints
from app.snapshots.checkpoint_files import checkpoint_path, select_files
from app.snapshots.errors import SnapshotError, SnapshotFailed
from app.snapshots.models import READY, Snapshot, SnapshotUse
from app.snapshots.store import digests
from app.snapshots.store.access import store_for
from app.snapshots.store.blobs import SnapshotStore
from app.snapshots.store.local_tree import copy_tree_files
from app.snapshots.store.safe_files import regular_size
from tidegate_runtime.checkpoints.checkpoint import CheckpointError, hadoop_crc
from tidegate_runtime.checkpoints.held_dir import HeldDir

log = logging.getLogger(__name__)

# In a query's staging folder: the files restored ahead of its materialise (``prestage``),
# path -> content id. Written last, so a folder with it holds every file it names, whole.
PRESTAGED = ".tidegate-prestaged.json"
# The suffix of the folder, beside a query's checkpoint, it is assembled in before the rename.
STAGING_SUFFIX = ".tidegate-restoring"


def _staging(dest: Path) -> str:
    """The name, beside ``dest``, of the folder its checkpoint is assembled in."""
    return f".{dest.name}{STAGING_SUFFIX}"


def _fresh_query_id(directory: HeldDir) -> None:
    # Written anew, never in place: a restored file may be a hard link to a snapshot's blob.
    data = json.dumps({"id": str(uuid.uuid4())}).encode()
    directory.write_atomic("metadata", data)
    directory.write_atomic(".metadata.crc", hadoop_crc(data))


def _local_root(settings: Settings) -> Path:
    """The checkpoint root, a folder: restoring into object storage is not done yet (the API
    refuses it up front; this is the worker's guard, before anything is written)."""
    root = settings.resolved_checkpoint_root
    if not isinstance(root, Path):
        raise SnapshotFailed(checkpoint_store.refusal(settings, "restore") or str(root))
    return root


def _holding(settings: Settings, query: str, folder: Path) -> HeldDir:
    """``folder`` (a checkpoint's parent) held open, made if missing, reached without a link."""
    try:
        return open_checkpoint(_local_root(settings), folder, create=True)
    except PathOutsideRoot as exc:
        raise SnapshotFailed(f"query '{query}': {exc}") from None


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
        dest = (
            scratch / str(spec["name"])
            if scratch is not None
            else checkpoint_path(_local_root(settings), job_name, run_id, spec)
        )
        with _holding(settings, item["query"], dest.parent) as parent:
            if parent.names(dest.name):
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
            done[item["query"]] = _assemble(
                factory, settings, store, item, source, parent, dest, keep_hints=scratch is None
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
    with_state = "state" in item["parts"]
    staging = _staging(dest)
    present = _take_prestaged(parent, staging) if source.get("snapshot") is not None else {}
    if not present:
        parent.remove_tree(staging)
    try:
        with parent.child(staging, create=True) as folder:
            if source.get("snapshot") is not None:
                files = _snapshot_files(factory, store, source)
                if not with_state:
                    files = {k: v for k, v in files.items() if not k.startswith("state/")}
                hints = store.restore(
                    files, folder, link=settings.snapshot_restore_links, present=present
                )
            else:
                files = _copy_run(settings, item, source, folder, with_state=with_state)
                hints = {}
            if item.get("fresh_id"):
                _fresh_query_id(folder)
                hints.pop("metadata", None)
                hints.pop(".metadata.crc", None)
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
        raise SnapshotFailed(
            f"restoring query '{item['query']}' from "
            f"{source.get('snapshot') or 'run ' + str(source.get('run'))}: {exc}"
        ) from exc
    restored: dict[str, Any] = {
        "from": {k: source.get(k) for k in ("job", "snapshot", "run", "query", "batch_id")},
        "files": len(files),
        "bytes": sum(int(e.get("size") or 0) for e in files.values()),
        "checkpoint": str(dest),
    }
    if present:  # how much was there before the stop (prestage)
        restored["prestaged_bytes"] = sum(
            int(e.get("size") or 0)
            for rel, e in files.items()
            if present.get(rel) == digests.content_id(e)
        )
    return restored


def _copy_run(
    settings: Settings,
    item: PlannedQuery,
    source: PlannedSource,
    staging: HeldDir,
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
        checkpoint = open_checkpoint(_local_root(settings), Path(at))
    except PathOutsideRoot as exc:
        raise SnapshotFailed(f"query '{item['query']}': {exc}") from None
    with checkpoint:
        selected = select_files(checkpoint, int(batch)).files
        files_list = [f for f in selected if with_state or not f.startswith("state/")]
        copy_tree_files(checkpoint, files_list, staging)
    return {f: {"size": regular_size(staging, f)} for f in files_list}


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
        parent: HeldDir | None = None
        staging = ""
        try:
            files = {
                rel: entry
                for rel, entry in pre_copied["files"].items()
                if "state" in item["parts"] or not rel.startswith("state/")
            }
            dest = checkpoint_path(_local_root(settings), job_name, run_id, specs[item["query"]])
            parent = _holding(settings, item["query"], dest.parent)
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
    for spec in queries:
        try:
            root = _local_root(settings)
            dest = checkpoint_path(root, job_name, run_id, spec)
            with open_checkpoint(root, dest.parent) as parent:
                parent.remove_tree(_staging(dest))
        except FileNotFoundError:
            continue
        except (PathOutsideRoot, SnapshotFailed, OSError, KeyError, ValueError) as exc:
            log.warning("run %s: a prestaged checkpoint was not removed: %s", run_id, exc)


def _snapshot_files(
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
