"""A dry run's own driver: submitted once under its tag (a worker resuming finds it by the tag
instead of submitting a second), awaited within its bound, its verdict read from the scratch
root. The driver belongs to its operation, not to a run, so this module calls the backend."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

from app.worker.core import submission
from app.worker.core.context import WorkerContext
from app.worker.dry_run.verdict import read_result
from tidegate_runtime import contract

log = logging.getLogger(__name__)

DRY_RUN_TIMEOUT_SECONDS = 300.0

# What the driver may spend on the planned batch itself, inside the worker's bound.
IN_DRIVER_TIMEOUT_SECONDS = 180.0


def tag(op_id: int, attempt: int = 1) -> str:
    return f"tidegate-dryrun-{op_id}" + (f"-{attempt}" if attempt > 1 else "")


def submit(
    ctx: WorkerContext,
    op_id: int,
    version: Any,
    job_name: str,
    scratch: Path,
    check: dict[str, int],
    attempt: int = 1,
    trial: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Submit the dry-run driver of this attempt once: a worker resuming finds it by its tag."""
    backend = ctx.backend(version.cluster)
    driver_tag = tag(op_id, attempt)
    found = backend.find(driver_tag)
    if found is not None:
        return {"tag": driver_tag, "backend_id": found, "found": True, "at": time.time()}
    conf = {
        **version.conf,
        contract.DRY_RUN: "true",
        contract.DRY_RUN_QUERIES: json.dumps(sorted(check)),
        contract.DRY_RUN_TRIAL: json.dumps(trial or {}),
        contract.DRY_RUN_RESULT: str(scratch / contract.DRY_RUN_RESULT_FILE),
        contract.DRY_RUN_TIMEOUT: str(int(IN_DRIVER_TIMEOUT_SECONDS)),
        contract.JOB: job_name,
        contract.VERSION: str(version.number),
        contract.CHECKPOINT_DIR: str(scratch),
        contract.QUERIES: submission.queries_conf(version, scratch=True),
    }
    backend_id = backend.submit(submission.spec(ctx, version, driver_tag, conf))
    log.info("operation %s: dry-run driver %s submitted as %s", op_id, driver_tag, backend_id)
    return {"tag": driver_tag, "backend_id": backend_id, "at": time.time()}


def await_outcome(
    ctx: WorkerContext,
    version: Any,
    backend_id: str,
    submitted_at: float,
    scratch: Path,
    timeout: float,
) -> dict[str, Any]:
    """Wait for the driver (the timeout counts from its submission, across worker restarts),
    then read its result. Returns {"ok": bool, "queries": ..., "driver": ...}."""
    backend = ctx.backend(version.cluster)
    while True:
        status = backend.status(backend_id)
        if status.state.terminal:
            break
        if time.time() - submitted_at >= timeout:
            backend.kill(backend_id)
            return {
                "ok": False,
                "timeout": True,
                "driver": status.raw_state,
                "message": f"the dry-run driver did not finish within {timeout:.0f}s "
                f"({status.raw_state})",
            }
        time.sleep(ctx.poll_seconds)
    result = read_result(scratch)
    if result is None:
        tail = status.message or backend.log_tail(backend_id, 30) or ""
        return {
            "ok": False,
            "driver": status.raw_state,
            "message": "the new version's app ended without a dry-run result "
            f"({status.raw_state}); does it start its queries with the tidegate runtime "
            f"(Runtime.start, Runtime.await_termination)? {tail[-2000:]}".strip(),
        }
    return {**result, "driver": status.raw_state}
