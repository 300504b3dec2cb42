"""Stopping a query at a batch boundary, between two batches (Spark has no graceful stop of its
own), and the driver's fence once its queries have stopped there. What decides to stop is
directives.py (a stop directive or a drain's end)."""

from __future__ import annotations

import logging
import re
import time

from pyspark import SparkContext
from pyspark.sql import SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from tidegate_runtime.checkpoints import checkpoint as cp
from tidegate_runtime.driver.channel import ControlClient

log = logging.getLogger("tidegate.runtime")


def _readable(checkpoint: str) -> bool:
    """A checkpoint to read: a folder that exists, or one in object storage (read through the
    driver's Hadoop file system; a missing one reads as having no batch)."""
    return cp.is_object_store(checkpoint) or cp._local(checkpoint).is_dir()


def _batches_paired(checkpoint: str | None) -> bool:
    """No batch planned but not committed (true when there is nothing to tell)."""
    if not checkpoint or not _readable(checkpoint):
        return True
    try:
        return cp.latest_offsets_batch(checkpoint) == cp.latest_commit_batch(checkpoint)
    except (OSError, cp.CheckpointError):
        return True


def stop_at_batch_boundary(
    query: StreamingQuery, timeout: float = 120.0, checkpoint: str | None = None
) -> None:
    """Stop ``query`` between batches, so ``offsets/N`` and ``commits/N`` stay paired and the
    next start re-runs nothing. Spark has no graceful stop: ``stop()`` interrupts a running
    batch. So the query is stopped when it is seen between batches (twice, not in the
    instant a trigger begins), or, once its batch runs Spark jobs, told to end when that
    batch has committed: Spark starts no batch after that. (Waiting for a gap alone never
    stopped a query whose batches take longer than its trigger: it took the whole timeout,
    then interrupted a batch.) Told while it plans a batch, Spark drops that batch
    (``offsets/N``, no commit; re-run by the next start, as after any interrupt), so a batch
    that runs no Spark job is told only halfway through the timeout; past it, the query is
    stopped anyway."""
    started = time.monotonic()
    ending = told = False
    gaps = 0
    while time.monotonic() - started < timeout:
        if not (_thread_alive(query) if ending else query.isActive):
            break  # ended (or failed: the runtime reports its exception)
        gaps = gaps + 1 if _idle(query, checkpoint) else 0
        if gaps >= 2:
            break
        if not told:
            running = _batch_running(query, checkpoint)
            if running or time.monotonic() - started > timeout / 2:
                told, ending = True, _end_after_this_batch(query)
                why = "its batch runs" if running else f"no gap in {timeout / 2:.0f}s"
                if ending:
                    log.info("query %s: told to end after this batch (%s)", query.name, why)
        time.sleep(0.02)
    else:
        log.warning(
            "query %s still in a batch after %.0fs; stopping it anyway", query.name, timeout
        )
    query.stop()


def _idle(query: StreamingQuery, checkpoint: str | None) -> bool:
    """Between batches: no trigger running and no batch planned but not committed."""
    try:
        active = query.status.get("isTriggerActive", False)
    except Exception:  # an ended query has no status to give
        return True
    return not active and _batches_paired(checkpoint)


def _batch_running(query: StreamingQuery, checkpoint: str | None) -> bool:
    """The planned batch (``offsets/N``, no ``commits/N``) is past planning: a Spark job of
    batch N of this run is running (its description names both; Spark's
    ``StreamExecution.getBatchDescriptionString``). The jobs are read first and the commit
    after: Spark's job list lags, and a job of batch N seen after N committed would tell
    the query while it plans N+1."""
    if not checkpoint or not _readable(checkpoint):
        return False
    try:
        batch = cp.latest_offsets_batch(checkpoint)
        context = SparkContext._active_spark_context
        if batch is None or context is None:  # no SparkContext here: Spark Connect
            return False
        store = context._jsc.sc().statusStore()  # type: ignore[union-attr]
        mark = re.compile(rf"runId = {query.runId}\b.*\bbatch = {batch}\b", re.S)
        seen = False
        for job in context.statusTracker().getActiveJobsIds():
            try:
                description = store.job(job).description()
            except Exception:  # ended and gone from the store since the list was read
                continue
            if description.isDefined() and mark.search(str(description.get())):
                seen = True
                break
        return seen and cp.latest_commit_batch(checkpoint) != batch
    except (OSError, cp.CheckpointError):
        return False


def _end_after_this_batch(query: StreamingQuery) -> bool:
    """Set the query's state to TERMINATED without an interrupt: Spark's micro-batch loop
    checks it before each trigger (and, once, after planning a batch: why this waits for
    the batch's jobs), so the batch under way completes and no other starts. No public API
    does this: ``state`` is a field of Spark's ``StreamExecution`` that py4j reaches as a
    method; the class path is that of Spark 4.1+. False where any of it is missing (Spark
    Connect, another Spark): then only a gap between batches stops the query gracefully."""
    try:
        jvm = SparkContext._jvm
        if jvm is None:
            raise RuntimeError("no JVM in this process")
        states = jvm.org.apache.spark.sql.execution.streaming.runtime
        terminated = getattr(getattr(states, "TERMINATED$"), "MODULE$")
        state = query._jsq.streamingQuery().state()  # type: ignore[attr-defined]
        current = state.get()
        return str(current.toString()) == "ACTIVE" and bool(
            state.compareAndSet(current, terminated)
        )
    except Exception as exc:  # any layout we do not know: the gap
        log.info("query %s: no soft stop (%r); waiting for a gap between batches", query.name, exc)
        return False


def _thread_alive(query: StreamingQuery) -> bool:
    try:
        return bool(query._jsq.streamingQuery().queryExecutionThread().isAlive())  # type: ignore[attr-defined]
    except Exception:  # not reachable: assume it runs, the gap will tell
        return True


def fence(spark: SparkSession, client: ControlClient, attempt: int) -> None:
    """Stopped by the control plane (or drained): stop the Spark context as well, so no
    executor and no state-store maintenance can write a checkpoint again, then say so.
    The next driver on these checkpoints gets go on this report instead of waiting for
    this process and its JVM to exit and the backend to notice.

    The JVM's context is stopped first and the report sent at once; PySpark's own stop
    comes after it: it only tidies this process (its accumulator server takes half a
    second to shut down, the poll interval of Python's socketserver), and the next
    driver's go must not wait for that."""
    try:
        tidy = _stop_jvm_context(spark)
    except Exception as exc:  # not fenced after all: the backend must see it exit
        log.warning("could not stop the Spark context: %s", exc)
        return
    try:
        client.fenced(attempt)
    except Exception as exc:  # the run ends anyway, when the backend sees this exit
        log.warning("could not report the fence: %s", exc)
    if tidy:
        try:
            spark.stop()  # the JVM's part is done: Python's servers and the gateway's session
        except Exception as exc:
            log.warning("could not tidy the stopped Spark session: %s", exc)


def _stop_jvm_context(spark: SparkSession) -> bool:
    """Stop the session's SparkContext in the JVM (executors released, schedulers and
    state stores shut); True when PySpark's own stop is still to come. A session with no
    JVM context in this process (Spark Connect) is stopped whole."""
    try:
        jsc = spark.sparkContext._jsc
    except Exception:  # Spark Connect has no SparkContext
        jsc = None
    if jsc is None:
        spark.stop()
        return False
    jsc.stop()
    return True
