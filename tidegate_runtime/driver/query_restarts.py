"""The runtime restarting a failed query alone, as restart_policy.py's arithmetic says (PSTL's
per-query supervision): after the
job's backoff, on its checkpoint, while the driver's other queries run on; the driver ends
only when a query has used up its restarts. Each failure is reported to the control plane.

``Restarter`` is a part of ``Runtime`` (tidegate_runtime/driver/runtime.py), kept apart to be read
alone, as ``Drainer`` is: the policy arithmetic is ``Supervisor``
(tidegate_runtime/driver/restart_policy.py); the annotations below name what it uses of the
runtime's."""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING

from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.streaming.readwriter import DataStreamWriter

from tidegate_runtime import contract
from tidegate_runtime.driver.channel import ControlClient
from tidegate_runtime.driver.restart_policy import Supervisor

log = logging.getLogger("tidegate.runtime")

ERROR_CHARS = 4000  # of a failed query's error, in its report (a JVM trace runs to pages)


class Restarter:
    client: ControlClient | None
    attempt: int
    queries: dict[str, StreamingQuery]
    supervisor: Supervisor
    _writers: dict[str, DataStreamWriter]
    _stop: threading.Event

    if TYPE_CHECKING:  # Drainer's, Runtime's

        @property
        def _draining(self) -> bool: ...

        def checkpoint_for(self, name: str) -> str | None: ...

        def _launch(self, name: str, checkpoint: str | None) -> StreamingQuery: ...

    def _supervise(self) -> None:
        """Restart each failed query alone after its backoff, or end the driver with the
        error of one that has used up its restarts. A drain needs every query: the waiting
        ones restart at once."""
        now = time.monotonic()
        for name, query in list(self.queries.items()):
            error = None if query.isActive else query.exception()
            if error is None or self.supervisor.waiting(name):
                continue
            restart_in = self._count_failure(name, error, now)
            log.warning(
                "query %s failed; restarting it alone in %.1fs: %s",
                name,
                restart_in,
                str(error).splitlines()[0] if str(error) else type(error).__name__,
            )
        if self._draining:
            self.supervisor.hurry()
        if self._stop.is_set():
            return
        for name in self.supervisor.due(now):
            if self.queries[name].isActive:  # started meanwhile (a drain's bounded restart)
                self.supervisor.started(name, now)
                continue
            try:
                self._launch(name, self.checkpoint_for(name))  # on its checkpoint
            except Exception as exc:  # a failed restart is one more failure
                self._count_failure(name, exc, now)
                continue
            log.info("query %s restarted on its checkpoint", name)

    def _count_failure(self, name: str, error: BaseException, now: float) -> float:
        """One more failure of ``name``, reported; the seconds until its restart, or the
        error raised (ending the driver) when it has used up its restarts."""
        verdict = self.supervisor.failed(name, now)
        self._report_failure(name, error, verdict.failures, verdict.restart_in)
        if verdict.restart_in is None:
            raise error
        return verdict.restart_in

    def _report_failure(
        self, name: str, error: BaseException, failures: int, restart_in: float | None
    ) -> None:
        if self.client is None:
            return
        report: contract.QueryFailureReport = {
            "attempt": self.attempt,
            "query": name,
            "failures": failures,
            "error": str(error)[:ERROR_CHARS] or type(error).__name__,
            "restart_in_seconds": None if restart_in is None else round(restart_in, 3),
        }
        try:
            self.client.query_failed(report)
        except Exception as exc:  # the restart goes on; the control plane hears the next one
            log.warning("could not report the failure of query %s: %s", name, exc)
