"""Stateless enrichment: keep events with a numeric ``value`` >= 10, classify them by size.

Append mode to a JSON-lines sink. Run with ``spark-submit pipelines/enrich.py --root ...``;
every option can also come from a ``spark.tidegate.<option>`` conf (dashes as underscores).
"""

from __future__ import annotations

import argparse
import sys

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from tidegate_runtime.control import Runtime
from tidegate_runtime.source import read_events, without_drain_marker

MIN_AMOUNT = 10.0
LARGE_AMOUNT = 50.0


def build_enrich(events: DataFrame) -> DataFrame:
    """Filter and map an ``eventlog`` DataFrame; plain SQL expressions, no Python UDFs."""
    amount = F.col("value").try_cast("double")
    # A drain marker (stateless: nothing to flush) is dropped like any other non-event.
    return (
        without_drain_marker(events)
        .where(amount.isNotNull() & (amount >= MIN_AMOUNT))
        .select(
            "partition",
            "offset",
            F.col("timestamp").alias("event_time"),
            "key",
            amount.alias("amount"),
            F.when(amount >= LARGE_AMOUNT, "large").otherwise("small").alias("size"),
        )
    )


def parse_args(
    spark: SparkSession, argv: list[str], *, managed: bool = False
) -> argparse.Namespace:
    def conf(name: str, default: str | None = None) -> str | None:
        return spark.conf.get(f"spark.tidegate.{name}", default)

    parser = argparse.ArgumentParser(prog="enrich")
    parser.add_argument("--root", default=conf("root"), help="event log root")
    parser.add_argument("--stream", default=conf("stream"))
    parser.add_argument("--output", default=conf("output"), help="JSON-lines output directory")
    parser.add_argument("--checkpoint", default=conf("checkpoint"))
    parser.add_argument("--query-name", default=conf("query_name", "enrich"))
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
    spark = SparkSession.builder.appName("enrich").getOrCreate()
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
    writer = build_enrich(events).writeStream.format("json").option("path", args.output)
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
