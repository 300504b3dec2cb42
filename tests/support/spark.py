"""One local-mode SparkSession per test session (the ``spark`` fixture), and an event log to
feed it. A fixture plugin of ``tests/conftest.py``."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from tidegate_runtime.sources.eventlog import EventLog, NewRecord, Stream
from tidegate_runtime.sources.eventlog_source import EventLogDataSource


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    # Python workers (the data source runs in them) need this venv's pyarrow.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    session = (
        SparkSession.builder.master("local[2]")
        .appName("tidegate-runtime-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "768m")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    session.dataSource.register(EventLogDataSource)
    yield session
    session.stop()


@pytest.fixture
def log(tmp_path: Path) -> EventLog:
    return EventLog(tmp_path / "log")


def fill(stream: Stream, partition: int, n: int, *, start_ts: int = 0, step: int = 1000) -> None:
    """Append ``n`` records with increasing event times to one partition."""
    first = stream.latest_offsets()[partition]
    stream.append(
        partition,
        [
            NewRecord(start_ts + (first + i) * step, f"k{(first + i) % 3}", str(first + i))
            for i in range(n)
        ],
    )
