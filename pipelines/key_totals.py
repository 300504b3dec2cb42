"""A running total per key, kept forever: the example of a large state whose batches read
only the keys they touch.

Each event (key ``a<account>``, a numeric value) adds to its key's totals: how many events,
the sum of their values, the latest event time. The state holds one row per key ever seen and
never evicts (no watermark, output mode update): at millions of accounts that is gigabytes, so
run it on the RocksDB state store (docs/state-stores.md; the version ``register_examples``
creates sets it). Unlike ``dedup_events.py``, whose eviction reads every id in every batch, a
batch here reads and writes only the keys of its own events, so its time follows the input,
not the state (the state-size benchmark's second pipeline, beside Flink's keyed aggregation of
the same shape).

The sink writes each batch's updated rows to ``OUT/batch=N`` (Parquet), exactly once:
batch N first removes what N and later wrote before (a batch Spark runs again after a crash,
or batches of a timeline the checkpoint no longer holds, after a restore from an older
snapshot), then its rows appear by one rename. A key's current totals are its row in the
highest batch (``current_totals``). A version that starts on fresh state (an update by drain)
counts from zero and from batch 0 again: give it a new output directory.

    spark-submit pipelines/key_totals.py --root LOG --stream accounts --output OUT
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from tidegate_runtime.control import Runtime
from tidegate_runtime.eventlog import NewRecord
from tidegate_runtime.produce import append_pairs
from tidegate_runtime.source import read_events, without_drain_marker

QUERY = "key_totals"
BATCH_PREFIX = "batch="
# Knuth's multiplicative hash: consecutive event numbers land on accounts spread over the
# whole key space, as real traffic does (and as Flink's datagen draws its keys).
_SPREAD = 2_654_435_761


def build_totals(events: DataFrame) -> DataFrame:
    """Per key: events counted, their values summed (non-numeric as 0), the latest event time."""
    return (
        without_drain_marker(events)
        .groupBy("key")
        .agg(
            F.count(F.lit(1)).alias("events"),
            F.sum(F.coalesce(F.expr("TRY_CAST(value AS BIGINT)"), F.lit(0))).alias("total"),
            F.max("timestamp").alias("last_event"),
        )
    )


class BatchDirectories:
    """A ``foreachBatch`` function after which OUT holds each committed batch's rows once."""

    def __init__(self, output: str) -> None:
        self.output = Path(output[len("file:") :] if output.startswith("file:") else output)

    def __call__(self, rows: DataFrame, batch_id: int) -> None:
        self.output.mkdir(parents=True, exist_ok=True)
        writing = self.output / f"_writing-{batch_id}"
        shutil.rmtree(writing, ignore_errors=True)
        rows.write.mode("overwrite").parquet(str(writing))
        for old in self.output.glob(f"{BATCH_PREFIX}*"):
            number = old.name[len(BATCH_PREFIX) :]
            if number.isdigit() and int(number) >= batch_id:
                shutil.rmtree(old)
        os.replace(writing, self.output / f"{BATCH_PREFIX}{batch_id}")


def current_totals(output: str | os.PathLike[str]) -> dict[str, tuple[int, int, int]]:
    """{key: (events, total, latest event time in ms)}: each key's row in its highest batch."""
    import pyarrow.parquet as pq

    folders = Path(output).glob(f"{BATCH_PREFIX}*")
    batches = sorted(
        (int(p.name[len(BATCH_PREFIX) :]), p)
        for p in folders
        if p.name[len(BATCH_PREFIX) :].isdigit()
    )
    totals: dict[str, tuple[int, int, int]] = {}
    for _, path in batches:
        for row in pq.read_table(path).to_pylist():
            last = int(row["last_event"].timestamp() * 1000)
            totals[row["key"]] = (row["events"], row["total"], last)
    return totals


def account(n: int, accounts: int) -> str:
    """The account the ``n``-th event goes to, of ``accounts``."""
    return f"a{n * _SPREAD % accounts:012d}"


def account_events(
    count: int, accounts: int, start_ts_ms: int, ts_step_ms: int = 10, first: int = 0
) -> Iterator[tuple[int, NewRecord]]:
    """(partition, record) pairs: events ``first`` to ``first + count``, each for
    ``account(n)``, value ``n % 100``, on partition ``n % 2``."""
    for n in range(first, first + count):
        ts = start_ts_ms + (n - first) * ts_step_ms
        yield n % 2, NewRecord(ts, account(n, accounts), str(n % 100))


def produce_account_events(
    root: str,
    stream: str,
    count: int,
    accounts: int,
    start_ts_ms: int,
    ts_step_ms: int = 10,
    first: int = 0,
) -> dict[int, int]:
    """Append ``account_events`` to ``stream`` (2 partitions); its latest offsets."""
    events = account_events(count, accounts, start_ts_ms, ts_step_ms, first)
    return append_pairs(root, stream, events)


def parse_args(spark: SparkSession, argv: list[str], *, managed: bool) -> argparse.Namespace:
    def conf(name: str, default: str | None = None) -> str | None:
        return spark.conf.get(f"spark.tidegate.{name}", default)

    parser = argparse.ArgumentParser(prog="key_totals")
    parser.add_argument("--root", default=conf("root"), help="event log root")
    parser.add_argument("--stream", default=conf("stream", "accounts"))
    parser.add_argument("--output", default=conf("output"), help="directory of batch=N folders")
    parser.add_argument("--checkpoint", default=conf("checkpoint"))
    parser.add_argument("--query-name", default=conf("query_name", QUERY))
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
    writer = build_totals(events).writeStream.foreachBatch(BatchDirectories(args.output))
    runtime.start(
        args.query_name,
        writer,
        trigger=args.trigger,
        checkpoint=args.checkpoint,
        output_mode="update",
    )
    runtime.await_termination()


if __name__ == "__main__":
    main(sys.argv[1:])
