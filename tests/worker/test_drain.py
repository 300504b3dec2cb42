"""Drain and update-by-drain, worker logic, against a real PostgreSQL and a scripted backend
whose "runtime" answers the control plane the way tidegate_runtime/driver/runtime.py does. The same
scenarios run on real Spark in tests/worker/test_drain_e2e.py."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select, update

from app.backends.base import AppState
from app.channel import service as channel
from app.core import run_states as states
from app.core.db import transaction, utcnow
from app.jobs.models import Job, JobVersion
from app.operations.models import Operation
from app.runs.models import Run
from app.runs.schemas import DrainReport
from app.startpoints.models import Startpoint
from app.worker import execute as ops
from app.worker.core.context import WorkerContext
from app.worker.loop import Worker
from tests.support.waiting import wait_for
from tests.support.worker import FakeBackend, die_after_step_then_resume, make_job
from tests.worker.test_worker import _enqueue, _run, _run_op

END = {"clicks": {"0": 40, "1": 25}}


def _eventlog_query(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "sources": [
            {"name": "clicks", "kind": "eventlog", "options": {"root": "/nowhere", "stream": "c"}}
        ],
    }


def _job_with_two_versions(ctx: WorkerContext) -> int:
    """Version 1 reads clicks into windows; version 2 reads them into something else."""
    job_id = make_job(ctx)
    with transaction(ctx.factory) as session:
        v1 = session.scalar(select(JobVersion).where(JobVersion.job_id == job_id))
        assert v1 is not None
        v1.queries = [{**_eventlog_query("windows"), "stateful_operators": [{"kind": "w"}]}]
        session.add(
            JobVersion(
                job_id=job_id,
                number=2,
                cluster_id=v1.cluster_id,
                app={"file": "/y.py"},
                conf={},
                queries=[_eventlog_query("enriched")],
                created_by="test",
            )
        )
    return job_id


class ScriptedRuntime:
    """Plays the in-job runtime for every run: reads its directives, fixes the drain's end
    offsets, reports them drained and exits (or, ``stuck``, never catches up); stops when
    told to."""

    def __init__(
        self, ctx: WorkerContext, fake: FakeBackend, stuck: bool = False, late: bool = False
    ) -> None:
        # late: the drain marker is out when the timeout's stop arrives, so the runtime
        # finishes the drain instead of stopping (tidegate_runtime/driver/runtime.py does the same).
        self.ctx, self.fake, self.stuck, self.late = ctx, fake, stuck or late, late
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self.done.wait(0.01):
            with transaction(self.ctx.factory) as session:
                runs = session.scalars(select(Run).where(Run.state.in_(states.ON_BACKEND))).all()
                for run in runs:
                    app = self.fake.apps.get(run.backend_id or "")
                    if app is None or app.state != AppState.RUNNING:
                        continue
                    root = self.ctx.settings.resolved_checkpoint_root
                    channel.directives(session, run.id, run.attempt, root)  # runtime_seen_at
                    if run.state == states.STOPPING and self.late:
                        report = DrainReport(end_offsets=END, drained=True)
                        channel.record_drain(session, run.id, report)
                        app.state = AppState.SUCCEEDED
                    elif run.state == states.STOPPING:
                        app.state = AppState.SUCCEEDED  # a clean stop at a batch boundary
                    elif run.state == states.DRAINING and not self.stuck:
                        if not (run.drain or {}).get("end_offsets"):
                            channel.record_drain(session, run.id, DrainReport(end_offsets=END))
                        else:
                            report = DrainReport(end_offsets=END, drained=True)
                            channel.record_drain(session, run.id, report)
                            app.state = AppState.SUCCEEDED

    def __enter__(self) -> ScriptedRuntime:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        self.thread.join()


@pytest.fixture
def runtime(ctx: WorkerContext, fake: FakeBackend) -> Iterator[ScriptedRuntime]:
    with ScriptedRuntime(ctx, fake) as scripted:
        yield scripted


def _version(ctx: WorkerContext, run_id: int) -> int:
    with ctx.factory() as session:
        run = session.get(Run, run_id)
        assert run is not None
        return run.version.number


def _running(ctx: WorkerContext, job_id: int) -> int:
    op = _run_op(ctx, _enqueue(ctx, job_id, "submit", {"version": 1}))
    assert op.state == "succeeded", op.error
    assert op.run_id is not None
    run_id = op.run_id
    deadline = utcnow() + timedelta(seconds=10)
    while _run(ctx, run_id).runtime_seen_at is None:  # the runtime has said hello
        assert utcnow() < deadline
    return run_id


def test_drain_ends_the_run_drained_with_its_end_offsets(
    ctx: WorkerContext, fake: FakeBackend, runtime: ScriptedRuntime
) -> None:
    job_id = _job_with_two_versions(ctx)
    run_id = _running(ctx, job_id)
    op = _run_op(ctx, _enqueue(ctx, job_id, "drain", {"timeout_seconds": 30}, run_id))
    assert op.state == "succeeded", op.error
    assert op.result is not None and op.result["end_offsets"] == END
    assert op.result["backlog"]["windows"]["batches"] == 0
    run = _run(ctx, run_id)
    assert run.state == states.DRAINED and run.drain is not None
    assert run.drain["end_offsets"] == END and run.drain["drained_at"]
    assert [s["name"] for s in op.steps] == ["request_drain", "drained"]


def test_a_run_that_stops_at_a_batch_boundary_is_not_asked_to_be_killed(
    ctx: WorkerContext, fake: FakeBackend, runtime: ScriptedRuntime
) -> None:
    """Once the graceful stop saw the run end, the ``kill`` step records that nothing was left
    to kill: no kill request, and no second wait for the run (inside an update's pause)."""
    job_id = _job_with_two_versions(ctx)
    run_id = _running(ctx, job_id)
    op = _run_op(ctx, _enqueue(ctx, job_id, "stop", {"timeout_seconds": 30}, run_id))
    assert op.state == "succeeded", op.error
    done = {s["name"]: s["detail"] for s in op.steps}
    assert done["graceful_stop"] == {"graceful": True, "run_state": states.STOPPED}
    assert done["kill"] == {"kill_requested": False, "why": "it ended during the graceful stop"}
    assert done["stopped"] == {"run_state": states.STOPPED}
    run = _run(ctx, run_id)
    assert run.kill_attempt is None and run.kill_requested_at is None
    assert fake.kills == []


def test_a_stuck_drain_fails_and_leaves_the_run_stopped_at_a_batch_boundary(
    ctx: WorkerContext, fake: FakeBackend
) -> None:
    with ScriptedRuntime(ctx, fake, stuck=True):
        job_id = _job_with_two_versions(ctx)
        run_id = _running(ctx, job_id)
        op = _run_op(ctx, _enqueue(ctx, job_id, "drain", {"timeout_seconds": 0.5}, run_id))
    assert op.state == "failed"
    assert op.error is not None and "did not finish within" in op.error
    assert "stopped at a batch boundary" in op.error
    assert op.result is not None and op.result["run_state"] == states.STOPPED
    assert _run(ctx, run_id).stop_reason == "drain-timeout"
    assert fake.kills == []  # stopped by its runtime, not killed


def test_a_drain_past_its_marker_finishes_late_and_says_so(
    ctx: WorkerContext, fake: FakeBackend
) -> None:
    with ScriptedRuntime(ctx, fake, late=True):
        job_id = _job_with_two_versions(ctx)
        run_id = _running(ctx, job_id)
        op = _run_op(ctx, _enqueue(ctx, job_id, "drain", {"timeout_seconds": 0.5}, run_id))
    assert op.state == "succeeded", op.error
    run = _run(ctx, run_id)
    assert run.state == states.DRAINED and run.drain is not None and run.drain["drained_at"]
    drained = next(s for s in op.steps if s["name"] == "drained")
    assert "after its timeout" in drained["detail"]["late"], op.steps


def test_a_drain_taken_over_keeps_its_original_deadline(
    ctx: WorkerContext, fake: FakeBackend
) -> None:
    """A worker that takes a drain over (the first one died) does not start the timeout
    again: it counts from the request recorded on the run."""
    with ScriptedRuntime(ctx, fake, stuck=True):
        job_id = _job_with_two_versions(ctx)
        run_id = _running(ctx, job_id)
        long_ago = (utcnow() - timedelta(seconds=600)).isoformat()
        with transaction(ctx.factory) as session:
            session.execute(
                update(Run)
                .where(Run.id == run_id)
                .values(
                    state=states.DRAINING, stop_reason="drain", drain={"requested_at": long_ago}
                )
            )
        started = utcnow()
        op = _run_op(ctx, _enqueue(ctx, job_id, "drain", {"timeout_seconds": 300}, run_id))
    assert op.state == "failed" and op.error is not None
    assert "did not finish within" in op.error
    assert utcnow() - started < timedelta(seconds=120)  # not a fresh 300 s


def test_update_by_drain_starts_the_new_version_fresh_at_the_drained_offsets(
    ctx: WorkerContext, fake: FakeBackend, runtime: ScriptedRuntime
) -> None:
    job_id = _job_with_two_versions(ctx)
    old = _running(ctx, job_id)
    params = {"version": 2, "strategy": "drain", "verify_seconds": 0}
    op = _run_op(ctx, _enqueue(ctx, job_id, "update", params, old))
    assert op.state == "succeeded", op.error
    assert op.result is not None
    assert op.result["previous_run_id"] == old and op.result["end_offsets"] == END
    assert _run(ctx, old).state == states.DRAINED
    new = _run(ctx, op.result["run_id"])
    assert new.state == states.RUNNING and _version(ctx, new.id) == 2
    with ctx.factory() as session:
        points = session.scalars(select(Startpoint).where(Startpoint.job_id == job_id)).all()
        assert sorted((p.source, p.partition, p.type, p.value) for p in points) == [
            ("clicks", 0, "OFFSET", 40),
            ("clicks", 1, "OFFSET", 25),
        ]
        assert session.get(Job, job_id).current_run_id == new.id  # type: ignore[union-attr]
    assert fake.submits == 2 and fake.alive() == [new.backend_id]


@pytest.mark.parametrize("prewarm", [True, False], ids=["prewarmed", "cold"])
def test_a_failed_drain_during_update_starts_the_old_run_again(
    ctx: WorkerContext, fake: FakeBackend, prewarm: bool
) -> None:
    with ScriptedRuntime(ctx, fake, stuck=True):
        job_id = _job_with_two_versions(ctx)
        old = _running(ctx, job_id)
        params = {"version": 2, "strategy": "drain", "timeout_seconds": 0.5, "prewarm": prewarm}
        op = _run_op(ctx, _enqueue(ctx, job_id, "update", params, old))
    assert op.state == "failed"
    assert op.error is not None and "before anything new started" in op.error
    assert op.result == {"rolled_back": True, "run_id": old, "version": 1}
    run = _run(ctx, old)
    assert run.state == states.RUNNING and run.attempt == 1
    # The standby (prewarmed) never got go: released, its driver killed, none left behind.
    assert fake.submits == 2 + prewarm and fake.alive() == [run.backend_id]
    with ctx.factory() as session:
        others = session.scalars(select(Run).where(Run.job_id == job_id, Run.id != old)).all()
        assert [(r.state, r.stop_reason, r.go_at) for r in others] == (
            [(states.STOPPED, "released", None)] if prewarm else []
        )


def test_a_new_version_that_fails_to_start_rolls_back_fresh_at_the_drained_offsets(
    ctx: WorkerContext, fake: FakeBackend, runtime: ScriptedRuntime
) -> None:
    job_id = _job_with_two_versions(ctx)
    old = _running(ctx, job_id)
    real_submit = fake.submit

    def submit(spec: Any) -> str:  # version 2 dies on start; version 1 starts fine
        app_id = real_submit(spec)
        fake.apps[app_id].state = (
            AppState.FAILED if spec.file == "/y.py" else fake.apps[app_id].state
        )
        return app_id

    fake.submit = submit  # type: ignore[method-assign]
    params = {"version": 2, "strategy": "drain", "verify_seconds": 0, "prewarm": False}
    op = _run_op(ctx, _enqueue(ctx, job_id, "update", params, old))
    assert op.state == "failed", op.result
    assert op.error is not None and "Rolled back" in op.error, op.error
    assert op.result is not None and op.result["rolled_back"] is True
    back = _run(ctx, op.result["run_id"])
    assert back.state == states.RUNNING and _version(ctx, back.id) == 1 and back.id != old
    with ctx.factory() as session:  # still pending: the rollback run applies them
        assert session.scalar(select(Startpoint.value).where(Startpoint.partition == 0)) == 40


def test_a_prewarmed_version_that_fails_before_go_leaves_the_old_run_running(
    ctx: WorkerContext, fake: FakeBackend, runtime: ScriptedRuntime
) -> None:
    job_id = _job_with_two_versions(ctx)
    old = _running(ctx, job_id)
    real_submit = fake.submit

    def submit(spec: Any) -> str:  # version 2's standby dies while it starts
        app_id = real_submit(spec)
        if spec.file == "/y.py":
            fake.apps[app_id].state = AppState.FAILED
        return app_id

    fake.submit = submit  # type: ignore[method-assign]
    params = {"version": 2, "strategy": "drain", "verify_seconds": 0}
    op = _run_op(ctx, _enqueue(ctx, job_id, "update", params, old))
    assert op.state == "failed"
    assert op.error is not None and "failed before go" in op.error
    assert "Nothing was stopped" in op.error, op.error
    run = _run(ctx, old)
    assert run.state == states.RUNNING and run.attempt == 0 and run.drain is None
    # No trial: the fake backend's old run committed nothing to read.
    assert [s["name"] for s in op.steps] == ["target", "dry_run_prepare", "dry_run", "standby"]
    with ctx.factory() as session:
        assert session.get(Job, job_id).current_run_id == old  # type: ignore[union-attr]


COLD_STEPS = [
    "target",
    "dry_run_prepare",
    "dry_run",
    "request_drain",
    "drained",
    "hand_off",
    "plan",
    "reserve_run",
    "materialise",
    "create_run",
    "await_submitted",
    "verify",
]
PREWARMED_STEPS = [
    "target",
    "dry_run_prepare",
    "dry_run",
    "standby",
    "standby_ready",
    "request_drain",
    "drained",
    "hand_off",
    "plan",
    "reserve_run",
    "materialise",
    "go",
    "verify",
]


@pytest.mark.parametrize(
    ("prewarm", "step"),
    [(False, step) for step in COLD_STEPS] + [(True, step) for step in PREWARMED_STEPS],
    ids=[f"cold-{s}" for s in COLD_STEPS] + [f"prewarmed-{s}" for s in PREWARMED_STEPS],
)
def test_update_by_drain_survives_the_worker_dying_after_every_step(
    ctx: WorkerContext,
    fake: FakeBackend,
    runtime: ScriptedRuntime,
    monkeypatch: pytest.MonkeyPatch,
    prewarm: bool,
    step: str,
) -> None:
    job_id = _job_with_two_versions(ctx)
    old = _running(ctx, job_id)
    params = {"version": 2, "strategy": "drain", "verify_seconds": 0, "prewarm": prewarm}
    op_id = _enqueue(ctx, job_id, "update", params, old)
    op = die_after_step_then_resume(ctx, monkeypatch, op_id, f"update:{step}")
    assert op.state == "succeeded", op.error
    with ctx.factory() as session:
        assert [s["name"] for s in op.steps] == (PREWARMED_STEPS if prewarm else COLD_STEPS)
        handed = next(s["detail"] for s in op.steps if s["name"] == "hand_off")
        assert handed["watermark"].startswith("none: the new version starts on fresh")
        runs = session.scalars(select(Run).where(Run.job_id == job_id)).all()
        assert sorted(r.state for r in runs) == [states.DRAINED, states.RUNNING]
    assert fake.submits == 2 and len(fake.alive()) == 1  # one driver per intended run


def _stateless_old_run(ctx: WorkerContext) -> tuple[int, int]:
    """(job id, run id) of a running version 1 without state whose checkpoint has batch 4
    committed at {"0": 7, "1": 3} and batch 5 planned, not committed."""
    job_id = _job_with_two_versions(ctx)
    with transaction(ctx.factory) as session:  # version 1 without state this time
        v1 = session.scalar(
            select(JobVersion).where(JobVersion.job_id == job_id, JobVersion.number == 1)
        )
        assert v1 is not None
        v1.queries = [_eventlog_query("windows")]
    old = _running(ctx, job_id)
    checkpoint = ctx.settings.resolved_checkpoint_root / "job" / str(old) / "windows"
    for batch, line in ((4, '{"0":7,"1":3}'), (5, '{"0":9,"1":3}')):
        (checkpoint / "offsets").mkdir(parents=True, exist_ok=True)
        (checkpoint / "offsets" / str(batch)).write_text(
            'v1\n{"batchWatermarkMs":0,"batchTimestampMs":0,"conf":{}}\n' + line
        )
    (checkpoint / "commits").mkdir()
    (checkpoint / "commits" / "4").write_text('v1\n{"nextBatchWatermarkMs":0}')
    return job_id, old


@pytest.mark.parametrize("prewarm", [False, True], ids=["cold", "prewarmed"])
def test_a_version_that_fails_its_trial_is_refused_before_anything_stops(
    ctx: WorkerContext, fake: FakeBackend, runtime: ScriptedRuntime, prewarm: bool
) -> None:
    job_id, old = _stateless_old_run(ctx)
    error = (
        "An exception was thrown from the Python worker: Traceback (most recent call last):\n"
        "ValueError: cannot parse amount 12,5\n"
    )
    fake.dry_run_outcome = {
        "enriched": {"ok": False, "error_class": "PYTHON_EXCEPTION", "message": error}
    }
    params = {"version": 2, "strategy": "stateless", "verify_seconds": 0, "prewarm": prewarm}
    op = _run_op(ctx, _enqueue(ctx, job_id, "update", params, old))
    assert op.state == "failed" and op.error is not None, op.steps
    assert "version 2 failed its trial" in op.error and "nothing was stopped" in op.error
    assert "query 'enriched': ValueError: cannot parse amount 12,5" in op.error, op.error
    names = [s["name"] for s in op.steps]
    # Pre-warmed, the trial ran in the standby (released now); cold, in a driver of its own.
    last = ["target", "dry_run_prepare"] + (
        ["standby", "standby_ready"] if prewarm else ["dry_run_submit"]
    )
    assert names == last, names
    assert _run(ctx, old).state == states.RUNNING and _run(ctx, old).drain is None


def test_a_stateless_update_starts_the_new_version_where_the_old_one_stopped(
    ctx: WorkerContext, fake: FakeBackend, runtime: ScriptedRuntime
) -> None:
    job_id, old = _stateless_old_run(ctx)
    params = {"version": 2, "strategy": "stateless", "verify_seconds": 0, "prewarm": False}
    op = _run_op(ctx, _enqueue(ctx, job_id, "update", params, old))
    assert op.state == "succeeded", op.error
    assert op.result is not None and op.result["end_offsets"] == {"clicks": {"0": 7, "1": 3}}
    assert _run(ctx, old).state == states.STOPPED and fake.kills == []
    names = [s["name"] for s in op.steps]
    # First its trial, a driver of its own (cold) over the last records before 7 and 3.
    assert names[:4] == ["target", "dry_run_prepare", "dry_run_submit", "dry_run"], names
    prepared = next(s["detail"] for s in op.steps if s["name"] == "dry_run_prepare")
    assert prepared["trial"] == {
        "enriched": {"clicks": {"start": {"0": 0, "1": 0}, "end": {"0": 7, "1": 3}}}
    }, prepared
    assert next(s["detail"] for s in op.steps if s["name"] == "dry_run")["trial"] is True
    assert names[4:9] == [
        "request_stop",
        "graceful_stop",
        "kill",
        "stopped",
        "positions",
    ]
    with ctx.factory() as session:
        points = session.scalars(select(Startpoint).where(Startpoint.job_id == job_id)).all()
        assert sorted((p.partition, p.value) for p in points) == [(0, 7), (1, 3)]
    assert _version(ctx, op.result["run_id"]) == 2


def test_a_cancel_during_a_prewarmed_update_releases_the_standby_and_restarts_nothing(
    ctx: WorkerContext, fake: FakeBackend
) -> None:
    with ScriptedRuntime(ctx, fake, stuck=True):
        job_id = _job_with_two_versions(ctx)
        old = _running(ctx, job_id)
        params = {"version": 2, "strategy": "drain", "timeout_seconds": 30}
        update_id = _enqueue(ctx, job_id, "update", params, old)
        Worker(ctx, concurrency=1).claim()
        updating = threading.Thread(target=ops.execute, args=(ctx, update_id))
        updating.start()

        def draining() -> bool:
            with ctx.factory() as session:
                op = session.get(Operation, update_id)
                return op is not None and op.step_done("request_drain")

        wait_for(draining, bool, 20, what="the update to wait on the drain")
        with ctx.factory() as session:
            (warm,) = session.scalars(select(Run.id).where(Run.state == states.STANDBY)).all()
        other = WorkerContext(ctx.factory, ctx.settings, "worker-2", poll_seconds=0.01)
        other.backend = ctx.backend  # type: ignore[method-assign]
        cancel_id = _enqueue(ctx, job_id, "cancel", {}, old)
        Worker(other, concurrency=1).claim()
        ops.execute(other, cancel_id)
        updating.join(60)
    with ctx.factory() as session:
        update_op, cancel_op = session.get(Operation, update_id), session.get(Operation, cancel_id)
        assert cancel_op is not None and cancel_op.state == "succeeded", cancel_op.error
        assert update_op is not None and update_op.state == "failed"
        assert cancel_op.steps[0]["name"] == "release_standbys"
    assert _run(ctx, old).state == states.CANCELLED and _run(ctx, old).attempt == 0
    released = _run(ctx, warm)
    assert released.state == states.STOPPED and released.go_at is None
    assert fake.alive() == [], "a driver outlived the cancelled job"
