"""What both update strategies do once the old run has ended: the new version's run started
(the ready standby takes over, or a cold start) and verified, as steps of their declared lists
(app/worker/kinds/update.py, app/worker/kinds/update_fresh.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.operations.models import Operation
from app.worker.core.context import WorkerContext
from app.worker.core.steps import Steps, planned
from app.worker.core.version import Target
from app.worker.runs.start import start_planned, take_over
from app.worker.runs.verify import verify_for


@dataclass
class NewVersion:
    """An update: the version it starts, the standby ready to take over (None without
    prewarm: set by the readying before the stop, or read back by a worker resuming the
    update) and, once started, the new run."""

    ctx: WorkerContext
    op: Operation
    steps: Steps
    target: Target
    standby_run: int | None = field(init=False, default=None)
    started: dict[str, Any] = field(init=False, default_factory=dict)


def start(u: NewVersion) -> None:
    """Pre-warmed: the standby takes over (``reserve_run``, ``materialise``, ``go``);
    otherwise a new run (``reserve_run``, ``materialise``, ``create_run``,
    ``await_submitted``). Either way, until Spark runs it. Its plan: the ``plan`` step's."""
    plan = planned(u.steps, "plan")
    standby_run = u.standby_run
    u.started = (
        take_over(u.ctx, u.op, u.steps, plan, u.target, standby_run)
        if standby_run is not None
        else start_planned(u.ctx, u.op, u.steps, plan, u.target)
    )


def verify_started(u: NewVersion) -> dict[str, Any]:
    """Every query of the new run commits (past the state it resumed)."""
    plan = planned(u.steps, "plan")
    return verify_for(u.ctx, u.op, int(u.started["run_id"]), plan)
