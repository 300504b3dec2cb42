"""What the API checks before accepting a lifecycle operation: refuse early what cannot work,
so nothing is stopped for a request that was doomed."""

from __future__ import annotations

from sqlalchemy.orm import Session

from app.auth.service import Principal
from app.core import run_states as states
from app.core.config import Settings
from app.core.errors import Conflict, Unprocessable
from app.jobs import sources
from app.jobs.models import Job, JobVersion
from app.jobs.service import get_job, get_version
from app.operations.models import Operation
from app.operations.schemas import RestartBody, SnapshotBody, SubmitBody, UpdateBody
from app.operations.service import enqueue, find_replay
from app.resume_points import service as resume_points
from app.resume_points.plan import Plan, fresh
from app.resume_points.restore_guards import (
    all_fresh,
    declared_sink_problems,
    require_restorable,
)
from app.runs.models import Run
from app.runs.service import active_run, current_run
from app.snapshots import service as snapshots
from app.snapshots.pins import pin


def submit(
    session: Session,
    job_name: str,
    body: SubmitBody,
    actor: Principal,
    key: str | None,
    settings: Settings,
) -> tuple[Operation, bool]:
    params = body.model_dump(mode="json", exclude_none=True)
    job = get_job(session, job_name, lock=True)
    if (replayed := find_replay(session, job, "submit", params, key)) is not None:
        return replayed, False
    version = get_version(session, job_name, body.version)  # 404 now, not a failed operation
    running = active_run(session, job)
    if running is not None:
        raise Conflict(
            f"Job '{job_name}' already has run {running.id} ({running.state}); stop it first, "
            "or use POST …/update to replace it with another version.",
            run_id=running.id,
        )
    if body.snapshot is not None or body.resume_point is not None:
        # 422 for a resume point missing a stateful query, 409 if incompatible.
        plan = resume_points.plan_for_request(
            session,
            settings,
            job,
            version,
            snapshot=body.snapshot,
            snapshot_job=body.snapshot_job,
            resume_point=body.resume_point,
        )
        what = f"snapshot '{body.snapshot}'" if body.snapshot else "the resume point"
        plan.problems.extend(declared_sink_problems(settings, version, plan))
        resume_points.require_compatible(plan, what)
        require_restorable(session, settings, job, plan)
        origin: dict[str, object] = (
            {"kind": "snapshot", "job": body.snapshot_job or job.name, "snapshot": body.snapshot}
            if body.snapshot
            else {"kind": "resume_point"}
        )
        op, created = enqueue(session, job, "submit", params, actor, key, plan=plan.stored(origin))
        if created:  # the snapshots it starts from stay until it ends
            pin(
                session,
                op.id,
                [q.source.snapshot_id for q in plan.queries if q.source and q.source.snapshot_id],
            )
        return op, created
    resume_points.require_compatible(
        _with_sink_problems(settings, version, all_fresh(version)), "fresh checkpoints"
    )
    return enqueue(session, job, "submit", params, actor, key)


def _with_sink_problems(settings: Settings, version: JobVersion, plan: Plan) -> Plan:
    plan.problems.extend(declared_sink_problems(settings, version, plan))
    return plan


def stop(
    session: Session,
    job_name: str,
    kind: str,
    params: dict[str, object],
    actor: Principal,
    key: str | None,
) -> tuple[Operation, bool]:
    job = get_job(session, job_name, lock=True)
    if (replayed := find_replay(session, job, kind, params, key)) is not None:
        return replayed, False
    run = active_run(session, job)
    if run is None:
        raise Conflict(f"Job '{job_name}' has no active run to {kind}.")
    return enqueue(session, job, kind, params, actor, key, run_id=run.id if run else None)


def restart(
    session: Session, job_name: str, body: RestartBody, actor: Principal, key: str | None
) -> tuple[Operation, bool]:
    job = get_job(session, job_name, lock=True)
    params = body.model_dump(mode="json", exclude_none=True)
    params.setdefault("prewarm", job.prewarm)  # what the worker does, stated on the operation
    if (replayed := find_replay(session, job, "restart", params, key)) is not None:
        return replayed, False
    run = current_run(session, job)
    if run is None:
        raise Conflict(f"Job '{job_name}' has never run; submit a version first.")
    if run.state == states.DRAINED or (run.drain or {}).get("drained_at"):
        raise Conflict(
            f"Run {run.id} was drained; its checkpoint is final (its watermark is past every "
            "window, so later input would be dropped as late). Submit a version to start anew, "
            "with startpoints at the drained offsets (or use POST …/update strategy drain)."
        )
    return enqueue(session, job, "restart", params, actor, key, run_id=run.id if run else None)


def _require_drainable(job: Job, run: Run | None) -> Run:
    """A running run whose every source can drain (natively, or bounded: see sources.py)."""
    if run is None or run.state != states.RUNNING:
        raise Conflict(
            f"Job '{job.name}' has no running run to drain"
            + (f" (run {run.id} is {run.state})." if run else ".")
        )
    kinds = {s["name"]: s["kind"] for q in run.version.queries for s in q["sources"]}
    unsupported = {n: k for n, k in kinds.items() if sources.kind(k).drain == "unsupported"}
    if unsupported:
        listed = ", ".join(f"'{n}' ({k})" for n, k in sorted(unsupported.items()))
        able = ", ".join(sorted(k for k, v in sources.KINDS.items() if v.drain != "unsupported"))
        raise Unprocessable(
            f"Drain works for sources of kind {able} (GET /source-kinds); this run reads "
            f"{listed}. Use POST …/stop (a clean stop at a batch boundary) instead."
        )
    return run


def drain(
    session: Session, job_name: str, params: dict[str, object], actor: Principal, key: str | None
) -> tuple[Operation, bool]:
    """Refuse up front what cannot drain: no running run, or a source that cannot be capped."""
    job = get_job(session, job_name, lock=True)
    if (replayed := find_replay(session, job, "drain", params, key)) is not None:
        return replayed, False
    run = _require_drainable(job, active_run(session, job))
    return enqueue(session, job, "drain", params, actor, key, run_id=run.id)


def _update_fresh(
    session: Session,
    job: Job,
    version: JobVersion,
    run: Run,
    strategy: str,
    params: dict[str, object],
    actor: Principal,
    key: str | None,
) -> tuple[Operation, bool]:
    """The new version starts on fresh checkpoints where the old run ended (drained, or, for
    a stateless one, stopped) on every source the two share: each must take OFFSET
    startpoints."""
    if strategy == "drain":
        _require_drainable(job, run)
    else:
        if run.state != states.RUNNING:
            raise Conflict(
                f"Job '{job.name}' has no running run to update (run {run.id} is "
                f"{run.state}); submit version {version.number} instead."
            )
        stateful = [q["name"] for q in run.version.queries if q.get("stateful_operators")]
        if stateful:
            raise Unprocessable(
                f"Run {run.id} holds state in {', '.join(stateful)}, which a stateless update "
                "would lose; use strategy 'snapshot' (state carried over) or 'drain' (state "
                "finished and flushed first).",
                errors=[{"field": "strategy", "message": "the running version is stateful"}],
            )
    new_sources = {s["name"]: s for q in version.queries for s in q["sources"]}
    old_sources = {s["name"] for q in run.version.queries for s in q["sources"]}
    errors = []
    old_kinds = {s["name"]: s["kind"] for q in run.version.queries for s in q["sources"]}
    for name in sorted(old_sources & set(new_sources)):
        for kind, which in (
            (old_kinds[name], "the running"),
            (new_sources[name]["kind"], "the new"),
        ):
            if not sources.kind(kind).drain_handoff:
                errors.append(
                    {
                        "field": "version",
                        "message": f"source '{name}' is of kind {kind} in {which} version; "
                        "its drained offsets cannot seed the next version (GET /source-kinds)",
                    }
                )
                break
    for q in version.queries:
        if q.get("checkpoint_location"):
            errors.append(
                {
                    "field": "version",
                    "message": f"query '{q['name']}' has a fixed checkpoint_location; an update "
                    f"by {strategy} starts every query on a fresh checkpoint",
                }
            )
    if not old_sources & set(new_sources):
        errors.append(
            {
                "field": "version",
                "message": f"version {version.number} reads none of the sources of run "
                f"{run.id} ({', '.join(sorted(old_sources))}), so nothing links where one "
                "stops and the other starts",
            }
        )
    if errors:
        raise Unprocessable(
            f"Version {version.number} cannot replace run {run.id} ({strategy}): "
            + "; ".join(e["message"] for e in errors)
            + ".",
            errors=errors,
        )
    planned = fresh(version.number, [q["name"] for q in version.queries])
    return enqueue(session, job, "update", params, actor, key, run_id=run.id, plan=planned)


def snapshot(
    session: Session,
    job_name: str,
    body: SnapshotBody,
    actor: Principal,
    key: str | None,
    settings: Settings,
) -> tuple[Operation, bool]:
    """Export (and with stop, end) the current run's state under a name claimed now."""
    params = body.model_dump(mode="json")
    job = get_job(session, job_name, lock=True)
    if (replayed := find_replay(session, job, "snapshot", params, key)) is not None:
        return replayed, False
    run = current_run(session, job)
    if run is None:
        raise Conflict(f"Job '{job_name}' has never run; there is no state to snapshot.")
    op, created = enqueue(session, job, "snapshot", params, actor, key, run_id=run.id)
    if created:
        snapshots.reserve(
            session, job, body.name, run=run, operation_id=op.id, actor=actor, stop=body.stop
        )
    return op, created


def update(
    session: Session,
    job_name: str,
    body: UpdateBody,
    actor: Principal,
    key: str | None,
    settings: Settings,
) -> tuple[Operation, bool]:
    """Checks everything that can be known before the old run is touched: the strategy, the
    version, and the new version's compatibility with the current run's checkpoints."""
    params = body.model_dump(mode="json", exclude_none=True)
    job = get_job(session, job_name, lock=True)
    params.setdefault("prewarm", job.prewarm)  # what the worker does, stated on the operation
    if (replayed := find_replay(session, job, "update", params, key)) is not None:
        return replayed, False
    version = get_version(session, job_name, body.version)
    run = current_run(session, job)
    if run is None:
        raise Conflict(f"Job '{job_name}' has never run; submit version {body.version} instead.")
    if body.strategy in ("drain", "stateless"):
        resume_points.require_compatible(
            _with_sink_problems(settings, version, all_fresh(version)), "fresh checkpoints"
        )
        return _update_fresh(session, job, version, run, body.strategy, params, actor, key)
    plan = resume_points.plan_from_run(session, settings, version, run)
    # From the running run: its sink goes on until the stop, so only its log's gaps count.
    plan.problems.extend(declared_sink_problems(settings, version, plan, live=True))
    resume_points.require_compatible(plan, f"the state of run {run.id}")
    require_restorable(session, settings, job, plan)
    # Planned by name from the run's live checkpoints; the worker binds it to the snapshot the
    # update saves of that run (resume_points.plan.bind_to_snapshot) and checks it again.
    origin = {"kind": "run", "job": job.name, "run": run.id}
    op, created = enqueue(
        session, job, "update", params, actor, key, run_id=run.id, plan=plan.stored(origin)
    )
    if created:
        name = body.snapshot_name or (
            f"update-v{run.version.number}-v{body.version}-{op.created_at:%Y%m%dT%H%M%S}-{op.id}"
        )
        snapshots.reserve(session, job, name, run=run, operation_id=op.id, actor=actor, stop=True)
    return op, created
