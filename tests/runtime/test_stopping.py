"""Stopping a query between batches
(tidegate_runtime/driver/batch_boundary.py::stop_at_batch_boundary) on a local SparkSession: a query
whose batches take longer than its trigger never idles between them, and is still stopped at a
boundary as soon as the batch it is in commits."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from tidegate_runtime.checkpoints import checkpoint as cp
from tidegate_runtime.driver import batch_boundary

pytestmark = pytest.mark.spark


def _slow(value: int) -> int:
    time.sleep(0.05)
    return value


def _busy_query(spark: SparkSession, tmp_path: Path, trigger: str) -> Any:
    # A trigger of 0: each batch starts the moment the last one ends, always with new rows.
    rows = spark.readStream.format("rate").option("rowsPerSecond", 20).load()
    return (
        rows.select(F.udf(_slow, "long")("value").alias("v"))
        .writeStream.format("parquet")
        .option("path", str(tmp_path / "out"))
        .option("checkpointLocation", str(tmp_path / "cp"))
        .trigger(processingTime=trigger)
        .start()
    )


def _wait_for_commit(query: Any, checkpoint: str, batch: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while (committed := cp.latest_commit_batch(checkpoint)) is None or committed < batch:
        assert query.isActive, query.exception()
        assert time.monotonic() < deadline, f"no commit of batch {batch} in {timeout:.0f}s"
        time.sleep(0.1)


def test_a_query_busy_in_every_trigger_stops_after_the_batch_it_is_in(
    spark: SparkSession,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Never seen between batches (as on a loaded machine, where a query that falls behind
    # starts each batch the moment the last one ends): only the soft end can stop it cleanly.
    monkeypatch.setattr(batch_boundary, "_idle", lambda query, checkpoint: False)
    query = _busy_query(spark, tmp_path, "0 seconds")
    checkpoint = str(tmp_path / "cp")
    try:
        _wait_for_commit(query, checkpoint, 3)  # busy: batch after batch
        with caplog.at_level(logging.INFO, logger="tidegate.runtime"):
            batch_boundary.stop_at_batch_boundary(query, timeout=60, checkpoint=checkpoint)
    finally:
        query.stop()
    # Before, it waited for a gap between batches that never came, then interrupted a batch.
    assert "stopping it anyway" not in caplog.text
    assert "told to end after this batch (its batch runs)" in caplog.text
    assert not query.isActive and query.exception() is None
    assert cp.latest_offsets_batch(checkpoint) == cp.latest_commit_batch(checkpoint)


def test_an_idle_query_stops_without_waiting_for_its_next_trigger(
    spark: SparkSession, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    checkpoint = str(tmp_path / "cp")
    query = (
        spark.readStream.format("rate")
        .option("rowsPerSecond", 1)
        .load()
        .writeStream.format("parquet")
        .option("path", str(tmp_path / "out"))
        .option("checkpointLocation", checkpoint)
        .trigger(processingTime="10 minutes")
        .start()
    )
    try:
        _wait_for_commit(query, checkpoint, 0)
        with caplog.at_level(logging.WARNING, logger="tidegate.runtime"):
            # Told to end, a query waiting for a trigger ten minutes away would end then.
            batch_boundary.stop_at_batch_boundary(query, timeout=30, checkpoint=checkpoint)
    finally:
        query.stop()
    assert "stopping it anyway" not in caplog.text
    assert cp.latest_offsets_batch(checkpoint) == cp.latest_commit_batch(checkpoint)


class _Unreachable:
    """A query whose JVM side cannot be reached (as on Spark Connect): in a batch until its
    ``busy_looks``-th look, between batches from then on."""

    name = "q"
    isActive = True

    def __init__(self, busy_looks: int) -> None:
        self.busy_looks, self.looks, self.stopped = busy_looks, 0, False

    @property
    def status(self) -> dict[str, Any]:
        self.looks += 1
        return {"isTriggerActive": self.looks < self.busy_looks}

    def stop(self) -> None:
        assert not self.stopped
        self.stopped = True


def test_without_the_soft_stop_a_gap_between_batches_still_stops_it() -> None:
    query = _Unreachable(busy_looks=3)
    assert batch_boundary._end_after_this_batch(query) is False  # type: ignore[arg-type]
    batch_boundary.stop_at_batch_boundary(query, timeout=30)  # type: ignore[arg-type]
    # Stopped on the second look between batches in a row, not the first.
    assert query.stopped and query.looks == query.busy_looks + 1


def test_without_the_soft_stop_and_no_gap_it_is_tried_once_then_stopped_at_the_timeout(
    caplog: pytest.LogCaptureFixture,
) -> None:
    query = _Unreachable(busy_looks=10**9)
    with caplog.at_level(logging.INFO, logger="tidegate.runtime"):
        batch_boundary.stop_at_batch_boundary(query, timeout=0.5)  # type: ignore[arg-type]
    assert query.stopped
    messages = [r.getMessage() for r in caplog.records]
    assert sum("no soft stop" in m for m in messages) == 1, messages
    assert not any("told to end" in m for m in messages), messages
    assert sum("stopping it anyway" in m for m in messages) == 1, messages
