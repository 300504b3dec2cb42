"""A standby: a driver started before the run it replaces has ended. Its session is built and
its Python workers started; then it waits for go before its queries start, so the switch pays
none of that. Nothing before go touches a checkpoint: the job's code has not reached its
queries yet (``Runtime.from_spark`` is where it waits).

The wait is a long-poll on the control plane (``GET /runs/{id}/standby?wait=…``), which
answers the moment the worker says go (PostgreSQL NOTIFY), so no polling interval sits in
the switch. A standby whose go never comes exits by itself: released by its operation, or
past ``spark.tidegate.standby_timeout_seconds``.

Standard library and pyspark only: it runs inside Spark drivers."""

from __future__ import annotations

import logging
import time
import urllib.error
from collections.abc import Iterator
from typing import Any, Protocol

log = logging.getLogger("tidegate.runtime")

STANDBY_CONF = "spark.tidegate.standby"
STANDBY_TIMEOUT_CONF = "spark.tidegate.standby_timeout_seconds"
# A spare (the run's next attempt, started ahead): its number, which its go is given to.
SPARE_CONF = "spark.tidegate.spare"
DEFAULT_TIMEOUT = 3600.0
LONG_POLL_SECONDS = 25


class StandbyReleased(Exception):
    """Go will not come: the driver exits, having touched nothing."""


class _Channel(Protocol):
    def standby(self, attempt: int, wait: int, spare: int | None = None) -> dict[str, Any]: ...


def wait_if_standby(spark: Any, channel: _Channel, attempt: int) -> bool:
    """A driver submitted as a standby (or a spare) warms up and waits here for go; False
    (at once) for any other driver."""
    conf = spark.conf
    if (conf.get(STANDBY_CONF, "false") or "").lower() != "true":
        return False
    warm_up(spark)
    spare = conf.get(SPARE_CONF, None)
    timeout = float(conf.get(STANDBY_TIMEOUT_CONF, None) or DEFAULT_TIMEOUT)
    await_go(channel, attempt, timeout, spare=int(spare) if spare else None)
    return True


def warm_up(spark: Any) -> None:
    """Start, before go, what the first batch would otherwise wait for (best effort: a step
    that fails only costs the switch its time, so it is logged and skipped):
    - the session's Python data source manager (its first use runs a Python process to list
      the installed sources: about 2 s here), by registering the event-log source;
    - on every executor slot a Python worker that has read a Python data source's Arrow
      batches (pyarrow imported), and one for plain Python functions;
    - the JIT's first pass over an aggregation's generated code."""
    from tidegate_runtime.source import EventLogDataSource  # pyarrow: only when warming

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
    ]
    for name, step in steps:
        try:
            step()
        except Exception as exc:
            log.warning("standby warm-up step %s failed (skipped): %s", name, exc)


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
) -> dict[str, Any]:
    """Long-poll until go (returned) or release (StandbyReleased). The control plane being
    briefly unreachable does not end the wait; the timeout does."""
    deadline = clock() + timeout
    pause = 0.5
    while True:
        left = deadline - clock()
        if left <= 0:
            raise StandbyReleased(
                f"no go within {timeout:.0f}s ({STANDBY_TIMEOUT_CONF}): this standby exits "
                "without having touched a checkpoint"
            )
        try:
            wait = max(1, min(LONG_POLL_SECONDS, int(left)))
            answer = (
                channel.standby(attempt, wait, spare) if spare else channel.standby(attempt, wait)
            )
        except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as exc:
            if isinstance(exc, urllib.error.HTTPError) and exc.code < 500:
                raise
            log.warning("standby: the control plane did not answer (%s); asking again", exc)
            sleep(min(pause, max(0.0, deadline - clock())))
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
