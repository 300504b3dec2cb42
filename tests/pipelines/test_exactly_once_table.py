"""The PostgreSQL sink's batch writes (pipelines/windowed_counts_pg.py::ExactlyOnceTable) on a
real PostgreSQL, batch by batch; the whole pipeline across crash, updates and drain is in
tests/pipelines/test_pg_sink.py."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from pyspark.sql import Row

from pipelines.windowed_counts_pg import ExactlyOnceTable

T0 = datetime(2026, 1, 1, tzinfo=UTC)


class Batch:
    """What the sink reads of a micro-batch's DataFrame: its rows, collected."""

    def __init__(self, *windows: tuple[int, str, int]) -> None:
        self.rows = [
            Row(
                window_start=T0 + timedelta(minutes=m),
                window_end=T0 + timedelta(minutes=m + 1),
                key=key,
                count=count,
                sum=float(count),
            )
            for m, key, count in windows
        ]

    def collect(self) -> list[Row]:
        return self.rows


def _table(dsn: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn) as conn:
        return conn.execute(
            "select query_id, batch_id, extract(epoch from window_start - %s)::int / 60, key, "
            "count from windowed_counts order by 1, 2, 3, 4",
            (T0,),
        ).fetchall()


def _ledger(dsn: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn) as conn:
        return conn.execute(
            "select query_id, batch_id, rows from windowed_counts_batches order by 1, 2"
        ).fetchall()


def test_a_batch_run_again_is_written_once(sink_dsn: str) -> None:
    sink = ExactlyOnceTable(sink_dsn, "windowed_counts")
    sink.started("q-1")
    sink(Batch((0, "a", 3), (0, "b", 1)), 0)  # type: ignore[arg-type]
    sink(Batch((1, "a", 2)), 1)  # type: ignore[arg-type]
    sink(Batch((1, "a", 2)), 1)  # type: ignore[arg-type]  # Spark runs batch 1 again
    assert _table(sink_dsn) == [("q-1", 0, 0, "a", 3), ("q-1", 0, 0, "b", 1), ("q-1", 1, 1, "a", 2)]
    assert _ledger(sink_dsn) == [("q-1", 0, 2), ("q-1", 1, 1)]


def test_a_batch_planned_anew_after_a_restore_replaces_what_it_wrote_first(
    sink_dsn: str,
) -> None:
    """Batch 1 was written but never committed; restored from the snapshot of batch 0, the
    new run plans batch 1 over more records, and emits one more window. Skipping it would
    lose that window for good; adding it would count window 1 twice."""
    old = ExactlyOnceTable(sink_dsn, "windowed_counts")
    old.started("q-1")
    old(Batch((0, "a", 3)), 0)  # type: ignore[arg-type]
    old(Batch((1, "a", 2)), 1)  # type: ignore[arg-type]
    new = ExactlyOnceTable(sink_dsn, "windowed_counts")  # the new driver: same query id
    new.started("q-1")
    new(Batch((1, "a", 2), (1, "b", 4)), 1)  # type: ignore[arg-type]
    assert _table(sink_dsn) == [("q-1", 0, 0, "a", 3), ("q-1", 1, 1, "a", 2), ("q-1", 1, 1, "b", 4)]
    assert _ledger(sink_dsn) == [("q-1", 0, 1), ("q-1", 1, 2)]


def test_a_restore_from_an_older_snapshot_removes_what_the_abandoned_batches_wrote(
    sink_dsn: str,
) -> None:
    """The old run went on to batch 3; the new one resumes from the snapshot of batch 1 and
    runs batch 2 over other boundaries (it catches up): batch 3 as written belongs to a
    timeline the checkpoint no longer holds."""
    old = ExactlyOnceTable(sink_dsn, "windowed_counts")
    old.started("q-1")
    for batch_id in range(4):
        old(Batch((batch_id, "a", 1)), batch_id)  # type: ignore[arg-type]
    new = ExactlyOnceTable(sink_dsn, "windowed_counts")
    new.started("q-1")
    new(Batch((2, "a", 1), (3, "a", 2)), 2)  # type: ignore[arg-type]
    assert _table(sink_dsn) == [
        ("q-1", 0, 0, "a", 1),
        ("q-1", 1, 1, "a", 1),
        ("q-1", 2, 2, "a", 1),
        ("q-1", 2, 3, "a", 2),
    ]
    assert _ledger(sink_dsn) == [("q-1", 0, 1), ("q-1", 1, 1), ("q-1", 2, 2)]


def test_a_query_with_a_new_id_keeps_its_own_ledger(sink_dsn: str) -> None:
    """An update by drain starts the query fresh: its batch 0 is not the old query's."""
    sink = ExactlyOnceTable(sink_dsn, "windowed_counts")
    sink.started("q-1")
    sink(Batch((0, "a", 3)), 0)  # type: ignore[arg-type]
    fresh = ExactlyOnceTable(sink_dsn, "windowed_counts")
    fresh.started("q-2")
    fresh(Batch((5, "a", 1)), 0)  # type: ignore[arg-type]
    assert _table(sink_dsn) == [("q-1", 0, 0, "a", 3), ("q-2", 0, 5, "a", 1)]
