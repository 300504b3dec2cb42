"""The dispatcher: which module carries out which operation kind, and how an operation ends
(through app/operations/state.py: succeeded, failed, or retried later)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from app.backends.base import BackendError
from app.operations import state as op_state
from app.operations.models import FAILED, SUCCEEDED, Operation
from app.worker.core.context import WorkerContext
from app.worker.core.steps import LeaseLost, OperationFailed, Steps
from app.worker.kinds.drain import do_drain
from app.worker.kinds.restart import do_restart
from app.worker.kinds.snapshot import do_snapshot
from app.worker.kinds.stop import do_stop
from app.worker.kinds.submit import do_submit
from app.worker.kinds.update import do_update

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
    """Carry out a claimed operation and end it through app/operations/state.py: succeeded,
    failed, or released for a bounded retry (temporary backend error, unexpected exception)."""
    steps = Steps(ctx, op_id)
    op = steps.load()
    handler = HANDLERS.get(op.kind)
    try:
        if handler is None:
            raise OperationFailed(f"this worker cannot carry out '{op.kind}' operations yet")
        result: dict[str, Any] | None = handler(ctx, op, steps)
        state, error = SUCCEEDED, None
    except LeaseLost as exc:
        log.warning("%s", exc)
        return
    except OperationFailed as exc:
        state, error, result = FAILED, str(exc), exc.result
    except BackendError as exc:
        if exc.temporary:
            op_state.retry_later(ctx.factory, op_id, ctx.worker_id, exc, what="backend")
            return
        state, error, result = FAILED, f"the Spark backend refused: {exc}", None
    except Exception as exc:
        # Unclassified: retried with the same backoff and bound as a temporary backend error
        # (every step is idempotent), then the operation fails saying so.
        log.exception("operation %s: unexpected error", op_id)
        op_state.retry_later(ctx.factory, op_id, ctx.worker_id, exc, what="unexpected")
        return
    op_state.finish(ctx.factory, op_id, ctx.worker_id, state, error, result)
