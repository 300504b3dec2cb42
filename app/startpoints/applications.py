"""Startpoint applications: what a run's runtime applied to its checkpoints, settled when a
batch past it commits, and put back on request.

Every checkpoint path here is derived by the server (the checkpoint root, the job, the run
and the query's declared location), never taken from what the runtime reports: the runtime
channel is reachable by driver code, and a path it names would let it read or rewrite any
file the API can reach."""

from __future__ import annotations

import json
import logging

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from app.audit import service as audit
from app.auth.service import Principal
from app.core.db import utcnow
from app.core.errors import Conflict, NotFound, Unprocessable
from app.core.paths import CheckpointRoot, PathOutsideRoot, checkpoint_path
from app.jobs.service import get_job
from app.runs.models import Run
from app.runs.service import active_run
from app.startpoints.models import APPLIED, Startpoint, StartpointApplication
from app.startpoints.schemas import AppliedReport
from app.startpoints.service import list_pending
from tidegate_runtime import contract
from tidegate_runtime.checkpoints import checkpoint as cp
from tidegate_runtime.sources import positions as rt

log = logging.getLogger(__name__)


def query_checkpoint(checkpoint_root: CheckpointRoot, run: Run, query: str) -> CheckpointRoot:
    """Where ``query`` of ``run`` keeps its checkpoint, inside the job's own folder.
    Raises Conflict when the version does not declare the query or its location is not
    inside the job's folder (a version stored before that was required)."""
    spec = next((q for q in run.version.queries if q["name"] == query), None)
    if spec is None:
        declared = ", ".join(sorted(q["name"] for q in run.version.queries))
        raise Conflict(
            f"Query '{query}' is not declared by version {run.version.number}; "
            f"declared: {declared}."
        )
    try:
        return checkpoint_path(checkpoint_root, run.job.name, run.id, spec)
    except PathOutsideRoot as exc:
        raise Conflict(
            f"Query '{query}' of version {run.version.number}: its checkpoint_location {exc}; "
            "create a version whose checkpoint_location lies in the job's folder."
        ) from None


def for_directives(
    session: Session, run: Run, checkpoint_root: CheckpointRoot
) -> list[contract.StartpointDirective]:
    """Startpoints for a starting query: pending ones, and applied ones whose application
    has no batch committed past it yet (applying those again is the same rewrite of the
    same batch). An application with a batch past it is done even if the progress report
    that says so was lost: it is settled here from the checkpoint, so a restart never
    applies a startpoint twice."""
    points = list_pending(session, run.job)
    applied = {sp.id for sp in points if sp.state == APPLIED}
    if applied:
        done = _settle_committed(session, run.job_id, applied, checkpoint_root)
        points = [sp for sp in points if sp.id not in done]
    return [
        {
            "id": sp.id,
            "source": sp.source,
            "partition": sp.partition,
            "type": sp.type,
            "value": sp.value,
        }
        for sp in points
    ]


def _settle_committed(
    session: Session, job_id: int, applied: set[int], checkpoint_root: CheckpointRoot
) -> set[int]:
    """Ids of applied startpoints whose application's checkpoint has a batch committed past
    it; those applications are marked committed and the startpoints deleted."""
    done: set[int] = set()
    apps = session.scalars(
        select(StartpointApplication).where(
            StartpointApplication.job_id == job_id,
            StartpointApplication.committed_at.is_(None),
            StartpointApplication.reverted_at.is_(None),
        )
    ).all()
    for app in apps:
        ids = {int(s["id"]) for s in app.startpoints} & applied
        if not ids:
            continue
        try:
            checkpoint = query_checkpoint(
                checkpoint_root, session.get_one(Run, app.run_id), app.query
            )
            latest = cp.latest_commit_batch(checkpoint)
        except (Conflict, OSError):  # not visible from here: the progress report settles it
            continue
        if latest is not None and (app.batch_id is None or latest > app.batch_id):
            app.committed_at = utcnow()
            session.execute(
                delete(Startpoint).where(Startpoint.id.in_(ids), Startpoint.state == APPLIED)
            )
            done |= ids
    return done


def record_applied(
    session: Session, run: Run, reports: list[AppliedReport], checkpoint_root: CheckpointRoot
) -> int:
    _check_reports_name_declared_sources(run, reports)
    for report in reports:
        # The report's own paths are ignored: the server knows where the query's checkpoint
        # is, and that the original offsets file is kept beside offsets/N.
        checkpoint = query_checkpoint(checkpoint_root, run, report.query)
        original = (
            cp.original_offsets_file(checkpoint, report.batch_id)
            if report.batch_id is not None
            else None
        )
        # Keep who set each startpoint and what it said: the rows go once a batch commits.
        setters = session.scalars(
            select(Startpoint).where(
                Startpoint.id.in_(report.startpoint_ids), Startpoint.job_id == run.job_id
            )
        ).all()
        session.add(
            StartpointApplication(
                job_id=run.job_id,
                run_id=run.id,
                attempt=run.attempt,
                query=report.query,
                source=report.source,
                startpoints=[
                    {
                        "id": sp.id,
                        "type": sp.type,
                        "value": sp.value,
                        "partition": sp.partition,
                        "set_by": sp.created_by,
                        "set_at": sp.created_at.isoformat(),
                    }
                    for sp in setters
                ],
                checkpoint=str(checkpoint),
                batch_id=report.batch_id,
                before_offsets=report.before,
                after_offsets=report.after,
                original_file=str(original) if original is not None else None,
            )
        )
        for sp in setters:
            sp.state = APPLIED
    audit.record(
        session,
        f"run-{run.id}",
        "startpoints.applied",
        job=run.job.name,
        target=f"run {run.id}",
        detail={"sources": [r.source for r in reports]},
    )
    return len(reports)


def on_batch_committed(session: Session, run: Run, query: str, batch_id: int) -> None:
    """A batch past an application has committed: its startpoints are done; delete them so
    a later restart does not apply them again."""
    apps = session.scalars(
        select(StartpointApplication).where(
            StartpointApplication.run_id == run.id,
            StartpointApplication.query == query,
            StartpointApplication.committed_at.is_(None),
        )
    ).all()
    for app in apps:
        if app.batch_id is None or batch_id > app.batch_id:
            app.committed_at = utcnow()
            ids = [s["id"] for s in app.startpoints]
            session.execute(
                delete(Startpoint).where(Startpoint.id.in_(ids), Startpoint.state == APPLIED)
            )


def revert(
    session: Session,
    job_name: str,
    application_id: int,
    actor: Principal,
    checkpoint_root: CheckpointRoot,
) -> StartpointApplication:
    job = get_job(session, job_name, lock=True)
    app = session.get(StartpointApplication, application_id, with_for_update=True)
    if app is None or app.job_id != job.id:
        raise NotFound(f"Job '{job_name}' has no startpoint application {application_id}.")
    if app.reverted_at is not None:
        raise Conflict(f"Application {application_id} was already reverted.")
    running = active_run(session, job)
    if running is not None:
        raise Conflict(
            f"Job '{job_name}' is running (run {running.id}); stop it before reverting, so the "
            "checkpoint is not in use."
        )
    if app.batch_id is None:
        raise Conflict(
            "That startpoint was applied to a fresh query (no checkpoint existed), so there is "
            "no earlier position to put back."
        )
    # Derived again, not read from the row: rows stored before paths were derived by the
    # server may hold whatever a runtime reported.
    checkpoint = query_checkpoint(checkpoint_root, session.get_one(Run, app.run_id), app.query)
    try:
        rt.revert(checkpoint, app.batch_id)
    except rt.StartpointError as exc:
        before = json.dumps(app.before_offsets or {}, sort_keys=True)
        raise Conflict(
            f"Application {application_id} cannot be reverted: {exc}. Source "
            f"'{app.source}' was at {before} before it."
        ) from None
    except cp.CheckpointError as exc:
        raise Conflict(f"Application {application_id} cannot be reverted: {exc}.") from None
    except OSError as exc:  # the reason only: an OSError's text carries no file contents
        log.warning("revert of application %s: %s", application_id, exc)
        raise Conflict(
            f"Application {application_id} cannot be reverted: the checkpoint {checkpoint} "
            f"could not be read or written ({exc.strerror or type(exc).__name__})."
        ) from None
    app.reverted_at, app.reverted_by = utcnow(), actor.name
    ids = [s["id"] for s in app.startpoints]
    session.execute(delete(Startpoint).where(Startpoint.id.in_(ids)))
    audit.record(
        session, actor, "startpoints.revert", job=job.name, target=f"application {application_id}"
    )
    return app


def _check_reports_name_declared_sources(run: Run, reports: list[AppliedReport]) -> None:
    """At most one report per source the run's version declares (issue 51 M7: an unbounded
    list held the API's database slot for seconds). Checked before any row is read."""
    declared = {(q["name"], s["name"]) for q in run.version.queries for s in q["sources"]}
    named = [(r.query, r.source) for r in reports]
    unknown = [f"{q}/{s}" for q, s in named if (q, s) not in declared]
    if len(named) > len(declared) or len(set(named)) != len(named) or unknown:
        raise Unprocessable(
            f"A run reports at most one application per declared source ({len(declared)} in "
            f"version {run.version.number}); this report has {len(named)}"
            + (f", naming undeclared sources: {', '.join(unknown[:5])}" if unknown else "")
            + ". Nothing was recorded."
        )
