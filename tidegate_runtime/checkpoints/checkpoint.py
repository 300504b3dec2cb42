"""Inspect and edit a Structured Streaming checkpoint on the local filesystem (stdlib only).

The control plane applies startpoints by rewriting a source's line in the latest committed
``offsets/N`` before the query starts; Spark then runs batch N+1 from there with all state
kept. Formats, as written by Spark 4.3:

* ``metadata``: ``{"id": "<query id>"}``.
* ``offsets/N``: ``v1``, a metadata JSON line (``batchWatermarkMs``, ``batchTimestampMs``,
  ``conf``), then one line per source: its offset JSON verbatim, or ``-``. No trailing
  newline.
* ``commits/N``: ``v1`` and ``{"nextBatchWatermarkMs": ...}``.
* ``.N.crc`` beside each file: Hadoop's ChecksumFileSystem sidecar, ``b"crc\\0"``, a big-endian
  int bytes-per-checksum (512), then the big-endian CRC32 of every 512-byte chunk. Spark
  verifies it when present and accepts its absence.
* Spark's HDFSMetadataLog only considers files whose name parses as a long, so dotfiles
  (``.N.tidegate-orig``, temporaries) in ``offsets/`` are ignored.
* ``state/<op>/_metadata/metadata``: ``v1`` then ``{"operatorInfo": {"operatorId",
  "operatorName"}, "stateStoreInfo": [{"storeName", "numColsPrefixKey", "numPartitions"}]}``.
* ``state/<op>/<partition>/_metadata/schema`` (default store): Java ``DataOutputStream``
  data: ``writeUTF("v2")``, then for the key and the value schema an int chunk count and
  that many ``writeUTF`` chunks of the schema JSON (``v1``: one ``writeUTF`` each).
"""

from __future__ import annotations

import contextlib
import json
import os
import struct
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tidegate_runtime.checkpoints.held_dir import HeldDir, TooLarge
from tidegate_runtime.checkpoints.object_dir import ObjectDir, UrlPath

BYTES_PER_CHECKSUM = 512
ORIGINAL_SUFFIX = ".tidegate-orig"
DISCARDED_SUFFIX = ".tidegate-discarded"


class CheckpointError(Exception):
    """The checkpoint is missing, malformed, or not in a state that allows the edit."""


@dataclass(frozen=True)
class StateOperator:
    """A stateful operator as recorded in ``state/<op>/``."""

    operator_id: int
    operator_name: str | None
    num_partitions: int
    store_names: tuple[str, ...]
    key_schema: dict[str, Any] | None
    value_schema: dict[str, Any] | None


def _local(checkpoint: str | os.PathLike[str]) -> Path:
    text = os.fspath(checkpoint)
    if text.startswith("file://"):
        text = text[len("file://") :]
    elif text.startswith("file:"):
        text = text[len("file:") :]
    return Path(text)


# A folder of a checkpoint: held open on a local disk, or a prefix in an object store.
Tree = HeldDir | ObjectDir

# A checkpoint to read: a path (or ``file:`` URL) the caller trusts up to the checkpoint, an
# object store URL of a scheme an opener is registered for (``register_store``), or a folder
# the caller holds (the worker, which reaches it from the checkpoint root without following a
# link: ``held_dir``). Below it nothing is read through a link, a FIFO never blocks a reader
# and no file is read past ``held_dir.READ_LIMIT``.
Checkpoint = str | os.PathLike[str] | HeldDir | ObjectDir

# Scheme -> how to open a folder of that object store ("s3a": the worker's s3fs client, or
# the driver's Hadoop file system): registered by whoever holds the store's settings.
_STORES: dict[str, Callable[[str], ObjectDir]] = {}


def register_store(scheme: str, opener: Callable[[str], ObjectDir]) -> None:
    _STORES[scheme.lower()] = opener


def is_object_store(checkpoint: str | os.PathLike[str]) -> bool:
    """A URL with a scheme other than ``file``: a checkpoint in an object store."""
    text = os.fspath(checkpoint)
    return "://" in text and not text.lower().startswith("file:")


def _object_dir(url: str) -> ObjectDir:
    scheme = url.split("://", 1)[0].lower()
    opener = _STORES.get(scheme)
    if opener is None:
        raise CheckpointError(
            f"no {scheme}:// file system is configured here to read the checkpoint {url}"
        )
    return opener(url)


def open_store(url: str) -> ObjectDir:
    """The object store folder ``url`` through the opener registered for its scheme;
    ``CheckpointError`` where none is."""
    return _object_dir(url)


@contextlib.contextmanager
def _tree(checkpoint: Checkpoint) -> Iterator[Tree | None]:
    """The checkpoint's folder (held open where local), or None where there is none."""
    if isinstance(checkpoint, HeldDir | ObjectDir):
        yield checkpoint
        return
    if is_object_store(checkpoint):
        with _object_dir(os.fspath(checkpoint)) as folder:
            yield folder if folder.names() else None
        return
    try:
        held = HeldDir.at(_local(checkpoint))
    except (FileNotFoundError, NotADirectoryError):
        yield None
        return
    with held:
        yield held


def _label(checkpoint: Checkpoint) -> str:
    return str(checkpoint.path if isinstance(checkpoint, HeldDir | ObjectDir) else checkpoint)


@contextlib.contextmanager
def _writable(checkpoint: Checkpoint) -> Iterator[Tree]:
    """The checkpoint's folder to edit; CheckpointError where there is none."""
    with _tree(checkpoint) as tree:
        if tree is None:
            raise CheckpointError(f"{_label(checkpoint)} is not a checkpoint (nothing there)")
        yield tree


def _batches(tree: Tree | None, folder: str) -> list[int]:
    if tree is None:
        return []
    return sorted(int(name) for name in tree.names(folder) if name.isdigit())


def query_id(checkpoint: Checkpoint) -> str | None:
    with _tree(checkpoint) as tree:
        if tree is None or not tree.exists("metadata"):
            return None
        return str(json.loads(_read(tree, "metadata"))["id"])


def latest_offsets_batch(checkpoint: Checkpoint) -> int | None:
    with _tree(checkpoint) as tree:
        batches = _batches(tree, "offsets")
    return batches[-1] if batches else None


def latest_commit_batch(checkpoint: Checkpoint | None, *, planned: bool = False) -> int | None:
    """The latest committed batch of a query's checkpoint (a local path, ``file:`` URL or held
    folder), or None: no checkpoint (None, not there yet) or nothing committed. ``planned``:
    only a batch whose ``offsets/N`` is there too, which a restart or a snapshot can resume
    from (Spark's retention may remove an old commit's plan; a copy may be partial)."""
    if checkpoint is None or (
        not isinstance(checkpoint, HeldDir | ObjectDir) and not os.fspath(checkpoint)
    ):
        return None
    with _tree(checkpoint) as tree:
        batches = _batches(tree, "commits")
        if not batches or tree is None:
            return None
        if planned and not tree.exists(f"offsets/{batches[-1]}"):
            return None
    return batches[-1]


def uncommitted_batches(checkpoint: Checkpoint) -> list[int]:
    """Planned batches after the latest commit: Spark re-runs them on restart."""
    with _tree(checkpoint) as tree:
        committed = latest_commit_batch(tree)
        return [b for b in _batches(tree, "offsets") if committed is None or b > committed]


def _read(tree: Tree | None, rel: str) -> bytes:
    """A file of the checkpoint: regular, not through a link, at most READ_LIMIT bytes."""
    label = rel if tree is None else tree.path / rel
    if tree is None:
        raise CheckpointError(f"{label} does not exist")
    try:
        return tree.read(rel)
    except FileNotFoundError:
        raise CheckpointError(f"{label} does not exist") from None
    except TooLarge as exc:
        raise CheckpointError(
            f"{label} is too large for a Spark metadata log file: {exc}"
        ) from None
    except OSError:  # a link, a FIFO, a folder where the file should be
        raise CheckpointError(f"{label} is not a regular file") from None


def _read_log_file(tree: Tree | None, rel: str, versions: tuple[str, ...] = ("v1",)) -> list[str]:
    label = Path(rel) if tree is None else tree.path / rel
    return _log_lines(label, _decode(label, _read(tree, rel)), versions)


def _decode(path: object, data: bytes) -> list[str]:
    try:
        return data.decode().split("\n")
    except UnicodeDecodeError:
        raise CheckpointError(f"{path} is not a Spark metadata log file") from None


def _log_lines(path: object, lines: list[str], versions: tuple[str, ...]) -> list[str]:
    if lines and lines[-1] == "":
        lines.pop()
    if not lines or lines[0] not in versions:
        # Never the line itself: the file may not be a checkpoint's at all.
        raise CheckpointError(
            f"{path} is not a Spark metadata log file of version {' or '.join(versions)}"
        )
    return lines


def read_offsets(checkpoint: Checkpoint, batch_id: int) -> tuple[dict[str, Any], list[str | None]]:
    """``offsets/N`` as (metadata, one offset JSON text per source, None for ``-``)."""
    with _tree(checkpoint) as tree:
        lines = _read_log_file(tree, f"offsets/{batch_id}")
    if len(lines) < 2:
        raise CheckpointError(f"offsets/{batch_id} has no metadata line")
    metadata: dict[str, Any] = json.loads(lines[1])
    return metadata, [None if line == "-" else line for line in lines[2:]]


def read_commit(checkpoint: Checkpoint, batch_id: int) -> dict[str, Any]:
    with _tree(checkpoint) as tree:
        lines = _read_log_file(tree, f"commits/{batch_id}")
    commit: dict[str, Any] = json.loads(lines[1]) if len(lines) > 1 else {}
    return commit


def next_batch_watermark(checkpoint: Checkpoint, batch_id: int) -> int:
    """The event-time watermark (ms; 0: none) the batch after committed ``batch_id`` filters
    late rows with: ``batchWatermarkMs`` of ``offsets/N`` (what a rewind lowers too)."""
    metadata, _ = read_offsets(checkpoint, batch_id)
    return int(metadata.get("batchWatermarkMs", 0))


def hadoop_crc(data: bytes) -> bytes:
    """Content of the Hadoop ``.crc`` sidecar for ``data`` (local ChecksumFileSystem)."""
    sums = b"".join(
        struct.pack(">I", zlib.crc32(data[i : i + BYTES_PER_CHECKSUM]))
        for i in range(0, len(data), BYTES_PER_CHECKSUM)
    )
    return b"crc\0" + struct.pack(">i", BYTES_PER_CHECKSUM) + sums


def _crc(rel: str) -> str:
    """The Hadoop checksum sidecar of ``rel`` (``offsets/.N.crc`` beside ``offsets/N``)."""
    folder, _, name = rel.rpartition("/")
    return f"{folder}/.{name}.crc" if folder else f".{name}.crc"


def _replace(tree: Tree, rel: str, data: bytes) -> None:
    """``rel`` replaced whole. Locally (Hadoop's checksummed file system) its ``.crc`` goes
    first and comes back after, so a crash at any point leaves a file Spark accepts; an object
    store keeps no sidecars."""
    if tree.checksums:
        tree.unlink(_crc(rel))
    tree.write_atomic(rel, data)
    if tree.checksums:
        tree.write_atomic(_crc(rel), hadoop_crc(data))


def _set_aside(tree: Tree, rel: str, suffix: str) -> None:
    """``offsets/N`` renamed ``offsets/.N<suffix>`` (a name Spark's log ignores)."""
    folder, _, name = rel.rpartition("/")
    if tree.checksums:
        tree.unlink(_crc(rel))
    tree.rename(rel, f"{folder}/.{name}{suffix}")


def rewrite_source_offsets(
    checkpoint: Checkpoint,
    batch_id: int,
    source_index: int,
    new_json: str,
    *,
    discard_uncommitted: bool = False,
    watermark_ms: int | None = None,
) -> str:
    """Atomically replace source ``source_index``'s line of committed ``offsets/batch_id``.

    The first original is kept as ``offsets/.N.tidegate-orig`` (its path is returned).
    Planned-but-uncommitted later batches would be re-run from their recorded offsets and
    defeat the rewrite: they raise :class:`CheckpointError` unless ``discard_uncommitted``,
    which moves them aside as ``.M.tidegate-discarded``. For this project's ``eventlog``
    source pass text from ``eventlog.format_offsets``.

    ``watermark_ms`` (for a rewind) lowers the event-time watermark the next batch runs with
    to at most that value: ``batchWatermarkMs`` of ``offsets/N`` (Spark's watermark for late
    rows in batch N+1) and ``nextBatchWatermarkMs`` of ``commits/N`` (its watermark for
    eviction), so replayed rows are not dropped as late. ``commits/N`` is kept beside it as
    ``commits/.N.tidegate-orig`` the first time, and is rewritten before ``offsets/N``: a
    crash in between leaves only a lower watermark, and the startpoint unapplied.
    """
    try:
        json.loads(new_json)
    except ValueError as e:
        raise CheckpointError(f"not valid JSON: {new_json!r} ({e})") from None
    if "\n" in new_json or "\r" in new_json:
        raise CheckpointError("offset JSON must be a single line")
    with _writable(checkpoint) as tree:
        rel = f"offsets/{batch_id}"
        if not tree.exists(f"commits/{batch_id}"):
            raise CheckpointError(f"batch {batch_id} of {tree.path} is not committed")
        original = _read(tree, rel)
        later = [b for b in _batches(tree, "offsets") if b > batch_id]
        lines = _log_lines(tree.path / rel, _decode(tree.path / rel, original), ("v1",))
        line_no = 2 + source_index
        if source_index < 0 or line_no >= len(lines):
            raise CheckpointError(f"offsets/{batch_id} has no source {source_index}")
        lines[line_no] = new_json
        lower_commit = False
        if watermark_ms is not None:
            meta = json.loads(lines[1])
            if int(meta.get("batchWatermarkMs", 0)) > watermark_ms:
                meta["batchWatermarkMs"] = watermark_ms
                lines[1] = json.dumps(meta, separators=(",", ":"))
            commit = read_commit(tree, batch_id)
            lower_commit = int(commit.get("nextBatchWatermarkMs", 0)) > watermark_ms
        data = "\n".join(lines).encode()

        if later and not discard_uncommitted:
            raise CheckpointError(
                f"{tree.path} has batches {later} after {batch_id}; rewrite the latest "
                "committed batch or pass discard_uncommitted"
            )
        committed_later = [b for b in later if tree.exists(f"commits/{b}")]
        if committed_later:
            raise CheckpointError(f"batches {committed_later} after {batch_id} are committed")
        for b in later:
            _set_aside(tree, f"offsets/{b}", DISCARDED_SUFFIX)

        backup = f"offsets/.{batch_id}{ORIGINAL_SUFFIX}"
        if not tree.exists(backup):
            tree.write_atomic(backup, original)
        if lower_commit:
            assert watermark_ms is not None
            commit_rel = f"commits/{batch_id}"
            commit_backup = f"commits/.{batch_id}{ORIGINAL_SUFFIX}"
            commit_data = _read(tree, commit_rel)
            if not tree.exists(commit_backup):
                tree.write_atomic(commit_backup, commit_data)
            label = tree.path / commit_rel
            commit_lines = _log_lines(label, _decode(label, commit_data), ("v1",))
            doc = json.loads(commit_lines[1]) if len(commit_lines) > 1 else {}
            doc["nextBatchWatermarkMs"] = watermark_ms
            _replace(tree, commit_rel, "\n".join([commit_lines[0], json.dumps(doc)]).encode())
        _replace(tree, rel, data)
        return str(tree.path / backup)


def original_offsets_file(checkpoint: str | os.PathLike[str], batch_id: int) -> Path | UrlPath:
    """Where the first rewrite of ``offsets/batch_id`` kept the file as Spark wrote it."""
    name = f".{batch_id}{ORIGINAL_SUFFIX}"
    if is_object_store(checkpoint):
        return UrlPath(os.fspath(checkpoint)) / "offsets" / name
    return _local(checkpoint) / "offsets" / name


def restore_batch(checkpoint: Checkpoint, batch_id: int) -> None:
    """Put ``offsets/batch_id`` (and ``commits/batch_id``, when a rewind lowered its
    watermark) back as they were before the first rewrite, from the copies kept beside them.
    Only the latest committed batch can be put back: once later batches committed, their
    output and state stand on it."""
    with _writable(checkpoint) as tree:
        latest = latest_commit_batch(tree)
        if latest != batch_id:
            raise CheckpointError(
                f"batch {batch_id} of {tree.path} is not the latest committed batch (that is "
                f"{latest})"
            )
        backup = f"offsets/.{batch_id}{ORIGINAL_SUFFIX}"
        commit_backup = f"commits/.{batch_id}{ORIGINAL_SUFFIX}"
        original = _read(tree, backup)
        saved_commit = _read(tree, commit_backup) if tree.exists(commit_backup) else None
        later = [b for b in _batches(tree, "offsets") if b > batch_id]
        # Refuse what is not an offsets file.
        _log_lines(tree.path / backup, _decode(tree.path / backup, original), ("v1",))
        for b in later:  # planned, never committed
            _set_aside(tree, f"offsets/{b}", DISCARDED_SUFFIX)
        _replace(tree, f"offsets/{batch_id}", original)
        if saved_commit is not None:
            _replace(tree, f"commits/{batch_id}", saved_commit)


# The watermark of a drain's flush batch: 9000-01-01, the time of the event log's drain marker,
# past every window a query can hold (tidegate_runtime/drain.py).
FLUSH_WATERMARK_MS = 221_845_392_000_000


def ends_in_flush(checkpoint: Checkpoint) -> bool:
    """The latest batch planned is a drain's flush: its watermark is past every window, so
    any record a later batch read would be dropped as late."""
    latest = latest_offsets_batch(checkpoint)
    if latest is None:
        return False
    metadata, _ = read_offsets(checkpoint, latest)
    return int(metadata.get("batchWatermarkMs", 0)) >= FLUSH_WATERMARK_MS


def plan_flush_batch(checkpoint: Checkpoint) -> int | None:
    """Plan the batch after the latest committed one as a drain's flush: the same offsets (it
    reads nothing) with the watermark at ``FLUSH_WATERMARK_MS``. Spark, started on the
    checkpoint, runs a planned batch first, so this batch evicts and emits every window still
    open; run with Trigger.Once, it is the only batch. The source needs no marker row of its
    own, so this flushes any source (Kafka, files). Returns the batch's id (one planned
    already is kept: a retried step), or None when nothing is committed (no state to flush)."""
    with _tree(checkpoint) as tree:
        committed = latest_commit_batch(tree) if tree is not None else None
        if tree is None or committed is None:
            return None
        planned = uncommitted_batches(tree)
        if planned:
            if ends_in_flush(tree):
                return planned[-1]
            raise CheckpointError(f"{tree.path} has batches {planned} planned and not committed")
        lines = _read_log_file(tree, f"offsets/{committed}")
        metadata = json.loads(lines[1])
        metadata["batchWatermarkMs"] = max(
            int(metadata.get("batchWatermarkMs", 0)), FLUSH_WATERMARK_MS
        )
        lines[1] = json.dumps(metadata, separators=(",", ":"))
        # The file, then its sidecar: a crash between them leaves no .crc, which Spark accepts.
        data = "\n".join(lines).encode()
        tree.write_atomic(f"offsets/{committed + 1}", data)
        if tree.checksums:
            tree.write_atomic(_crc(f"offsets/{committed + 1}"), hadoop_crc(data))
        return committed + 1


def _read_schema_file(tree: Tree, rel: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
    try:
        data = _read(tree, rel)
    except CheckpointError:
        return None
    pos = 0

    def utf() -> str:
        nonlocal pos
        (n,) = struct.unpack_from(">H", data, pos)
        text = data[pos + 2 : pos + 2 + n].decode()
        pos += 2 + n
        return text

    def chunked() -> str:
        nonlocal pos
        (count,) = struct.unpack_from(">i", data, pos)
        pos += 4
        return "".join(utf() for _ in range(count))

    try:
        version = utf()
        if version == "v1":
            key, value = utf(), utf()
        elif version == "v2":
            key, value = chunked(), chunked()
        else:
            return None
        return json.loads(key), json.loads(value)
    except (struct.error, UnicodeDecodeError, ValueError):
        return None


def state_operators(checkpoint: Checkpoint) -> list[StateOperator]:
    """Stateful operators of a checkpoint, from ``state/<op>/_metadata/metadata``.

    Without that file (checkpoints of older Spark versions) the name is None and the
    partition count is the number of partition folders. Schemas come from partition 0 of the
    default store; they are None when Spark wrote them elsewhere (e.g. state schema v3 of
    transformWithState) or not yet.
    """
    with _tree(checkpoint) as tree:
        return [] if tree is None else _state_operators(tree)


def _state_operators(tree: Tree) -> list[StateOperator]:
    operators = []
    for op in _batches(tree, "state"):
        op_dir = f"state/{op}"
        meta = f"{op_dir}/_metadata/metadata"
        if tree.exists(meta):
            doc = json.loads(_read_log_file(tree, meta, ("v1", "v2"))[1])
            name: str | None = str(doc["operatorInfo"]["operatorName"])
            stores = doc.get("stateStoreInfo", [])
            partitions = int(stores[0]["numPartitions"]) if stores else 0
        else:
            name, stores, partitions = None, [], len(_batches(tree, op_dir))
        schemas = _read_schema_file(tree, f"{op_dir}/0/_metadata/schema")
        operators.append(
            StateOperator(
                operator_id=op,
                operator_name=name,
                num_partitions=partitions,
                store_names=tuple(str(s["storeName"]) for s in stores),
                key_schema=schemas[0] if schemas else None,
                value_schema=schemas[1] if schemas else None,
            )
        )
    return operators
