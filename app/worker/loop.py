"""The worker process: claims operations (FOR UPDATE SKIP LOCKED, woken by LISTEN/NOTIFY),
keeps their leases alive, and supervises every active run."""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from sqlalchemy import text

from app.audit import service as audit
from app.core.db import transaction
from app.core.liveness import LIVE_WORKER
from app.core.notify import Notifier
from app.operations import state as op_state
from app.operations.service import NOTIFY_CHANNEL
from app.runs.service import RUN_CHANNEL
from app.snapshots.retention import retention_sweep
from app.worker.core.context import WorkerContext
from app.worker.execute import execute
from app.worker.reconcile.run import due_runs
from app.worker.reconcile.sweep import sweep

log = logging.getLogger(__name__)

# Threads of one worker waiting on its LISTEN connection: its loop and one per operation.
MAX_WAITERS = 1_000

# One row per worker, one statement per beat: what /metrics reports as live workers.
BEAT = text(
    """
    insert into worker_heartbeats (worker_id, started_at, heartbeat_at, every_seconds,
                                   lease_renewals, stopped_at)
    values (:me, now(), now(), :every, :renewed, null)
    on conflict (worker_id) do update set heartbeat_at = now(), every_seconds = :every,
        lease_renewals = worker_heartbeats.lease_renewals + :renewed, stopped_at = null
    """
)
STOPPED = text("update worker_heartbeats set stopped_at = now() where worker_id = :me")
LIVE = text(f"select worker_id from worker_heartbeats where {LIVE_WORKER} order by worker_id")
# The sweeps share the runs out among the live workers; every this many sweeps a worker
# passes over all of them, so a worker that died unseen leaves no run unwatched for long.
FULL_SWEEP_EVERY = 5


# How often the loop applies every job's snapshot retention (max_age expires between exports).
RETENTION_EVERY_SECONDS = 60.0


class Worker:
    def __init__(
        self,
        ctx: WorkerContext,
        *,
        concurrency: int = 4,
        retention_every: float = RETENTION_EVERY_SECONDS,
    ) -> None:
        self.ctx = ctx
        self.retention_every = retention_every
        self._retention_due = 0.0
        self._sweeps = 0
        self.pool = ThreadPoolExecutor(concurrency, thread_name_prefix="op")
        self.concurrency = concurrency
        self.active: dict[int, Future[None]] = {}
        self.stopping = threading.Event()

    def claim(self) -> int | None:
        return op_state.claim(self.ctx.factory, self.ctx.worker_id, self.ctx.lease_seconds)

    def renew_leases(self) -> int:
        """Extends the leases of the operations this worker runs; returns how many."""
        return op_state.renew(
            self.ctx.factory, self.ctx.worker_id, list(self.active), self.ctx.lease_seconds
        )

    @property
    def beat_every(self) -> float:
        return self.ctx.lease_seconds / 3

    def beat(self, renewed: int = 0) -> None:
        with transaction(self.ctx.factory) as session:
            session.execute(
                BEAT, {"me": self.ctx.worker_id, "every": self.beat_every, "renewed": renewed}
            )

    def _run_op(self, op_id: int) -> None:
        try:
            execute(self.ctx, op_id)
        except Exception:  # e.g. the store is down, so not even the retry could be recorded
            log.exception("operation %s: error; it will be retried when its lease expires", op_id)

    def fill(self) -> None:
        self.active = {k: f for k, f in self.active.items() if not f.done()}
        while len(self.active) < self.concurrency and not self.stopping.is_set():
            op_id = self.claim()
            if op_id is None:
                return
            log.info("claimed operation %s", op_id)
            self.active[op_id] = self.pool.submit(self._run_op, op_id)

    def supervise(self) -> None:
        """One pass over this worker's share of the due runs (all of them every
        ``FULL_SWEEP_EVERY`` sweeps), by the reconciler thread (the one actor on runs)."""
        due = due_runs(self.ctx)
        self._sweeps += 1
        if self._sweeps % FULL_SWEEP_EVERY:
            due = self.share(due)
        sweep(self.ctx, due)

    def share(self, run_ids: list[int]) -> list[int]:
        """This worker's runs among the live workers (by run id modulo their number): each
        run is swept by one worker, not by all. All of them while it is not live yet."""
        with self.ctx.factory() as session:
            live = list(session.scalars(LIVE))
        if self.ctx.worker_id not in live:
            return run_ids
        mine, count = live.index(self.ctx.worker_id), len(live)
        return [r for r in run_ids if r % count == mine]

    def retention(self, *, force: bool = False) -> None:
        """Every ``retention_every`` seconds: snapshot retention of every job, then gc; then
        audit events past TIDEGATE_AUDIT_RETENTION."""
        now = time.monotonic()
        if not force and now < self._retention_due:
            return
        self._retention_due = now + self.retention_every
        try:
            retention_sweep(self.ctx.factory, self.ctx.settings)
        except Exception:
            log.exception("snapshot retention failed; will retry")
        try:
            audit.sweep(self.ctx.factory, self.ctx.settings.audit_retention_delta)
        except Exception:
            log.exception("audit retention failed; will retry")

    def _heartbeat(self) -> None:
        while not self.stopping.wait(self.beat_every):
            try:
                self.beat(self.renew_leases())
            except Exception as exc:
                log.warning("lease renewal failed: %s", exc)

    def mark_stopped(self) -> None:
        with transaction(self.ctx.factory) as session:
            session.execute(STOPPED, {"me": self.ctx.worker_id})

    def _quietly(self, action: Callable[[], None]) -> None:
        try:
            action()
        except Exception as exc:  # the store may be down: the heartbeat thread beats later
            log.warning("worker heartbeat failed: %s", exc)

    def serve(self) -> None:
        self._quietly(self.beat)
        threading.Thread(target=self._heartbeat, name="heartbeat", daemon=True).start()
        log.info("worker %s started", self.ctx.worker_id)
        # One LISTEN connection for the process: new operations wake this loop, a run's
        # changes wake the operation waiting for it
        # (app/worker/reconcile/reconciler.py::wait_for_run).
        notifier = Notifier(
            self.ctx.factory.kw["bind"], (NOTIFY_CHANNEL, RUN_CHANNEL), max_waiters=MAX_WAITERS
        )
        self.ctx.notifier = notifier
        try:
            with notifier.subscribe_blocking(NOTIFY_CHANNEL, None) as woken:
                while not self.stopping.is_set():
                    try:
                        self.fill()
                        self.supervise()
                        self.retention()
                    except Exception as exc:  # e.g. PostgreSQL restarting: go on after a pause
                        log.warning("worker loop error (retrying): %s", str(exc).splitlines()[0])
                        self.stopping.wait(2.0)
                        continue
                    # Sleep until NOTIFY or the fallback poll, whichever is first.
                    woken.wait(self.ctx.poll_seconds)
            self.pool.shutdown(wait=True, cancel_futures=True)
        finally:
            self.ctx.notifier = None
            notifier.close()
        if self.ctx.reconciler is not None:
            self.ctx.reconciler.stop()
        self._quietly(self.mark_stopped)
        log.info("worker %s stopped", self.ctx.worker_id)

    def request_stop(self, *_: object) -> None:
        self.stopping.set()


def worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


def run_worker(ctx: WorkerContext, concurrency: int = 4) -> None:
    worker = Worker(ctx, concurrency=concurrency)
    signal.signal(signal.SIGTERM, worker.request_stop)
    signal.signal(signal.SIGINT, worker.request_stop)
    worker.serve()
