"""Verifying a new run: every query commits its first batch past the one it was restored at
(or reports itself idle), and it keeps running for a while; otherwise the update rolls back."""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path
from typing import Any

from app.core import run_states as states
from app.core.paths import checkpoint_path, read_checkpoint
from app.core.plans import StoredPlan
from app.operations.models import Operation
from app.resume_points.restore_guards import compact_interval, sink_missing_for_compaction
from app.runs.models import Run
from app.worker.core.context import WorkerContext
from app.worker.core.steps import OperationFailed
from app.worker.reconcile.reconciler import pass_now
from tidegate_runtime.checkpoints.checkpoint import latest_commit_batch

# How long an update waits for every query of the new run to commit its first batch.
FIRST_BATCH_SECONDS = 600.0


def committed_batches(ctx: WorkerContext, run_id: int) -> dict[str, int | None]:
    """Each query's latest committed batch, from its checkpoint (the runtime's progress when
    the checkpoint is not on this machine)."""

    with ctx.factory() as session:
        run = session.get(Run, run_id)
        assert run is not None
        job_name, queries = run.job.name, list(run.version.queries)
        progress = dict(run.progress or {})
    root = ctx.settings.resolved_checkpoint_root
    batches: dict[str, int | None] = {}
    for spec in queries:
        with read_checkpoint(root, checkpoint_path(root, job_name, run_id, spec)) as checkpoint:
            found = None if checkpoint is None else latest_commit_batch(checkpoint)
        if checkpoint is not None:
            batches[spec["name"]] = found
        else:
            batch = (progress.get(spec["name"]) or {}).get("batch_id")
            batches[spec["name"]] = int(batch) if batch is not None else None
    return batches


def verify(
    ctx: WorkerContext, run_id: int, plan: StoredPlan, seconds: float, first_batch: float
) -> dict[str, Any]:
    """The new run is verified once every query has committed its first batch past the one
    it was restored at (a fresh query: its batch 0) or, with no new input, reported itself
    idle, and it has kept running for ``seconds``.
    A query that fails (its driver reports it, and would restart it alone) or a driver that
    dies fails the verification; no commit within ``first_batch`` seconds fails too, so the
    caller rolls back. ``seconds`` = 0: only that it started (no batch is awaited)."""
    if seconds <= 0:
        return {"verified": "not verified (verify_seconds = 0)"}
    restored: dict[str, int] = {}
    for q in plan["queries"]:
        batch = (q["source"] or {}).get("batch_id")
        restored[q["query"]] = int(batch) if batch is not None else -1
    with ctx.factory() as session:
        started = session.get(Run, run_id)
        assert started is not None
        attempt = started.attempt
        interval = compact_interval(started.version.conf)
    begin = time.monotonic()
    deadline = begin + max(first_batch, seconds)
    while True:
        pass_now(ctx, run_id)
        with ctx.factory() as session:
            run = session.get(Run, run_id)
            assert run is not None
            state, error, now_attempt = run.state, run.last_error, run.attempt
            idle = idle_since_start(run)
            progress = dict(run.progress or {})
            failed = sorted(
                (name, entry)
                for name, entry in (run.query_restarts or {}).items()
                if entry.get("attempt") == attempt
            )
        if state != states.RUNNING or now_attempt != attempt:
            raise OperationFailed(
                f"run {run_id} stopped running after it started ({state}), before every query "
                f"committed its first batch: {error or 'no error'}",
                {"run_id": run_id, "run_state": state},
            )
        if failed:
            # Its driver restarts the query alone (per-query supervision), but a new version
            # must work at once: one that fails is rolled back, not retried.
            name, entry = failed[0]
            raise OperationFailed(
                f"run {run_id}: query '{name}' failed after it started, before every query "
                f"committed its first batch: {entry.get('last_error') or 'no error'}",
                {"run_id": run_id, "run_state": state, "query": name},
            )
        _require_sinks_can_compact(
            run_id, restored, progress, interval, ctx.settings.resolved_sink_roots
        )
        committed = committed_batches(ctx, run_id)
        batches = {q: committed.get(q) for q in restored}
        waiting = sorted(q for q, b in batches.items() if b is None or b <= restored[q])
        elapsed = time.monotonic() - begin
        # A query with no new input runs no batch: Spark's idle event says it started fine.
        if elapsed >= seconds and set(waiting) <= idle:
            return {
                "verified": "every query committed its first batch past the restored one"
                + (f", or runs idle with no new input ({', '.join(waiting)})" if waiting else ""),
                "restored": restored,
                "batches": batches,
            }
        if time.monotonic() >= deadline:
            raise OperationFailed(
                f"run {run_id}: {', '.join(waiting)} did not commit a first batch past the "
                f"restored one within {max(first_batch, seconds):.0f}s (committed: {batches}, "
                f"restored at: {restored})",
                {"run_id": run_id, "run_state": state, "batches": batches},
            )
        time.sleep(ctx.poll_seconds)


def _require_sinks_can_compact(
    run_id: int,
    restored: dict[str, int],
    progress: dict[str, Any],
    interval: int,
    roots: list[Path],
) -> None:
    """A restored query whose file sink lacks the batch logs its next compaction reads would
    fail about ten batches from now, after the update was called a success: refused here, so
    the update rolls back while the previous version's state and output are intact."""
    for query, batch in restored.items():
        sink = (progress.get(query) or {}).get("sink")
        found = sink_missing_for_compaction(sink, batch, roots, interval)
        if found is None:
            continue
        path, compaction, missing = found
        raise OperationFailed(
            f"Query '{query}' resumed at batch {batch + 1} writes its file sink to {path}, "
            f"whose _spark_metadata lacks batches {missing[0]}..{missing[-1]}: Spark's file "
            f"sink compacts its log every {interval} batches and at batch {compaction} reads "
            "them, so the new run would fail there. A query that resumes its state must keep "
            "writing to the previous version's output path; to write elsewhere, update by "
            "drain (the new version starts that query fresh).",
            {"run_id": run_id, "query": query, "sink": path, "missing": missing},
        )


def idle_since_start(run: Run) -> set[str]:
    """Queries whose runtime reported Spark's idle event since this attempt started."""
    if run.running_since is None:
        return set()
    idle = set()
    for query, progress in (run.progress or {}).items():
        at = (progress or {}).get("idle_at")
        if at and datetime.fromisoformat(at) >= run.running_since:
            idle.add(query)
    return idle


def verify_for(ctx: WorkerContext, op: Operation, run_id: int, plan: StoredPlan) -> dict[str, Any]:
    """``verify`` within the operation's bounds: ``verify_seconds`` (20 unless it says) and
    ``first_batch_seconds``."""
    seconds = float(op.params.get("verify_seconds", 20))
    first_batch = float(op.params.get("first_batch_seconds") or FIRST_BATCH_SECONDS)
    return verify(ctx, run_id, plan, seconds, first_batch)
