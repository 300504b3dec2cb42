"""A chain of two queries in one driver: ``enrich`` reads the event log and writes JSON
files; ``totals`` reads those files (Spark's file source, which no drain marker reaches)
and writes its own. The version declares ``totals``' upstream, so a drain finishes
``enrich`` first, then runs ``totals`` to the end of what ``enrich`` wrote."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

# The repository, after the py-files: pipelines.* from here, tidegate_runtime from the zip.
sys.path.append(str(Path(__file__).resolve().parents[3]))

from pyspark.sql import SparkSession

from pipelines.enrich import build_enrich
from tidegate_runtime.control import Runtime
from tidegate_runtime.source import read_events

ENRICHED = (
    "partition INT, offset BIGINT, event_time TIMESTAMP, key STRING, amount DOUBLE, size STRING"
)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="chain")
    for name in ("--root", "--stream", "--middle", "--output"):
        parser.add_argument(name, required=True)
    parser.add_argument("--max-records-per-batch", default="40")
    args = parser.parse_args(argv)
    spark = SparkSession.builder.appName("chain").getOrCreate()
    runtime = Runtime.from_spark(spark)
    options = runtime.reader_options("enrich")
    events = read_events(
        spark, args.root, args.stream, maxRecordsPerBatch=args.max_records_per_batch, **options
    )
    runtime.start(
        "enrich", build_enrich(events).writeStream.format("json").option("path", args.middle)
    )
    middle = spark.readStream.schema(ENRICHED).json(args.middle)
    runtime.start(
        "totals",
        middle.select("partition", "offset", "amount")
        .writeStream.format("json")
        .option("path", args.output),
    )
    runtime.await_termination()


if __name__ == "__main__":
    main(sys.argv[1:])
