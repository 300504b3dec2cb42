"""The windowed job as a bad release would ship it: its new parser raises on every record.
It starts, plans its query and waits like the good one; only a batch over real records shows
it broken, which is what an update's trial batch is for (tests/worker/test_drain_e2e.py)."""

from __future__ import annotations

import sys
from pathlib import Path

# The repository, after the py-files: pipelines.* from here, tidegate_runtime from the zip.
sys.path.append(str(Path(__file__).resolve().parents[3]))

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType

from pipelines.windowed_counts import build_windowed_counts, parse_args
from tidegate_runtime.control import Runtime
from tidegate_runtime.source import read_events


def _parse(key: str) -> str:
    raise ValueError(f"cannot parse key {key!r}: the new key format is not what the log holds")


def main(argv: list[str]) -> None:
    spark = SparkSession.builder.appName("bad_release").getOrCreate()
    runtime = Runtime.from_spark(spark)
    args = parse_args(spark, argv, managed=runtime.managed)
    events = read_events(spark, args.root, args.stream, **runtime.reader_options(args.query_name))
    events = events.withColumn("key", F.udf(_parse, StringType())(F.col("key")))
    runtime.start(
        args.query_name,
        build_windowed_counts(events, args.window)
        .writeStream.format("parquet")
        .option("path", args.output),
        trigger=args.trigger,
        output_mode="append",
    )
    runtime.await_termination()


if __name__ == "__main__":
    main(sys.argv[1:])
