"""The on-disk event log, its producer, the generator and the ``events`` CLI (no Spark)."""

from __future__ import annotations

import json
import random
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from app.devtools.events_cli import events_app
from tidegate_runtime.sources.eventlog import (
    EventLog,
    NewRecord,
    OffsetOutOfRangeError,
    StreamExistsError,
    StreamNotFoundError,
    format_offsets,
    parse_offsets,
)
from tidegate_runtime.sources.eventlog_producer import Producer, partition_for_key, produce


def test_append_and_read_every_range_across_segments(log: EventLog) -> None:
    stream = log.create_stream("s", 2, segment_records=7, index_interval=3)
    assert stream.append(0, [NewRecord(i, f"k{i}", f"v{i}") for i in range(10)]) == (0, 10)
    assert stream.append(0, [NewRecord(i, f"k{i}", f"v{i}") for i in range(10, 30)]) == (10, 30)
    assert stream.append(1, []) == (0, 0)
    assert stream.latest_offsets() == {0: 30, 1: 0}
    assert stream.earliest_offsets() == {0: 0, 1: 0}
    for start in range(31):
        for end in range(start, 31):
            records = stream.read(0, start, end)
            assert [r.offset for r in records] == list(range(start, end))
            assert all(r.value == f"v{r.offset}" and r.timestamp_ms == r.offset for r in records)
    with pytest.raises(OffsetOutOfRangeError):
        stream.read(0, 0, 31)


def test_streams_are_named_and_grow(log: EventLog) -> None:
    log.create_stream("a", 1)
    with pytest.raises(StreamExistsError):
        log.create_stream("a", 1)
    with pytest.raises(StreamNotFoundError):
        log.stream("b")
    with pytest.raises(ValueError, match="invalid stream name"):
        log.create_stream("../x", 1)
    assert log.create_stream("a", 3, exist_ok=True).partitions == 3
    log.stream("a").add_partitions(4)
    assert log.stream("a").latest_offsets() == {0: 0, 1: 0, 2: 0, 3: 0}
    with pytest.raises(ValueError, match="shrink"):
        log.stream("a").add_partitions(2)
    assert log.streams() == ["a"]


def test_retention_moves_the_earliest_offset(log: EventLog) -> None:
    stream = log.create_stream("s", 1, segment_records=10)
    stream.append(0, [NewRecord(i, "k", str(i)) for i in range(35)])
    assert stream.truncate_before(0, 23) == 23
    assert stream.earliest_offsets() == {0: 23}
    assert sorted(p.name for p in (stream.directory / "0").glob("*.log")) == [
        f"{20:020d}.log",
        f"{30:020d}.log",
    ]
    assert [r.offset for r in stream.read(0, 23, 26)] == [23, 24, 25]
    with pytest.raises(OffsetOutOfRangeError):
        stream.read(0, 22, 26)
    assert stream.resolve_timestamp(0, 0) == 23
    assert stream.truncate_before(0, 99) == 35
    assert stream.read(0, 35, 35) == []


def test_resolve_timestamp_without_monotonic_times(log: EventLog) -> None:
    rng = random.Random(7)
    stream = log.create_stream("s", 1, segment_records=16, index_interval=4)
    stamps = [rng.randrange(0, 1000) for _ in range(200)]
    for i in range(0, 200, 30):
        stream.append(0, [NewRecord(ts, "k", "v") for ts in stamps[i : i + 30]])
    for target in [-1, 0, 1, 500, 998, 999, 1000, *rng.sample(range(1000), 40)]:
        expected = next((o for o, ts in enumerate(stamps) if ts >= target), 200)
        assert stream.resolve_timestamp(0, target) == expected


def test_crashed_writer_leftovers_are_invisible_and_overwritten(log: EventLog) -> None:
    stream = log.create_stream("s", 1, segment_records=100)
    stream.append(0, [NewRecord(i, "k", str(i)) for i in range(5)])
    segment = stream.directory / "0" / f"{0:020d}.log"
    with open(segment, "ab") as f:  # a half-written record past the committed length
        f.write(b'{"o":5,"t":5,"k":"k","v":"torn')
    assert stream.latest_offsets() == {0: 5}
    assert [r.value for r in stream.read(0, 0, 5)] == ["0", "1", "2", "3", "4"]
    stream.append(0, [NewRecord(5, "k", "5")])
    assert [r.value for r in stream.read(0, 3, 6)] == ["3", "4", "5"]


def test_concurrent_reader_never_sees_partial_records(log: EventLog) -> None:
    stream = log.create_stream("s", 1, segment_records=50, index_interval=8)
    done = threading.Event()
    rng = random.Random(1)

    def write() -> None:
        offset = 0
        while not done.is_set() and offset < 3000:
            n = rng.randrange(1, 40)
            stream.append(
                0,
                [
                    NewRecord(offset + i, str(offset + i), "x" * rng.randrange(0, 2000))
                    for i in range(n)
                ],
            )
            offset += n
        done.set()

    writer = threading.Thread(target=write)
    writer.start()
    reads = 0
    deadline = time.monotonic() + 20
    while not done.is_set() and time.monotonic() < deadline:
        latest = stream.latest_offsets()[0]
        start = rng.randrange(0, latest + 1)
        records = stream.read(0, start, latest)
        assert [r.offset for r in records] == list(range(start, latest))
        assert all(r.key == str(r.offset) and r.timestamp_ms == r.offset for r in records)
        reads += 1
    done.set()
    writer.join()
    assert reads > 5
    assert len(stream.read(0, 0, stream.latest_offsets()[0])) == stream.latest_offsets()[0]


def test_producer_spreads_by_key_hash(log: EventLog) -> None:
    stream = log.create_stream("s", 3)
    with Producer(stream, batch_records=4) as producer:
        for i in range(30):
            assert producer.send(f"key-{i % 5}", str(i), 1000 + i) == partition_for_key(
                f"key-{i % 5}", 3
            )
    latest = stream.latest_offsets()
    assert sum(latest.values()) == 30
    for p, end in latest.items():
        records = stream.read(p, 0, end)
        assert {partition_for_key(r.key, 3) for r in records} <= {p}
        assert [r.timestamp_ms for r in records] == sorted(r.timestamp_ms for r in records)


def test_offsets_text_is_canonical() -> None:
    assert format_offsets({10: 1, 2: 30, 0: 5}) == '{"0": 5, "2": 30, "10": 1}'
    assert parse_offsets('{"1": 4,"0":2}') == {0: 2, 1: 4}
    with pytest.raises(TypeError):
        parse_offsets("[1]")


def test_produce_with_event_times_and_rate(tmp_path: Path) -> None:
    latest = produce(tmp_path, "s", 2, 0, 100, start_ts_ms=1_000, ts_step_ms=10, keys=["a", "b"])
    stream = EventLog(tmp_path).stream("s")
    assert sum(latest.values()) == 100
    stamps = sorted(r.timestamp_ms for p in (0, 1) for r in stream.read(p, 0, latest[p]))
    assert stamps == [1_000 + 10 * i for i in range(100)]
    began = time.monotonic()
    latest = produce(tmp_path, "s", 3, 100, 10)
    assert time.monotonic() - began >= 0.08
    assert sum(latest.values()) == 110
    assert stream.partitions == 3


def test_events_cli(tmp_path: Path) -> None:
    runner = CliRunner()
    args = ["--root", str(tmp_path), "--stream", "s"]
    result = runner.invoke(
        events_app,
        [
            "produce",
            *args,
            "--partitions",
            "2",
            "--count",
            "20",
            "--start-ts",
            "1970-01-01T00:00:01",
        ],
    )
    assert result.exit_code == 0, result.output
    result = runner.invoke(events_app, ["offsets", *args])
    doc = json.loads(result.output)
    assert doc["partitions"] == 2 and sum(doc["latest"].values()) == 20
    assert doc["earliest"] == {"0": 0, "1": 0}
    first = min(
        r.timestamp_ms for r in EventLog(tmp_path).stream("s").read(0, 0, doc["latest"]["0"])
    )
    assert first >= 1000
    assert (
        runner.invoke(events_app, ["offsets", "--root", str(tmp_path), "--stream", "x"]).exit_code
        == 1
    )
