"""Starts like the windowed job (both queries, restored state) but raises inside its first
batch: a Python UDF in the windowed query fails on any row, so the batch after the restored
one fails, the query stops with the error, and the driver exits."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

# The repository, after the py-files: pipelines.* from here, tidegate_runtime from the zip.
sys.path.append(str(Path(__file__).resolve().parents[3]))

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType

from pipelines.enrich import build_enrich
from pipelines.windowed_counts import build_windowed_counts
from tidegate_runtime.control import Runtime
from tidegate_runtime.source import read_events


def _boom(key: str) -> bool:
    raise RuntimeError(f"tidegate-e2e: failing inside the first batch on purpose (key {key})")


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="fail_in_batch")
    for name in ("--root", "--stream", "--output", "--enrich-output"):
        parser.add_argument(name, required=True)
    args = parser.parse_args(argv)
    spark = SparkSession.builder.appName("fail_in_batch").getOrCreate()
    runtime = Runtime.from_spark(spark)
    boom = F.udf(_boom, BooleanType())
    events = read_events(spark, args.root, args.stream)
    counts = build_windowed_counts(events.where(boom(F.col("key"))))
    runtime.start(
        "windowed_counts",
        counts.writeStream.format("parquet").option("path", args.output),
        trigger="5 seconds",
        output_mode="append",
    )
    enriched = build_enrich(read_events(spark, args.root, args.stream))
    runtime.start(
        "enrich",
        enriched.writeStream.format("json").option("path", args.enrich_output),
        trigger="5 seconds",
        output_mode="append",
    )
    runtime.await_termination()


if __name__ == "__main__":
    main(sys.argv[1:])
