"""The example pipelines against their plain-Python ground truth."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipelines.enrich import build_enrich
from pipelines.ground_truth import (
    DRAIN_MARKER_MS,
    Enriched,
    WindowCount,
    expected_enrich,
    expected_windowed_counts,
)
from pipelines.windowed_counts import build_windowed_counts
from tidegate_runtime.sources.eventlog import EventLog, NewRecord
from tidegate_runtime.sources.eventlog_producer import produce
from tidegate_runtime.sources.eventlog_source import read_events

pytestmark = pytest.mark.spark

T0 = 1_700_000_040_000  # a minute boundary


def run_available_now(
    spark: SparkSession, root: Path, output: Path, checkpoint: Path, pipeline: str
) -> None:
    events = read_events(spark, str(root), "s")
    if pipeline == "windowed_counts":
        frame, sink = build_windowed_counts(events), "parquet"
    else:
        frame, sink = build_enrich(events), "json"
    query = (
        frame.writeStream.format(sink)
        .option("path", str(output))
        .option("checkpointLocation", str(checkpoint))
        .outputMode("append")
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()


def windows_written(spark: SparkSession, output: Path) -> list[WindowCount]:
    rows = spark.read.parquet(str(output)).selectExpr(
        "unix_millis(window_start) AS s", "unix_millis(window_end) AS e", "key", "count", "sum"
    )
    return sorted(WindowCount(r.s, r.e, r.key, r["count"], r["sum"]) for r in rows.collect())


def test_windowed_counts_across_restarts_and_a_drain_marker(
    spark: SparkSession, tmp_path: Path
) -> None:
    root, output, checkpoint = tmp_path / "log", tmp_path / "out", tmp_path / "ck"
    produce(root, "s", 2, 0, 600, start_ts_ms=T0, ts_step_ms=500)  # windows 0..4
    run_available_now(spark, root, output, checkpoint, "windowed_counts")
    first = windows_written(spark, output)
    assert first == expected_windowed_counts(root, "s")
    assert {w.window_end_ms for w in first} == {T0 + m * 60_000 for m in range(1, 5)}

    # Restart on the same checkpoint; the watermark lands exactly on the end of window 6.
    produce(root, "s", 2, 0, 261, start_ts_ms=T0 + 300_000, ts_step_ms=500)
    run_available_now(spark, root, output, checkpoint, "windowed_counts")
    second = windows_written(spark, output)
    assert second == expected_windowed_counts(root, "s")
    assert max(w.window_end_ms for w in second) == T0 + 420_000
    assert sum(w.count for w in second) == 600 + 240

    # A drain marker moves the watermark past every open window without being counted.
    EventLog(root).stream("s").append(0, [NewRecord(DRAIN_MARKER_MS, "marker", "0")])
    run_available_now(spark, root, output, checkpoint, "windowed_counts")
    drained = windows_written(spark, output)
    assert drained == expected_windowed_counts(root, "s", closed_only=False)
    assert sum(w.count for w in drained) == 861


def test_enrich_matches_ground_truth(spark: SparkSession, tmp_path: Path) -> None:
    root, output = tmp_path / "log", tmp_path / "out"
    produce(root, "s", 2, 0, 150, start_ts_ms=T0, ts_step_ms=1000)
    EventLog(root).stream("s").append(1, [NewRecord(T0, "k", "n/a"), NewRecord(T0, "k", "75.5")])
    run_available_now(spark, root, output, tmp_path / "ck", "enrich")
    rows = (
        spark.read.schema(
            "partition int, offset long, event_time timestamp, key string, amount double,"
            " size string"
        )
        .json(str(output))
        .selectExpr("partition", "offset", "unix_millis(event_time) AS t", "key", "amount", "size")
        .collect()
    )
    got = sorted(Enriched(r.partition, r.offset, r.t, r.key, r.amount, r.size) for r in rows)
    expected = expected_enrich(root, "s")
    assert got == expected
    assert 0 < len(expected) < 151
    assert expected[-1].amount == 75.5 and expected[-1].size == "large"
