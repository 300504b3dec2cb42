"""The windowed job and a stateless ``enrich`` query in one driver, where ``enrich`` fails the
first batch it runs once (a Python UDF raises for the first row it sees, once per marker
file): the runtime restarts ``enrich`` alone after the job's backoff, on its checkpoint, while
``windowed_counts`` runs on."""

from __future__ import annotations

import argparse
import os
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


def _fails_once(marker: str):  # type: ignore[no-untyped-def]
    def check(key: str) -> bool:
        try:
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            return True
        raise RuntimeError(f"tidegate-e2e: enrich fails one batch on purpose (key {key})")

    return F.udf(check, BooleanType())


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="fail_once")
    for name in ("--root", "--stream", "--output", "--enrich-output", "--fail-marker"):
        parser.add_argument(name, required=True)
    args = parser.parse_args(argv)
    spark = SparkSession.builder.appName("fail_once").getOrCreate()
    runtime = Runtime.from_spark(spark)
    # reader_options: the drain's cap and marker (and startpoints) reach each reader.
    events = read_events(spark, args.root, args.stream, **runtime.reader_options("windowed_counts"))
    counts = build_windowed_counts(events)
    runtime.start(
        "windowed_counts",
        counts.writeStream.format("parquet").option("path", args.output),
        trigger="5 seconds",
        output_mode="append",
    )
    events = read_events(spark, args.root, args.stream, **runtime.reader_options("enrich"))
    enriched = build_enrich(events.where(_fails_once(args.fail_marker)(F.col("key"))))
    runtime.start(
        "enrich",
        enriched.writeStream.format("json").option("path", args.enrich_output),
        trigger="5 seconds",
        output_mode="append",
    )
    runtime.await_termination()


if __name__ == "__main__":
    main(sys.argv[1:])
