"""Version 2 of the windowed job in the snapshot tests: the same windowed aggregation (its
state comes back from a snapshot) plus a new stateless query, ``enrich``, in one driver."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

# The repository, after the py-files: pipelines.* from here, tidegate_runtime from the zip.
sys.path.append(str(Path(__file__).resolve().parents[3]))

from pyspark.sql import SparkSession

from pipelines.enrich import build_enrich
from pipelines.windowed_counts import build_windowed_counts
from tidegate_runtime.control import Runtime
from tidegate_runtime.source import read_events


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="windowed_and_enrich")
    for name in ("--root", "--stream", "--output", "--enrich-output"):
        parser.add_argument(name, required=True)
    args = parser.parse_args(argv)
    spark = SparkSession.builder.appName("windowed_and_enrich").getOrCreate()
    runtime = Runtime.from_spark(spark)
    counts = build_windowed_counts(read_events(spark, args.root, args.stream))
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
