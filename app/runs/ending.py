"""How a stopping or draining run ends once nothing of its driver can touch a checkpoint any
more: either its application ended (the reconciler saw it, app/worker/reconcile/run.py) or its
runtime said it is fenced (app/channel/service.py::record_fence): every query stopped at a
batch boundary, then its Spark session stopped, executors and state-store maintenance with
it. Both ask here, so a run ends the same way whichever comes first."""

from __future__ import annotations

from sqlalchemy.orm import Session

from app.core import run_states as states
from app.core.db import utcnow
from app.runs import spares
from app.runs.models import Run
from app.runs.service import new_attempt, transition


def stopped(session: Session, run: Run, why: str, *, fenced: bool = False) -> Run:
    """A STOPPING run whose driver is done: stopped (cancelled on a cancel), drained when a
    drain's timeout came after its marker went out, or, stopped for a pre-warmed restart,
    its spare takes over as the next attempt. ``fenced``: the driver stopped its own session,
    so the spare need not wait for the old application to be killed (what is left of that
    process exits on its own and can no longer write)."""
    assert run.state == states.STOPPING, run.state
    if fenced:
        _left_to_exit(run)
    if (run.drain or {}).get("drained_at") and run.stop_reason == "drain-timeout":
        # The stop came after the drain marker: the runtime finished the drain first.
        return transition(
            session, run, states.DRAINED, reason="the drain finished after its timeout"
        )
    if run.stop_reason == "restart" and spares.for_next(run):
        return new_attempt(
            session,
            run,
            reason=f"restart: {why}; its spare takes over",
            previous_backend_id=None if fenced else run.backend_id,
            stop_reason=None,
            failures=0,
        )
    to = states.CANCELLED if run.stop_reason == "cancel" else states.STOPPED
    return transition(session, run, to, reason=why)


def drained(session: Session, run: Run, why: str, *, fenced: bool = False) -> Run:
    """A DRAINING run whose runtime finished the drain and is done."""
    if fenced:
        _left_to_exit(run)
    return transition(session, run, states.DRAINED, reason=why)


def _left_to_exit(run: Run) -> None:
    """What is left of a fenced driver's process exits by itself, unless the job's code keeps
    it alive (a non-daemon thread, a hook that blocks): the reconciler watches it and kills
    it past TIDEGATE_FENCED_EXIT_SECONDS (app/worker/reconcile/run.py::reap_fenced), so it does not
    hold the cluster's cores for ever."""
    if run.backend_id is not None:
        run.fenced_backend_id, run.fenced_at = run.backend_id, utcnow()
