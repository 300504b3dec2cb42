"""What the runtime reports of a batch: Spark's progress event, as the API's ProgressReport."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from app.runs.schemas import ProgressReport, StateOperatorProgress
from pipelines.dedup_events import build_deduplicated, produce_events
from pipelines.register_examples import ROCKSDB_CONF
from tidegate_runtime.driver.channel import (
    MAX_CUSTOM_METRICS,
    ControlClient,
    operator_metrics,
    progress_report,
)
from tidegate_runtime.sources.eventlog_source import read_events

T0 = 1_700_000_040_000


def test_only_an_operators_own_finite_figures_are_kept_and_at_most_as_many_as_the_api_takes() -> (
    None
):
    metrics = {
        "rocksdbLoadLatencyMs": 12,
        "numRowsReadDuringEviction": 3.0,
        "SnapshotLastUploaded.partition_0_default": 7,  # one per partition
        "rocksdbGetLatency": float("nan"),  # not JSON
        "flag": True,
        "text": "slow",
    }
    assert operator_metrics(metrics) == {
        "numRowsReadDuringEviction": 3.0,
        "rocksdbLoadLatencyMs": 12.0,
    }
    many = operator_metrics({"rocksdbLoadLatencyMs": 9, **{f"m{i:03d}": i for i in range(200)}})
    assert len(many) == MAX_CUSTOM_METRICS and "m000" in many and "m199" not in many
    assert many["rocksdbLoadLatencyMs"] == 9.0  # what /metrics reads is kept first
    assert operator_metrics({"x" * 300: 1}) == {"x" * 128: 1.0}
    assert operator_metrics(None) == {}
    # As many as the API takes: a report with more would be refused whole.
    limit = StateOperatorProgress.model_fields["custom_metrics"].metadata
    assert any(getattr(m, "max_length", None) == MAX_CUSTOM_METRICS for m in limit), limit


@pytest.mark.spark
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
        progress = query.recentProgress[0]
        report = progress_report("dedup_events", progress)
    finally:
        for key in ROCKSDB_CONF:
            spark.conf.unset(key)
    (raw,) = json.loads(progress.json)["stateOperators"]
    assert any(".partition_" in k for k in raw["customMetrics"]), raw  # Spark's, one a partition
    (operator,) = report["state_operators"]
    metrics = operator["custom_metrics"]
    assert metrics["rocksdbNumLoadedFromDfs"] >= 1, metrics  # opened from the checkpoint
    assert {"rocksdbLoadLatencyMs", "rocksdbBytesCopied"} <= set(metrics), metrics
    assert not [k for k in metrics if ".partition_" in k], metrics  # left out
    ProgressReport.model_validate(report)


def test_an_api_that_does_not_know_the_metrics_still_gets_the_report() -> None:
    """tidegate rolled back under a running driver: its API refuses the field (422); the
    runtime sends the report again without it, rather than lose every batch's progress."""
    received: list[dict[str, object]] = []

    class OlderApi(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            received.append(body)
            known = all(
                "custom_metrics" not in op and "num_rows_dropped_by_watermark" not in op
                for op in body["state_operators"]
            )
            self.send_response(204 if known else 422)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), OlderApi)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        client = ControlClient(f"http://127.0.0.1:{server.server_port}", 7, "t")
        op = {"operator_name": "dedupeWithinWatermark", "num_rows_total": 3}
        client.progress({"query": "q", "batch_id": 1, "state_operators": [op]})
        client.progress(
            {"query": "q", "batch_id": 2, "state_operators": [{**op, "custom_metrics": {"a": 1}}]}
        )
        client.progress(
            {
                "query": "q",
                "batch_id": 3,
                "state_operators": [{**op, "num_rows_dropped_by_watermark": 4}],
            }
        )
    finally:
        server.shutdown()
    assert [r["batch_id"] for r in received] == [1, 2, 2, 3, 3]
    assert received[2]["state_operators"] == [op] and received[-1]["state_operators"] == [op]
