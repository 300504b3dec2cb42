"""Spark streaming source ``eventlog`` over an event-log stream (eventlog.py).

Offsets are per-partition positions (next offset to read) serialised by
:func:`~tidegate_runtime.sources.eventlog.format_offsets`, e.g. ``{"0": 123, "1": 45}``; Spark
stores that text verbatim as this source's line in ``offsets/N``.

Options:

* ``path`` (log root) and ``stream`` — required.
* ``startingOffsets`` — ``earliest`` (default), ``latest`` or a JSON position; partitions
  missing from it start at their earliest offset. Used only when the checkpoint is new.
* ``endingOffsets`` — a JSON position used as a cap (drain): the source never reports an
  offset beyond it, so once it is reached no further batch runs. Partitions missing from it
  are not read at all.
* ``maxRecordsPerBatch`` — optional rate limit (Spark's admission control).
* ``controlFile`` — a JSON file the tidegate runtime writes while stopping (``"hold": true``:
  no new data, so the query idles between batches) or during a drain:
  ``{"end": {"0": 120, ...}, "marker": false}`` caps the source at the offsets fixed when
  the drain was requested; ``"marker": true`` then adds one synthetic record with event time
  DRAIN_MARKER_TIMESTAMP in a virtual partition (MARKER_PARTITION), which moves the
  watermark past every open window so append-mode windows are emitted. The virtual partition
  holds no data, so a checkpoint that contains it still resumes exactly on the real ones.

Partitions created after the query started are read from offset 0. Records below a
partition's earliest offset (removed by retention) are skipped.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import (
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from tidegate_runtime.sources.eventlog import EventLog, Stream, parse_offsets

SCHEMA = StructType(
    [
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("key", StringType()),
        StructField("value", StringType()),
    ]
)
# What Spark expects from read() for SCHEMA (it checks arrow schemas for equality).
ARROW_SCHEMA = pa.schema(
    [
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("timestamp", pa.timestamp("us", tz="UTC")),
        ("key", pa.string()),
        ("value", pa.string()),
    ]
)
ARROW_BATCH_RECORDS = 10_000
# Event time from which rows only move the watermark (see pipelines): a drain marker.
DRAIN_MARKER_TIMESTAMP = datetime(9000, 1, 1, tzinfo=UTC)
DRAIN_MARKER_KEY = "__tidegate_drain__"
MARKER_PARTITION = 1_000_000


class EventLogPartition(InputPartition):
    """Offsets ``[start, end)`` of one log partition."""

    def __init__(self, partition: int, start: int, end: int) -> None:
        super().__init__((partition, start, end))
        self.partition = partition
        self.start = start
        self.end = end


def split_limit(lags: dict[int, int], limit: int) -> dict[int, int]:
    """Share ``limit`` records fairly between partitions with ``lags`` records waiting.

    Water-filling: small lags are served fully, the rest split evenly; the last partition
    takes what is left, so a small limit still makes progress.
    """
    take: dict[int, int] = {}
    remaining = limit
    order = sorted(lags, key=lambda p: (lags[p], p))
    for i, p in enumerate(order):
        share = remaining if i == len(order) - 1 else remaining // (len(order) - i)
        take[p] = min(lags[p], share)
        remaining -= take[p]
    return take


class EventLogStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Planner-side and task-side reader; keeps only picklable state (paths and options)."""

    def __init__(self, options: Mapping[str, str]) -> None:
        try:
            self.root = options["path"]
            self.stream_name = options["stream"]
        except KeyError as missing:
            raise ValueError(f"eventlog source needs the option {missing}") from None
        self.starting = options.get("startingOffsets", "earliest").strip()
        ending = options.get("endingOffsets")
        self.cap = parse_offsets(ending) if ending else None
        max_records = options.get("maxRecordsPerBatch")
        self.max_records = int(max_records) if max_records else None
        if self.max_records is not None and self.max_records < 1:
            raise ValueError("maxRecordsPerBatch must be >= 1")
        self.target: dict[int, int] | None = None
        self.control_file = options.get("controlFile")

    def _control(self) -> tuple[dict[int, int] | None, bool, bool]:
        """The drain cap, marker flag and hold flag, if the runtime has written them."""
        if not self.control_file:
            return None, False, False
        try:
            with open(self.control_file, encoding="utf-8") as f:
                data = json.load(f)
        except FileNotFoundError:
            return None, False, False
        end = data.get("end")
        return (
            (parse_offsets(end) if end is not None else None),
            bool(data.get("marker")),
            bool(data.get("hold")),
        )

    def _stream(self) -> Stream:
        return EventLog(self.root).stream(self.stream_name)

    def initialOffset(self) -> dict[str, int]:
        stream = self._stream()
        earliest = stream.earliest_offsets()
        if self.starting == "earliest":
            start = earliest
        elif self.starting == "latest":
            start = stream.latest_offsets()
        else:
            start = earliest | parse_offsets(self.starting)
        return _as_json_dict(start)

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.max_records is None:
            return ReadAllAvailable()
        return ReadMaxRows(self.max_records)

    def prepareForTriggerAvailableNow(self) -> None:
        self.target = self._stream().latest_offsets()

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, int]:
        """Next batch's end: what is written, within the cap, the AvailableNow target and
        the read limit; equal to ``start`` when there is nothing to read."""
        begin = parse_offsets(start)
        drain_cap, marker, hold = self._control()
        if hold:  # stopping: no new batch with data, so the query idles at a boundary
            return _as_json_dict(begin)
        end = self._stream().latest_offsets()
        for bound in (self.cap, self.target, drain_cap):
            if bound is not None:
                end = {p: min(o, bound.get(p, 0)) for p, o in end.items()}
        # A new partition joins the position once it has data: until then the text of the
        # position stays equal to start, which is how Spark knows there is nothing to do.
        end = {p: max(o, begin.get(p, 0)) for p, o in end.items() if p in begin or o > 0}
        if isinstance(limit, ReadMaxRows):
            lags = {p: o - begin.get(p, 0) for p, o in end.items()}
            end = {p: begin.get(p, 0) + n for p, n in split_limit(lags, limit.max_rows).items()}
        caught_up = drain_cap is not None and all(
            begin.get(p, 0) >= o for p, o in drain_cap.items()
        )
        if marker and caught_up:
            end[MARKER_PARTITION] = 1  # offered only once everything before it is read
        return _as_json_dict(begin | end)

    def reportLatestOffset(self) -> dict[str, int]:
        return _as_json_dict(self._stream().latest_offsets())

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        begin = parse_offsets(start)
        return [
            EventLogPartition(p, begin.get(p, 0), stop)
            for p, stop in sorted(parse_offsets(end).items())
            if stop > begin.get(p, 0)
        ]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, EventLogPartition)
        if partition.partition == MARKER_PARTITION:
            yield pa.RecordBatch.from_arrays(
                [
                    pa.array([MARKER_PARTITION], pa.int32()),
                    pa.array([0], pa.int64()),
                    pa.array([DRAIN_MARKER_TIMESTAMP], ARROW_SCHEMA.field(2).type),
                    pa.array([DRAIN_MARKER_KEY], pa.string()),
                    pa.array([""], pa.string()),
                ],
                schema=ARROW_SCHEMA,
            )
            return
        stream = self._stream()
        start = max(partition.start, stream.earliest_offsets()[partition.partition])
        records = stream.scan(partition.partition, start, max(start, partition.end))
        while True:
            chunk = [r for _, r in zip(range(ARROW_BATCH_RECORDS), records, strict=False)]
            if not chunk:
                return
            yield pa.RecordBatch.from_arrays(
                [
                    pa.array([partition.partition] * len(chunk), pa.int32()),
                    pa.array([r.offset for r in chunk], pa.int64()),
                    pa.array([r.timestamp_ms * 1000 for r in chunk], ARROW_SCHEMA.field(2).type),
                    pa.array([r.key for r in chunk], pa.string()),
                    pa.array([r.value for r in chunk], pa.string()),
                ],
                schema=ARROW_SCHEMA,
            )

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to do: the log keeps its data; retention is independent of readers."""


def _as_json_dict(offsets: dict[int, int]) -> dict[str, int]:
    """Keys in numeric order: Spark compares the JSON text of offsets (see format_offsets)."""
    return {str(p): offsets[p] for p in sorted(offsets)}


class EventLogDataSource(DataSource):
    """``spark.readStream.format("eventlog")``."""

    @classmethod
    def name(cls) -> str:
        return "eventlog"

    def schema(self) -> StructType:
        return SCHEMA

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return EventLogStreamReader(self.options)


def read_events(spark: SparkSession, root: str, stream: str, **options: str) -> DataFrame:
    """Streaming DataFrame of a log stream; registers the source in this session first."""
    spark.dataSource.register(EventLogDataSource)
    reader = spark.readStream.format("eventlog").option("path", root).option("stream", stream)
    return reader.options(**options).load()


def with_event_time(events: DataFrame, delay: str, column: str = "timestamp") -> DataFrame:
    """``events`` with a watermark on ``column``, drain markers dropped *after* it.

    The drain marker must pass ``withWatermark`` (it is what moves the watermark past every
    open window) and must not reach the aggregation or the sink. The filter has to name the
    event-time column: a filter on anything else is pushed below ``withWatermark`` by the
    optimizer and the marker never moves the watermark (checked on Spark 4.3)."""
    return events.withWatermark(column, delay).where(F.col(column) < F.lit(DRAIN_MARKER_TIMESTAMP))


def without_drain_marker(events: DataFrame, column: str = "timestamp") -> DataFrame:
    """``events`` without the drain marker, for stateless queries (nothing to flush)."""
    return events.where(F.col(column) < F.lit(DRAIN_MARKER_TIMESTAMP))
