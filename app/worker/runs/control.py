"""Run primitives the operations share: stop a run (request, graceful, kill), drain it, and
start an ended run again as a new attempt (a version's start, and the wait for any run's:
app/worker/runs/start.py). Each states what it wants through app/runs/service.py and waits
with app/worker/reconcile/reconciler.py::wait_for_run."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from datetime import datetime
from typing import Any

from app.core import run_states as states
from app.core.db import transaction, utcnow
from app.resume_points.compat import KIND_OPERATORS
from app.runs import service as runs
from app.runs.models import Run
from app.runs.service import lock_run, transition
from app.worker.core.context import WorkerContext
from app.worker.core.steps import OperationFailed, Steps, detail, set_result
from app.worker.reconcile.reconciler import wait_for_run
from app.worker.runs.start import await_started
from tidegate_runtime.driver.drain_order import NOTHING_TO_FLUSH

# How long a drain waits for a just-started driver's runtime to call in before refusing.
RUNTIME_HELLO_SECONDS = 60.0


def stop_run(
    ctx: WorkerContext,
    run_id: int,
    reason: str,
    steps: Steps,
    timeout: float,
    prefix: str = "",
    ended: Callable[[Run], bool] = lambda r: r.state in states.TERMINAL,
) -> Run:
    """Stop the run at a batch boundary, or kill it if that does not come in ``timeout``.
    ``ended``: what counts as stopped (a restart's run moves on to its spare instead)."""

    def request() -> dict[str, Any]:
        with transaction(ctx.factory) as session:
            return {"run_state": runs.request_stop(session, run_id, reason).state}

    steps.run(f"{prefix}request_stop", request)
    seen_ended: list[Run] = []  # by the graceful stop below, this time round

    def graceful() -> dict[str, Any]:
        # A run whose runtime talks to us stops each query at a batch boundary when its
        # directives say stop; wait for that before reaching for kill.
        with ctx.factory() as session:
            run = session.get(Run, run_id)
            assert run is not None
            cooperative = run.runtime_seen_at is not None
        if reason == "cancel" or not cooperative:
            return {"graceful": False, "why": "cancel" if reason == "cancel" else "no runtime"}
        try:
            done = wait_for_run(ctx, run_id, ended, timeout, "stop gracefully")
            seen_ended.append(done)
            return {"graceful": True, "run_state": done.state}
        except OperationFailed:
            return {"graceful": False, "why": f"no clean stop within {timeout:.0f}s"}

    steps.run(f"{prefix}graceful_stop", graceful)
    ended_gracefully = bool(detail(steps, f"{prefix}graceful_stop")["graceful"])

    def kill() -> dict[str, Any]:
        if ended_gracefully:  # nothing to kill, nothing more to wait for
            return {"kill_requested": False, "why": "it ended during the graceful stop"}
        # Not a stop at a batch boundary after all: the reconciler kills the driver.
        with transaction(ctx.factory) as session:
            run = runs.request_kill(session, run_id, reason)
            wanted = run.state == states.STOPPING
            return {"kill_requested": wanted, "attempt": run.attempt, "run_state": run.state}

    steps.run(f"{prefix}kill", kill)
    # Seen ended just now, or (killed, or resumed here) until it is: what is ended stays so.
    run = seen_ended[0] if seen_ended else wait_for_run(ctx, run_id, ended, 120.0, "stop")
    steps.run(f"{prefix}stopped", lambda: {"run_state": run.state})
    return run


def new_run_of_a_failed_update(steps: Steps, standby_run: int | None) -> int | None:
    """The new version's run a failed update leaves (reserved, or the standby before that)."""
    if steps.load().step_done("reserve_run"):
        return int(detail(steps, "reserve_run")["run_id"])
    return standby_run


def stop_for_rollback(ctx: WorkerContext, steps: Steps, run_id: int | None) -> None:
    """A failed update's new run stops before the old version starts again (steps
    ``rollback_request_stop`` …): at a batch boundary, killed past a minute."""
    if run_id is None:
        return
    with ctx.factory() as session:
        failed = session.get(Run, run_id)
        active = failed is not None and failed.state in states.ACTIVE
    if active or steps.load().step_done("rollback_request_stop"):
        stop_run(ctx, run_id, "rollback", steps, 60.0, prefix="rollback_")


def resubmit_run(ctx: WorkerContext, run_id: int, reason: str) -> dict[str, Any]:
    """A run that ended starts again from its own checkpoint, as a new attempt."""
    with transaction(ctx.factory) as session:
        run = lock_run(session, run_id)
        assert run is not None
        if run.state in states.TERMINAL:
            run = runs.resubmit(session, run, reason=reason)
        return {"attempt": run.attempt}


def restart_old_run(
    ctx: WorkerContext,
    steps: Steps,
    old_run_id: int,
    old_version: int,
    new_version: int,
    why: Exception,
) -> OperationFailed:
    """An update failed before anything new started: the old run starts again from its own
    checkpoint (stopped at a batch boundary, so it resumes exactly)."""
    steps.run(
        "rollback_resubmit",
        lambda: resubmit_run(ctx, old_run_id, f"update to version {new_version} failed"),
    )
    await_started(ctx, old_run_id, 600.0)
    return OperationFailed(
        f"update to version {new_version} failed before anything new started: {why}. "
        f"Run {old_run_id} (version {old_version}) was started again from its own checkpoint.",
        {"rolled_back": True, "run_id": old_run_id, "version": old_version},
    )


def _drain_flushes(query: dict[str, Any]) -> bool:
    """Declares state a drain's marker must flush: anything but deduplication (the runtime
    decides from the operators Spark recorded; this estimate, from the declaration)."""
    return any(
        not KIND_OPERATORS.get(str(o.get("kind")), frozenset({"?"})) <= NOTHING_TO_FLUSH
        for o in query.get("stateful_operators") or []
    )


def drain_backlog(run: Run) -> dict[str, Any]:
    """Per query: records left between its last progress and the drain's end, and the
    micro-batches that still takes (the data, capped by maxRecordsPerBatch, then for a query
    with state to flush the marker's batch and the batch that emits its last windows)."""
    end = (run.drain or {}).get("end_offsets") or {}
    if (run.drain or {}).get("drained_at"):  # its runtime says all is done (progress may lag)
        end = {}
    backlog: dict[str, Any] = {}
    for query in run.version.queries:
        sources = (run.progress or {}).get(query["name"], {}).get("sources") or []
        per_source = {}
        data_batches = 0
        for index, source in enumerate(query["sources"]):
            target = end.get(source["name"])
            if target is None:
                continue
            if source["kind"] != "eventlog":  # bounded: its own format; AvailableNow knows
                continue
            done = (sources[index].get("end_offset") if index < len(sources) else None) or {}
            left = sum(max(0, int(o) - int(done.get(p, 0))) for p, o in target.items())
            per_source[source["name"]] = left
            limit = int(source.get("options", {}).get("maxRecordsPerBatch") or 0)
            data_batches = max(data_batches, -(-left // limit) if limit else int(left > 0))
        flush = 2 if end and _drain_flushes(query) else 0
        backlog[query["name"]] = {
            "records": sum(per_source.values()),
            "batches": data_batches + flush,
            "sources": per_source,
        }
    return backlog


def query_failures_since(run: Run, since: str | None) -> str:
    """What kept a run's queries from getting on since ``since`` (ISO time): each query that
    failed meanwhile, how often, and the first line of its last error (a broker that cannot be
    reached, say), for an operation's error."""
    said = []
    for query, entry in sorted((run.query_restarts or {}).items()):
        if entry.get("attempt") != run.attempt or not entry.get("last_failed_at"):
            continue
        if since is not None and str(entry["last_failed_at"]) < since:
            continue
        first_line = (str(entry.get("last_error") or "").strip().splitlines() or ["?"])[0]
        said.append(
            f"query '{query}' failed {entry.get('failures')} time(s) in a row, last: "
            f"{first_line[:300]}"
        )
    return "; ".join(said)


def drain_run(
    ctx: WorkerContext, op_id: int, run_id: int, steps: Steps, timeout: float, prefix: str = ""
) -> Run:
    """Drain run ``run_id``: ask its runtime to fix end offsets, process up to them, flush
    every window and stop. Too slow, and it is stopped at a batch boundary instead (before
    the marker, so its checkpoint resumes exactly) and OperationFailed says so."""

    def request() -> dict[str, Any]:
        # A driver that has just started may not have called in yet: give it a moment.
        with contextlib.suppress(OperationFailed):  # refused below, with the reason
            wait_for_run(
                ctx,
                run_id,
                lambda r: r.runtime_seen_at is not None or r.state != states.RUNNING,
                min(timeout, RUNTIME_HELLO_SECONDS),
                "call in",
            )
        with transaction(ctx.factory) as session:
            run = lock_run(session, run_id)
            assert run is not None
            if run.runtime_seen_at is None:
                raise OperationFailed(
                    "this job does not run the tidegate runtime, which a drain needs "
                    "(tidegate_runtime.driver.runtime.Runtime); use stop instead"
                )
            if run.state == states.RUNNING:
                transition(
                    session,
                    run,
                    states.DRAINING,
                    reason="drain requested",
                    stop_reason="drain",
                    drain={"requested_at": utcnow().isoformat()},
                )
            elif run.state not in (states.DRAINING, states.DRAINED):
                raise OperationFailed(
                    f"run {run_id} is {run.state}, not running: there is nothing to drain",
                    {"run_id": run_id, "run_state": run.state},
                )
            return {"run_state": run.state}

    steps.run(f"{prefix}request_drain", request)
    # The timeout counts from the request, not from this worker's start: a worker that takes
    # the drain over after a crash does not grant it a fresh timeout.
    with ctx.factory() as session:
        requested = session.get(Run, run_id)
        requested_at = (requested.drain or {}).get("requested_at") if requested else None
    if requested_at:
        waited = (utcnow() - datetime.fromisoformat(requested_at)).total_seconds()
        timeout = max(0.0, timeout - waited)

    def progress(run: Run) -> bool:
        set_result(
            ctx,
            op_id,
            {
                "run_id": run.id,
                "phase": "draining" if run.state == states.DRAINING else run.state,
                "backlog": drain_backlog(run),
                "end_offsets": (run.drain or {}).get("end_offsets"),
            },
        )
        return run.state in states.TERMINAL

    try:
        run = wait_for_run(ctx, run_id, progress, timeout, "drain")
    except OperationFailed:
        # Too slow: stop cleanly at a batch boundary instead. Nothing is lost: the next
        # start resumes from the checkpoint.
        with transaction(ctx.factory) as session:
            locked = lock_run(session, run_id)
            assert locked is not None
            if locked.state == states.DRAINING:
                transition(
                    session,
                    locked,
                    states.STOPPING,
                    reason="drain timed out",
                    stop_reason="drain-timeout",
                )
        stopped = wait_for_run(ctx, run_id, lambda r: r.state in states.TERMINAL, 300.0, "stop")
        if stopped.state == states.DRAINED:  # the marker had gone out: it drained, late
            steps.run(
                f"{prefix}drained",
                lambda: {
                    "end_offsets": (stopped.drain or {}).get("end_offsets"),
                    "late": "finished after its timeout (the drain marker had gone out)",
                },
            )
            return stopped
        failing = query_failures_since(stopped, requested_at)
        raise OperationFailed(
            f"the drain did not finish within {timeout:.0f}s (backlog: "
            f"{drain_backlog(stopped)})"
            + (f"; meanwhile {failing}" if failing else "")
            + f"; the run was stopped at a batch boundary instead ({stopped.state}) and can "
            "be restarted from its checkpoint",
            {"run_id": run_id, "run_state": stopped.state, "backlog": drain_backlog(stopped)},
        ) from None
    if run.state != states.DRAINED:
        raise OperationFailed(
            f"run {run_id} ended {run.state} while draining: {run.last_error or ''}".strip(),
            {"run_id": run_id, "run_state": run.state},
        )
    steps.run(f"{prefix}drained", lambda: {"end_offsets": (run.drain or {}).get("end_offsets")})
    return run
