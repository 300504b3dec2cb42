"""The reconciler's sweep over a fleet reads one backend listing per cluster, not one request
per run, and still sees a dead driver on its next pass. Real PostgreSQL, the real Livy
backend, and a Livy-compatible stand-in (bench/fake_livy.py) that counts calls."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine, select

from app.clusters.models import Cluster
from app.core import run_states as states
from app.core.config import Settings
from app.core.db import make_sessionmaker, transaction, utcnow
from app.jobs.models import Job, JobVersion
from app.runs import service as runs
from app.runs.models import Run
from app.worker import loop
from app.worker.core.context import WorkerContext
from app.worker.loop import FULL_SWEEP_EVERY, Worker
from app.worker.reconcile import sweep as sweeping
from app.worker.reconcile.reconciler import pass_now, reconciler, wait_for_run
from app.worker.reconcile.run import due_runs
from app.worker.reconcile.sweep import quiet_runs, sweep
from bench.fake_livy import FakeLivy

RUNS = 120  # more than one page of GET /batches (100 by default)


@pytest.fixture
def livy() -> Iterator[FakeLivy]:
    fake = FakeLivy().start()
    yield fake
    fake.stop()


@pytest.fixture
def fleet_ctx(db: Engine, tmp_path: Path) -> Iterator[WorkerContext]:
    ctx = WorkerContext(
        factory=make_sessionmaker(db),
        settings=Settings(data_dir=tmp_path, log_json=False),
        worker_id="fleet-worker",
        poll_seconds=60,  # the listing stays fresh for the whole test unless it is dropped
    )
    yield ctx
    if ctx.reconciler is not None:
        ctx.reconciler.stop()


def _fleet(ctx: WorkerContext, livy: FakeLivy, count: int) -> list[int]:
    """``count`` jobs, each with a running run whose driver is a batch on the stand-in."""
    ids = []
    with transaction(ctx.factory) as session:
        cluster = Cluster(name="livy", kind="livy", url=livy.url)
        session.add(cluster)
        session.flush()
        for i in range(count):
            job = Job(name=f"job-{i}", restart_policy={"min_backoff": "1s"}, created_by="t")
            session.add(job)
            session.flush()
            version = JobVersion(
                job_id=job.id,
                number=1,
                cluster_id=cluster.id,
                app={"file": "/x.py"},
                conf={},
                queries=[{"name": "q", "sources": []}],
                created_by="t",
            )
            session.add(version)
            session.flush()
            run = runs.create_run(session, job, version, created_by="t")
            _, body = livy.create({"name": run.tag})
            run.backend_id = str(body["id"])
            runs.transition(session, run, states.RUNNING, reason="test", running_since=None)
            ids.append(run.id)
    return ids


def _calls(livy: FakeLivy) -> tuple[int, int]:
    """(listings, per-batch status requests) the stand-in has answered."""
    with livy.lock:
        listings = sum(1 for c in livy.calls if c.method == "GET" and c.path == "/batches")
        each = sum(1 for c in livy.calls if c.method == "GET" and c.path.startswith("/batches/"))
    return listings, each


def test_a_sweep_over_many_runs_lists_the_backend_once(
    fleet_ctx: WorkerContext, livy: FakeLivy
) -> None:
    ids = _fleet(fleet_ctx, livy, RUNS)
    assert sorted(due_runs(fleet_ctx)) == sorted(ids)

    sweep(fleet_ctx, due_runs(fleet_ctx))
    listings, each = _calls(livy)
    assert (listings, each) == (2, 0)  # two pages of one listing; no request per run
    with fleet_ctx.factory() as session:
        observed = session.scalars(select(Run.observed_state).where(Run.id.in_(ids))).all()
    assert set(observed) == {"running"}

    # A driver dies: the next sweep (on a new listing) sees it and restarts its run.
    dead_run = ids[7]
    with fleet_ctx.factory() as session:
        dead_batch = int(session.get(Run, dead_run).backend_id)  # type: ignore[union-attr, arg-type]
    with livy.lock:
        livy.batches[dead_batch]["state"] = "dead"
    sweep(fleet_ctx, due_runs(fleet_ctx))
    listings, each = _calls(livy)
    # One more listing (2 pages); the failed one asked for its message, nobody else.
    assert listings == 4
    assert each <= 3, each  # its status (with the failure) and its log tail
    with fleet_ctx.factory() as session:
        run = session.get(Run, dead_run)
        assert run is not None and run.state == states.RESTARTING, run.state
        others = session.scalars(select(Run.state).where(Run.id.in_(ids), Run.id != dead_run))
        assert set(others.all()) == {states.RUNNING}


def test_an_operations_pass_asks_the_backend_not_the_listing(
    fleet_ctx: WorkerContext, livy: FakeLivy
) -> None:
    (run_id,) = _fleet(fleet_ctx, livy, 1)
    reconciler(fleet_ctx).sweep([run_id])  # a listing, fresh for a minute
    with livy.lock:
        livy.batches[0]["state"] = "success"
    pass_now(fleet_ctx, run_id)  # an operation waiting on the run must see the current state
    with fleet_ctx.factory() as session:
        run = session.get(Run, run_id)
        assert run is not None and run.state == states.SUCCEEDED
    assert _calls(livy)[1] == 1


def test_an_operation_waiting_on_a_run_asks_the_backend_only_while_the_run_is_not_there_yet(
    fleet_ctx: WorkerContext, livy: FakeLivy
) -> None:
    """What the database says is read first: an update's wait for a run its driver already
    reported stopped returns without a pass (which asks the backend), between stop and go.
    A run that is not there yet gets its pass, and the pass finds what the driver did."""
    (run_id,) = _fleet(fleet_ctx, livy, 1)
    running = wait_for_run(fleet_ctx, run_id, lambda r: r.state == states.RUNNING, 5, "run")
    assert running.state == states.RUNNING and _calls(livy) == (0, 0)
    with fleet_ctx.factory() as session:
        batch = int(session.get(Run, run_id).backend_id)  # type: ignore[union-attr, arg-type]
    with livy.lock:
        livy.batches[batch]["state"] = "success"
    ended = wait_for_run(fleet_ctx, run_id, lambda r: r.state in states.TERMINAL, 5, "end")
    assert ended.state == states.SUCCEEDED and _calls(livy)[1] >= 1


def test_live_workers_share_the_sweep_and_each_sweeps_all_now_and_then(
    fleet_ctx: WorkerContext, livy: FakeLivy, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = _fleet(fleet_ctx, livy, 30)
    one = Worker(fleet_ctx, concurrency=1)
    other_ctx = WorkerContext(fleet_ctx.factory, fleet_ctx.settings, "fleet-worker-2")
    two = Worker(other_ctx, concurrency=1)
    assert one.share(ids) == ids  # not live yet: it sweeps everything
    one.beat()
    two.beat()
    mine, theirs = one.share(ids), two.share(ids)
    assert mine and theirs and not set(mine) & set(theirs)
    assert sorted(mine + theirs) == sorted(ids)

    swept: list[list[int]] = []
    monkeypatch.setattr(loop, "sweep", lambda ctx, run_ids: swept.append(sorted(run_ids)))
    for _ in range(FULL_SWEEP_EVERY):
        one.supervise()
    assert [len(s) for s in swept] == [len(mine)] * (FULL_SWEEP_EVERY - 1) + [len(ids)]


def test_quiet_runs_are_those_a_full_pass_would_leave_alone(
    fleet_ctx: WorkerContext, livy: FakeLivy
) -> None:
    plain, wants_spare, spare_alive, spare_dead, failed_before = _fleet(fleet_ctx, livy, 5)
    with transaction(fleet_ctx.factory) as session:
        for run in session.scalars(select(Run)):
            run.observed_state = "running"
        session.get(Run, wants_spare).job.hot_spare = True  # type: ignore[union-attr]
        for run_id, state in ((spare_alive, "running"), (spare_dead, "dead")):
            run = session.get(Run, run_id)
            assert run is not None
            run.job.hot_spare = True
            _, body = livy.create({"name": f"{run.tag}-spare"})
            livy.batches[body["id"]]["state"] = state
            run.spare_attempt, run.spare_backend_id = run.attempt + 1, str(body["id"])
        session.get(Run, failed_before).failures = 1  # type: ignore[union-attr]
        before, recent = utcnow() - timedelta(minutes=5), utcnow()
        session.get(Run, plain).observed_at = before  # type: ignore[union-attr]
        session.get(Run, spare_alive).observed_at = recent  # type: ignore[union-attr]
    fleet_ctx.listings.forget()
    quiet = quiet_runs(fleet_ctx, [plain, wants_spare, spare_alive, spare_dead, failed_before])
    assert quiet == {plain, spare_alive}

    # The sweep passes over the others one by one and touches the quiet ones in bulk.
    passed: list[int] = []
    real = reconciler(fleet_ctx)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sweeping, "reconciler", lambda ctx: _Spy(real, passed))
        sweep(fleet_ctx, [plain, wants_spare, spare_alive, spare_dead, failed_before])
    assert sorted(passed) == sorted([wants_spare, spare_dead, failed_before])
    with fleet_ctx.factory() as session:
        # Observed long enough ago: brought up to date; observed just now: left as it is.
        assert session.get(Run, plain).observed_at > before  # type: ignore[union-attr, operator]
        assert session.get(Run, spare_alive).observed_at == recent  # type: ignore[union-attr]


class _Spy:
    def __init__(self, real: object, passed: list[int]) -> None:
        self.real, self.passed = real, passed

    def sweep(self, run_ids: list[int]) -> None:
        self.passed.extend(run_ids)
        self.real.sweep(run_ids)  # type: ignore[attr-defined]


def test_a_running_run_whose_fenced_attempt_lingers_is_not_quiet(
    fleet_ctx: WorkerContext, livy: FakeLivy
) -> None:
    """A pre-warmed restart hands over on the old driver's fence: the run runs on (its spare
    adopted) and looks quiet to the sweep, while the fenced attempt's process may linger.
    The sweep gives it a full pass, which kills that process once its grace is over."""
    (run_id,) = _fleet(fleet_ctx, livy, 1)
    _, body = livy.create({"name": "the-fenced-attempt"})  # still running
    fenced = str(body["id"])
    with transaction(fleet_ctx.factory) as session:
        run = session.get(Run, run_id)
        assert run is not None
        run.observed_state = "running"
        run.fenced_backend_id = fenced
        run.fenced_at = utcnow() - timedelta(seconds=fleet_ctx.settings.fenced_exit_seconds + 1)
    assert run_id not in quiet_runs(fleet_ctx, [run_id])
    sweep(fleet_ctx, due_runs(fleet_ctx))
    with livy.lock:
        assert livy.batches[int(fenced)]["state"] in ("killed", "dead"), livy.batches[int(fenced)]
    with fleet_ctx.factory() as session:
        run = session.get(Run, run_id)
        assert run is not None and run.state == states.RUNNING
        assert run.fenced_backend_id is None
