"""A partitioned, append-only event log on the local filesystem (Kafka-shaped).

It gives the example pipelines and tests a source with real partitions, dense offsets and
event timestamps, so startpoints, drains and restarts can be checked exactly.

On-disk layout of a stream ``S`` under ``root``::

    root/S/stream.json          {"name", "partitions", "segment_records", "index_interval"}
    root/S/.lock                flock held while the partition count changes
    root/S/<p>/index.json       committed state of partition p, replaced atomically:
                                {"start", "end", "segments": [{"base", "count", "bytes",
                                 "min_ts", "max_ts"}, ...]}
    root/S/<p>/<base>.log       segment: one JSON object per line {"o","t","k","v"}
                                (offset, event time in epoch ms, key, value); base = first
                                offset of the segment, 20 digits
    root/S/<p>/<base>.idx       sparse position index of the segment: big-endian u64 byte
                                position of every index_interval-th record
    root/S/<p>/.lock            flock held by the appender

An append writes and fsyncs segment bytes first and only then replaces ``index.json``;
readers never look past the ``count``/``bytes`` it records, so they never see a partial
record, and bytes past it (left by a crashed writer) are truncated by the next append.
Offsets follow Kafka: an offset N in a position means "the next record read is N".
"""

from __future__ import annotations

import bisect
import fcntl
import json
import os
import re
import struct
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple

from tidegate_runtime.checkpoints.durable_files import fsync_dir, write_atomic

DEFAULT_SEGMENT_RECORDS = 10_000
DEFAULT_INDEX_INTERVAL = 64
_POSITION = struct.Struct(">Q")
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]*$")


class EventLogError(Exception):
    """Base class of event-log errors."""


class StreamNotFoundError(EventLogError):
    """The stream does not exist under the log root."""


class StreamExistsError(EventLogError):
    """``create_stream`` was asked for a stream that already exists."""


class OffsetOutOfRangeError(EventLogError):
    """A read asked for offsets outside ``[earliest, latest]`` of a partition."""


class CorruptLogError(EventLogError):
    """A segment does not hold the record its index promises."""


class NewRecord(NamedTuple):
    """A record to append: the log assigns its offset."""

    timestamp_ms: int
    key: str
    value: str


class Record(NamedTuple):
    """A stored record."""

    offset: int
    timestamp_ms: int
    key: str
    value: str


@dataclass(frozen=True)
class _Segment:
    base: int
    count: int
    bytes: int
    min_ts: int
    max_ts: int

    @property
    def end(self) -> int:
        return self.base + self.count


@dataclass(frozen=True)
class _Index:
    start: int
    end: int
    segments: tuple[_Segment, ...]


def format_offsets(offsets: dict[int, int]) -> str:
    """Canonical JSON of a per-partition position, e.g. ``{"0": 123, "1": 45}``.

    Spark decides "no new data" by comparing offset JSON strings, so every writer of these
    positions (the source, a checkpoint rewrite) must produce the same text for the same
    position: keys in numeric order, ``json.dumps`` default separators.
    """
    return json.dumps({str(p): int(offsets[p]) for p in sorted(offsets)})


def parse_offsets(text: str | dict[str, Any]) -> dict[int, int]:
    """Parse a per-partition position (JSON text or an already parsed dict)."""
    raw = json.loads(text) if isinstance(text, str) else text
    if not isinstance(raw, dict):
        raise TypeError(f"expected a JSON object of partition -> offset, got {text!r}")
    return {int(p): int(o) for p, o in raw.items()}


@contextmanager
def _flock(path: Path) -> Iterator[None]:
    with open(path, "a+b") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


class EventLog:
    """A directory holding named streams."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def create_stream(
        self,
        name: str,
        partitions: int,
        *,
        segment_records: int = DEFAULT_SEGMENT_RECORDS,
        index_interval: int = DEFAULT_INDEX_INTERVAL,
        exist_ok: bool = False,
    ) -> Stream:
        """Create a stream; with ``exist_ok`` an existing one is returned (and grown if needed)."""
        if not _NAME.match(name):
            raise ValueError(f"invalid stream name {name!r}")
        if partitions < 1 or segment_records < 1 or index_interval < 1:
            raise ValueError("partitions, segment_records and index_interval must be >= 1")
        directory = self.root / name
        directory.mkdir(parents=True, exist_ok=True)
        with _flock(directory / ".lock"):
            if (directory / "stream.json").exists():
                if not exist_ok:
                    raise StreamExistsError(f"stream {name!r} already exists in {self.root}")
                stream = Stream(directory)
                if partitions > stream.partitions:
                    stream._grow_locked(partitions)
                return stream
            for p in range(partitions):
                _init_partition(directory / str(p))
            meta = {
                "name": name,
                "partitions": partitions,
                "segment_records": segment_records,
                "index_interval": index_interval,
            }
            write_atomic(directory / "stream.json", json.dumps(meta).encode())
        return Stream(directory)

    def stream(self, name: str) -> Stream:
        directory = self.root / name
        if not _NAME.match(name) or not (directory / "stream.json").exists():
            raise StreamNotFoundError(f"no stream {name!r} in {self.root}")
        return Stream(directory)

    def streams(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(d.name for d in self.root.iterdir() if (d / "stream.json").exists())


def _init_partition(directory: Path) -> None:
    directory.mkdir(exist_ok=True)
    if not (directory / "index.json").exists():
        write_atomic(directory / "index.json", _encode_index(_Index(0, 0, ())))


def _encode_index(index: _Index) -> bytes:
    doc = {
        "start": index.start,
        "end": index.end,
        "segments": [asdict(s) for s in index.segments],
    }
    return json.dumps(doc, separators=(",", ":")).encode()


class Stream:
    """One stream of an :class:`EventLog`; cheap to create and safe to pickle."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        meta = self._meta()
        self.name: str = meta["name"]
        self.segment_records: int = meta["segment_records"]
        self.index_interval: int = meta["index_interval"]

    def __repr__(self) -> str:
        return f"Stream({str(self.directory)!r})"

    def _meta(self) -> dict[str, Any]:
        try:
            meta: dict[str, Any] = json.loads((self.directory / "stream.json").read_bytes())
        except FileNotFoundError:
            raise StreamNotFoundError(f"no stream at {self.directory}") from None
        return meta

    @property
    def partitions(self) -> int:
        """Current partition count (re-read each time: it may grow while readers run)."""
        return int(self._meta()["partitions"])

    def add_partitions(self, total: int) -> None:
        """Grow the stream to ``total`` partitions; new partitions start at offset 0."""
        with _flock(self.directory / ".lock"):
            self._grow_locked(total)

    def _grow_locked(self, total: int) -> None:
        meta = self._meta()
        if total < meta["partitions"]:
            raise ValueError(f"cannot shrink {self.name!r} from {meta['partitions']} to {total}")
        for p in range(meta["partitions"], total):
            _init_partition(self.directory / str(p))
        meta["partitions"] = total
        write_atomic(self.directory / "stream.json", json.dumps(meta).encode())

    # -- paths and index -------------------------------------------------------------

    def _pdir(self, partition: int) -> Path:
        pdir = self.directory / str(partition)
        if partition < 0 or not (pdir / "index.json").exists():
            raise ValueError(f"stream {self.name!r} has no partition {partition}")
        return pdir

    def _index(self, partition: int) -> _Index:
        doc = json.loads((self._pdir(partition) / "index.json").read_bytes())
        segments = tuple(_Segment(**s) for s in doc["segments"])
        return _Index(doc["start"], doc["end"], segments)

    # -- writing ------------------------------------------------------------------------

    def append(self, partition: int, records: Iterable[NewRecord]) -> tuple[int, int]:
        """Append records durably; returns ``(first offset, next offset)``."""
        batch = list(records)
        pdir = self._pdir(partition)
        with _flock(pdir / ".lock"):
            index = self._index(partition)
            if not batch:
                return index.end, index.end
            segments = list(index.segments)
            offset, pos = index.end, 0
            while pos < len(batch):
                if segments and segments[-1].count < self.segment_records:
                    active: _Segment | None = segments.pop()
                else:
                    active = None
                room = self.segment_records - (active.count if active else 0)
                chunk = batch[pos : pos + room]
                segments.append(self._write_segment(pdir, offset, active, chunk))
                pos += len(chunk)
                offset += len(chunk)
            write_atomic(
                pdir / "index.json", _encode_index(_Index(index.start, offset, tuple(segments)))
            )
        return index.end, offset

    def _write_segment(
        self, pdir: Path, offset: int, segment: _Segment | None, chunk: list[NewRecord]
    ) -> _Segment:
        base = segment.base if segment else offset
        count = segment.count if segment else 0
        size = segment.bytes if segment else 0
        data = bytearray()
        positions = bytearray()
        for i, rec in enumerate(chunk):
            if (count + i) % self.index_interval == 0:
                positions += _POSITION.pack(size + len(data))
            line = {"o": offset + i, "t": int(rec.timestamp_ms), "k": rec.key, "v": rec.value}
            data += json.dumps(line, separators=(",", ":")).encode() + b"\n"
        committed_slots = -(-count // self.index_interval)
        for suffix, keep, payload in (
            (".log", size, data),
            (".idx", committed_slots * _POSITION.size, positions),
        ):
            fd = os.open(pdir / f"{base:020d}{suffix}", os.O_RDWR | os.O_CREAT, 0o644)
            try:
                os.ftruncate(fd, keep)  # drop what a crashed writer left past the commit
                os.lseek(fd, keep, os.SEEK_SET)
                os.write(fd, bytes(payload))
                os.fsync(fd)
            finally:
                os.close(fd)
        if segment is None:
            fsync_dir(pdir)
        stamps = [r.timestamp_ms for r in chunk]
        return _Segment(
            base=base,
            count=count + len(chunk),
            bytes=size + len(data),
            min_ts=min([*stamps, segment.min_ts]) if segment else min(stamps),
            max_ts=max([*stamps, segment.max_ts]) if segment else max(stamps),
        )

    def truncate_before(self, partition: int, offset: int) -> int:
        """Retention: make ``offset`` the earliest offset (clamped), dropping whole segments."""
        pdir = self._pdir(partition)
        with _flock(pdir / ".lock"):
            index = self._index(partition)
            start = min(max(offset, index.start), index.end)
            keep = tuple(s for s in index.segments if s.end > start)
            dropped = [s for s in index.segments if s.end <= start]
            write_atomic(
                pdir / "index.json", _encode_index(replace(index, start=start, segments=keep))
            )
            for s in dropped:
                for suffix in (".log", ".idx"):
                    (pdir / f"{s.base:020d}{suffix}").unlink(missing_ok=True)
        return start

    # -- reading ------------------------------------------------------------------------

    def earliest_offsets(self) -> dict[int, int]:
        return {p: self._index(p).start for p in range(self.partitions)}

    def latest_offsets(self) -> dict[int, int]:
        """Next offset to be written, per partition."""
        return {p: self._index(p).end for p in range(self.partitions)}

    def read(self, partition: int, start: int, end: int) -> list[Record]:
        return list(self.scan(partition, start, end))

    def scan(self, partition: int, start: int, end: int) -> Iterator[Record]:
        """Iterate the records of ``[start, end)`` without loading them all."""
        index = self._index(partition)
        if not index.start <= start <= end <= index.end:
            raise OffsetOutOfRangeError(
                f"{self.name}/{partition}: [{start}, {end}) is outside [{index.start}, {index.end})"
            )
        yield from self._scan_index(partition, index, start, end)

    def _scan_index(self, partition: int, index: _Index, start: int, end: int) -> Iterator[Record]:
        if start >= end:
            return
        pdir = self._pdir(partition)
        i = bisect.bisect_right([s.base for s in index.segments], start) - 1
        offset = start
        while offset < end:
            segment = index.segments[i]
            stop = min(end, segment.end)
            yield from self._scan_segment(pdir, segment, offset, stop)
            offset = stop
            i += 1

    def _scan_segment(
        self, pdir: Path, segment: _Segment, start: int, stop: int
    ) -> Iterator[Record]:
        rel = start - segment.base
        slot = rel // self.index_interval
        stem = f"{segment.base:020d}"
        try:
            position = 0
            if slot:
                with open(pdir / f"{stem}.idx", "rb") as idx:
                    idx.seek(slot * _POSITION.size)
                    (position,) = _POSITION.unpack(idx.read(_POSITION.size))
            f = open(pdir / f"{stem}.log", "rb")  # noqa: SIM115 - closed by the `with` below
        except FileNotFoundError:
            raise OffsetOutOfRangeError(f"segment {stem} of {pdir} was removed") from None
        with f:
            f.seek(position)
            for _ in range(rel - slot * self.index_interval):
                f.readline()
            for expected in range(start, stop):
                doc = json.loads(f.readline())
                if doc["o"] != expected:
                    raise CorruptLogError(f"{pdir}/{stem}.log: offset {doc['o']} at {expected}")
                yield Record(expected, doc["t"], doc["k"], doc["v"])

    def resolve_timestamp(self, partition: int, ts_ms: int) -> int:
        """First offset whose timestamp is >= ``ts_ms``, or the latest offset if none is.

        Timestamps need not be monotonic: segments whose max timestamp is below ``ts_ms`` are
        skipped, the others are scanned in offset order.
        """
        index = self._index(partition)
        for segment in index.segments:
            if segment.max_ts < ts_ms or segment.end <= index.start:
                continue
            first = max(segment.base, index.start)
            for rec in self._scan_index(partition, index, first, segment.end):
                if rec.timestamp_ms >= ts_ms:
                    return rec.offset
        return index.end
