"""The dry run's steps, before anything stops: per attempt a scratch copy
(``dry_run_prepare``), a driver of its own (``dry_run_submit``) and its verdict (``dry_run``);
an attempt that hit a Spark infrastructure error is followed by another (``dry_run_prepare_2``
…), up to ``verdict.ATTEMPTS``. Skipped with ``dry_run: false``, or when no resumed query
holds state and (a version on fresh state) no query has a trial batch."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from app.core.paths import scratch_dir
from app.core.plans import StoredPlan
from app.operations.models import Operation
from app.snapshots.errors import SnapshotFailed
from app.worker.core.context import WorkerContext
from app.worker.core.steps import OperationFailed, Steps, detail
from app.worker.core.version import Target
from app.worker.dry_run import driver, scratch_copy, verdict

log = logging.getLogger(__name__)


def dry_run(
    ctx: WorkerContext,
    op: Operation,
    steps: Steps,
    target: Target,
    plan: StoredPlan,
    first_attempt: int = 1,
    positions: dict[str, dict[str, int]] | None = None,
) -> None:
    """Run the new version's app on a scratch copy of the state it would resume
    (app/worker/dry_run/scratch_copy.py); OperationFailed naming query, operator and what
    differs when Spark refuses it. With ``positions`` (the old run's committed offsets), the
    version starts on fresh state and runs trial batches instead. Skipped with ``dry_run:
    false`` or when there is nothing to check."""

    if op.params.get("dry_run") is False:
        steps.run("dry_run", lambda: {"skipped": "dry_run: false in the request"})
        return
    # Each attempt is its own steps (the first with today's names); an attempt whose driver
    # failed for infrastructure reasons records that in its "dry_run" step and the next starts
    # from a fresh scratch copy.
    for attempt in range(first_attempt, verdict.ATTEMPTS + 1):
        if _dry_run_attempt(ctx, op, steps, target, plan, attempt, positions):
            return


def what_to_check(prepared: dict[str, Any]) -> tuple[dict[str, int], dict[str, Any]]:
    """What a ``dry_run_prepare`` step planned: each checked query and the batch it must
    commit; for a version on fresh state, each query's trial batch (scratch_copy.plan_trial)."""
    check = {q: int(b) for q, b in (prepared.get("check") or {}).items()}
    return check, dict(prepared.get("trial") or {})


NOTHING_TO_CHECK = "no resumed query holds state, and no query has records for a trial"


def _step(name: str, attempt: int) -> str:
    return name if attempt == 1 else f"{name}_{attempt}"


def make_scratch_copy(
    ctx: WorkerContext,
    op: Operation,
    target: Target,
    plan: StoredPlan,
    scratch: Path,
    positions: dict[str, dict[str, int]] | None = None,
) -> dict[str, Any]:
    """A ``dry_run_prepare`` step: the scratch copy at ``scratch``, and what it checks."""
    try:
        return scratch_copy.make_copy(
            ctx, plan, target.job_name, list(target.version.queries), scratch, positions
        )
    except SnapshotFailed as exc:
        raise OperationFailed(f"the dry run's scratch copy failed: {exc}") from None


def _dry_run_attempt(
    ctx: WorkerContext,
    op: Operation,
    steps: Steps,
    target: Target,
    plan: StoredPlan,
    attempt: int,
    positions: dict[str, dict[str, int]] | None = None,
) -> bool:
    """One attempt's steps: True when the dry run passed (or had nothing to check), False when
    its driver failed for infrastructure reasons and another attempt follows."""
    scratch = scratch_dir(ctx.settings.scratch_root, target.job_name, op.id, attempt)
    steps.run(
        _step("dry_run_prepare", attempt),
        lambda: make_scratch_copy(ctx, op, target, plan, scratch, positions),
    )
    prepared = detail(steps, _step("dry_run_prepare", attempt))
    check, trial = what_to_check(prepared)
    if not check and not trial:
        steps.run(_step("dry_run", attempt), lambda: {"skipped": NOTHING_TO_CHECK})
        return True
    steps.run(
        _step("dry_run_submit", attempt),
        lambda: driver.submit(
            ctx, op.id, target.version, target.job_name, scratch, check, attempt, trial
        ),
    )
    submitted = detail(steps, _step("dry_run_submit", attempt))

    def outcome() -> dict[str, Any]:
        result = driver.await_outcome(
            ctx,
            target.version,
            str(submitted["backend_id"]),
            float(submitted["at"]),
            scratch,
            float(op.params.get("dry_run_timeout_seconds") or driver.DRY_RUN_TIMEOUT_SECONDS),
        )
        return judge_dry_run(op, steps, target.number, prepared, result, attempt)

    try:
        steps.run(_step("dry_run", attempt), outcome)
    except OperationFailed:
        scratch_copy.cleanup(scratch)
        raise
    scratch_copy.cleanup(scratch)  # (a temporary backend error keeps it: the step resumes)
    return bool(detail(steps, _step("dry_run", attempt)).get("ok"))


def judge_dry_run(
    op: Operation,
    steps: Steps,
    version_number: int,
    prepared: dict[str, Any],
    result: dict[str, Any],
    attempt: int,
) -> dict[str, Any]:
    """A dry run's result as its ``dry_run`` step's detail: ok, or an infrastructure error that
    another attempt may get past ({"ok": False, "infrastructure_error": ...}). OperationFailed
    on a refusal (naming query, operator and what differs), or an infrastructure error at the
    last attempt."""
    check, trial = what_to_check(prepared)
    if result.get("ok"):
        return {
            "ok": True,
            "checked": check or dict.fromkeys(trial, 0),
            "trial": bool(trial),
            "queries": result.get("queries"),
        }
    infrastructure = verdict.infrastructure_error(result)
    if infrastructure is not None:
        log.warning(
            "operation %s: dry run attempt %s failed for infrastructure reasons: %s",
            op.id,
            attempt,
            infrastructure,
        )
        if attempt < verdict.ATTEMPTS:
            return {
                "ok": False,
                "attempt": attempt,
                "infrastructure_error": infrastructure,
                "dry_run": result,
            }
        earlier = [
            str(detail(steps, _step("dry_run", n)).get("infrastructure_error"))
            for n in range(1, attempt)
        ]
        raise OperationFailed(
            f"the dry run of version {version_number} could not be completed because of a "
            f"Spark infrastructure error ({attempt} attempts; the last: {infrastructure}). "
            "Nothing was stopped; retrying the update is safe.",
            {"dry_run": result, "infrastructure_errors": [*earlier, infrastructure]},
        )
    lines = verdict.problems(result, prepared.get("operators") or {})
    if trial:
        raise OperationFailed(
            f"version {version_number} failed its trial on scratch checkpoints, reading the "
            "last records the running version committed (nothing was stopped): "
            + "; ".join(lines)
            + ". Fix the version's code and update again.",
            {"dry_run": result},
        )
    raise OperationFailed(
        f"version {version_number} was refused by a dry run on a scratch copy of the "
        "state it would resume (nothing was stopped): "
        + "; ".join(lines)
        + ". Keep the state's operators and schemas, or start those queries with fresh "
        "state (a resume point with mode 'initialize', or update strategy 'drain').",
        {"dry_run": result},
    )
