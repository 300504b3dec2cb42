"""A worker on a scripted backend (``FakeBackend``), its context (``ctx``) and the steps
around it: a job, a run, a worker killed after a step. A fixture plugin of
``tests/conftest.py``."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, update

from app.backends.base import AppState, AppStatus, SubmitSpec
from app.channel import service as channel
from app.clusters.models import Cluster
from app.core.config import Settings
from app.core.db import make_sessionmaker, transaction, utcnow
from app.jobs.models import Job, JobVersion
from app.operations.models import Operation
from app.worker.core.context import WorkerContext
from tidegate_runtime import contract


@dataclass
class FakeApp:
    spec: SubmitSpec
    state: AppState = AppState.PENDING


@dataclass
class FakeBackend:
    """An in-memory backend for worker logic. The same scenarios run against real Spark in
    the end-to-end tests (marked e2e); this one lets unit tests script failures precisely."""

    apps: dict[str, FakeApp] = field(default_factory=dict)
    fail_on_start: bool = False
    submits: int = 0
    finds: int = 0
    kills: list[str] = field(default_factory=list)
    # A dry-run driver (spark.tidegate.dry_run) ends at its first look with this outcome per
    # checked query, written where the real runtime writes it (None: every query fits).
    dry_run_outcome: dict[str, dict[str, Any]] | None = None
    # Or one such outcome per dry-run driver in turn (then dry_run_outcome again).
    dry_run_outcomes: list[dict[str, dict[str, Any]] | None] = field(default_factory=list)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    # A standby driver's runtime calls in once it runs (the channel marks it ready), as the
    # real one does after building its session; None: standbys never become ready.
    factory: Any = None

    def ready(self) -> bool:
        return True

    def submit(self, spec: SubmitSpec) -> str:
        self.submits += 1
        app_id = f"app-{next(self._ids)}"
        self.apps[app_id] = FakeApp(spec)
        return app_id

    def status(self, backend_id: str) -> AppStatus:
        app = self.apps.get(backend_id)
        if app is None:
            return AppStatus(backend_id, AppState.UNKNOWN, "NOT_FOUND")
        if app.state == AppState.PENDING and app.spec.conf.get("spark.tidegate.dry_run"):
            self._finish_dry_run(app)
        if app.state == AppState.PENDING:  # the next look finds it started (or failed)
            app.state = AppState.FAILED if self.fail_on_start else AppState.RUNNING
            if app.state == AppState.RUNNING and app.spec.conf.get(contract.STANDBY) == "true":
                self._standby_calls_in(app)
            return AppStatus(backend_id, AppState.PENDING, "SUBMITTED")
        message = "boom: bad config" if app.state == AppState.FAILED else None
        return AppStatus(backend_id, app.state, app.state.value.upper(), message)

    def statuses(self) -> dict[str, AppStatus] | None:
        return None  # its status() moves apps along: every run asks for itself

    def _standby_calls_in(self, app: FakeApp) -> None:
        if self.factory is None:
            return
        if app.spec.conf.get(contract.STANDBY_DRY_RUN_DIR):  # its dry run first, as a runtime's
            self._write_dry_run_result(app)
        spare = app.spec.conf.get(contract.SPARE)
        with transaction(self.factory) as session:
            channel.standby(
                session,
                int(app.spec.conf["spark.tidegate.run_id"]),
                int(app.spec.conf["spark.tidegate.attempt"]),
                int(spare) if spare else None,
            )

    def _finish_dry_run(self, app: FakeApp) -> None:
        self._write_dry_run_result(app)
        app.state = AppState.SUCCEEDED

    def _write_dry_run_result(self, app: FakeApp) -> None:
        checked = json.loads(app.spec.conf["spark.tidegate.dry_run_queries"])
        checked += list(json.loads(app.spec.conf.get("spark.tidegate.dry_run_trial") or "{}"))
        scripted = self.dry_run_outcomes.pop(0) if self.dry_run_outcomes else self.dry_run_outcome
        outcome = scripted or {q: {"ok": True} for q in checked}
        result = {"ok": all(o.get("ok") for o in outcome.values()), "queries": outcome}
        Path(app.spec.conf["spark.tidegate.dry_run_result"]).write_text(json.dumps(result))

    def kill(self, backend_id: str) -> None:
        self.kills.append(backend_id)
        app = self.apps.get(backend_id)
        if app is not None and not app.state.terminal:
            app.state = AppState.KILLED

    def find(self, tag: str) -> str | None:
        self.finds += 1
        return next((i for i, a in self.apps.items() if a.spec.tag == tag), None)

    def log_tail(self, backend_id: str, lines: int = 50) -> str | None:
        return None

    def alive(self) -> list[str]:
        return [i for i, a in self.apps.items() if not a.state.terminal]


@pytest.fixture
def fake() -> FakeBackend:
    return FakeBackend()


@pytest.fixture
def ctx(db: Engine, fake: FakeBackend, settings: Settings) -> WorkerContext:
    """A worker on the scripted backend, sharing its settings (data, checkpoint and event log
    roots) with the in-process API of ``tests/support/api.py``."""
    context = WorkerContext(
        factory=make_sessionmaker(db),
        settings=settings,
        worker_id="test-worker",
        poll_seconds=0.01,
    )
    context.backend = lambda cluster: fake  # type: ignore[method-assign]
    fake.factory = context.factory
    return context


def make_job(ctx: WorkerContext, policy: dict[str, object] | None = None) -> int:
    with transaction(ctx.factory) as session:
        cluster = Cluster(name="fake", kind="livy", url="http://fake")
        job = Job(
            name="job",
            restart_policy={"min_backoff": "1s", "max_backoff": "1h", **(policy or {})},
            created_by="test",
        )
        session.add_all([cluster, job])
        session.flush()
        session.add(
            JobVersion(
                job_id=job.id,
                number=1,
                cluster_id=cluster.id,
                app={"file": "/x.py"},
                conf={},
                queries=[{"name": "q", "sources": []}],
                created_by="test",
            )
        )
        return job.id


def make_run(ctx: WorkerContext, job_id: int) -> int:
    """A new run (submitting) of the job's first version."""
    from app.runs import service as runs

    with transaction(ctx.factory) as session:
        job = session.get(Job, job_id)
        assert job is not None
        return runs.create_run(session, job, job.versions[0], created_by="t").id


def die_after_step_then_resume(
    ctx: WorkerContext,
    monkeypatch: pytest.MonkeyPatch,
    op_id: int,
    fault: str,
    where: Any = None,
    between: Callable[[], None] | None = None,
) -> Operation:
    """The worker carries the operation out until the step ``fault`` (``kind:step``) commits
    and dies there (SystemExit stands in for SIGKILL); its lease runs out, and a second worker
    claims the operation and finishes it. The operation as it ended. ``where``: the module
    whose ``fault_point`` names the fault (the steps' by default); ``between``: called while
    no worker holds the operation."""
    from app.worker import execute as ops
    from app.worker.core import steps
    from app.worker.loop import Worker

    where = where or steps
    Worker(ctx, concurrency=1).claim()

    def crash(name: str) -> None:
        if name == fault:
            raise SystemExit("killed")  # stands in for SIGKILL at that very point

    monkeypatch.setattr(where, "fault_point", crash)
    with pytest.raises(SystemExit):
        ops.execute(ctx, op_id)
    monkeypatch.setattr(where, "fault_point", lambda name: None)
    if between is not None:
        between()
    with transaction(ctx.factory) as session:
        session.execute(update(Operation).values(lease_expires_at=utcnow() - timedelta(seconds=1)))
    other = WorkerContext(ctx.factory, ctx.settings, "worker-2", poll_seconds=0.01)
    other.backend = ctx.backend  # type: ignore[method-assign]
    assert Worker(other, concurrency=1).claim() == op_id
    ops.execute(other, op_id)
    with ctx.factory() as session:
        op = session.get(Operation, op_id)
        assert op is not None
        return op
