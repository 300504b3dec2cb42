"""Stopping a query between batches (Spark has no graceful stop of its own), and the driver's
fence once its queries have stopped."""

from __future__ import annotations

import logging
import os
import time

from pyspark.sql import SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from tidegate_runtime import checkpoint as cp
from tidegate_runtime.channel_client import ControlClient

log = logging.getLogger("tidegate.runtime")


def _batches_paired(checkpoint: str | None) -> bool:
    """No batch planned but not committed (true when there is nothing to tell)."""
    if not checkpoint or not os.path.isdir(checkpoint):
        return True
    try:
        return cp.latest_offsets_batch(checkpoint) == cp.latest_commit_batch(checkpoint)
    except (OSError, cp.CheckpointError):
        return True


def has_commit(checkpoint: str | None) -> bool:
    return (
        bool(checkpoint)
        and os.path.isdir(str(checkpoint))
        and (cp.latest_commit_batch(str(checkpoint)) is not None)
    )


def stop_at_batch_boundary(
    query: StreamingQuery, timeout: float = 120.0, checkpoint: str | None = None
) -> None:
    """Stop ``query`` between batches. Spark has no graceful stop: ``stop()`` interrupts a
    running batch, so wait until no trigger is active and, given the checkpoint, until the
    latest planned batch (``offsets/N``) is committed (``commits/N``)."""
    deadline = time.monotonic() + timeout
    while query.isActive and time.monotonic() < deadline:
        status = query.status
        if not status.get("isTriggerActive", False) and _batches_paired(checkpoint):
            query.stop()
            return
        time.sleep(0.05)
    if query.isActive:
        log.warning(
            "query %s still in a batch after %.0fs; stopping it anyway", query.name, timeout
        )
        query.stop()


def fence(spark: SparkSession, client: ControlClient, attempt: int) -> None:
    """Stopped by the control plane (or drained): stop the Spark session as well, so no
    executor and no state-store maintenance can write a checkpoint again, then say so.
    The next driver on these checkpoints gets go on this report instead of waiting for
    this process and its JVM to exit and the backend to notice."""
    try:
        spark.stop()
    except Exception as exc:  # not fenced after all: the backend must see it exit
        log.warning("could not stop the Spark session: %s", exc)
        return
    try:
        client.fenced(attempt)
    except Exception as exc:  # the run ends anyway, when the backend sees this exit
        log.warning("could not report the fence: %s", exc)
