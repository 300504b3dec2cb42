"""A fresh version's rehearsal (tidegate_runtime/driver/dry_run.py,
``spark.tidegate.dry_run_trial``) on local Spark: each query starts on an empty scratch checkpoint
at the old run's last records and runs one trial batch up to its cap into the noop sink; a version
whose code fails on real
records is caught there, with Spark's error."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType

from pipelines.windowed_counts import build_windowed_counts
from tests.support.spark import fill
from tidegate_runtime import contract
from tidegate_runtime.checkpoints import checkpoint as cp
from tidegate_runtime.driver.runtime import Runtime
from tidegate_runtime.sources.eventlog import EventLog
from tidegate_runtime.sources.eventlog_source import read_events

pytestmark = pytest.mark.spark


@pytest.fixture
def trial_conf(spark: SparkSession, tmp_path: Path) -> Iterator[dict[str, str]]:
    root = tmp_path / "log"
    stream = EventLog(root).create_stream("clicks", 2)
    fill(stream, 0, 50)
    fill(stream, 1, 50)
    queries = [
        {
            "name": "counts",
            "sources": [{"name": "clicks", "kind": "eventlog"}],
            "output_mode": "append",
            "trigger": None,
        }
    ]
    # The old run committed 45 and 50; the trial reads the 5 + 10 records before that.
    trial = {"counts": {"clicks": {"start": {"0": 40, "1": 40}, "end": {"0": 45, "1": 50}}}}
    conf = {
        contract.DRY_RUN: "true",
        contract.DRY_RUN_TRIAL: json.dumps(trial),
        contract.DRY_RUN_RESULT: str(tmp_path / "scratch" / contract.DRY_RUN_RESULT_FILE),
        contract.DRY_RUN_TIMEOUT: "120",
        "spark.tidegate.checkpoint_dir": str(tmp_path / "scratch"),
        "spark.tidegate.queries": json.dumps(queries),
        "root": str(root),
    }
    for key, value in conf.items():
        if key.startswith("spark."):
            spark.conf.set(key, value)
    try:
        yield conf
    finally:
        for key in conf:
            if key.startswith("spark."):
                spark.conf.unset(key)


def _rehearse(spark: SparkSession, conf: dict[str, str], out: Path, *, broken: bool) -> Any:
    runtime = Runtime.from_spark(spark)
    assert runtime.dry_run is not None and runtime.dry_run.targets == {"counts": 0}
    events = read_events(spark, conf["root"], "clicks", **runtime.reader_options("counts"))
    if broken:  # the new version's code fails on real records, as a bad release would

        def explode(key: str) -> str:
            raise ValueError(f"the new parser cannot read key {key}")

        events = events.withColumn("key", F.udf(explode, StringType())(F.col("key")))
    runtime.start(
        "counts",
        build_windowed_counts(events).writeStream.format("parquet").option("path", str(out)),
    )
    runtime.await_termination()
    return runtime


def test_the_trial_batch_reads_the_old_run_s_last_records_into_noop(
    spark: SparkSession, trial_conf: dict[str, str], tmp_path: Path
) -> None:
    runtime = _rehearse(spark, trial_conf, tmp_path / "out", broken=False)
    result = json.loads(Path(trial_conf[contract.DRY_RUN_RESULT]).read_text())
    assert result == {"ok": True, "queries": {"counts": {"ok": True, "batch_id": 0}}}
    scratch = tmp_path / "scratch" / "counts"
    assert cp.latest_commit_batch(scratch) == 0
    _, lines = cp.read_offsets(scratch, 0)
    assert json.loads(lines[0]) == {"0": 45, "1": 50}  # read up to the cap, not the log's end
    assert runtime.queries["counts"].lastProgress["numInputRows"] == 15
    assert not (tmp_path / "out").exists()  # the real sink is never written


def test_a_version_whose_code_fails_on_real_records_is_caught_by_its_trial(
    spark: SparkSession, trial_conf: dict[str, str], tmp_path: Path
) -> None:
    _rehearse(spark, trial_conf, tmp_path / "out", broken=True)
    result = json.loads(Path(trial_conf[contract.DRY_RUN_RESULT]).read_text())
    assert result["ok"] is False
    outcome = result["queries"]["counts"]
    assert not outcome["ok"] and "the new parser cannot read key" in outcome["message"], outcome
    assert not (tmp_path / "out").exists()
