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
from typing import Any, Protocol

log = logging.getLogger("tidegate.runtime")

STANDBY_CONF = "spark.tidegate.standby"
STANDBY_TIMEOUT_CONF = "spark.tidegate.standby_timeout_seconds"
DEFAULT_TIMEOUT = 3600.0
LONG_POLL_SECONDS = 25


class StandbyReleased(Exception):
    """Go will not come: the driver exits, having touched nothing."""


class _Channel(Protocol):
    def standby(self, attempt: int, wait: int) -> dict[str, Any]: ...


def warm_up(spark: Any) -> None:
    """Start what the first batch would otherwise wait for: a Python worker on every executor
    slot and the JIT's first pass over a small plan."""
    sc = spark.sparkContext
    slots = max(1, int(sc.defaultParallelism))
    sc.parallelize(range(slots), slots).map(lambda x: x + 1).count()
    spark.range(slots).selectExpr("id * 2 AS doubled").groupBy().sum("doubled").collect()


def await_go(
    channel: _Channel,
    attempt: int,
    timeout: float = DEFAULT_TIMEOUT,
    *,
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
            answer = channel.standby(attempt, max(1, min(LONG_POLL_SECONDS, int(left))))
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
