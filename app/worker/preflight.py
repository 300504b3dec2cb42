"""Preflight, before anything stops, where declarations are not enough: a dry run of the new
version's app against a scratch copy of the state it would resume.
(tidegate_runtime/trial_batch.py is the part that runs inside that driver;
app/worker/startup.py::dry_run drives these steps.)

The declared checks (app/snapshots/compat.py) cannot see a change inside the app with the same
declarations (``avg`` for ``sum``, a session window for a tumbling one, another grouping key).
Spark sees it when it plans the first batch on the old checkpoint. So, before an update stops
the old run (and before a submit from a snapshot starts the new one):

1. ``dry_run_prepare``: each resumed query's checkpoint is copied into a scratch directory
   (the same materialisation as a new run's, from the snapshot or from the live run's
   committed prefix), and one empty batch is planned in each copy that holds state:
   ``offsets/N+1`` = ``offsets/N``. Spark runs a planned batch on restart even without data;
   it loads state version N+1, which the copy holds, and checks the state schemas and the
   operator metadata (see tidegate_runtime/trial_batch.py for what was observed on Spark 4.3).
2. ``dry_run_submit``: the new version's app is submitted on its cluster with
   ``spark.tidegate.dry_run=true`` under the tag ``tidegate-dryrun-<operation>``: no run
   has that tag, and a worker resuming after a crash finds the driver by it
   (``backend.find``) instead of submitting a second one.
3. ``dry_run``: the driver is awaited (bounded; killed past the timeout) and its result file
   read. A refusal fails the operation with the query, the operator and what differs; the
   old run was never touched.

A driver that failed for Spark infrastructure reasons, not because of the state
(``infrastructure_error``: ``TRANSIENT_SIGNATURES`` below, e.g. "Python worker failed to connect
back" on a loaded machine), proves nothing either way: the three steps run again from a fresh
scratch copy, as their own steps (``dry_run_prepare_2``, ``dry_run_submit_2``, ``dry_run_2``; the
driver tagged ``tidegate-dryrun-<operation>-2``), up to ``ATTEMPTS`` in all. After the last one
the operation fails saying so (nothing was stopped; retrying is safe), not that the state is
incompatible.

Skipped with ``dry_run: false`` on the request, and when no resumed query has state.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import time
from pathlib import Path
from typing import Any

from app.snapshots import restore
from app.snapshots.store_access import SnapshotFailed
from app.worker import submission
from app.worker.context import WorkerContext
from tidegate_runtime import trial_batch as runtime_dryrun
from tidegate_runtime.checkpoint import hadoop_crc, latest_commit_batch, state_operators
from tidegate_runtime.files import write_atomic

log = logging.getLogger(__name__)

DRY_RUN_TIMEOUT_SECONDS = 300.0
# What the driver may spend on the planned batch itself, inside the worker's bound.
IN_DRIVER_TIMEOUT_SECONDS = 180.0
SCRATCH_DIR = ".tidegate-dryrun"
# Dry-run drivers at most per operation when they fail for infrastructure reasons.
ATTEMPTS = 3

# Known transient Spark infrastructure failures (the driver's or a query's error text), kept
# small on purpose: anything else stays a refusal. Seen on a loaded machine: the event-log
# Python data source's worker not connecting back in time; Python workers crashing or exiting;
# the driver's connections to its executors or workers refused or reset.
TRANSIENT_SIGNATURES = re.compile(
    r"Python worker failed to connect back"
    r"|Python worker (?:exited unexpectedly|crashed)"
    r"|Connection (?:refused|reset)",
    re.IGNORECASE,
)
# A state or plan incompatibility: never infrastructure, whatever else the text says.
INCOMPATIBLE = re.compile(
    r"STATE_STORE|STATE_SCHEMA|IN_STATE_METADATA|STATEFUL_OPERATOR|INCOMPATIBLE|NOT_COMPATIBLE"
)
# What trial_batch reports for the queries a failure elsewhere in the driver did not let run.
_CONSEQUENCES = frozenset({"QUERY_NOT_STARTED", "QUERY_ENDED"})

_OPERATOR = re.compile(r"OperatorId: (\d+) -> OperatorName: (\w+)")
_SCHEMA = re.compile(r"Existing (\w+)_schema=(\S+) and new \w+_schema=(\S+?)\.?(?:\s|$)")


def tag(op_id: int, attempt: int = 1) -> str:
    return f"tidegate-dryrun-{op_id}" + (f"-{attempt}" if attempt > 1 else "")


def scratch_dir(ctx: WorkerContext, job_name: str, op_id: int, attempt: int = 1) -> Path:
    name = str(op_id) + (f"-{attempt}" if attempt > 1 else "")
    return ctx.settings.resolved_checkpoint_root / SCRATCH_DIR / job_name / name


def spare_scratch_dir(ctx: WorkerContext, job_name: str, spare_tag: str) -> Path:
    """Where a spare rehearses (app/worker/reconcile_spare.py): one folder per spare."""
    return ctx.settings.resolved_checkpoint_root / SCRATCH_DIR / job_name / spare_tag


def infrastructure_error(outcome: dict[str, Any]) -> str | None:
    """The first line of the error when a failed dry run failed for a known transient Spark
    infrastructure reason (``TRANSIENT_SIGNATURES``), else None (a refusal). Infrastructure only
    when no query's failure is a state or plan incompatibility and every failed query failed
    that way (or did not get to run because of it); a driver that ended without a result counts
    when its own error text matches. A timeout stays a refusal."""
    if outcome.get("ok") or outcome.get("timeout"):
        return None
    failed = [r for r in (outcome.get("queries") or {}).values() if not r.get("ok")]
    errors = [(str(r.get("error_class") or ""), str(r.get("message") or "")) for r in failed]
    if not errors:
        errors = [("", str(outcome.get("message") or ""))]
    if any(INCOMPATIBLE.search(f"{error_class} {message}") for error_class, message in errors):
        return None
    found = None
    for error_class, message in errors:
        match = TRANSIENT_SIGNATURES.search(f"{message} {error_class}")
        if match is None:
            if error_class in _CONSEQUENCES:
                continue
            return None
        if found is None:
            lines = (ln.strip() for ln in message.splitlines() if TRANSIENT_SIGNATURES.search(ln))
            found = next(lines, match.group(0))
    return found


def plan_empty_batch(checkpoint: Path) -> int | None:
    """``offsets/N+1`` = ``offsets/N`` (N the committed batch) when the copy holds state: the
    batch a restart runs first, with no input. Returns N+1, or None (no state, nothing to
    check)."""
    state = checkpoint / "state"
    if not state.is_dir() or not any(state.iterdir()):
        return None
    batch = latest_commit_batch(checkpoint)
    if batch is None:
        return None
    data = (checkpoint / "offsets" / str(batch)).read_bytes()
    # Written anew, never in place: a restored file may be a hard link to a snapshot's blob.
    write_atomic(checkpoint / "offsets" / f".{batch + 1}.crc", hadoop_crc(data))
    write_atomic(checkpoint / "offsets" / str(batch + 1), data)
    return batch + 1


def prepare(
    ctx: WorkerContext,
    plan: dict[str, Any],
    job_name: str,
    queries: list[dict[str, Any]],
    scratch: Path,
) -> dict[str, Any]:
    """Fresh scratch copies of every resumed query; the queries to check and their batch."""
    resumed = [q for q in plan["queries"] if q.get("source") and "state" in q.get("parts", [])]
    if not resumed:
        return {"scratch": str(scratch), "check": {}}
    scratch_plan = {**plan, "queries": resumed}
    for attempt in range(3):
        shutil.rmtree(scratch, ignore_errors=True)
        try:
            restore.materialise(
                ctx.factory, ctx.settings, scratch_plan, job_name, 0, queries, scratch=scratch
            )
            break
        except SnapshotFailed:
            # From a live run, Spark's maintenance may remove an old file while it is copied
            # (the files of the committed batch never go): copy again.
            if attempt == 2:
                raise
    check, operators = {}, {}
    for item in resumed:
        batch = plan_empty_batch(scratch / item["query"])
        if batch is not None:
            check[item["query"]] = batch
            operators[item["query"]] = [
                {"id": o.operator_id, "name": o.operator_name}
                for o in state_operators(scratch / item["query"])
            ]
    return {"scratch": str(scratch), "check": check, "operators": operators}


def submit(
    ctx: WorkerContext,
    op_id: int,
    version: Any,
    job_name: str,
    scratch: Path,
    check: dict[str, int],
    attempt: int = 1,
) -> dict[str, Any]:
    """Submit the dry-run driver of this attempt once: a worker resuming finds it by its tag."""
    backend = ctx.backend(version.cluster)
    driver_tag = tag(op_id, attempt)
    found = backend.find(driver_tag)
    if found is not None:
        return {"tag": driver_tag, "backend_id": found, "found": True, "at": time.time()}
    conf = {
        **version.conf,
        runtime_dryrun.DRY_RUN_CONF: "true",
        runtime_dryrun.CHECK_CONF: json.dumps(sorted(check)),
        runtime_dryrun.RESULT_CONF: str(scratch / runtime_dryrun.RESULT_FILE),
        runtime_dryrun.TIMEOUT_CONF: str(int(IN_DRIVER_TIMEOUT_SECONDS)),
        "spark.tidegate.job": job_name,
        "spark.tidegate.version": str(version.number),
        "spark.tidegate.checkpoint_dir": str(scratch),
        "spark.tidegate.queries": submission.queries_conf(version, scratch=True),
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


def read_result(scratch: Path) -> dict[str, Any] | None:
    """The verdict a dry run wrote in its scratch root, or None."""
    try:
        result: dict[str, Any] = json.loads((scratch / runtime_dryrun.RESULT_FILE).read_text())
    except (OSError, ValueError):
        return None
    return result


def problems(outcome: dict[str, Any], operators: dict[str, list[dict[str, Any]]]) -> list[str]:
    """One line per refused query: the query, the operator and what differs."""
    lines = []
    for query, result in sorted((outcome.get("queries") or {}).items()):
        if result.get("ok"):
            continue
        message = str(result.get("message") or "")
        what = _what_differs(str(result.get("error_class")), message, operators.get(query) or [])
        lines.append(f"query '{query}': {what} [{result.get('error_class')}]")
    if not lines and not outcome.get("ok"):
        lines.append(str(outcome.get("message") or "the dry run failed"))
    return lines


def _what_differs(error_class: str, message: str, operators: list[dict[str, Any]]) -> str:
    if "NOT_MATCH_IN_STATE_METADATA" in error_class and "in current batch" in message:
        # "Stateful operators in the metadata: [(OperatorId: 0 -> OperatorName: a)];
        #  Stateful operators in current batch: [(OperatorId: 0 -> OperatorName: b)]"
        saved_text, new_text = message.split("in current batch", 1)
        saved, new = dict(_OPERATOR.findall(saved_text)), dict(_OPERATOR.findall(new_text))
        diffs = [
            f"operator {op} is {saved.get(op, 'absent')} in the saved state but "
            f"{new.get(op, 'absent')} in the new version"
            for op in sorted(set(saved) | set(new), key=int)
            if saved.get(op) != new.get(op)
        ]
        return "; ".join(diffs) or message
    schema = _SCHEMA.search(message)
    if schema:
        part, had, wants = schema.group(1), schema.group(2).strip(), schema.group(3).strip()
        where = (
            f"operator 0 ({operators[0].get('name')})"
            if len(operators) == 1
            else "a stateful operator (Spark does not say which)"
        )
        return f"the state {part} schema of {where} changed: saved {had}, new {wants}"
    return message.splitlines()[0] if message else error_class


def cleanup(scratch: Path) -> None:
    shutil.rmtree(scratch, ignore_errors=True)
