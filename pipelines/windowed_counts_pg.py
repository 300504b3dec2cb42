"""The windowed counts of ``windowed_counts.py``, written to PostgreSQL exactly once.

A sink that is not a file is exactly-once only if writing a batch again leaves the table as
if it had been written once. ``foreachBatch`` here writes each batch's rows **in one
transaction** with its row in a ledger, both keyed by the query's id (kept in its checkpoint)
and the batch id, and batch N *replaces* whatever batches N and later wrote before. Spark runs
a query's batches in order, so when it runs batch N, anything written for N or later is from a
run of it that did not commit, or from a timeline the checkpoint no longer holds:

* a batch Spark runs again (after a crash or a failed query) writes the same rows again;
* a batch written but never committed, then planned again (after a restore from a snapshot,
  which holds the last *committed* batch, or a startpoint's rewrite of the offsets) may cover
  more or fewer records than the first time: records between the previous batch's watermark
  and its own can change the windows it closes. Its new rows are the ones the new run's state
  goes on from; skipping it because its id is in the ledger would lose them (a window is
  emitted once in append mode), adding them would count the first rows twice. A reader of the
  table may see that batch's first rows replaced;
* a restore from an older snapshot (batch K of a query that went on to N) runs batches K+1 to
  N again over other boundaries: the first of them removes what the abandoned ones wrote.

A query started fresh (an update by drain) has a new id and counts its batches from 0 again. A
restore that gives the query a new id (tidegate does for a renamed query, or one of two
resumed from the same source) starts a new ledger: a batch the old query wrote but did not
commit is then not replaced but written again.

The rows go through the driver (``collect``): fine for aggregates of a few thousand rows a
batch; a wider sink would write from the executors into a staging table keyed by batch id
and move it in the same transaction as the ledger row.

Run with ``spark-submit pipelines/windowed_counts_pg.py --root ... --dsn postgresql://...``
(psycopg in the driver's Python). Give the password in ``PGPASSWORD`` or ``~/.pgpass``, not
in the DSN: a driver's arguments are visible in the cluster's UI.
"""

from __future__ import annotations

import argparse
import sys
import threading
from typing import Any

import psycopg
from psycopg import sql
from pyspark.sql import DataFrame, SparkSession

from tidegate_runtime.control import Runtime
from tidegate_runtime.source import read_events

try:
    from pipelines.windowed_counts import WINDOW, build_windowed_counts
except ImportError:  # run as a script: its own folder is on the path, not the repository
    from windowed_counts import WINDOW, build_windowed_counts  # type: ignore[no-redef]

ROWS_TABLE = """
create table if not exists {} (
    query_id text not null,
    batch_id bigint not null,
    window_start timestamptz not null,
    window_end timestamptz not null,
    key text not null,
    count bigint not null,
    sum double precision
)"""
LEDGER_TABLE = """
create table if not exists {} (
    query_id text not null,
    batch_id bigint not null,
    rows bigint not null,
    written_at timestamptz not null default now(),
    primary key (query_id, batch_id)
)"""
ROWS_INDEX = "create index if not exists {} on {} (query_id, batch_id)"


class ExactlyOnceTable:
    """A ``foreachBatch`` function after which the table holds each batch's rows once,
    whatever Spark runs again or plans anew."""

    def __init__(self, dsn: str, table: str, *, create: bool = True) -> None:
        self.dsn, self.table = dsn, table
        self._query_id: str | None = None
        self._started = threading.Event()
        if not create:
            return
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(sql.SQL(ROWS_TABLE).format(sql.Identifier(table)))
            conn.execute(
                sql.SQL(ROWS_INDEX).format(
                    sql.Identifier(f"{table}_by_batch"), sql.Identifier(table)
                )
            )
            conn.execute(sql.SQL(LEDGER_TABLE).format(sql.Identifier(f"{table}_batches")))

    def started(self, query_id: str) -> None:
        self._query_id = query_id
        self._started.set()

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        self._started.wait()  # the first batch may begin before start() has returned
        rows = [
            (self._query_id, batch_id, r.window_start, r.window_end, r.key, r["count"], r["sum"])
            for r in batch.collect()
        ]
        key = (self._query_id, batch_id)
        table, ledger = sql.Identifier(self.table), sql.Identifier(f"{self.table}_batches")
        with psycopg.connect(self.dsn) as conn, conn.transaction():
            # The ledger row first: it locks the batch, so two writers of one batch would take
            # turns (under PostgreSQL's default isolation, read committed) rather than both
            # delete, then both add.
            conn.execute(
                sql.SQL(
                    "insert into {} (query_id, batch_id, rows) values (%s, %s, %s) "
                    "on conflict (query_id, batch_id) "
                    "do update set rows = excluded.rows, written_at = now()"
                ).format(ledger),
                (*key, len(rows)),
            )
            conn.execute(
                sql.SQL("delete from {} where query_id = %s and batch_id > %s").format(ledger), key
            )
            conn.execute(
                sql.SQL("delete from {} where query_id = %s and batch_id >= %s").format(table), key
            )
            with conn.cursor() as cur:
                cur.executemany(
                    sql.SQL(
                        "insert into {} (query_id, batch_id, window_start, window_end, key, "
                        "count, sum) values (%s, %s, %s, %s, %s, %s, %s)"
                    ).format(table),
                    rows,
                )


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="windowed_counts_pg")
    parser.add_argument("--root", required=True, help="event log root")
    parser.add_argument("--stream", required=True)
    parser.add_argument("--dsn", required=True, help="PostgreSQL (no password: PGPASSWORD)")
    parser.add_argument("--table", default="windowed_counts")
    parser.add_argument("--window", default=WINDOW)
    parser.add_argument("--query-name", default="windowed_counts")
    parser.add_argument("--checkpoint", help="unmanaged only: under tidegate, the version's")
    return parser.parse_args(argv)


def main(argv: list[str]) -> None:
    args = parse_args(argv)
    if not args.table.replace("_", "").isalnum():
        raise SystemExit(f"--table {args.table!r}: letters, digits and underscores only")
    spark = SparkSession.builder.appName("windowed_counts_pg").getOrCreate()
    runtime = Runtime.from_spark(spark)
    events = read_events(spark, args.root, args.stream, **runtime.reader_options(args.query_name))
    # A dry run writes nothing (its sink is noop): it does not touch the database either.
    sink = ExactlyOnceTable(args.dsn, args.table, create=runtime.dry_run is None)
    writer: Any = build_windowed_counts(events, args.window).writeStream.foreachBatch(sink)
    query = runtime.start(
        args.query_name,
        writer,
        trigger="5 seconds",
        checkpoint=args.checkpoint,
        output_mode="append",
    )
    sink.started(str(query.id))
    runtime.await_termination()


if __name__ == "__main__":
    main(sys.argv[1:])
