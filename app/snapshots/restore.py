"""Restoring into a new run: each resumed query's checkpoint built from a snapshot in the
store or a run's committed batch, beside its final place and renamed into it (so it is
complete or absent, and a retried step leaves one in place alone); and the record of which
snapshots a run started from."""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from app.core.config import Settings
from app.core.paths import PathOutsideRoot, refuse_links_below
from app.core.plans import PlannedSource, StoredPlan
from app.snapshots.checkpoint_files import RESTORED_HINTS, checkpoint_path, select_files
from app.snapshots.errors import SnapshotError, SnapshotFailed
from app.snapshots.models import READY, Snapshot, SnapshotUse
from app.snapshots.store.access import store_for
from app.snapshots.store.blobs import SnapshotStore, copy_tree_files
from tidegate_runtime.checkpoint import CheckpointError, hadoop_crc
from tidegate_runtime.files import write_atomic


def _fresh_query_id(directory: Path) -> None:
    # Written anew, never in place: a restored file may be a hard link to a snapshot's blob.
    data = json.dumps({"id": str(uuid.uuid4())}).encode()
    write_atomic(directory / "metadata", data)
    write_atomic(directory / ".metadata.crc", hadoop_crc(data))


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
        try:  # never written through, nor read through, a link planted above a checkpoint
            refuse_links_below(settings.resolved_checkpoint_root, dest)
            if source_checkpoint := source.get("checkpoint"):
                refuse_links_below(settings.resolved_checkpoint_root, Path(source_checkpoint))
        except PathOutsideRoot as exc:
            raise SnapshotFailed(f"query '{item['query']}': {exc}") from None
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
                hints = store.restore(files, staging, link=settings.snapshot_restore_links)
            else:
                at, batch = source.get("checkpoint"), source.get("batch_id")
                if at is None or batch is None:  # a plan revalidated names both
                    raise SnapshotFailed(
                        f"query '{item['query']}': its plan names no checkpoint and batch of "
                        f"run {source.get('run')} to start from"
                    )
                checkpoint = Path(at)
                selected = select_files(checkpoint, int(batch)).files
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
        except SnapshotFailed:  # says what failed already
            shutil.rmtree(staging, ignore_errors=True)
            raise
        except (SnapshotError, CheckpointError, OSError) as exc:
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
