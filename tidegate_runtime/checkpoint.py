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

import json
import os
import stat
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tidegate_runtime.files import write_atomic

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


def _batches(directory: Path) -> list[int]:
    if not directory.is_dir():
        return []
    return sorted(int(p.name) for p in directory.iterdir() if p.name.isdigit())


def query_id(checkpoint: str | os.PathLike[str]) -> str | None:
    path = _local(checkpoint) / "metadata"
    if not path.exists():
        return None
    return str(json.loads(path.read_text())["id"])


def latest_offsets_batch(checkpoint: str | os.PathLike[str]) -> int | None:
    batches = _batches(_local(checkpoint) / "offsets")
    return batches[-1] if batches else None


def latest_commit_batch(
    checkpoint: str | os.PathLike[str] | None, *, planned: bool = False
) -> int | None:
    """The latest committed batch of a query's checkpoint (a local path or ``file:`` URL), or
    None: no checkpoint (None, not there yet) or nothing committed. ``planned``: only a batch
    whose ``offsets/N`` is there too, which a restart or a snapshot can resume from (Spark's
    retention may remove an old commit's plan; a copy may be partial)."""
    if checkpoint is None or not os.fspath(checkpoint):
        return None
    local = _local(checkpoint)
    batches = _batches(local / "commits")
    if not batches:
        return None
    if planned and not (local / "offsets" / str(batches[-1])).exists():
        return None
    return batches[-1]


def uncommitted_batches(checkpoint: str | os.PathLike[str]) -> list[int]:
    """Planned batches after the latest commit: Spark re-runs them on restart."""
    committed = latest_commit_batch(checkpoint)
    return [
        b for b in _batches(_local(checkpoint) / "offsets") if committed is None or b > committed
    ]


def _read_log_file(path: Path, versions: tuple[str, ...] = ("v1",)) -> list[str]:
    try:
        lines = path.read_text().split("\n")
    except FileNotFoundError:
        raise CheckpointError(f"{path} does not exist") from None
    except UnicodeDecodeError:
        raise CheckpointError(f"{path} is not a Spark metadata log file") from None
    return _log_lines(path, lines, versions)


def _log_lines(path: Path, lines: list[str], versions: tuple[str, ...]) -> list[str]:
    if lines and lines[-1] == "":
        lines.pop()
    if not lines or lines[0] not in versions:
        # Never the line itself: the file may not be a checkpoint's at all.
        raise CheckpointError(
            f"{path} is not a Spark metadata log file of version {' or '.join(versions)}"
        )
    return lines


def _read_regular_file(path: Path) -> bytes:
    """A regular file's bytes, refusing a symlink (driver code can write the checkpoint and
    could plant one leading to a file only the control plane can read)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise CheckpointError(f"{path} does not exist") from None
    except OSError:
        raise CheckpointError(f"{path} is not a regular file") from None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise CheckpointError(f"{path} is not a regular file")
        return f.read()


def read_offsets(
    checkpoint: str | os.PathLike[str], batch_id: int
) -> tuple[dict[str, Any], list[str | None]]:
    """``offsets/N`` as (metadata, one offset JSON text per source, None for ``-``)."""
    lines = _read_log_file(_local(checkpoint) / "offsets" / str(batch_id))
    if len(lines) < 2:
        raise CheckpointError(f"offsets/{batch_id} has no metadata line")
    metadata: dict[str, Any] = json.loads(lines[1])
    return metadata, [None if line == "-" else line for line in lines[2:]]


def read_commit(checkpoint: str | os.PathLike[str], batch_id: int) -> dict[str, Any]:
    lines = _read_log_file(_local(checkpoint) / "commits" / str(batch_id))
    commit: dict[str, Any] = json.loads(lines[1]) if len(lines) > 1 else {}
    return commit


def hadoop_crc(data: bytes) -> bytes:
    """Content of the Hadoop ``.crc`` sidecar for ``data`` (local ChecksumFileSystem)."""
    sums = b"".join(
        struct.pack(">I", zlib.crc32(data[i : i + BYTES_PER_CHECKSUM]))
        for i in range(0, len(data), BYTES_PER_CHECKSUM)
    )
    return b"crc\0" + struct.pack(">i", BYTES_PER_CHECKSUM) + sums


def _crc_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.crc")


def rewrite_source_offsets(
    checkpoint: str | os.PathLike[str],
    batch_id: int,
    source_index: int,
    new_json: str,
    *,
    discard_uncommitted: bool = False,
    watermark_ms: int | None = None,
) -> Path:
    """Atomically replace source ``source_index``'s line of committed ``offsets/batch_id``.

    The first original is kept as ``offsets/.N.tidegate-orig`` (returned). The ``.N.crc``
    sidecar is removed before the swap and recomputed after it, so a crash at any point
    leaves a file Spark accepts. Planned-but-uncommitted later batches would be re-run from
    their recorded offsets and defeat the rewrite: they raise :class:`CheckpointError`
    unless ``discard_uncommitted``, which moves them aside as ``.M.tidegate-discarded``.
    For this project's ``eventlog`` source pass text from ``eventlog.format_offsets``.

    ``watermark_ms`` (for a rewind) lowers the event-time watermark the next batch runs with
    to at most that value: ``batchWatermarkMs`` of ``offsets/N`` (Spark's watermark for late
    rows in batch N+1) and ``nextBatchWatermarkMs`` of ``commits/N`` (its watermark for
    eviction), so replayed rows are not dropped as late. ``commits/N`` is kept beside it as
    ``commits/.N.tidegate-orig`` the first time, and is rewritten before ``offsets/N``: a
    crash in between leaves only a lower watermark, and the startpoint unapplied.
    """
    root = _local(checkpoint)
    offsets_dir = root / "offsets"
    path = offsets_dir / str(batch_id)
    if not (root / "commits" / str(batch_id)).exists():
        raise CheckpointError(f"batch {batch_id} of {root} is not committed")
    try:
        json.loads(new_json)
    except ValueError as e:
        raise CheckpointError(f"not valid JSON: {new_json!r} ({e})") from None
    if "\n" in new_json or "\r" in new_json:
        raise CheckpointError("offset JSON must be a single line")
    original = path.read_bytes()
    lines = _read_log_file(path)
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
        commit = read_commit(root, batch_id)
        lower_commit = int(commit.get("nextBatchWatermarkMs", 0)) > watermark_ms
    data = "\n".join(lines).encode()

    later = [b for b in _batches(offsets_dir) if b > batch_id]
    if later and not discard_uncommitted:
        raise CheckpointError(
            f"{root} has batches {later} after {batch_id}; rewrite the latest committed batch"
            " or pass discard_uncommitted"
        )
    committed_later = [b for b in later if (root / "commits" / str(b)).exists()]
    if committed_later:
        raise CheckpointError(f"batches {committed_later} after {batch_id} are committed")
    for b in later:
        _crc_path(offsets_dir / str(b)).unlink(missing_ok=True)
        os.replace(offsets_dir / str(b), offsets_dir / f".{b}{DISCARDED_SUFFIX}")

    backup = offsets_dir / f".{batch_id}{ORIGINAL_SUFFIX}"
    if not backup.exists():
        write_atomic(backup, original)
    if lower_commit:
        assert watermark_ms is not None
        commit_path = root / "commits" / str(batch_id)
        commit_backup = root / "commits" / f".{batch_id}{ORIGINAL_SUFFIX}"
        if not commit_backup.exists():
            write_atomic(commit_backup, commit_path.read_bytes())
        commit_lines = _read_log_file(commit_path)
        doc = json.loads(commit_lines[1]) if len(commit_lines) > 1 else {}
        doc["nextBatchWatermarkMs"] = watermark_ms
        _replace_with_crc(commit_path, "\n".join([commit_lines[0], json.dumps(doc)]).encode())
    _replace_with_crc(path, data)
    return backup


def _replace_with_crc(path: Path, data: bytes) -> None:
    _crc_path(path).unlink(missing_ok=True)
    write_atomic(path, data)
    write_atomic(_crc_path(path), hadoop_crc(data))


def original_offsets_file(checkpoint: str | os.PathLike[str], batch_id: int) -> Path:
    """Where the first rewrite of ``offsets/batch_id`` kept the file as Spark wrote it."""
    return _local(checkpoint) / "offsets" / f".{batch_id}{ORIGINAL_SUFFIX}"


def restore_batch(checkpoint: str | os.PathLike[str], batch_id: int) -> None:
    """Put ``offsets/batch_id`` (and ``commits/batch_id``, when a rewind lowered its
    watermark) back as they were before the first rewrite, from the copies kept beside them.
    Only the latest committed batch can be put back: once later batches committed, their
    output and state stand on it."""
    root = _local(checkpoint)
    latest = latest_commit_batch(root)
    if latest != batch_id:
        raise CheckpointError(
            f"batch {batch_id} of {root} is not the latest committed batch (that is {latest})"
        )
    backup = original_offsets_file(root, batch_id)
    original = _read_regular_file(backup)
    try:  # refuse anything that is not an offsets file
        _log_lines(backup, original.decode().split("\n"), ("v1",))
    except UnicodeDecodeError:
        raise CheckpointError(f"{backup} is not a Spark metadata log file") from None
    commit_backup = root / "commits" / f".{batch_id}{ORIGINAL_SUFFIX}"
    offsets_dir = root / "offsets"
    for b in [b for b in _batches(offsets_dir) if b > batch_id]:  # planned, never committed
        _crc_path(offsets_dir / str(b)).unlink(missing_ok=True)
        os.replace(offsets_dir / str(b), offsets_dir / f".{b}{DISCARDED_SUFFIX}")
    _replace_with_crc(offsets_dir / str(batch_id), original)
    if commit_backup.exists():
        _replace_with_crc(root / "commits" / str(batch_id), _read_regular_file(commit_backup))


def _read_schema_file(path: Path) -> tuple[dict[str, Any], dict[str, Any]] | None:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
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


def state_operators(checkpoint: str | os.PathLike[str]) -> list[StateOperator]:
    """Stateful operators of a checkpoint, from ``state/<op>/_metadata/metadata``.

    Without that file (checkpoints of older Spark versions) the name is None and the
    partition count is the number of partition folders. Schemas come from partition 0 of the
    default store; they are None when Spark wrote them elsewhere (e.g. state schema v3 of
    transformWithState) or not yet.
    """
    operators = []
    for op in _batches(_local(checkpoint) / "state"):
        op_dir = _local(checkpoint) / "state" / str(op)
        meta = op_dir / "_metadata" / "metadata"
        if meta.exists():
            doc = json.loads(_read_log_file(meta, ("v1", "v2"))[1])
            name: str | None = str(doc["operatorInfo"]["operatorName"])
            stores = doc.get("stateStoreInfo", [])
            partitions = int(stores[0]["numPartitions"]) if stores else 0
        else:
            name, stores, partitions = None, [], len(_batches(op_dir))
        schemas = _read_schema_file(op_dir / "0" / "_metadata" / "schema")
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
