"""Per-key count and sum of ``value`` in 1-minute (``--window``) tumbling event-time windows.

Append mode with a 10-second watermark, Parquet sink: a window is written once, when the
watermark passes its end. Run with ``spark-submit pipelines/windowed_counts.py --root ...``;
every option can also come from a ``spark.tidegate.<option>`` conf (dashes as underscores).
"""

from __future__ import annotations

import argparse
import sys

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from tidegate_runtime.control import Runtime
from tidegate_runtime.source import read_events, with_event_time

WINDOW = "1 minute"
WATERMARK_DELAY = "10 seconds"


def build_windowed_counts(
    events: DataFrame, window: str = WINDOW, watermark_delay: str = WATERMARK_DELAY
) -> DataFrame:
    """Windowed aggregation of an ``eventlog`` DataFrame.

    ``with_event_time`` applies the watermark and drops drain markers after it: a marker only
    advances the watermark (a drain flushes the open windows with one).
    """
    return (
        with_event_time(events, watermark_delay)
        .groupBy(F.window("timestamp", window).alias("window"), "key")
        .agg(F.count("*").alias("count"), F.sum(F.col("value").try_cast("double")).alias("sum"))
        .select(
            F.col("window.start").alias("window_start"),
            F.col("window.end").alias("window_end"),
            "key",
            "count",
            "sum",
        )
    )


def parse_args(
    spark: SparkSession, argv: list[str], *, managed: bool = False
) -> argparse.Namespace:
    def conf(name: str, default: str | None = None) -> str | None:
        return spark.conf.get(f"spark.tidegate.{name}", default)

    parser = argparse.ArgumentParser(prog="windowed_counts")
    parser.add_argument("--root", default=conf("root"), help="event log root")
    parser.add_argument("--stream", default=conf("stream"))
    parser.add_argument("--output", default=conf("output"), help="Parquet output directory")
    parser.add_argument("--checkpoint", default=conf("checkpoint"))
    parser.add_argument("--query-name", default=conf("query_name", "windowed_counts"))
    parser.add_argument(
        "--window", default=conf("window", WINDOW), help="tumbling window, e.g. '2 minutes'"
    )
    parser.add_argument(
        "--trigger", default=conf("trigger", "5 seconds"), help="availableNow or an interval"
    )
    parser.add_argument("--starting-offsets", default=conf("starting_offsets"))
    parser.add_argument("--ending-offsets", default=conf("ending_offsets"))
    parser.add_argument("--max-records-per-batch", default=conf("max_records_per_batch"))
    args = parser.parse_args(argv)
    # A managed run gets its checkpoint by convention from the control plane.
    for required in ("root", "stream", "output", *(() if managed else ("checkpoint",))):
        if getattr(args, required) is None:
            parser.error(f"--{required} (or spark.tidegate.{required}) is required")
    return args


def main(argv: list[str]) -> None:
    spark = SparkSession.builder.appName("windowed_counts").getOrCreate()
    # Under tidegate the query's name, trigger, output mode and checkpoint come from the job
    # version; run by hand, from the arguments below.
    runtime = Runtime.from_spark(spark)
    args = parse_args(spark, argv, managed=runtime.managed)
    options = {
        "startingOffsets": args.starting_offsets,
        "endingOffsets": args.ending_offsets,
        "maxRecordsPerBatch": args.max_records_per_batch,
        # Under tidegate: startpoints for a fresh query, and the drain control file.
        **runtime.reader_options(args.query_name),
    }
    events = read_events(
        spark, args.root, args.stream, **{k: v for k, v in options.items() if v is not None}
    )
    writer = (
        build_windowed_counts(events, args.window)
        .writeStream.format("parquet")
        .option("path", args.output)
    )
    runtime.start(
        args.query_name,
        writer,
        trigger=args.trigger,
        checkpoint=args.checkpoint,
        output_mode="append",
    )
    runtime.await_termination()


if __name__ == "__main__":
    main(sys.argv[1:])
