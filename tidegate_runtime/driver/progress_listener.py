"""The runtime's streaming listener: each query's progress to the control plane.

Standard library and pyspark only: it runs inside Spark drivers."""

from __future__ import annotations

from typing import Any

from pyspark.sql.streaming.listener import StreamingQueryListener

from tidegate_runtime import contract
from tidegate_runtime.driver.channel import progress_report


class ProgressReporter(StreamingQueryListener):
    """Queues progress; a background thread posts it, so Spark's listener bus never waits
    on the network."""

    def __init__(self, runtime: Any) -> None:
        self.runtime = runtime

    def onQueryStarted(self, event: Any) -> None:
        pass

    def onQueryProgress(self, event: Any) -> None:
        name = event.progress.name
        if name in self.runtime.queries:
            self.runtime._outbox.put(progress_report(name, event.progress))

    def onQueryIdle(self, event: Any) -> None:
        # No new input: the query started and waits. Spark posts no progress then, so say
        # so (an update verifies a new run by its first batch, or by this when idle).
        for name, query in list(self.runtime.queries.items()):
            if str(query.id) == str(event.id):
                last = query.lastProgress
                batch = int(last["batchId"]) if last and "batchId" in last else 0
                idle: contract.ProgressReport = {"query": name, "batch_id": batch, "idle": True}
                self.runtime._outbox.put(idle)

    def onQueryTerminated(self, event: Any) -> None:
        # Events arrive in order: after this one, every progress of the query has been seen.
        # By run: a query restarted alone keeps its id (its checkpoint's), not its run id.
        with self.runtime._reported:
            self.runtime._terminated.add(str(event.runId))
            self.runtime._reported.notify_all()
