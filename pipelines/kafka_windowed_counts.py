"""The windowed counts of ``windowed_counts.py`` over a Kafka topic: per key, the count and sum of
``value`` in 1-minute tumbling windows of the records' Kafka timestamps, 10-second watermark,
append mode, Parquet sink. A record's key is the Kafka key, its value the Kafka value (a number
as text).

Under tidegate the source is declared with the same options the reader gets (the resolver
reads startpoints with them) and ``runtime.reader_options`` adds where a fresh query starts:

    spark-submit --jars <spark-kafka jars> pipelines/kafka_windowed_counts.py \\
        --bootstrap 127.0.0.1:9092 --topic clicks --output /out [--checkpoint /ck]
"""

from __future__ import annotations

import argparse
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from tidegate_runtime.control import Runtime
from tidegate_runtime.source import with_event_time

QUERY = "windowed_counts"
WINDOW = "1 minute"  # as pipelines/windowed_counts.py (a team keeps each file on its own)
WATERMARK_DELAY = "10 seconds"


def _setting(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.startswith("kafka."):
        raise argparse.ArgumentTypeError(f"{text!r} is not kafka.<setting>=<value>")
    return key, value


def main(argv: list[str]) -> None:
    spark = SparkSession.builder.appName("kafka_windowed_counts").getOrCreate()
    runtime = Runtime.from_spark(spark)
    parser = argparse.ArgumentParser(prog="kafka_windowed_counts")
    parser.add_argument("--bootstrap", required=True, help="kafka.bootstrap.servers")
    parser.add_argument("--topic", required=True)
    parser.add_argument("--output", required=True, help="Parquet output directory")
    parser.add_argument("--checkpoint", required=not runtime.managed)
    parser.add_argument("--window", default=WINDOW)
    parser.add_argument("--max-offsets-per-trigger")
    parser.add_argument(
        "--kafka-option",
        action="append",
        default=[],
        type=_setting,
        metavar="KEY=VALUE",
        help="a kafka.* client setting for the reader, e.g. kafka.request.timeout.ms=5000",
    )
    args = parser.parse_args(argv)

    options = {"kafka.bootstrap.servers": args.bootstrap, "subscribe": args.topic}
    options.update(args.kafka_option)
    if args.max_offsets_per_trigger:
        options["maxOffsetsPerTrigger"] = args.max_offsets_per_trigger
    records = (
        spark.readStream.format("kafka")
        .options(**options)
        .options(**runtime.reader_options(QUERY))
        .load()
    )
    events = records.select(
        F.col("key").cast("string").alias("key"),
        F.col("value").cast("string").alias("value"),
        "timestamp",
    )
    counts = (
        with_event_time(events, WATERMARK_DELAY)
        .groupBy(F.window("timestamp", args.window).alias("window"), "key")
        .agg(F.count("*").alias("count"), F.sum(F.col("value").try_cast("double")).alias("sum"))
        .select(
            F.col("window.start").alias("window_start"),
            F.col("window.end").alias("window_end"),
            "key",
            "count",
            "sum",
        )
    )
    writer = counts.writeStream.format("parquet").option("path", args.output)
    runtime.start(
        QUERY, writer, trigger="1 second", checkpoint=args.checkpoint, output_mode="append"
    )
    runtime.await_termination()


if __name__ == "__main__":
    main(sys.argv[1:])
