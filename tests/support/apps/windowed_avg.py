"""The windowed job with its aggregation changed: ``avg`` instead of ``sum`` (same query name,
same columns, same declarations). Its state value schema differs ((count, sum) becomes
(count, sum, count)), which only Spark sees: the dry run in the snapshot tests must refuse it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

# The repository, after the py-files: pipelines.* from here, tidegate_runtime from the zip.
sys.path.append(str(Path(__file__).resolve().parents[3]))

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pipelines.windowed_counts import WATERMARK_DELAY, WINDOW
from tidegate_runtime.control import Runtime
from tidegate_runtime.source import DRAIN_MARKER_TIMESTAMP, read_events


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="windowed_avg")
    for name in ("--root", "--stream", "--output"):
        parser.add_argument(name, required=True)
    args = parser.parse_args(argv)
    spark = SparkSession.builder.appName("windowed_avg").getOrCreate()
    runtime = Runtime.from_spark(spark)
    events = read_events(spark, args.root, args.stream, **runtime.reader_options("windowed_counts"))
    averages = (
        events.withWatermark("timestamp", WATERMARK_DELAY)
        .where(F.col("timestamp") < F.lit(DRAIN_MARKER_TIMESTAMP))
        .groupBy(F.window("timestamp", WINDOW).alias("window"), "key")
        .agg(F.count("*").alias("count"), F.avg(F.col("value").try_cast("double")).alias("sum"))
        .select(
            F.col("window.start").alias("window_start"),
            F.col("window.end").alias("window_end"),
            "key",
            "count",
            "sum",
        )
    )
    runtime.start(
        "windowed_counts",
        averages.writeStream.format("parquet").option("path", args.output),
        trigger="5 seconds",
        output_mode="append",
    )
    runtime.await_termination()


if __name__ == "__main__":
    main(sys.argv[1:])
