"""The ``eventlog`` streaming source on a real local-mode Spark."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

from tests.support.spark import fill
from tests.support.waiting import wait_for
from tidegate_runtime.checkpoints.checkpoint import latest_offsets_batch, read_offsets
from tidegate_runtime.sources.eventlog import EventLog
from tidegate_runtime.sources.eventlog_source import (
    MARKER_PARTITION,
    EventLogStreamReader,
    read_events,
    split_limit,
)


def events(spark: SparkSession, log: EventLog, **options: str) -> DataFrame:
    return read_events(spark, str(log.root), "s", **options).select("partition", "offset")


def offsets_of(spark: SparkSession, table: str) -> list[tuple[int, int]]:
    return sorted((r.partition, r.offset) for r in spark.table(table).collect())


def test_split_limit_is_fair_and_always_progresses() -> None:
    assert split_limit({0: 100, 1: 100, 2: 100}, 30) == {0: 10, 1: 10, 2: 10}
    assert split_limit({0: 2, 1: 100, 2: 100}, 30) == {0: 2, 1: 14, 2: 14}
    assert split_limit({0: 5, 1: 5}, 100) == {0: 5, 1: 5}
    assert sum(split_limit({0: 9, 1: 9, 2: 9}, 1).values()) == 1


def test_reader_positions_without_spark(log: EventLog) -> None:
    """Planner-side logic, called the way Spark's Python runner calls it."""
    stream = log.create_stream("s", 2)
    fill(stream, 0, 10)
    fill(stream, 1, 4)
    options = {"path": str(log.root), "stream": "s"}
    reader = EventLogStreamReader(options | {"startingOffsets": '{"1": 2}'})
    start = reader.initialOffset()
    assert start == {"0": 0, "1": 2}
    assert reader.latestOffset(start, ReadAllAvailable()) == {"0": 10, "1": 4}
    assert reader.latestOffset(start, ReadMaxRows(6)) == {"0": 4, "1": 4}
    stream.add_partitions(3)  # an empty new partition leaves the position unchanged
    assert reader.latestOffset({"0": 10, "1": 4}, ReadAllAvailable()) == {"0": 10, "1": 4}
    fill(stream, 2, 1)
    assert reader.latestOffset({"0": 10, "1": 4}, ReadAllAvailable())["2"] == 1
    assert [p.value for p in reader.partitions(start, {"0": 3, "1": 2, "2": 1})] == [
        (0, 0, 3),
        (2, 0, 1),
    ]

    capped = EventLogStreamReader(options | {"endingOffsets": '{"0": 5}'})
    assert capped.latestOffset({"0": 0, "1": 0}, ReadAllAvailable()) == {"0": 5, "1": 0}
    assert capped.latestOffset({"0": 5, "1": 0}, ReadAllAvailable()) == {"0": 5, "1": 0}

    reader.prepareForTriggerAvailableNow()
    fill(stream, 0, 3)
    assert reader.latestOffset({"0": 10, "1": 4, "2": 1}, ReadAllAvailable())["0"] == 10
    assert EventLogStreamReader(options | {"startingOffsets": "latest"}).initialOffset() == {
        "0": 13,
        "1": 4,
        "2": 1,
    }


def test_control_file_caps_marks_and_holds(log: EventLog, tmp_path: Path) -> None:
    """What the runtime writes while draining or stopping, as the planner sees it."""
    stream = log.create_stream("s", 2)
    fill(stream, 0, 10)
    fill(stream, 1, 4)
    control = tmp_path / "control.json"
    reader = EventLogStreamReader(
        {"path": str(log.root), "stream": "s", "controlFile": str(control)}
    )
    start = {"0": 0, "1": 0}
    assert reader.latestOffset(start, ReadAllAvailable()) == {"0": 10, "1": 4}  # no file yet

    def write(**body: Any) -> None:
        control.write_text(json.dumps({"end": None, "marker": False, "hold": False} | body))

    write(end={"0": 6, "1": 4})  # a drain fixed its end offsets
    assert reader.latestOffset(start, ReadAllAvailable()) == {"0": 6, "1": 4}
    write(end={"0": 6, "1": 4}, marker=True)  # the marker waits until the cap is reached
    assert reader.latestOffset(start, ReadAllAvailable()) == {"0": 6, "1": 4}
    caught_up = reader.latestOffset({"0": 6, "1": 4}, ReadAllAvailable())
    assert caught_up == {"0": 6, "1": 4, str(MARKER_PARTITION): 1}
    (marker,) = reader.partitions({"0": 6, "1": 4}, caught_up)
    assert marker.value == (MARKER_PARTITION, 0, 1)
    write(hold=True)  # stopping: nothing new, whatever is written
    assert reader.latestOffset({"0": 2, "1": 1}, ReadAllAvailable()) == {"0": 2, "1": 1}


@pytest.mark.spark
def test_restart_continues_exactly_where_it_stopped(
    spark: SparkSession, log: EventLog, tmp_path: Path
) -> None:
    stream = log.create_stream("s", 3, segment_records=8)
    for p in range(3):
        fill(stream, p, 20)
    out, checkpoint = tmp_path / "out", tmp_path / "ck"

    def run() -> list[dict[str, Any]]:
        query = (
            events(spark, log, maxRecordsPerBatch="25")
            .writeStream.format("parquet")
            .option("path", str(out))
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
        return [json.loads(p.json) for p in query.recentProgress]

    first = run()
    for p in range(3):
        fill(stream, p, 10 + p)
    second = run()

    got = sorted((r.partition, r.offset) for r in spark.read.parquet(str(out)).collect())
    latest = stream.latest_offsets()
    assert got == [(p, o) for p in range(3) for o in range(latest[p])]
    assert [p["numInputRows"] for p in first] == [25, 25, 10]
    assert second[0]["sources"][0]["startOffset"] == {"0": 20, "1": 20, "2": 20}
    _, lines = read_offsets(checkpoint, latest_offsets_batch(checkpoint) or 0)
    assert lines == ['{"0": 30, "1": 31, "2": 32}']


@pytest.mark.spark
def test_starting_offsets_per_partition(spark: SparkSession, log: EventLog, tmp_path: Path) -> None:
    stream = log.create_stream("s", 3, segment_records=5)
    for p in range(3):
        fill(stream, p, 12)
    stream.truncate_before(2, 5)  # retention: partition 2 now starts at 5
    query = (
        events(spark, log, startingOffsets='{"0": 10, "1": 3}')
        .writeStream.format("memory")
        .queryName("starting")
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    expected = [(0, 10), (0, 11)] + [(1, o) for o in range(3, 12)] + [(2, o) for o in range(5, 12)]
    assert offsets_of(spark, "starting") == expected


@pytest.mark.spark
def test_latest_start_and_partitions_added_later(
    spark: SparkSession, log: EventLog, tmp_path: Path
) -> None:
    stream = log.create_stream("s", 1)
    fill(stream, 0, 5)
    query = (
        events(spark, log, startingOffsets="latest")
        .writeStream.format("memory")
        .queryName("latest")
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(processingTime="100 milliseconds")
        .start()
    )
    try:
        query.processAllAvailable()
        assert offsets_of(spark, "latest") == []
        fill(stream, 0, 2)
        stream.add_partitions(2)
        fill(stream, 1, 3)
        query.processAllAvailable()
        assert offsets_of(spark, "latest") == [(0, 5), (0, 6), (1, 0), (1, 1), (1, 2)]
    finally:
        query.stop()


@pytest.mark.spark
def test_capped_source_stops_advancing(spark: SparkSession, log: EventLog, tmp_path: Path) -> None:
    stream = log.create_stream("s", 3)
    for p in range(3):
        fill(stream, p, 10)
    checkpoint = tmp_path / "ck"
    # A progress report for every trigger, idle ones too: the test counts the triggers.
    spark.conf.set("spark.sql.streaming.noDataProgressEventInterval", "0")
    try:
        query = (
            events(spark, log, endingOffsets='{"0": 4, "1": 10}')
            .writeStream.format("memory")
            .queryName("capped")
            .option("checkpointLocation", str(checkpoint))
            .trigger(processingTime="100 milliseconds")
            .start()
        )
    finally:
        spark.conf.unset("spark.sql.streaming.noDataProgressEventInterval")
    try:
        query.processAllAvailable()
        last_batch = latest_offsets_batch(checkpoint)
        for p in range(3):
            fill(stream, p, 5)
        mark = query.lastProgress["timestamp"]
        # Ten triggers that saw the new data had their chance to plan another batch.
        wait_for(
            lambda: [p for p in query.recentProgress if p["timestamp"] > mark],
            lambda later: len(later) >= 10,
            60,
            0.1,
            "ten triggers after the new data",
        )
        query.processAllAvailable()
        assert latest_offsets_batch(checkpoint) == last_batch
        expected = [(0, o) for o in range(4)] + [(1, o) for o in range(10)]
        assert offsets_of(spark, "capped") == expected
    finally:
        query.stop()


@pytest.mark.spark
def test_available_now_reads_what_was_there_and_terminates(
    spark: SparkSession, log: EventLog, tmp_path: Path
) -> None:
    stream = log.create_stream("s", 2)
    for p in range(2):
        fill(stream, p, 15)
    seen: list[tuple[int, int]] = []

    def sink(batch: DataFrame, batch_id: int) -> None:
        seen.extend((r.partition, r.offset) for r in batch.collect())
        if batch_id == 0:  # arrives after the query fixed its target: must not be read
            fill(stream, 0, 5)

    query = (
        events(spark, log, maxRecordsPerBatch="10")
        .writeStream.foreachBatch(sink)
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120)
    assert sorted(seen) == [(p, o) for p in range(2) for o in range(15)]
    assert len([p for p in query.recentProgress if p.numInputRows]) == 3
    assert stream.latest_offsets() == {0: 20, 1: 15}
