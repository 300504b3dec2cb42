"""Deduplicate events by id over a long watermark: the example of a large, long-lived state.

Producers retry, so an event can be in the log more than once, in any partition. Each event
id (the record's key) is written once, when its first copy is read; a copy that comes within
an hour of event time of the first is dropped. Spark keeps every id of the last hour of
event time in state (``dropDuplicatesWithinWatermark``): at 10,000 events/s that is 36
million ids, gigabytes: run it on the RocksDB state store (docs/state-stores.md; the version
``register_examples`` creates sets it). Parquet sink, append mode.

    spark-submit pipelines/dedup_events.py --root LOG --stream events --output OUT
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from tidegate_runtime.control import Runtime
from tidegate_runtime.eventlog import NewRecord
from tidegate_runtime.produce import append_pairs
from tidegate_runtime.source import read_events, with_event_time

WATERMARK_DELAY = "1 hour"
QUERY = "dedup_events"
# One event in RETRY_EVERY is appended a second time, to the next partition (a retry).
RETRY_EVERY = 7


def build_deduplicated(events: DataFrame, watermark_delay: str = WATERMARK_DELAY) -> DataFrame:
    """Each event id once. Only what every copy of an event carries is written (which copy
    is read first, and so its partition and offset, depends on how batches fall)."""
    return (
        with_event_time(events, watermark_delay)
        .dropDuplicatesWithinWatermark(["key"])
        .select(F.col("key").alias("event_id"), "timestamp", "value")
    )


def events_with_retries(
    count: int, start_ts_ms: int, ts_step_ms: int = 10, first_id: int = 0
) -> Iterator[tuple[int, NewRecord]]:
    """``count`` events ``e<id>`` (partition id % 2), one in RETRY_EVERY appended again to the
    other partition, as a producer's retry would: (partition, record) pairs in log order."""
    for n in range(first_id, first_id + count):
        record = NewRecord(start_ts_ms + (n - first_id) * ts_step_ms, f"e{n:012d}", str(n % 100))
        yield n % 2, record
        if n % RETRY_EVERY == 0:
            yield (n + 1) % 2, record


def produce_events(
    root: str, stream: str, count: int, start_ts_ms: int, ts_step_ms: int = 10, first_id: int = 0
) -> dict[int, int]:
    """Append ``events_with_retries`` to ``stream`` (2 partitions); its latest offsets."""
    return append_pairs(root, stream, events_with_retries(count, start_ts_ms, ts_step_ms, first_id))


def parse_args(spark: SparkSession, argv: list[str], *, managed: bool) -> argparse.Namespace:
    def conf(name: str, default: str | None = None) -> str | None:
        return spark.conf.get(f"spark.tidegate.{name}", default)

    parser = argparse.ArgumentParser(prog="dedup_events")
    parser.add_argument("--root", default=conf("root"), help="event log root")
    parser.add_argument("--stream", default=conf("stream", "events"))
    parser.add_argument("--output", default=conf("output"), help="Parquet output directory")
    parser.add_argument("--checkpoint", default=conf("checkpoint"))
    parser.add_argument("--query-name", default=conf("query_name", QUERY))
    parser.add_argument("--watermark-delay", default=conf("watermark_delay", WATERMARK_DELAY))
    parser.add_argument("--trigger", default=conf("trigger", "5 seconds"))
    parser.add_argument("--max-records-per-batch", default=conf("max_records_per_batch"))
    args = parser.parse_args(argv)
    for required in ("root", "output", *(() if managed else ("checkpoint",))):
        if getattr(args, required) is None:
            parser.error(f"--{required} (or spark.tidegate.{required}) is required")
    return args


def main(argv: list[str]) -> None:
    spark = SparkSession.builder.appName(QUERY).getOrCreate()
    runtime = Runtime.from_spark(spark)
    args = parse_args(spark, argv, managed=runtime.managed)
    options = {
        "maxRecordsPerBatch": args.max_records_per_batch,
        **runtime.reader_options(args.query_name),
    }
    events = read_events(
        spark, args.root, args.stream, **{k: v for k, v in options.items() if v is not None}
    )
    writer = (
        build_deduplicated(events, args.watermark_delay)
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
