"""Two windowed queries in one driver, each over its own stream and writing its own Parquet
output: ``clicks_counts`` and ``views_counts`` (``--only`` starts one of them), and with
``--copy-output`` a third, ``clicks_copy``, counting clicks again into its own output. The Onyx
scenarios give them the state of other jobs' ``windowed_counts`` queries, under new names,
and split one query's state into two."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

# The repository, after the py-files: pipelines.* from here, tidegate_runtime from the zip.
sys.path.append(str(Path(__file__).resolve().parents[3]))

from pyspark.sql import SparkSession

from pipelines.windowed_counts import build_windowed_counts
from tidegate_runtime.control import Runtime
from tidegate_runtime.source import read_events


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="two_windowed")
    for name in ("--root", "--clicks-output", "--views-output"):
        parser.add_argument(name, required=True)
    parser.add_argument("--only", choices=("clicks", "views"))
    parser.add_argument("--copy-output")
    args = parser.parse_args(argv)
    spark = SparkSession.builder.appName("two_windowed").getOrCreate()
    runtime = Runtime.from_spark(spark)
    queries = [
        ("clicks_counts", "clicks", args.clicks_output),
        ("views_counts", "views", args.views_output),
    ]
    if args.copy_output:
        queries.append(("clicks_copy", "clicks", args.copy_output))
    for name, stream, out in queries:
        if args.only not in (None, stream):
            continue
        events = read_events(spark, args.root, stream, **runtime.reader_options(name))
        runtime.start(
            name,
            build_windowed_counts(events).writeStream.format("parquet").option("path", out),
            trigger="5 seconds",
            output_mode="append",
        )
    runtime.await_termination()


if __name__ == "__main__":
    main(sys.argv[1:])
