"""A standby: a driver started before the run it replaces has ended. Its session is built and
its Python workers started; then it waits for go before its queries start, so the switch pays
none of that. Nothing before go touches a checkpoint: the job's code has not reached its
queries yet (``Runtime.from_spark`` is where it waits).

A standby started for an update by snapshot runs that update's dry run first, in this same
driver (``spark.tidegate.standby_dry_run_dir``): the job's code runs once on scratch copies of
the state (see dry_run.py), the verdict is written for the worker, and only then does the
standby wait for go; at go the job's code runs again, for real, in the same session. One driver
start serves both, and the second pass finds the exact plan's code generated, its source
planned and its state store classes loaded. A spare of a run with state does the same as a
dry run, on a copy of the run's own state, and removes the copy once done.

The wait is a long-poll on the control plane (``GET /runs/{id}/standby?wait=…``), which
answers the moment the worker says go (PostgreSQL NOTIFY), so no polling interval sits in
the switch. A standby whose go never comes exits by itself: released by its operation, or
past ``spark.tidegate.standby_timeout_seconds``.

Standard library and pyspark only: it runs inside Spark drivers."""

from __future__ import annotations

import logging
import runpy
import shutil
import sys
import time
import urllib.error
from collections.abc import Iterator
from typing import Any, Protocol

from tidegate_runtime import contract
from tidegate_runtime.checkpoints import checkpoint as cp

log = logging.getLogger("tidegate.runtime")

DEFAULT_TIMEOUT = 3600.0
LONG_POLL_SECONDS = 25

# The channel that gave this process its go after a dry run: the job's code then runs again
# and its second Runtime.from_spark goes on with it (the run token left the environment).
_went_with: Any = None


class StandbyReleased(Exception):
    """Go will not come: the driver exits, having touched nothing."""


class _Channel(Protocol):
    def standby(
        self, attempt: int, wait: int, spare: int | None = None
    ) -> contract.StandbyAnswer: ...


def _is_standby(spark: Any) -> bool:
    return (spark.conf.get(contract.STANDBY, "false") or "").lower() == "true"


def wait_if_standby(spark: Any, channel: _Channel, attempt: int) -> bool:
    """A driver submitted as a standby (or a spare) warms up and waits here for go; False
    (at once) for any other driver. True at once for the job's second pass after go."""
    if _went_with is not None:
        return True
    if not _is_standby(spark):
        return False
    warm_up(spark)
    _await_go_for(spark, channel, attempt)
    return True


def went_with() -> Any:
    """The channel of a go already given to this process (its job's code runs again), or None."""
    return _went_with


def dry_run_dir(spark: Any) -> str | None:
    """The scratch root when this driver is a standby that runs its update's dry run before it
    waits, and has not had its go yet."""
    if _went_with is not None or not _is_standby(spark):
        return None
    return spark.conf.get(contract.STANDBY_DRY_RUN_DIR, None) or None


def go_then_run_again(spark: Any, channel: _Channel, attempt: int) -> None:
    """After this standby's dry run (its verdict written): wait for go, then run the job's code
    again, for real, in this session. StandbyReleased when go does not come."""
    global _went_with
    if spark.conf.get(contract.SPARE, None):
        # A spare's dry run: no one reads its verdict, and its copy goes now.
        shutil.rmtree(spark.conf.get(contract.STANDBY_DRY_RUN_DIR, None) or "", ignore_errors=True)
    _await_go_for(spark, channel, attempt)
    _went_with = channel
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None) or sys.argv[0]
    log.info("standby: go after the dry run; the job's code runs again (%s)", path)
    runpy.run_path(path, run_name="__main__")


def _await_go_for(spark: Any, channel: _Channel, attempt: int) -> None:
    conf = spark.conf
    spare = conf.get(contract.SPARE, None)
    timeout = float(conf.get(contract.STANDBY_TIMEOUT_SECONDS, None) or DEFAULT_TIMEOUT)
    await_go(channel, attempt, timeout, spare=int(spare) if spare else None)


def warm_up(spark: Any) -> None:
    """Start, before go, what the first batch would otherwise wait for (best effort: a step
    that fails only costs the switch its time, so it is logged and skipped):
    - the session's Python data source manager (its first use runs a Python process to list
      the installed sources: about 2 s here), by registering the event-log source;
    - on every executor slot a Python worker that has read a Python data source's Arrow
      batches (pyarrow imported), and one for plain Python functions;
    - the JIT's first pass over an aggregation's generated code;
    - Spark's file writer and Parquet's (with its snappy codec) on every executor slot and
      in the driver, into the dry run's scratch folder, then removed: a sink that writes
      files otherwise pays their first use in the first batch (about 0.9 s here)."""
    from tidegate_runtime.sources.eventlog_source import (
        EventLogDataSource,  # pyarrow: only when warming
    )

    sc = spark.sparkContext
    slots = max(1, int(sc.defaultParallelism))
    steps = [
        ("data sources", lambda: spark.dataSource.register(EventLogDataSource)),
        ("python", lambda: sc.parallelize(range(slots), slots).map(lambda x: x + 1).count()),
        ("arrow source", lambda: _read_warm_up_source(spark, slots)),
        (
            "aggregation",
            lambda: (
                spark.range(slots * 100).selectExpr("id % 7 AS k").groupBy("k").count().collect()
            ),
        ),
        ("file writer", lambda: _write_warm_up_files(spark, slots)),
    ]
    for name, step in steps:
        try:
            step()
        except Exception as exc:
            log.warning("standby warm-up step %s failed (skipped): %s", name, exc)


def _write_warm_up_files(spark: Any, slots: int) -> None:
    """A few rows written as Parquet by every slot into the dry run's scratch folder (every
    executor reaches it: it lies beside the checkpoints), then removed. A standby without a
    scratch folder of its own writes nothing."""
    scratch = spark.conf.get(contract.STANDBY_DRY_RUN_DIR, None)
    if not scratch:
        return
    target = scratch.rstrip("/") + "/.tidegate-warm-up-files"
    try:
        rows = spark.range(0, slots * 10, 1, slots).selectExpr("id", "CAST(id AS STRING) AS s")
        rows.write.mode("overwrite").parquet(target)
    finally:
        shutil.rmtree(cp._local(target), ignore_errors=True)


def _read_warm_up_source(spark: Any, slots: int) -> None:
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    class WarmUpReader(DataSourceReader):
        def partitions(self) -> list[InputPartition]:
            return [InputPartition(i) for i in range(slots)]

        def read(self, partition: InputPartition) -> Iterator[Any]:
            import pyarrow as pa

            yield pa.RecordBatch.from_pydict({"id": [partition.value]})

    class WarmUp(DataSource):
        @classmethod
        def name(cls) -> str:
            return "tidegate_warm_up"

        def schema(self) -> str:
            return "id long"

        def reader(self, schema: Any) -> DataSourceReader:
            return WarmUpReader()

    spark.dataSource.register(WarmUp)
    spark.read.format("tidegate_warm_up").load().collect()


def await_go(
    channel: _Channel,
    attempt: int,
    timeout: float = DEFAULT_TIMEOUT,
    *,
    spare: int | None = None,
    clock: Any = time.monotonic,
    sleep: Any = time.sleep,
) -> contract.StandbyAnswer:
    """Long-poll until go (returned) or release (StandbyReleased). The control plane being
    briefly unreachable does not end the wait; the timeout does."""
    deadline = clock() + timeout
    pause = 0.5
    while True:
        left = deadline - clock()
        if left <= 0:
            raise StandbyReleased(
                f"no go within {timeout:.0f}s ({contract.STANDBY_TIMEOUT_SECONDS}): this standby "
                "exits without having touched a checkpoint"
            )
        try:
            wait = max(1, min(LONG_POLL_SECONDS, int(left)))
            answer = (
                channel.standby(attempt, wait, spare) if spare else channel.standby(attempt, wait)
            )
        except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as exc:
            if isinstance(exc, urllib.error.HTTPError) and exc.code < 500:
                raise
            # A busy API (503) says when to ask again; otherwise back off.
            after = _retry_after(exc)
            log.warning("standby: the control plane did not answer (%s); asking again", exc)
            sleep(min(pause if after is None else after, max(0.0, deadline - clock())))
            pause = min(pause * 2, 5.0)
            continue
        pause = 0.5
        if answer.get("go"):
            return answer
        if answer.get("stop"):
            raise StandbyReleased(
                f"released without go: {answer.get('reason') or 'its update ended'}; this "
                "standby exits without having touched a checkpoint"
            )


def _retry_after(exc: BaseException) -> float | None:
    """Seconds from an HTTP error's Retry-After (seconds form), at most a minute."""
    headers = getattr(exc, "headers", None)
    value = headers.get("Retry-After") if headers is not None else None
    try:
        return min(max(float(value), 0.0), 60.0) if value is not None else None
    except ValueError:
        return None
