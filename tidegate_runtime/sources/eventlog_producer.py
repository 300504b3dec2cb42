"""The event log's producer: writes keyed, numbered events into an event-log stream at a rate.

Record ``i`` of a run has key ``keys[i % len(keys)]`` and value ``str(i % 100)``, so the
example pipelines have something to count and sum; ground truth is computed from the log,
not from these rules.
"""

from __future__ import annotations

import os
import time
import zlib
from collections.abc import Iterable, Sequence
from typing import Self

from tidegate_runtime.sources.eventlog import EventLog, NewRecord, Stream

DEFAULT_KEYS = tuple(f"k{i}" for i in range(10))
# Shortest pause between two appends when rate-limited: batches appends at high rates.
_MIN_TICK_S = 0.02


def partition_for_key(key: str, partitions: int) -> int:
    """Stable key → partition mapping (CRC32), identical in every process."""
    return zlib.crc32(key.encode()) % partitions


def append_pairs(
    root: str | os.PathLike[str],
    stream: str,
    pairs: Iterable[tuple[int, NewRecord]],
    partitions: int = 2,
) -> dict[int, int]:
    """Append (partition, record) pairs to ``stream`` (made if missing), in their order within
    each partition, 10,000 records an append; the stream's latest offsets."""
    target = EventLog(root).create_stream(stream, partitions, exist_ok=True)
    batches: dict[int, list[NewRecord]] = {p: [] for p in range(partitions)}
    for partition, record in pairs:
        batches[partition].append(record)
        if len(batches[partition]) >= 10_000:
            target.append(partition, batches[partition])
            batches[partition] = []
    for partition, records in batches.items():
        if records:
            target.append(partition, records)
    return target.latest_offsets()


class Producer:
    """Buffers records per partition (by key hash) and appends them in batches."""

    def __init__(self, stream: Stream, batch_records: int = 5_000) -> None:
        self.stream = stream
        self.batch_records = batch_records
        self._partitions = stream.partitions
        self._buffer: dict[int, list[NewRecord]] = {}
        self._buffered = 0

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.flush()

    def send(self, key: str, value: str, timestamp_ms: int | None = None) -> int:
        """Buffer one record (event time defaults to now); returns its partition."""
        ts = time.time_ns() // 1_000_000 if timestamp_ms is None else timestamp_ms
        partition = partition_for_key(key, self._partitions)
        self._buffer.setdefault(partition, []).append(NewRecord(ts, key, value))
        self._buffered += 1
        if self._buffered >= self.batch_records:
            self.flush()
        return partition

    def flush(self) -> None:
        buffer, self._buffer, self._buffered = self._buffer, {}, 0
        for partition in sorted(buffer):
            self.stream.append(partition, buffer[partition])


def produce(
    root: str | os.PathLike[str],
    stream: str,
    partitions: int,
    rate: float,
    count: int | None,
    start_ts_ms: int | None = None,
    ts_step_ms: int = 100,
    keys: Sequence[str] = DEFAULT_KEYS,
) -> dict[int, int]:
    """Append ``count`` records (None: until interrupted) at ``rate`` records/s (0: at once).

    The stream is created with ``partitions`` partitions if missing, grown if it has fewer.
    Event time of record ``i`` is ``start_ts_ms + i * ts_step_ms``; without ``start_ts_ms``
    it is the wall clock when the record is produced. Returns the latest offsets.
    """
    if not keys:
        raise ValueError("keys must not be empty")
    if rate < 0 or (count is None and rate == 0):
        raise ValueError("rate must be >= 0, and > 0 when count is unbounded")
    log = EventLog(root)
    target = log.create_stream(stream, partitions, exist_ok=True)
    producer = Producer(target)
    started = time.monotonic()
    sent = 0
    try:
        while count is None or sent < count:
            if rate > 0:
                due = int((time.monotonic() - started) * rate) + 1
            else:
                due = sent + producer.batch_records
            if count is not None:
                due = min(due, count)
            for i in range(sent, due):
                ts = None if start_ts_ms is None else start_ts_ms + i * ts_step_ms
                producer.send(keys[i % len(keys)], str(i % 100), ts)
            producer.flush()
            sent = max(sent, due)
            if rate > 0 and (count is None or sent < count):
                next_due = started + sent / rate
                time.sleep(max(next_due - time.monotonic(), _MIN_TICK_S))
    finally:
        producer.flush()
    return target.latest_offsets()
