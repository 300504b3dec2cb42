"""A drain's flush for sources tidegate cannot put a marker in (Kafka, files): the batch after
the last one planned by the runtime, reading nothing, its watermark past every window
(``checkpoint.plan_flush_batch``). On real Spark: every window still open is emitted, and a
record that arrived meanwhile is not read (it would be dropped as late)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from tests.runtime.test_checkpoint import META, fake_checkpoint
from tidegate_runtime.checkpoints.checkpoint import (
    FLUSH_WATERMARK_MS,
    CheckpointError,
    ends_in_flush,
    hadoop_crc,
    latest_commit_batch,
    plan_flush_batch,
    read_offsets,
    uncommitted_batches,
)
from tidegate_runtime.sources.eventlog_source import DRAIN_MARKER_TIMESTAMP


def test_the_flush_watermark_is_the_event_logs_marker_time() -> None:
    assert int(DRAIN_MARKER_TIMESTAMP.timestamp() * 1000) == FLUSH_WATERMARK_MS


def test_a_flush_batch_repeats_the_last_offsets_with_the_watermark_past_every_window(
    tmp_path: Path,
) -> None:
    ck = fake_checkpoint(tmp_path / "ck", {0: ['{"t":{"0":4}}'], 1: ['{"t":{"0":9}}']}, [0, 1])
    assert not ends_in_flush(ck)
    assert plan_flush_batch(ck) == 2
    metadata, lines = read_offsets(ck, 2)
    assert metadata == {**json.loads(META), "batchWatermarkMs": FLUSH_WATERMARK_MS}
    assert lines == ['{"t":{"0":9}}']  # reads nothing
    data = (ck / "offsets" / "2").read_bytes()
    assert (ck / "offsets" / ".2.crc").read_bytes() == hadoop_crc(data)
    assert ends_in_flush(ck) and uncommitted_batches(ck) == [2]
    assert plan_flush_batch(ck) == 2  # a retried step keeps the one planned
    (ck / "commits" / "2").write_text('v1\n{"nextBatchWatermarkMs":0}')
    assert plan_flush_batch(ck) == 3  # flushed already: one more batch that reads nothing
    assert read_offsets(ck, 3)[1] == lines


def test_a_flush_is_refused_over_a_batch_spark_would_run_first(tmp_path: Path) -> None:
    ck = fake_checkpoint(tmp_path / "ck", {0: ['{"0":1}'], 1: ['{"0":2}']}, [0])
    with pytest.raises(CheckpointError, match=r"\[1\] planned and not committed"):
        plan_flush_batch(ck)
    empty = fake_checkpoint(tmp_path / "empty", {0: ['{"0":1}']}, [])
    assert plan_flush_batch(empty) is None  # nothing committed: no state to flush
    assert plan_flush_batch(tmp_path / "none") is None


@pytest.mark.spark
def test_a_flush_batch_emits_every_open_window_and_reads_nothing_new(
    spark: SparkSession, tmp_path: Path
) -> None:
    inbox, out, ck = tmp_path / "in", tmp_path / "out", tmp_path / "ck"
    inbox.mkdir()

    def drop(name: str, rows: list[tuple[str, str]]) -> None:
        text = "".join(json.dumps({"ts": ts, "k": k}) + "\n" for ts, k in rows)
        (inbox / f".{name}").write_text(text)
        (inbox / f".{name}").rename(inbox / f"{name}.json")

    drop("a", [("2026-01-01T00:00:10Z", "x"), ("2026-01-01T00:01:30Z", "x")])
    drop("b", [("2026-01-01T00:02:30Z", "y")])
    counts = (
        spark.readStream.schema("ts timestamp, k string")
        .json(str(inbox))
        .withWatermark("ts", "10 seconds")
        .groupBy(F.window("ts", "1 minute"), "k")
        .count()
        .select(F.col("window.start").cast("string").alias("start"), "k", "count")
    )
    writer = (
        counts.writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(ck))
        .outputMode("append")
    )

    def emitted() -> list[tuple[str, str, int]]:
        return sorted((r.start, r.k, r["count"]) for r in spark.read.parquet(str(out)).collect())

    writer.trigger(availableNow=True).start().awaitTermination()
    # The watermark closed the windows up to 0:02:20; the one at 0:02 stays in state.
    assert emitted() == [("2026-01-01 00:00:00", "x", 1), ("2026-01-01 00:01:00", "x", 1)]
    last = latest_commit_batch(ck)
    assert last is not None
    drop("late", [("2026-01-01T00:00:20Z", "z")])  # arrives during the drain: after its end
    assert plan_flush_batch(ck) == last + 1
    writer.trigger(once=True).start().awaitTermination()
    assert emitted() == [
        ("2026-01-01 00:00:00", "x", 1),
        ("2026-01-01 00:01:00", "x", 1),
        ("2026-01-01 00:02:00", "y", 1),
    ]
    assert latest_commit_batch(ck) == last + 1 and uncommitted_batches(ck) == []
    assert read_offsets(ck, last + 1)[1] == read_offsets(ck, last)[1]  # "late" never read
