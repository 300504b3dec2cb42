"""Per-query supervision (tidegate_runtime/driver/restart_policy.py): the policy's arithmetic, and
on a local SparkSession a failing query restarted alone on its checkpoint while the driver's other
query runs on untouched, its output exact."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from tidegate_runtime.checkpoints import checkpoint as cp
from tidegate_runtime.driver.restart_policy import RestartPolicy, Supervisor
from tidegate_runtime.driver.runtime import Runtime

POLICY = {
    "enabled": True,
    "min_backoff_seconds": 1,
    "max_backoff_seconds": 5,
    "random_factor": 0,
    "max_attempts": 3,
    "stable_period_seconds": 60,
}


def test_backoff_doubles_up_to_its_ceiling_and_gives_up_past_max_attempts() -> None:
    supervisor = Supervisor(RestartPolicy.from_directives(POLICY))
    supervisor.started("q", 0.0)
    waits = [supervisor.failed("q", now).restart_in for now in (1.0, 2.0, 3.0)]
    assert waits == [1.0, 2.0, 4.0]
    assert supervisor.waiting("q") and supervisor.due(3.5) == [] and supervisor.due(7.0) == ["q"]
    given_up = supervisor.failed("q", 8.0)
    assert given_up.failures == 4 and given_up.restart_in is None


def test_a_query_up_for_the_stable_period_counts_its_failures_from_zero() -> None:
    supervisor = Supervisor(RestartPolicy.from_directives(POLICY))
    supervisor.started("q", 0.0)
    assert supervisor.failed("q", 1.0).failures == 1
    supervisor.started("q", 2.0)
    assert supervisor.failed("q", 3.0).failures == 2
    supervisor.started("q", 4.0)
    verdict = supervisor.failed("q", 64.0)  # up 60 s: healthy, a new series
    assert verdict.failures == 1 and verdict.restart_in == 1.0


def test_without_a_policy_or_disabled_a_failure_ends_the_driver() -> None:
    assert Supervisor().failed("q", 0.0).restart_in is None  # unmanaged: as before
    off = Supervisor(RestartPolicy.from_directives({**POLICY, "enabled": False}))
    assert off.failed("q", 0.0).restart_in is None
    ceiling = RestartPolicy.from_directives({**POLICY, "random_factor": 0.5})
    assert all(1.0 <= ceiling.backoff(1) <= 1.5 for _ in range(50))
    assert ceiling.backoff(30) <= 7.5


def test_a_drain_hurries_the_waiting_queries_and_a_long_series_does_not_overflow() -> None:
    supervisor = Supervisor(RestartPolicy.from_directives(POLICY))
    supervisor.failed("a", 0.0)
    supervisor.failed("b", 0.0)
    supervisor.hurry()
    assert sorted(supervisor.due(0.0)) == ["a", "b"]
    supervisor.started("a", 1.0)
    assert supervisor.any_waiting and not supervisor.waiting("a")
    unlimited = RestartPolicy.from_directives({**POLICY, "max_attempts": None})
    assert unlimited.backoff(5000) == 5.0  # the ceiling, not an OverflowError


def _fails_once(marker: str) -> Any:
    def check(value: int) -> int:
        try:  # the first task to get here fails its batch; every later one passes
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            return value
        raise RuntimeError("tidegate-test: failing one batch on purpose")

    return F.udf(check, "long")


@pytest.mark.spark
def test_a_failed_query_restarts_alone_and_its_output_is_exact(
    spark: SparkSession, tmp_path: Path
) -> None:
    runtime = Runtime(spark, poll_seconds=0.2)
    runtime.supervisor = Supervisor(
        RestartPolicy.from_directives({**POLICY, "min_backoff_seconds": 0.5})
    )
    rows = spark.readStream.format("rate").option("rowsPerSecond", 20).load()
    marker = str(tmp_path / "failed-once")
    writer = {
        name: rows.select(column.alias("v")).writeStream.format("parquet")
        for name, column in (
            ("steady", F.col("value")),
            ("flaky", _fails_once(marker)(F.col("value"))),
        )
    }
    for name in ("steady", "flaky"):
        runtime.start(
            name,
            writer[name].option("path", str(tmp_path / name)),
            trigger="1 second",
            checkpoint=str(tmp_path / f"cp-{name}"),
        )
    steady_id, flaky_id = runtime.queries["steady"].runId, runtime.queries["flaky"].runId
    failures: list[BaseException] = []

    def run() -> None:
        try:
            runtime.await_termination()
        except BaseException as exc:
            failures.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.monotonic() + 120
    while runtime.queries["flaky"].runId == flaky_id or not runtime.queries["flaky"].isActive:
        assert thread.is_alive(), failures
        assert time.monotonic() < deadline, "the failed query was never restarted"
        time.sleep(0.1)
    assert os.path.exists(marker)
    restarted_at = cp.latest_commit_batch(str(tmp_path / "cp-flaky"))
    while (cp.latest_commit_batch(str(tmp_path / "cp-flaky")) or -1) <= (restarted_at or -1) + 1:
        assert time.monotonic() < deadline, "the restarted query committed nothing"
        time.sleep(0.1)
    # The other query was never touched: the same query, running all along.
    assert runtime.queries["steady"].runId == steady_id and runtime.queries["steady"].isActive
    runtime.stop_all()
    thread.join(60)
    assert not thread.is_alive() and failures == []

    values = [r.v for r in spark.read.parquet(str(tmp_path / "flaky")).collect()]
    assert len(values) == len(set(values)) > 0  # the failed batch ran again, written once
    assert sorted(values) == list(range(len(values)))  # and nothing was skipped


@pytest.mark.spark
def test_a_job_of_one_query_restarts_it_too(spark: SparkSession, tmp_path: Path) -> None:
    """With no other query running, the failure is still seen and the query restarted (the
    loop once ended when no query was active, and raised)."""
    runtime = Runtime(spark, poll_seconds=0.2)
    runtime.supervisor = Supervisor(
        RestartPolicy.from_directives({**POLICY, "min_backoff_seconds": 0.5})
    )
    rows = spark.readStream.format("rate").option("rowsPerSecond", 20).load()
    marker = str(tmp_path / "failed-once")
    runtime.start(
        "only",
        rows.select(_fails_once(marker)(F.col("value")).alias("v"))
        .writeStream.format("parquet")
        .option("path", str(tmp_path / "only")),
        trigger="1 second",
        checkpoint=str(tmp_path / "cp-only"),
    )
    first = runtime.queries["only"].runId
    failures: list[BaseException] = []

    def run() -> None:
        try:
            runtime.await_termination()
        except BaseException as exc:
            failures.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.monotonic() + 120
    while runtime.queries["only"].runId == first or not runtime.queries["only"].isActive:
        assert thread.is_alive(), failures
        assert time.monotonic() < deadline, "the failed query was never restarted"
        time.sleep(0.1)
    runtime.stop_all()
    thread.join(60)
    assert not thread.is_alive() and failures == []
