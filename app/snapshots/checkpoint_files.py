"""Which files of a checkpoint a snapshot needs, and what the checkpoint says about them.

A query restarts at committed batch N from: ``metadata``; ``offsets/N`` and ``commits/N``
(and N-1 of both: Spark reads ``offsets/N-1`` on restart to seed its committed offsets);
the ``sources/`` logs up to the batch; and, for every state store directory, the files that
load state version N+1 (state version = batch id + 1): the latest base file at or below
N+1 (``V.snapshot`` of the HDFS provider, ``V.zip`` of RocksDB) and the increments after it
(``V.delta``, ``V.changelog``); with no base, every increment up to N+1. Unversioned files
(schemas, operator metadata, RocksDB SSTs) are all taken. Hadoop ``.X.crc`` sidecars follow
their file.

Every selected file is immutable once batch N is committed, so exporting while the query
runs copies a consistent committed prefix: later batches only add files we do not select.
Standard library only (plus the runtime's checkpoint reader): the worker and the benchmark
use it without a database.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.core.paths import checkpoint_path as checkpoint_path  # re-exported: its old home
from app.snapshots.errors import ExportError, UnsafeFileError
from app.snapshots.store.safe_files import AnyFolder, held
from tidegate_runtime.checkpoints.checkpoint import (
    CheckpointError,
    Tree,
    read_commit,
    read_offsets,
    state_operators,
)
from tidegate_runtime.checkpoints.object_dir import ObjectDir

# "12.delta", "12.snapshot", "12.zip", "12.changelog", and RocksDB's "12_<uniqueId>.zip".
VERSIONED = re.compile(r"^(\d+)(?:_[0-9A-Za-z-]+)?\.(delta|snapshot|zip|changelog)$")
BASE_KINDS = frozenset({"snapshot", "zip"})
METADATA_LOG = re.compile(r"^(\d+)(\.compact)?$")


@dataclass(frozen=True)
class Selection:
    """The files that restart a checkpoint at ``batch_id`` (relative POSIX paths)."""

    checkpoint: Path | str
    batch_id: int
    files: tuple[str, ...]


def _with_sidecar(checkpoint: Tree, rel: str, out: list[str]) -> None:
    out.append(rel)
    parent, _, name = rel.rpartition("/")
    crc = f"{parent}/.{name}.crc" if parent else f".{name}.crc"
    if checkpoint.exists(crc):
        out.append(crc)


def _source_limits(checkpoint: Tree, batch: int) -> dict[int, int]:
    """Per source index, the highest ``sources/<i>/`` log entry batch N may reference: a file
    source's ``logOffset`` from ``offsets/N``, else the batch id itself."""
    _, lines = read_offsets(checkpoint, batch)
    limits = {}
    for index, line in enumerate(lines):
        limit = batch
        if line is not None:
            try:
                parsed = json.loads(line)
            except ValueError:
                parsed = None
            if isinstance(parsed, dict) and isinstance(parsed.get("logOffset"), int):
                limit = parsed["logOffset"]
        limits[index] = limit
    return limits


def _select_state_dir(names: list[str], target: int) -> set[str]:
    versioned: dict[str, tuple[int, str]] = {}
    chosen = set()
    for name in names:
        if name.startswith("."):
            continue
        match = VERSIONED.match(name)
        if match:
            versioned[name] = (int(match.group(1)), match.group(2))
        elif not name.endswith(".tmp"):
            chosen.add(name)  # schemas, metadata, SSTs: small or shared, always needed
    bases = [v for v, kind in versioned.values() if kind in BASE_KINDS and v <= target]
    base = max(bases) if bases else None
    for name, (version, kind) in versioned.items():
        if (base is not None and version == base and kind in BASE_KINDS) or (
            kind not in BASE_KINDS and (base is None or version > base) and version <= target
        ):
            chosen.add(name)
    return chosen


def _refuse_linked_dirs(rel_dir: str, dirs: list[str], dir_fd: int) -> None:
    # fwalk lists a linked directory but does not enter it: its files would be missing from
    # the snapshot without a word. (Linked files are refused when they are opened.)
    for name in dirs:
        if stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
            raise UnsafeFileError(f"{rel_dir}/{name}")


def select_files(checkpoint: AnyFolder, batch_id: int) -> Selection:
    """The files that restart ``checkpoint`` at committed ``batch_id`` (see the module doc),
    listed below its held folder, never through a link (in object storage: its objects)."""
    if isinstance(checkpoint, ObjectDir):
        return Selection(checkpoint.path, batch_id, _select(checkpoint, batch_id))
    with held(checkpoint) as folder:
        return Selection(folder.path, batch_id, _select(folder, batch_id))


def _walk(checkpoint: Tree, top: str) -> Iterator[tuple[str, list[str]]]:
    """(relative folder, file names) below ``top``; locally a linked folder is refused."""
    if isinstance(checkpoint, ObjectDir):
        for rel_dir, _dirs, names in checkpoint.walk(top):
            yield rel_dir, names
        return
    for rel_dir, dirs, names, dir_fd in checkpoint.walk(top):
        _refuse_linked_dirs(rel_dir, dirs, dir_fd)
        yield rel_dir, names


def _select(checkpoint: Tree, batch_id: int) -> tuple[str, ...]:
    if not checkpoint.exists(f"commits/{batch_id}"):
        raise ExportError(f"batch {batch_id} of {checkpoint.path} is not committed")
    out: list[str] = []
    if checkpoint.exists("metadata"):
        _with_sidecar(checkpoint, "metadata", out)
    for batch in (batch_id - 1, batch_id):
        for log in ("offsets", "commits"):
            if batch >= 0 and checkpoint.exists(f"{log}/{batch}"):
                _with_sidecar(checkpoint, f"{log}/{batch}", out)

    if checkpoint.is_dir("sources"):
        limits = _source_limits(checkpoint, batch_id)
        for rel_dir, names in _walk(checkpoint, "sources"):
            parts = rel_dir.split("/")
            index = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None
            for name in sorted(names):
                if name.startswith(".") or name.endswith(".tmp"):
                    continue
                match = METADATA_LOG.match(name)
                if (
                    match
                    and index is not None
                    and int(match.group(1)) > limits.get(index, batch_id)
                ):
                    continue
                _with_sidecar(checkpoint, f"{rel_dir}/{name}", out)

    if checkpoint.is_dir("state"):
        for rel_dir, names in _walk(checkpoint, "state"):
            for name in sorted(_select_state_dir(names, batch_id + 1)):
                _with_sidecar(checkpoint, f"{rel_dir}/{name}", out)
    return tuple(sorted(set(out)))


def _offset(line: str | None) -> Any:
    if line is None:
        return None
    try:
        return json.loads(line)
    except ValueError:
        return line


def describe(checkpoint: AnyFolder, batch_id: int, query: dict[str, Any]) -> dict[str, Any]:
    """What a snapshot records of one query at ``batch_id``: source offsets by declared source
    name, watermark, the conf Spark pinned in the checkpoint, and the stateful operators with
    their schemas, next to what the version declared."""
    try:
        with contextlib.ExitStack() as stack:
            folder: Tree = (
                checkpoint
                if isinstance(checkpoint, ObjectDir)
                else stack.enter_context(held(checkpoint))
            )
            metadata, lines = read_offsets(folder, batch_id)
            commit = read_commit(folder, batch_id)
            operators = state_operators(folder)
            has_state = folder.is_dir("state")
            where = folder.path
    except (CheckpointError, OSError, ValueError) as exc:
        raise ExportError(f"cannot read {checkpoint} at batch {batch_id}: {exc}") from exc
    declared = query.get("sources") or []
    return {
        "batch_id": batch_id,
        "checkpoint": str(where),
        "sources": [
            {
                "name": declared[i]["name"] if i < len(declared) else f"source-{i}",
                "offset": _offset(line),
            }
            for i, line in enumerate(lines)
        ],
        "watermark_ms": metadata.get("batchWatermarkMs"),
        "next_watermark_ms": commit.get("nextBatchWatermarkMs"),
        "batch_timestamp_ms": metadata.get("batchTimestampMs"),
        "conf": dict(metadata.get("conf") or {}),
        # Spark wrote state for this query, declared or not (the version may not say so).
        "state_dir": has_state,
        "operators": [
            {
                "id": op.operator_id,
                "name": op.operator_name,
                "partitions": op.num_partitions,
                "stores": list(op.store_names),
                "key_schema": op.key_schema,
                "value_schema": op.value_schema,
            }
            for op in operators
        ],
        "declared": {
            "stateful_operators": query.get("stateful_operators") or [],
            "sources": [s["name"] for s in declared],
            "output_mode": query.get("output_mode"),
        },
    }
