"""A managed runtime starts each query as its version declares it, on a local SparkSession:
output mode ``complete`` and ``update`` (an aggregation rewritten whole, or its changed
rows), and ``partitioned_on`` (a file sink's output partitioned by those columns). The job's
code passes none of them; the version's declaration is what Spark runs."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from tidegate_runtime.driver.runtime import Runtime

pytestmark = pytest.mark.spark


class _Channel:
    """A control plane that has nothing to say: the runtime is managed, no startpoints."""


def _runtime(spark: SparkSession, tmp_path: Path, **query: Any) -> Runtime:
    declared = {"q": {"name": "q", "sources": [], "trigger": None, **query}}
    return Runtime(
        spark,
        client=_Channel(),  # type: ignore[arg-type]
        checkpoint_dir=str(tmp_path / "cp"),
        declared=declared,
    )


def _numbers(spark: SparkSession, rows: int) -> DataFrame:
    return (
        spark.readStream.format("rate")
        .option("rowsPerSecond", rows)
        .load()
        .select((F.col("value") % 3).alias("k"), F.col("value"))
    )


def _batches(spark: SparkSession, into: dict[int, list[Any]]) -> Any:
    """Counts by ``value // 40``: at 30 rows a second, each batch touches a key or two."""

    def collect(batch: DataFrame, batch_id: int) -> None:
        into[batch_id] = sorted(tuple(r) for r in batch.collect())

    rows = spark.readStream.format("rate").option("rowsPerSecond", 30).load()
    return (
        rows.groupBy((F.col("value") / 40).cast("long").alias("k"))
        .agg(F.count("*").alias("n"))
        .writeStream.foreachBatch(collect)
    )


def _wait(condition: Any, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline
        time.sleep(0.2)


@pytest.mark.parametrize("mode", ["complete", "update"])
def test_the_declared_output_mode_is_what_spark_runs(
    spark: SparkSession, tmp_path: Path, mode: str
) -> None:
    runtime = _runtime(spark, tmp_path, output_mode=mode, trigger="1 SECONDS")
    batches: dict[int, list[Any]] = {}
    runtime.start("q", _batches(spark, batches))

    def keys() -> set[int]:
        return {k for rows in list(batches.values()) for k, _ in rows}

    try:
        _wait(lambda: len(keys()) >= 4 and len([b for b in list(batches.values()) if b]) >= 3)
    finally:
        runtime.stop_all(timeout=60)
    seen: set[int] = set()
    partial = []  # per batch: did it leave out a key an earlier batch had?
    for _, rows in sorted(batches.items()):
        batch_keys = {k for k, _ in rows}
        seen |= batch_keys
        partial.append(batch_keys != seen)
    if mode == "complete":  # the whole result every batch: every key seen so far
        assert not any(partial), batches
    else:  # only the keys a batch changed: old keys get no new rows, so they are left out
        assert any(partial), batches
    # Either way the counts are running totals: a key's count never falls.
    for key in keys():
        counts = [n for _, rows in sorted(batches.items()) for k, n in rows if k == key]
        assert counts == sorted(counts)


def test_partitioned_on_partitions_the_file_sink(spark: SparkSession, tmp_path: Path) -> None:
    runtime = _runtime(spark, tmp_path, partitioned_on=["k"], trigger="1 SECONDS")
    out = tmp_path / "out"
    writer = _numbers(spark, 30).writeStream.format("parquet").option("path", str(out))
    runtime.start("q", writer)
    try:
        _wait(lambda: len(list(out.glob("k=*/*.parquet"))) >= 3)
    finally:
        runtime.stop_all(timeout=60)
    assert sorted(p.name for p in out.glob("k=*")) == ["k=0", "k=1", "k=2"]
    read = spark.read.parquet(str(out))
    assert {r.k for r in read.select("k").distinct().collect()} == {0, 1, 2}
