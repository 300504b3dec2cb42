"""Before the stop, the next run's driver started ahead as a *standby* and made ready: session
built, Python started, waiting inside ``Runtime.from_spark`` before the job reaches its
queries, so nothing touches a checkpoint before go (app/worker/runs/start.py::take_over
gives it). Everything an update does before the stop to get one is here, in order.

A pre-warmed update runs its dry run inside its standby's driver, so one driver start serves
both (an update by snapshot: on a scratch copy of the state; by drain or stateless: a trial
batch on scratch checkpoints, app/worker/dry_run/scratch_copy.py::plan_trial). The standby
runs the new version's code there (as a dry-run driver would, tidegate_runtime/driver/dry_run.py),
writes the verdict, and only then waits for go; at go the same session runs the job's code
again, for real, its plan's code generated and its source planned already
(tidegate_runtime/driver/standby.py).

The steps, before anything stops, are the list ``READYING`` below, in order:
1. ``dry_run_prepare``: the scratch copy, as a cold dry run's (app/worker/dry_run/attempts.py);
2. ``standby``: the standby run, carrying the scratch root (``runs.standby_dry_run``); the
   reconciler submits its driver;
3. ``standby_ready``: its dry run is done and it waits for go;
4. ``dry_run``: the verdict read. A refusal releases the standby and fails the update: the old
   run was never touched.

A dry run that hit a Spark infrastructure error proves nothing either way: the standby is
released (``cold_dry_run``), dry-run drivers of their own try again (attempts 2 and 3, as
without prewarm), and a second standby starts after them (``standby_2``, ``standby_ready_2``):
never beside a dry-run driver, whose executors it would take on a cluster with room for one
more driver. Without prewarm, or with ``dry_run: false``, the dry run (if any) runs in drivers
of its own and the standby starts after it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from app.core import run_states as states
from app.core.db import transaction
from app.core.paths import scratch_dir
from app.core.plans import StoredPlan
from app.jobs.models import Job
from app.operations.models import Operation
from app.runs import service as runs
from app.runs.models import Run
from app.worker.core.context import WorkerContext
from app.worker.core.steps import (
    OperationFailed,
    Part,
    Phase,
    Step,
    Steps,
    detail,
    run_phases,
    set_result,
)
from app.worker.core.version import Target
from app.worker.dry_run import attempts, driver, scratch_copy, verdict
from app.worker.reconcile.reconciler import wait_for_run
from app.worker.standby.standby import READY_SECONDS, release, wanted

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Readying:
    """One update's way to a ready standby, before the stop: the version it starts, on which
    plan, and (a version on fresh state) the old run's committed offsets for its trial; what
    the request asked (prewarm, a dry run) and where the scratch copy goes, decided once."""

    ctx: WorkerContext
    op: Operation
    steps: Steps
    target: Target
    plan: StoredPlan
    positions: dict[str, dict[str, int]] | None = None

    @cached_property
    def prewarm(self) -> bool:
        return wanted(self.op)

    @cached_property
    def in_standby(self) -> bool:
        """The dry run runs inside the standby's driver: one driver start for both."""
        return self.prewarm and self.op.params.get("dry_run") is not False

    @cached_property
    def scratch(self) -> Path:
        return scratch_dir(self.ctx.settings.scratch_root, self.target.job_name, self.op.id)

    @cached_property
    def prepared(self) -> dict[str, Any]:
        """What the ``dry_run_prepare`` step planned (read once it is done)."""
        return detail(self.steps, "dry_run_prepare")

    @cached_property
    def to_check(self) -> tuple[dict[str, int], dict[str, Any]]:
        """The queries the dry run checks and (fresh state) their trial batches."""
        return attempts.what_to_check(self.prepared)

    @property
    def nothing_to_check(self) -> bool:
        """No resumed query holds state and (fresh state) no query has a trial batch."""
        return not any(self.to_check)

    @property
    def inconclusive(self) -> bool:
        """The dry run in the standby hit a Spark infrastructure error: it proved nothing."""
        return self.in_standby and detail(self.steps, "dry_run").get("ok") is False

    def standby_run(self, suffix: str = "") -> int:
        return int(detail(self.steps, f"standby{suffix}")["run_id"])


def dry_run_then_standby(readying: Readying) -> int | None:
    """The steps of ``READYING``: the dry run and, pre-warmed, the ready standby's run id
    (None without prewarm). OperationFailed, the standby released and the scratch copy
    removed, when the version is refused or no standby became ready: nothing was stopped."""
    return recorded(run_phases(readying.steps, readying, READYING))


def recorded(done: Mapping[str, Mapping[str, Any]]) -> int | None:
    """The standby ``READYING`` left ready, from the steps' recorded details by name (how a
    worker resuming the update finds it again): the second one's when a first was released;
    None without one."""
    for name in ("standby_ready_2", "standby_ready"):
        if name in done:
            return int(done[name]["run_id"])
    return None


def _scratch_copy(r: Readying) -> dict[str, Any]:
    return attempts.make_scratch_copy(r.ctx, r.op, r.target, r.plan, r.scratch, r.positions)


def _dry_run_in_driver(r: Readying) -> dict[str, Any] | None:
    """What the standby's driver checks before it waits for go (None: nothing to check)."""
    if not r.in_standby or r.nothing_to_check:
        return None
    return {
        "scratch": str(r.scratch),
        "check": r.to_check[0],
        "trial": r.to_check[1],
        "timeout": driver.IN_DRIVER_TIMEOUT_SECONDS,
    }


def _new_standby(r: Readying, suffix: str = "") -> dict[str, Any]:
    """The standby run, in state standby: the reconciler submits its driver from here on. The
    first carries the dry run (``_dry_run_in_driver``); a second one never does."""
    wanted_dry_run = None if suffix else _dry_run_in_driver(r)
    with transaction(r.ctx.factory) as session:
        job = session.get(Job, r.op.job_id, with_for_update={"key_share": True})
        assert job is not None
        run = runs.create_standby(
            session,
            job,
            r.target.row(session),
            created_by=r.op.created_by,
            operation_id=r.op.id,
            dry_run=wanted_dry_run,
        )
        return {
            "run_id": run.id,
            "version": r.target.number,
            "dry_run": wanted_dry_run is not None,
        }


def _until_ready(r: Readying, suffix: str = "") -> dict[str, Any]:
    """Until the standby's runtime has called in; OperationFailed otherwise (``READYING``'s
    failure releases it)."""
    run_id = r.standby_run(suffix)
    timeout = float(r.op.params.get("start_timeout_seconds") or READY_SECONDS)

    def settled(run: Run) -> bool:
        queued = run.state == states.STANDBY and run.standby_ready_at is None
        set_result(
            r.ctx,
            r.op.id,
            {
                "phase": "standby-starting" if queued else "standby",
                "standby_run_id": run.id,
                # PENDING: the cluster has no room for one more driver yet; the old run
                # processes on meanwhile.
                "standby_backend_state": run.observed_state,
            },
        )
        return not queued

    try:
        run = wait_for_run(r.ctx, run_id, settled, timeout, "become a ready standby")
    except OperationFailed as exc:
        raise OperationFailed(
            f"the pre-warmed driver of version {r.target.number} was not ready within "
            f"{timeout:.0f}s ({exc}); nothing was stopped and it was released. Retry when "
            "the cluster has room for one more driver, or with prewarm: false.",
            {"standby_run_id": run_id},
        ) from None
    if run.state != states.STANDBY:
        raise OperationFailed(
            f"the pre-warmed driver of version {r.target.number} failed before go: "
            f"{run.last_error or run.state}. Nothing was stopped; run {run_id} shows it.",
            {"standby_run_id": run_id},
        )
    assert run.standby_ready_at is not None
    return {
        "run_id": run_id,
        "ready_at": run.standby_ready_at.isoformat(),
        "waited_seconds": round((run.standby_ready_at - run.created_at).total_seconds(), 3),
    }


def _nothing_to_check(r: Readying) -> dict[str, Any]:
    return {"skipped": attempts.NOTHING_TO_CHECK}


def _verdict(r: Readying) -> dict[str, Any]:
    """The dry run's verdict, as the standby's driver wrote it (OperationFailed on a refusal)."""
    run_id = r.standby_run()
    result = verdict.read_result(r.scratch) or {
        "ok": False,
        "message": f"the standby run {run_id} called in without a dry-run result",
    }
    judged = attempts.judge_dry_run(r.op, r.steps, r.target.number, r.prepared, result, 1)
    return {**judged, "in_standby_run": run_id}


def _release_the_first(r: Readying) -> dict[str, Any]:
    run_id = r.standby_run()
    release(r.ctx, run_id, "its dry run hit a Spark infrastructure error")
    return {
        "released_standby": run_id,
        "why": detail(r.steps, "dry_run").get("infrastructure_error"),
    }


def _not_ready(r: Readying, exc: OperationFailed) -> OperationFailed:
    """Refused, or no standby ready: each standby this update started is released (never
    given go: the old run was never touched), and the scratch copy removed."""
    for suffix in ("", "_2"):
        if r.steps.load().step_done(f"standby{suffix}"):
            release(r.ctx, r.standby_run(suffix), "its update failed before the old run stopped")
    scratch_copy.cleanup(r.scratch)
    return exc


# Before anything stops, in order. Pre-warmed with a dry run, one driver serves both; after an
# inconclusive dry run (a Spark infrastructure error), separate drivers retry it (attempts 2
# and 3) and a second standby starts after them, never beside a dry-run driver, whose
# executors it would take on a cluster with room for one more driver. Without prewarm, or with
# ``dry_run: false``, the dry run (if any) runs in drivers of its own.
READYING: tuple[Phase[Readying], ...] = (
    Phase(
        "the dry run and the ready standby",
        (
            Step("dry_run_prepare", _scratch_copy, when=lambda r: r.in_standby),
            Step("dry_run", _nothing_to_check, when=lambda r: r.in_standby and r.nothing_to_check),
            Step("standby", _new_standby, when=lambda r: r.prewarm),
            Step("standby_ready", _until_ready, when=lambda r: r.prewarm),
            Step("dry_run", _verdict, when=lambda r: r.in_standby),
            Part(lambda r: scratch_copy.cleanup(r.scratch), when=lambda r: r.in_standby),
            Step("cold_dry_run", _release_the_first, when=lambda r: r.inconclusive),
            Part(
                lambda r: attempts.dry_run(r.ctx, r.op, r.steps, r.target, r.plan, 2, r.positions),
                when=lambda r: r.inconclusive,
            ),
            Step("standby_2", lambda r: _new_standby(r, "_2"), when=lambda r: r.inconclusive),
            Step("standby_ready_2", lambda r: _until_ready(r, "_2"), when=lambda r: r.inconclusive),
            Part(
                lambda r: attempts.dry_run(
                    r.ctx, r.op, r.steps, r.target, r.plan, positions=r.positions
                ),
                when=lambda r: not r.in_standby,
            ),
        ),
        on_failure=_not_ready,
    ),
)
