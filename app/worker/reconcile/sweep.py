"""The periodic sweep over the runs a worker supervises, sized for a fleet.

Most runs, most of the time, are running and their backend says so: a full pass over each
(its run guard, a locked read, a write of what was observed) would change nothing but the
time it was observed, and at a thousand runs took the reconciler thread over 15 s a sweep,
so a dead driver waited that long to be seen. The sweep therefore reads each cluster's
listing once, sets aside the *quiet* runs — running, recorded as running, listed as running,
with nothing for the reconciler to do about them or their spare — and marks them observed in
one statement; every other run gets its full pass (app/worker/reconcile/run.py). Nothing is
decided about a quiet run that a full pass would decide otherwise.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from sqlalchemy import select, update

from app.backends.base import AppState
from app.clusters.models import Cluster
from app.core import run_states as states
from app.core.db import transaction, utcnow
from app.jobs.models import Job, JobVersion
from app.runs.models import Run
from app.worker.core.context import WorkerContext, backend_key
from app.worker.reconcile.reconciler import reconciler

log = logging.getLogger(__name__)

_WAITING = frozenset({AppState.PENDING, AppState.RUNNING})
# A quiet run's observed_at is brought up to date this often, not every sweep: a thousand
# rows rewritten each second would be most of what a fleet at rest writes to PostgreSQL.
OBSERVED_EVERY = timedelta(seconds=15)


def sweep(ctx: WorkerContext, run_ids: list[int]) -> None:
    """One pass over ``run_ids``: on one new listing per cluster, quiet runs in bulk, the
    others one by one by the reconciler thread (which this waits for)."""
    ctx.listings.forget()
    quiet = quiet_runs(ctx, run_ids)
    if quiet:
        now = utcnow()
        with transaction(ctx.factory) as session:
            # Rows locked in id order first (a bulk UPDATE locks them in whatever order its
            # plan scans, and two workers' sweeps may overlap); one another holds is left for
            # the next sweep.
            due = session.scalars(
                select(Run.id)
                .where(
                    Run.id.in_(quiet),
                    Run.state == states.RUNNING,
                    Run.observed_at < now - OBSERVED_EVERY,
                )
                .order_by(Run.id)
                .with_for_update(skip_locked=True, key_share=True)
            ).all()
            if due:
                session.execute(
                    update(Run)
                    .where(Run.id.in_(due))
                    .values(observed_at=now)
                    .execution_options(synchronize_session=False)
                )
    reconciler(ctx).sweep([r for r in run_ids if r not in quiet])


def quiet_runs(ctx: WorkerContext, run_ids: list[int]) -> set[int]:
    """The runs among ``run_ids`` whose full pass would change nothing but their
    ``observed_at`` (one query, and the clusters' listings)."""
    if not run_ids:
        return set()
    with ctx.factory() as session:
        rows = session.execute(
            select(
                Run.id,
                Run.state,
                Run.backend_id,
                Run.observed_state,
                Run.unknown_since,
                Run.failures,
                Run.attempt,
                Run.spare_attempt,
                Run.spare_backend_id,
                Run.spare_requested,
                Run.fenced_backend_id,
                Job.hot_spare,
                Cluster,
            )
            .join(Job, Job.id == Run.job_id)
            .join(JobVersion, JobVersion.id == Run.version_id)
            .join(Cluster, Cluster.id == JobVersion.cluster_id)
            .where(Run.id.in_(run_ids), Run.state == states.RUNNING)
        ).all()
        quiet = set()
        for row in rows:
            listed = ctx.listings.listed(backend_key(row.Cluster), ctx.backend(row.Cluster))
            if _quiet(row, listed):
                quiet.add(row.id)
    return quiet


def _quiet(row: Any, listed: dict[str, Any]) -> bool:
    status = listed.get(row.backend_id) if row.backend_id else None
    if (
        status is None
        or status.state is not AppState.RUNNING
        or row.observed_state != AppState.RUNNING.value
        or row.unknown_since is not None
        or row.failures  # its failure count may be due a reset (the stable period)
        or row.fenced_backend_id  # its fenced last attempt is watched until it exits
    ):
        return False
    wants_spare = row.hot_spare or row.spare_requested
    if row.spare_attempt is None:
        return not wants_spare  # else one is due (or waits for state): a full pass decides
    spare = listed.get(row.spare_backend_id) if row.spare_backend_id else None
    # A spare for the next attempt, still wanted, submitted and alive: nothing to do.
    return (
        wants_spare
        and row.spare_attempt == row.attempt + 1
        and spare is not None
        and spare.state in _WAITING
    )
