"""Positions: where a reader stands in a source, per source format (the offsets a checkpoint
records), and startpoints resolved to them: applied to a checkpoint or handed to a fresh
query as its starting offsets (tidegate_runtime/driver/startpoints.py does so as a query
starts).

Shared by the control plane (validation, preview) and the in-job runtime, so it imports only
the standard library and the runtime's own modules.

Formats:
* ``eventlog`` — ``{"0": 123, "1": 45}``; every type, resolved from the log itself.
* ``kafka`` — Spark's ``{"topic": {"0": 123}}``; every type, resolved through a
  :class:`KafkaResolver`: the runtime builds tidegate's own from the reader's options
  (:mod:`tidegate_runtime.sources.kafka_client`, a kafka-python consumer) unless the job sets one.
  Without a resolver, OFFSET (unchecked against the partition's end) and OLDEST (Spark's
  ``-2``, bound by Spark to the earliest available offset) still work, on the partitions the
  checkpoint or the startpoints name; UPCOMING and TIMESTAMP need it.
* ``file`` — Spark's file source ``{"logOffset": N}``; OLDEST and OFFSET only, and only on
  a query that has a committed batch (the file source has no starting-offsets option).
Anything else is refused with an error that names the source kind.

Rewinds on stateful queries: the state of the latest committed batch is kept and the
replayed records are processed into it, as new input. So that they are not dropped as
late, the rewrite lowers the checkpoint's event-time watermark to just before the earliest
replayed record (for TIMESTAMP, the startpoint's time; otherwise the time of the first
record at the new offset when the source can tell — the event log can, Kafka can through a
resolver that reads records (tidegate's does: the record's Kafka timestamp), files cannot,
and then the watermark is kept). For
an append-mode windowed aggregation this means:

* a window already emitted and evicted from state before the checkpoint is emitted again,
  computed over the replayed records only (a window that straddles the rewind time counts
  only its records at or after it);
* a window still open at the checkpoint keeps its state, the replayed records are added to
  it (records it had counted and that are replayed are counted again), and it is emitted
  once, when the watermark passes its end again.

A rewind replays: downstream sees those records again. Fast-forwards never touch the
watermark.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from tidegate_runtime.checkpoints import checkpoint as cp
from tidegate_runtime.sources.eventlog import EventLog, format_offsets, parse_offsets

TYPES = ("OLDEST", "UPCOMING", "OFFSET", "TIMESTAMP")


class StartpointError(ValueError):
    """A startpoint cannot be resolved or applied; the message says why, for a person."""


class ResolverNeeded(StartpointError):
    """Only the brokers can resolve this Kafka startpoint, and there is no resolver to ask."""


@dataclass(frozen=True)
class Startpoint:
    id: int
    source: str
    partition: int | None  # None: every partition of the source (fan-out)
    type: str
    value: int | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Startpoint:
        return cls(
            int(data["id"]),
            str(data["source"]),
            data.get("partition"),
            str(data["type"]),
            data.get("value"),
        )


class KafkaResolver(Protocol):
    """What a Kafka consumer knows: the contract tidegate needs to resolve startpoints."""

    def partitions(self, topic: str) -> list[int]: ...
    def earliest(self, topic: str) -> dict[int, int]: ...
    def latest(self, topic: str) -> dict[int, int]: ...
    def offsets_for_times(self, topic: str, ts_ms: int) -> Mapping[int, int | None]:
        """Per partition, the first offset whose record time is >= ``ts_ms``; None (or no
        entry) when no record is that recent: the startpoint then means the partition's
        end, as for a timestamp after the newest record of the event log."""
        ...


class SourcePositions(Protocol):
    """Where a source's partitions start and end, and where a timestamp falls."""

    def partitions(self) -> list[int]: ...
    def earliest(self) -> dict[int, int]: ...
    def latest(self) -> dict[int, int]: ...
    def at_timestamp(self, partition: int, ts_ms: int) -> int: ...
    def timestamp_at(self, partition: int, offset: int) -> int | None: ...


KAFKA_EARLIEST = -2  # Spark's "earliest" in Kafka offset JSON; bound when a batch runs


class EventLogPositions:
    def __init__(self, options: Mapping[str, Any]) -> None:
        root, stream = options.get("root") or options.get("path"), options.get("stream")
        if not root or not stream:
            raise StartpointError("an eventlog source needs options 'root' and 'stream'")
        self.stream = EventLog(str(root)).stream(str(stream))

    def partitions(self) -> list[int]:
        return list(range(self.stream.partitions))

    def earliest(self) -> dict[int, int]:
        return self.stream.earliest_offsets()

    def latest(self) -> dict[int, int]:
        return self.stream.latest_offsets()

    def at_timestamp(self, partition: int, ts_ms: int) -> int:
        return self.stream.resolve_timestamp(partition, ts_ms)

    def timestamp_at(self, partition: int, offset: int) -> int | None:
        for record in self.stream.scan(partition, offset, offset + 1):
            return record.timestamp_ms
        return None

    def times_between(self, partition: int, start: int, end: int) -> Iterator[int]:
        return (record.timestamp_ms for record in self.stream.scan(partition, start, end))


class KafkaPositions:
    def __init__(self, options: Mapping[str, Any], resolver: KafkaResolver | None) -> None:
        self.topic = str(options.get("subscribe") or options.get("topic") or "")
        if not self.topic or "," in self.topic:
            raise StartpointError("a kafka source needs exactly one topic ('subscribe' option)")
        self.resolver = resolver
        self.known: list[int] = []  # without a resolver: the partitions named elsewhere

    def _need(self, what: str) -> KafkaResolver:
        if self.resolver is None:
            raise ResolverNeeded(
                f"a kafka {what} startpoint needs a KafkaResolver (a consumer) to look "
                "offsets up: set runtime.kafka_resolver, or use OFFSET or OLDEST"
            )
        return self.resolver

    def partitions(self) -> list[int]:
        if self.resolver is None:
            if not self.known:
                raise ResolverNeeded(
                    "a kafka source-level startpoint without a KafkaResolver needs a "
                    "checkpoint that names the partitions; set per-partition startpoints"
                )
            return sorted(self.known)
        return sorted(self.resolver.partitions(self.topic))

    def earliest(self) -> dict[int, int]:
        if self.resolver is None:
            return dict.fromkeys(self.partitions(), KAFKA_EARLIEST)
        return self.resolver.earliest(self.topic)

    def latest(self) -> dict[int, int]:
        return self._need("UPCOMING").latest(self.topic)

    def at_timestamp(self, partition: int, ts_ms: int) -> int:
        resolver = self._need("TIMESTAMP")
        found = resolver.offsets_for_times(self.topic, ts_ms).get(partition)
        if found is None:  # no record at or after that time: start at the end
            return resolver.latest(self.topic)[partition]
        return int(found)

    def timestamp_at(self, partition: int, offset: int) -> int | None:
        # Optional in the contract: a resolver that cannot read records keeps the watermark.
        read = getattr(self.resolver, "timestamp_at", None)
        return None if read is None or offset < 0 else read(self.topic, partition, offset)

    def times_between(self, partition: int, start: int, end: int) -> Iterator[int] | None:
        read = getattr(self.resolver, "times_between", None)  # optional, as timestamp_at
        return None if read is None or start < 0 else read(self.topic, partition, start, end)


# ---- offset line formats -----------------------------------------------------------------


def parse_line(kind: str, line: str | None, options: Mapping[str, Any]) -> dict[int, int]:
    if line is None or line == "-":
        return {}
    data = json.loads(line)
    if kind == "eventlog":
        return parse_offsets(data)
    if kind == "kafka":
        topic = str(options.get("subscribe") or options.get("topic"))
        return {int(p): int(o) for p, o in (data.get(topic) or {}).items()}
    if kind == "file":
        return {0: int(data["logOffset"])}
    raise unsupported(kind)


def format_line(kind: str, offsets: Mapping[int, int], options: Mapping[str, Any]) -> str:
    if kind == "eventlog":
        return format_offsets(dict(offsets))
    if kind == "kafka":
        topic = str(options.get("subscribe") or options.get("topic"))
        return json.dumps({topic: {str(p): o for p, o in sorted(offsets.items())}})
    if kind == "file":
        return json.dumps({"logOffset": offsets[0]})
    raise unsupported(kind)


def unsupported(kind: str) -> StartpointError:
    return StartpointError(
        f"startpoints are not supported for sources of kind '{kind}' "
        "(supported: eventlog, kafka, file)"
    )


def positions_for(
    kind: str, options: Mapping[str, Any], kafka: KafkaResolver | None = None
) -> SourcePositions:
    if kind == "eventlog":
        return EventLogPositions(options)
    if kind == "kafka":
        return KafkaPositions(options, kafka)
    raise unsupported(kind)


def resolve(
    kind: str,
    options: Mapping[str, Any],
    startpoints: list[Startpoint],
    current: Mapping[int, int] | None = None,
    kafka: KafkaResolver | None = None,
) -> dict[int, int]:
    """The offsets the source starts from: every partition, with startpoints applied (a
    partition-level startpoint beats a source-level one) over ``current``."""
    if kind == "file":
        return _resolve_file(startpoints, current)
    pos = positions_for(kind, options, kafka)
    by_partition = {sp.partition: sp for sp in startpoints if sp.partition is not None}
    fan_out = next((sp for sp in startpoints if sp.partition is None), None)
    if isinstance(pos, KafkaPositions) and pos.resolver is None:
        pos.known = sorted({*(current or {}), *by_partition})
    partitions = pos.partitions()
    for p in by_partition:
        if p not in partitions:
            raise StartpointError(
                f"partition {p} does not exist (the source has partitions 0..{len(partitions) - 1})"
            )
    earliest: dict[int, int] | None = None
    latest: dict[int, int] | None = None
    result = dict(current or {})
    for p in partitions:
        sp = by_partition.get(p, fan_out)
        if sp is None:
            if p not in result:
                earliest = earliest if earliest is not None else pos.earliest()
                result[p] = earliest[p]
            continue
        if sp.type == "OLDEST":
            earliest = earliest if earliest is not None else pos.earliest()
            result[p] = earliest[p]
        elif sp.type == "UPCOMING":
            latest = latest if latest is not None else pos.latest()
            result[p] = latest[p]
        elif sp.type == "OFFSET":
            assert sp.value is not None
            if isinstance(pos, KafkaPositions) and pos.resolver is None:
                result[p] = sp.value  # no consumer to ask for the end; Spark checks it
                continue
            latest = latest if latest is not None else pos.latest()
            if sp.value > latest[p]:
                raise StartpointError(
                    f"offset {sp.value} is beyond partition {p}'s end ({latest[p]})"
                )
            earliest = earliest if earliest is not None else pos.earliest()
            if sp.value < earliest[p]:
                raise StartpointError(
                    f"offset {sp.value} of partition {p} is gone: the source no longer holds "
                    f"its records before offset {earliest[p]} (a topic's retention deletes "
                    f"them). Set OLDEST (offset {earliest[p]}) or an offset at or after it"
                )
            result[p] = sp.value
        elif sp.type == "TIMESTAMP":
            assert sp.value is not None
            result[p] = pos.at_timestamp(p, sp.value)
            earliest = earliest if earliest is not None else pos.earliest()
            if 0 < earliest[p] == result[p]:
                latest = latest if latest is not None else pos.latest()
                _refuse_a_time_past_retention(pos, p, sp.value, earliest[p], latest[p])
        else:
            raise StartpointError(f"unknown startpoint type {sp.type}")
    return result


def _refuse_a_time_past_retention(
    pos: SourcePositions, partition: int, ts_ms: int, oldest: int, end: int
) -> None:
    """A time that resolves to the oldest record still held, which is later than the time:
    records from that time up to it may be among those the source deleted (a topic's
    retention), so starting there could skip them without a word. Refused, with the choice."""
    if oldest >= end:
        return  # nothing held: every record is older than anything the source still has
    first = pos.timestamp_at(partition, oldest)
    if first is not None and first > ts_ms:
        raise StartpointError(
            f"partition {partition} no longer holds records from that time: its oldest record "
            f"(offset {oldest}) is from {first} ms, later than {ts_ms} ms, and the records "
            "before it were deleted (a topic's retention), so some from that time may be "
            "gone. Set OLDEST for the partition to start at its oldest record, or a later time"
        )


def _resolve_file(
    startpoints: list[Startpoint], current: Mapping[int, int] | None
) -> dict[int, int]:
    if len(startpoints) != 1 or startpoints[0].partition not in (None, 0):
        raise StartpointError("a file source has one position: set one source-level startpoint")
    sp = startpoints[0]
    if sp.type == "OLDEST":
        return {0: -1}
    if sp.type == "OFFSET" and sp.value is not None:
        return {0: sp.value}
    raise StartpointError(
        f"a file source cannot resolve {sp.type}: its log has no record times or end; use "
        "OLDEST or OFFSET (the file log index)"
    )


# ---- applying to a checkpoint ------------------------------------------------------------


@dataclass
class Application:
    query: str
    source: str
    startpoint_ids: list[int]
    checkpoint: str
    batch_id: int | None  # None: the query had no committed batch; offsets given at start
    before: dict[str, int] | None
    after: dict[str, int]
    original_file: str | None


def apply_to_checkpoint(
    checkpoint: str | os.PathLike[str],
    query: str,
    source: str,
    source_index: int,
    kind: str,
    options: Mapping[str, Any],
    startpoints: list[Startpoint],
    kafka: KafkaResolver | None = None,
    starting: Callable[[dict[int, int]], None] | None = None,
) -> Application:
    """Rewrite the source's line of the latest committed ``offsets/N`` (kept beside it), so
    batch N+1 starts there with all state kept. With no committed batch, the resolved
    offsets are handed to ``starting`` (the query's startingOffsets) instead."""
    ids = [sp.id for sp in startpoints]
    batch = cp.latest_commit_batch(checkpoint)
    if batch is None:
        after = resolve(kind, options, startpoints, None, kafka)
        if starting is not None:
            starting(after)
        return Application(query, source, ids, str(checkpoint), None, None, _str_keys(after), None)
    _, lines = cp.read_offsets(checkpoint, batch)
    if source_index >= len(lines):
        raise StartpointError(f"offsets/{batch} of {checkpoint} has no source {source_index}")
    before = parse_line(kind, lines[source_index], options)
    after = resolve(kind, options, startpoints, before, kafka)
    original = cp.rewrite_source_offsets(
        checkpoint,
        batch,
        source_index,
        format_line(kind, after, options),
        discard_uncommitted=True,
        watermark_ms=replay_watermark(kind, options, startpoints, before, after, kafka),
    )
    return Application(
        query,
        source,
        ids,
        str(checkpoint),
        batch,
        _str_keys(before),
        _str_keys(after),
        str(original),
    )


def replay_watermark(
    kind: str,
    options: Mapping[str, Any],
    startpoints: list[Startpoint],
    before: Mapping[int, int],
    after: Mapping[int, int],
    kafka: KafkaResolver | None = None,
) -> int | None:
    """The watermark a rewind needs so its replayed records are not late: 1 ms before the
    earliest replayed record's time, where that is known (see the module's docstring);
    None when nothing moves backward or no time is known."""
    backward = [p for p, o in after.items() if p in before and 0 <= o < before[p]]
    if not backward or kind == "file":
        return None
    by_partition = {sp.partition: sp for sp in startpoints if sp.partition is not None}
    fan_out = next((sp for sp in startpoints if sp.partition is None), None)
    pos = positions_for(kind, options, kafka)
    times = []
    for p in backward:
        sp = by_partition.get(p, fan_out)
        ts = pos.timestamp_at(p, after[p])
        if sp is not None and sp.type == "TIMESTAMP" and sp.value is not None:
            ts = sp.value if ts is None else min(ts, sp.value)
        if ts is not None:
            times.append(ts)
    return min(times) - 1 if times else None


# Records a preview reads to count the late ones among those a rewind replays; past it the
# count is unknown (said so) rather than a preview that reads a topic for minutes.
LATE_SCAN_LIMIT = 200_000


def count_behind(
    kind: str,
    options: Mapping[str, Any],
    ranges: Mapping[int, tuple[int, int]],
    watermark_ms: int,
    kafka: KafkaResolver | None = None,
    limit: int = LATE_SCAN_LIMIT,
) -> int | None:
    """How many records of ``ranges`` (partition → [start, end)) have a time before
    ``watermark_ms``: those a stateful query whose event time is the record's time may drop
    as late when it starts with that watermark (a windowed aggregation drops those whose
    window has ended by then: at most these). None when the times cannot be read (file
    sources, a Kafka resolver that cannot read records) or the ranges hold over ``limit``."""
    if kind == "file" or sum(max(0, end - start) for start, end in ranges.values()) > limit:
        return None
    pos = positions_for(kind, options, kafka)
    read = getattr(pos, "times_between", None)
    if read is None:
        return None
    behind = 0
    for partition, (start, end) in sorted(ranges.items()):
        times = read(partition, start, end)
        if times is None:
            return None
        behind += sum(1 for ts in times if ts < watermark_ms)
    return behind


def revert(checkpoint: str | os.PathLike[str], batch_id: int) -> None:
    """Put ``offsets/batch_id`` (and a watermark a rewind lowered) back as it was before the
    startpoint was applied. Only possible while ``batch_id`` is still the latest committed
    batch: once a later batch committed, it wrote output (a file sink records its batch ids
    in ``_spark_metadata`` and skips a batch id it has seen, so a re-run would write
    nothing) and state versions past ``batch_id``; putting the old offsets back would not
    undo those, so it is refused with what to do instead."""
    latest = cp.latest_commit_batch(checkpoint)
    if latest is None or latest < batch_id:
        raise StartpointError(
            f"the checkpoint {checkpoint} has no committed batch {batch_id} (its latest "
            f"committed batch is {latest}); there is nothing to put back there"
        )
    if latest != batch_id:
        raise StartpointError(
            f"the query has committed batches {batch_id + 1}..{latest} since the startpoint "
            f"was applied at batch {batch_id}; they wrote output and state from the new "
            "position, and Spark cannot un-commit them (a file sink skips batch ids it has "
            "already committed, so re-running them would lose their output). Instead, set "
            "OFFSET startpoints at the offsets from before it (before_offsets of this "
            "application) and restart: the records since then are read again into the "
            "current state"
        )
    cp.restore_batch(checkpoint, batch_id)


def _str_keys(offsets: Mapping[int, int]) -> dict[str, int]:
    return {str(p): int(o) for p, o in sorted(offsets.items())}
