"""A query's declared sink checked against the job's real writer (tidegate_runtime/driver/sinks.py)
on a local SparkSession: the format, path and option values Spark's writer carries, read before the
query starts. A mismatch names what differs, never an option's value (it may be secret)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from tidegate_runtime.driver.sinks import (
    UndeclaredSink,
    declared_sink,
    require_declared,
    written_to,
)

pytestmark = pytest.mark.spark


def _writer(spark: SparkSession, fmt: str, path: str | None, **options: str):  # type: ignore[no-untyped-def]
    writer = spark.readStream.format("rate").load().writeStream.format(fmt)
    if path is not None:
        writer = writer.option("path", path)
    return writer.options(**options)


def test_the_writer_s_format_path_and_options_are_read(spark: SparkSession, tmp_path: Path) -> None:
    seen = written_to(_writer(spark, "parquet", str(tmp_path / "out"), compression="zstd"))
    assert seen is not None
    fmt, option = seen
    assert (fmt, option("PATH"), option("compression")) == (
        "parquet",
        str(tmp_path / "out"),
        "zstd",
    )
    assert option("absent") is None


def test_a_writer_as_declared_passes(spark: SparkSession, tmp_path: Path) -> None:
    out = tmp_path / "out"
    sink = {"format": "parquet", "path": f"file:{out}/", "options": {"compression": "zstd"}}
    writer = _writer(spark, "parquet", str(out), compression="zstd")
    require_declared("q", writer, declared_sink(sink), sink["options"])  # a run's runtime
    require_declared("q", writer, declared_sink(sink))  # a dry run: the option's name only
    batch_writer = (
        spark.readStream.format("rate").load().writeStream.foreachBatch(lambda df, batch_id: None)
    )
    require_declared("q", batch_writer, declared_sink({"format": "foreachBatch"}))


def test_a_writer_that_writes_elsewhere_is_refused_naming_what_differs(
    spark: SparkSession, tmp_path: Path
) -> None:
    sink = {"format": "parquet", "path": str(tmp_path / "out"), "options": {"password": "s3cret"}}
    declared = declared_sink(sink)
    assert "s3cret" not in json.dumps(declared)  # what the Spark conf carries
    writer = _writer(spark, "json", str(tmp_path / "other"), password="wrong-s3cret")
    with pytest.raises(UndeclaredSink) as refused:
        require_declared("q", writer, declared, sink["options"])
    message = str(refused.value)
    assert "query 'q' does not write where its version declares" in message
    assert "its format is json, not parquet" in message
    assert f"it writes to {tmp_path / 'other'}, not {tmp_path / 'out'}" in message
    assert "its option password has another value" in message and "s3cret" not in message
    unset = _writer(spark, "parquet", str(tmp_path / "out"))
    with pytest.raises(UndeclaredSink, match="option password is missing"):
        require_declared("q", unset, declared)
