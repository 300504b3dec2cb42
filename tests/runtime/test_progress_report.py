"""What the runtime reports of a batch: Spark's progress event, as the API's ProgressReport."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from app.runs.schemas import ProgressReport
from pipelines.dedup_events import build_deduplicated, produce_events
from pipelines.register_examples import ROCKSDB_CONF
from tidegate_runtime.channel_client import progress_report
from tidegate_runtime.source import read_events

pytestmark = pytest.mark.spark

T0 = 1_700_000_040_000


def test_a_rocksdb_query_reports_how_long_its_state_took_to_load(
    spark: SparkSession, tmp_path: Path
) -> None:
    """The second query on a checkpoint opens the state the first left: its first progress
    carries the RocksDB store's load time and what it copied, and the API accepts it."""
    root, checkpoint = tmp_path / "log", tmp_path / "ck"
    for key, value in ROCKSDB_CONF.items():
        spark.conf.set(key, value)
    try:
        for first_id in (0, 500):
            produce_events(str(root), "events", 500, start_ts_ms=T0 + first_id, first_id=first_id)
            query = (
                build_deduplicated(read_events(spark, str(root), "events"))
                .writeStream.format("parquet")
                .option("path", str(tmp_path / "out"))
                .option("checkpointLocation", str(checkpoint))
                .trigger(availableNow=True)
                .start()
            )
            query.awaitTermination()
        report = progress_report("dedup_events", query.recentProgress[0])
    finally:
        for key in ROCKSDB_CONF:
            spark.conf.unset(key)
    (operator,) = report["state_operators"]
    metrics = operator["custom_metrics"]
    assert metrics["rocksdbNumLoadedFromDfs"] >= 1, metrics  # opened from the checkpoint
    assert metrics["rocksdbLoadLatencyMs"] >= 0 and "rocksdbBytesCopied" in metrics, metrics
    assert all(isinstance(v, float) for v in metrics.values())
    assert not [k for k in metrics if ".partition_" in k], metrics  # one per partition: left out
    ProgressReport.model_validate(report)
