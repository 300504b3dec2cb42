"""The one thread per worker process that acts on runs: it runs ``reconcile_run`` for the
runs an operation waits on first, then for the periodic sweep of every due run. Operations
ask it for a pass (``pass_now``) and read the run again (``wait_for_run``); they never act on
a run themselves."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable

from app.runs.models import Run
from app.runs.service import RUN_CHANNEL
from app.worker.core.context import WorkerContext
from app.worker.core.steps import OperationFailed
from app.worker.reconcile.run import reconcile_run

log = logging.getLogger(__name__)


class Reconciler:
    """The thread that reconciles runs for one worker process: runs an operation waits on
    first (``pass_now``), then the periodic sweep of every due run (``sweep``). Started on
    first use, a daemon, stopped with the worker."""

    def __init__(self, ctx: WorkerContext) -> None:
        self.ctx = ctx
        self._cond = threading.Condition()
        self._urgent: list[int] = []
        self._sweep: list[int] = []
        self._passes: dict[int, int] = {}  # run id -> passes finished (waiters compare)
        self._stopping = False
        self._died: BaseException | None = None
        self._thread = threading.Thread(target=self._serve, name="reconciler", daemon=True)
        self._thread.start()

    def pass_now(self, run_id: int, timeout: float) -> None:
        """Ask for a pass over ``run_id`` ahead of the sweep and wait (up to ``timeout``) for
        it to finish: what an operation does before it reads the run again."""
        with self._cond:
            target = self._passes.get(run_id, 0) + 1
            if run_id not in self._urgent:
                self._urgent.append(run_id)
            self._cond.notify_all()
            self._cond.wait_for(
                lambda: self._passes.get(run_id, 0) >= target or self._stopping, timeout
            )
            if self._died is not None:  # e.g. a chaos test's exit: the waiter stops too
                raise self._died

    def sweep(self, run_ids: list[int], timeout: float = 600.0) -> None:
        """One pass over each of ``run_ids`` (behind any urgent one); waits for them."""
        with self._cond:
            targets = {r: self._passes.get(r, 0) + 1 for r in run_ids}
            self._sweep.extend(r for r in run_ids if r not in self._sweep)
            self._cond.notify_all()
            self._cond.wait_for(
                lambda: (
                    self._stopping or all(self._passes.get(r, 0) >= n for r, n in targets.items())
                ),
                timeout,
            )

    def stop(self) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify_all()

    def _next(self) -> tuple[int, bool] | None:
        """The next run to pass over, and whether the pass is urgent (an operation waits)."""
        with self._cond:
            self._cond.wait_for(lambda: self._urgent or self._sweep or self._stopping)
            if self._stopping:
                return None
            if self._urgent:
                return self._urgent.pop(0), True
            return self._sweep.pop(0), False

    def _serve(self) -> None:
        while (picked := self._next()) is not None:
            run_id, urgent = picked
            try:
                # The sweep reads its cluster's listing; an operation's pass asks the backend.
                reconcile_run(self.ctx, run_id, fresh=urgent)
            except Exception:
                log.exception("run %s: reconcile failed; will retry", run_id)
                time.sleep(0.1)  # a failing store: do not spin
            except BaseException as exc:  # the thread ends: say so to whoever waits on it
                with self._cond:
                    self._died, self._stopping = exc, True
                    self._cond.notify_all()
                raise
            with self._cond:
                self._passes[run_id] = self._passes.get(run_id, 0) + 1
                if run_id in self._sweep:  # an urgent pass serves a queued sweep too
                    self._sweep.remove(run_id)
                self._cond.notify_all()


def reconciler(ctx: WorkerContext) -> Reconciler:
    """This worker process's reconciler (context.py cannot import this module: it is above)."""
    with ctx._lock:
        current = ctx.reconciler
        if current is None or current.ctx is not ctx or current._stopping:
            ctx.reconciler = Reconciler(ctx)
        found: Reconciler = ctx.reconciler
        return found


def pass_now(ctx: WorkerContext, run_id: int) -> None:
    """An operation waiting on a run asks the reconciler for a pass and waits for it."""
    reconciler(ctx).pass_now(run_id, timeout=max(ctx.poll_seconds, 1.0) * 30)


def _read_run(ctx: WorkerContext, run_id: int) -> Run:
    with ctx.factory() as session:
        run = session.get(Run, run_id)
        assert run is not None
        session.expunge(run)
        return run


def wait_for_run(
    ctx: WorkerContext, run_id: int, done: Callable[[Run], bool], timeout: float, what: str
) -> Run:
    """Observe the run until ``done`` says so, asking the reconciler for a pass each time it
    is not (the reconciler alone acts on the run). Woken at once by the run's NOTIFY (a state
    change, a standby or spare ready: app/runs/service.py::notify_run), else every poll: what
    the backend says of the driver only a reconciler pass finds out. What the database says
    already is read first: a pass asks the backend, tens of ms that, between an update's stop
    and its go, the output stands still for."""
    deadline = time.monotonic() + timeout
    notifier = ctx.notifier
    # Subscribed before the first read: a change committed in between is not missed.
    with (
        notifier.subscribe_blocking(RUN_CHANNEL, str(run_id))
        if notifier is not None
        else contextlib.nullcontext()
    ) as woken:
        while True:
            run = _read_run(ctx, run_id)
            if done(run):
                return run
            pass_now(ctx, run_id)
            run = _read_run(ctx, run_id)
            if done(run):
                return run
            if time.monotonic() >= deadline:
                raise OperationFailed(
                    f"run {run_id} did not {what} within {timeout:.0f}s (it is {run.state}); "
                    "it stays under supervision."
                )
            if woken is not None:
                woken.wait(ctx.poll_seconds)
            else:
                time.sleep(ctx.poll_seconds)
