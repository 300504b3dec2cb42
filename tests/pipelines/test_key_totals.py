"""The running-totals example (pipelines/key_totals.py) on local Spark and RocksDB with
changelog checkpointing, against its ground truth from the raw log: across restarts on its
checkpoint, a batch run again after a crash between its write and its commit, and a restore
to an older batch (a snapshot's), each key's totals are every event counted once."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from pipelines.ground_truth import expected_key_totals
from pipelines.key_totals import (
    BatchDirectories,
    account,
    build_totals,
    current_totals,
    produce_account_events,
)
from pipelines.register_examples import ROCKSDB_CONF
from tidegate_runtime.checkpoints import checkpoint as cp
from tidegate_runtime.sources.eventlog import EventLog, NewRecord
from tidegate_runtime.sources.eventlog_source import read_events

pytestmark = pytest.mark.spark

T0 = 1_767_225_600_000
ACCOUNTS = 500


def _run(spark: SparkSession, root: Path, out: Path, checkpoint: Path) -> dict[str, Any]:
    """The pipeline up to the log's end (at most 700 records a batch); its last progress."""
    events = read_events(spark, str(root), "accounts", maxRecordsPerBatch="700")
    query = (
        build_totals(events)
        .writeStream.foreachBatch(BatchDirectories(str(out)))
        .option("checkpointLocation", str(checkpoint))
        .outputMode("update")
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    progress = query.lastProgress
    assert progress is not None
    return dict(progress)


@pytest.fixture
def rocksdb(spark: SparkSession) -> Iterator[SparkSession]:
    before = {key: spark.conf.get(key, None) for key in ROCKSDB_CONF}
    for key, value in ROCKSDB_CONF.items():
        spark.conf.set(key, value)
    yield spark
    for key, old in before.items():
        if old is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, old)


def test_running_totals_count_every_event_once_across_restarts_and_a_restore(
    spark: SparkSession, rocksdb: SparkSession, tmp_path: Path
) -> None:
    root, out, checkpoint = tmp_path / "log", tmp_path / "out", tmp_path / "ck"
    produce_account_events(str(root), "accounts", 2_000, ACCOUNTS, T0)
    EventLog(root).stream("accounts").append(0, [NewRecord(T0, account(3, ACCOUNTS), "n/a")])
    progress = _run(spark, root, out, checkpoint)
    assert current_totals(out) == expected_key_totals(root, "accounts")
    assert len(current_totals(out)) == ACCOUNTS
    assert cp.state_operators(checkpoint)[0].operator_name == "stateStoreSave"
    # What a drain reads to send no marker (tidegate_runtime/driver/directives.py::_needs_flush):
    # Spark reports no watermark for a plan without one.
    assert "watermark" not in (progress.get("eventTime") or {}), progress
    assert any(p.name.endswith(".changelog") for p in (checkpoint / "state").rglob("*"))

    # A restart on the checkpoint goes on from its state: more events for the same accounts.
    produce_account_events(str(root), "accounts", 1_500, ACCOUNTS, T0 + 60_000, first=2_000)
    _run(spark, root, out, checkpoint)
    assert current_totals(out) == expected_key_totals(root, "accounts")
    last = cp.latest_commit_batch(checkpoint)
    assert last is not None and last >= 4

    # A crash after batch N wrote its rows, before its commit: N runs again and replaces them.
    for lost in (checkpoint / "commits").glob(f"*{last}*"):  # N and Hadoop's .N.crc
        lost.unlink()
    shutil.rmtree(out / f"batch={last}")
    (out / f"batch={last + 1}").mkdir()  # and a stray later batch of a timeline now gone
    (out / f"batch={last + 1}" / "part-0.parquet").write_bytes(b"not a table")
    _run(spark, root, out, checkpoint)
    assert sorted(int(p.name.split("=")[1]) for p in out.glob("batch=*"))[-1] == last
    assert current_totals(out) == expected_key_totals(root, "accounts")

    # A restore to batch 1 (a snapshot taken then): the batches after it run again over other
    # boundaries, and the first of them removes what the abandoned ones wrote.
    snapshot = tmp_path / "snapshot"
    shutil.copytree(checkpoint, snapshot)
    for folder in ("offsets", "commits"):
        for batch in (snapshot / folder).iterdir():
            number = batch.name.removeprefix(".").removesuffix(".crc")
            if number.isdigit() and int(number) > 1:
                batch.unlink()
    produce_account_events(str(root), "accounts", 300, ACCOUNTS, T0 + 120_000, first=3_500)
    _run(spark, root, out, snapshot)
    assert current_totals(out) == expected_key_totals(root, "accounts")
    assert sum(events for events, _, _ in current_totals(out).values()) == 3_801
