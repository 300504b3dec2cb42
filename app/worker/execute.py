"""The dispatcher: which module carries out which operation kind, and how an operation ends
(succeeded, failed, or retried later after a temporary backend error)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from app.backends.base import BackendError
from app.db import transaction, utcnow
from app.operations.models import Operation
from app.worker.context import WorkerContext
from app.worker.kinds.drain import do_drain
from app.worker.kinds.restart import do_restart
from app.worker.kinds.snapshot import do_snapshot
from app.worker.kinds.stop import do_stop
from app.worker.kinds.submit import do_submit
from app.worker.kinds.update import do_update
from app.worker.steps import LeaseLost, OperationFailed, Steps

log = logging.getLogger(__name__)


HANDLERS: dict[str, Callable[[WorkerContext, Operation, Steps], dict[str, Any]]] = {
    "submit": do_submit,
    "stop": do_stop,
    "cancel": do_stop,
    "restart": do_restart,
    "drain": do_drain,
    "snapshot": do_snapshot,
    "update": do_update,
}


def execute(ctx: WorkerContext, op_id: int) -> None:
    steps = Steps(ctx, op_id)
    op = steps.load()
    handler = HANDLERS.get(op.kind)
    try:
        if handler is None:
            raise OperationFailed(f"this worker cannot carry out '{op.kind}' operations yet")
        result: dict[str, Any] | None = handler(ctx, op, steps)
        state, error = "succeeded", None
    except LeaseLost as exc:
        log.warning("%s", exc)
        return
    except OperationFailed as exc:
        state, error, result = "failed", str(exc), exc.result
    except BackendError as exc:
        if exc.temporary:
            _retry_later(ctx, op_id, exc)
            return
        state, error, result = "failed", f"the Spark backend refused: {exc}", None
    _finish(ctx, op_id, state, error, result)


# A backend that keeps answering with temporary errors (down, 5xx, not ready) is retried with
# exponential backoff — 1 s, 2 s, 4 s … capped at a minute — for about eight minutes in all,
# then the operation fails with the last error. Every step is idempotent, so a retry resumes.
RETRY_MAX_ATTEMPTS = 12


RETRY_MAX_DELAY_SECONDS = 60.0


def retry_delay(attempt: int) -> float:
    """Seconds before claim number ``attempt + 1`` after ``attempt`` temporary failures."""
    return float(min(RETRY_MAX_DELAY_SECONDS, 2 ** max(0, attempt - 1)))


def _retry_later(ctx: WorkerContext, op_id: int, exc: BackendError) -> None:
    """Release the operation until its backoff has passed (the claim query takes it up
    again then), showing why on the operation; past the last attempt, fail it."""
    with transaction(ctx.factory) as session:
        op = session.get(Operation, op_id, with_for_update=True, populate_existing=True)
        assert op is not None
        if op.lease_owner != ctx.worker_id:
            return
        if op.attempts >= RETRY_MAX_ATTEMPTS:
            op.state, op.finished_at = "failed", utcnow()
            op.error = (
                f"the Spark backend kept failing ({op.attempts} attempts with backoff): {exc}. "
                "Check the cluster is up and reachable from the worker, then retry the request."
            )
            op.lease_owner, op.lease_expires_at = None, None
            log.warning("operation %s failed for good: %s", op_id, exc)
            return
        delay = retry_delay(op.attempts)
        op.error = (
            f"temporary backend error (attempt {op.attempts}, retrying in {delay:.0f}s): {exc}"
        )
        op.lease_owner = None
        op.lease_expires_at = utcnow() + timedelta(seconds=delay)
    log.warning("operation %s: temporary backend error, retrying in %.0fs: %s", op_id, delay, exc)


def _finish(
    ctx: WorkerContext, op_id: int, state: str, error: str | None, result: dict[str, Any] | None
) -> None:
    with transaction(ctx.factory) as session:
        op = session.get(Operation, op_id, with_for_update=True, populate_existing=True)
        assert op is not None
        if op.lease_owner != ctx.worker_id:
            return
        op.state, op.error, op.result = state, error, result
        op.finished_at = utcnow()
        op.lease_owner, op.lease_expires_at = None, None
    log.info("operation %s %s%s", op_id, state, f": {error}" if error else "")
