"""Worker logic against a real PostgreSQL and a scripted backend."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from sqlalchemy import Engine, select, text, update

from app.auth.models import ApiToken
from app.auth.service import Principal, Scope
from app.backends.base import AppState
from app.core import run_states as states
from app.core.db import transaction, utcnow
from app.jobs.models import Job
from app.operations import state as op_state
from app.operations.models import Operation
from app.operations.service import enqueue
from app.runs import service as runs_service
from app.runs.models import Run, RunTransition
from app.runs.service import IllegalTransition, transition
from app.worker import execute as ops
from app.worker.core.context import WorkerContext
from app.worker.loop import Worker
from app.worker.reconcile import run as rec
from app.worker.reconcile.run import reconcile_run
from app.worker.runs import verify
from tests.support.waiting import wait_for
from tests.support.worker import (
    FakeBackend,
    die_after_step_then_resume,
    make_job,
    make_run,
)

ACTOR = Principal("tester", Scope.OPERATE)


def _enqueue(
    ctx: WorkerContext, job_id: int, kind: str, params: dict, run_id: int | None = None
) -> int:  # type: ignore[type-arg]
    with transaction(ctx.factory) as session:
        job = session.get(Job, job_id)
        assert job is not None
        op, _ = enqueue(session, job, kind, params, ACTOR, None, run_id=run_id)
        return op.id


def _run_op(ctx: WorkerContext, op_id: int) -> Operation:
    worker = Worker(ctx, concurrency=1)
    assert worker.claim() == op_id
    ops.execute(ctx, op_id)
    with ctx.factory() as session:
        op = session.get(Operation, op_id)
        assert op is not None
        return op


def _run(ctx: WorkerContext, run_id: int) -> Run:
    with ctx.factory() as session:
        run = session.get(Run, run_id)
        assert run is not None
        return run


def test_submit_runs_once_and_hands_out_a_run_token(ctx: WorkerContext, fake: FakeBackend) -> None:
    job_id = make_job(ctx)
    op = _run_op(ctx, _enqueue(ctx, job_id, "submit", {"version": 1}))
    assert op.state == "succeeded", op.error
    assert [s["name"] for s in op.steps] == ["create_run", "await_submitted"]
    run = _run(ctx, op.run_id)  # type: ignore[arg-type]
    assert run.state == states.RUNNING and fake.submits == 1
    assert fake.finds == 0  # never sent before: nothing to look up on the backend
    spec = fake.apps[run.backend_id].spec  # type: ignore[index]
    assert spec.tag == f"tidegate-run-{run.id}-a0"
    assert spec.conf["spark.tidegate.run_id"] == str(run.id)
    assert set(spec.env) == {"TIDEGATE_RUN_BOOTSTRAP"}  # never the run token itself
    assert spec.env["TIDEGATE_RUN_BOOTSTRAP"].startswith("tg_")
    assert "TOKEN" not in str(spec.conf)
    with ctx.factory() as session:
        token = session.scalar(select(ApiToken).where(ApiToken.run_id == run.id))
        assert token is not None and token.scope == "bootstrap"  # traded by the driver
        assert session.get(Job, job_id).state == states.RUNNING  # type: ignore[union-attr]


def test_crash_between_submit_and_record_does_not_submit_twice(
    ctx: WorkerContext, fake: FakeBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    job_id = make_job(ctx)
    op_id = _enqueue(ctx, job_id, "submit", {"version": 1})

    def submitted_once() -> None:
        assert fake.submits == 1 and fake.finds == 0

    # Another worker takes the operation over once the lease has run out.
    op = die_after_step_then_resume(
        ctx, monkeypatch, op_id, "reconcile:after_backend_submit", rec, submitted_once
    )
    assert op.state == "succeeded", op.error
    # The intent was recorded before the call: the resumed worker looked first, found it.
    assert fake.submits == 1 and fake.finds == 1 and len(fake.alive()) == 1


def test_failures_restart_on_pstl_schedule_then_fail_for_good(
    ctx: WorkerContext, fake: FakeBackend
) -> None:
    fake.fail_on_start = True
    job_id = make_job(ctx, {"max_attempts": 2, "min_backoff": "1s"})
    op = _run_op(ctx, _enqueue(ctx, job_id, "submit", {"version": 1}))
    assert op.state == "failed" and "boom: bad config" in (op.error or "")
    assert "restarted at" in (op.error or "")
    run_id = op.run_id
    assert run_id is not None
    delays = []
    for _ in range(3):
        run = _run(ctx, run_id)
        if run.state != states.RESTARTING:
            break
        delays.append(round((run.next_restart_at - run.updated_at).total_seconds()))  # type: ignore[operator]
        with ctx.factory() as session:  # the job shows its current run's next restart
            assert session.get(Job, job_id).next_restart_at == run.next_restart_at  # type: ignore[union-attr]
        with transaction(ctx.factory) as session:  # let the backoff elapse
            session.execute(update(Run).values(next_restart_at=utcnow() - timedelta(seconds=1)))
        for _ in range(4):
            reconcile_run(ctx, run_id)
    run = _run(ctx, run_id)
    assert delays == [1, 2]  # PSTL: 1s, then 2s
    assert run.state == states.FAILED and run.attempt == 2 and run.failures == 3
    assert "a person must act" in (run.last_error or "")
    assert fake.submits == 3
    with ctx.factory() as session:
        assert session.get(Job, job_id).state == states.FAILED  # type: ignore[union-attr]
        assert session.get(Job, job_id).next_restart_at is None  # type: ignore[union-attr]
        moves = session.scalars(
            select(RunTransition.to_state)
            .where(RunTransition.run_id == run_id)
            .order_by(RunTransition.id)
        ).all()
    assert moves == ["restarting", "submitting", "restarting", "submitting", "failed"]


def test_stop_and_restart_fence_the_old_driver(ctx: WorkerContext, fake: FakeBackend) -> None:
    job_id = make_job(ctx)
    run_id = _run_op(ctx, _enqueue(ctx, job_id, "submit", {"version": 1})).run_id
    assert run_id is not None
    first = _run(ctx, run_id).backend_id
    op = _run_op(ctx, _enqueue(ctx, job_id, "restart", {}, run_id))
    assert op.state == "succeeded", op.error
    run = _run(ctx, run_id)
    assert run.state == states.RUNNING and run.attempt == 1 and run.backend_id != first
    assert fake.apps[first].state.terminal and fake.alive() == [run.backend_id]  # type: ignore[index]
    stop = _run_op(ctx, _enqueue(ctx, job_id, "stop", {"timeout_seconds": 5}, run_id))
    assert stop.state == "succeeded", stop.error
    assert _run(ctx, run_id).state == states.STOPPED and fake.alive() == []


def test_cancel_during_backoff(ctx: WorkerContext, fake: FakeBackend) -> None:
    fake.fail_on_start = True
    job_id = make_job(ctx, {"min_backoff": "1h"})
    run_id = _run_op(ctx, _enqueue(ctx, job_id, "submit", {"version": 1})).run_id
    assert _run(ctx, run_id).state == states.RESTARTING  # type: ignore[arg-type]
    op = _run_op(ctx, _enqueue(ctx, job_id, "cancel", {}, run_id))
    assert op.state == "succeeded", op.error
    assert _run(ctx, run_id).state == states.CANCELLED  # type: ignore[arg-type]


def test_transition_refuses_illegal_moves(ctx: WorkerContext) -> None:
    job_id = make_job(ctx)
    run_id = _run_op(ctx, _enqueue(ctx, job_id, "submit", {"version": 1})).run_id
    with transaction(ctx.factory) as session:
        run = session.get(Run, run_id)
        assert run is not None
        transition(session, run, states.STOPPING, reason="test")
        transition(session, run, states.STOPPING, reason="again: a no-op")
        with pytest.raises(IllegalTransition):
            transition(session, run, states.RUNNING)


def test_supervisor_takes_over_an_orphaned_submission(
    ctx: WorkerContext, fake: FakeBackend
) -> None:
    job_id = make_job(ctx)
    with transaction(ctx.factory) as session:
        job = session.get(Job, job_id)
        run = Run(
            job_id=job_id,
            version_id=job.versions[0].id,
            state=states.SUBMITTING,  # type: ignore[union-attr]
            attempt=0,
            failures=0,
            created_by="t",
            progress={},
        )
        session.add(run)
        session.flush()
        run_id = run.id
    worker = Worker(ctx, concurrency=1)
    worker.supervise()
    worker.supervise()
    worker.supervise()
    assert _run(ctx, run_id).state == states.RUNNING and fake.submits == 1


def test_run_guard_releases_its_lock_whatever_the_pool_does(ctx: WorkerContext) -> None:
    """The lock and its release share one connection: with other sessions using the pool in
    between (a worker's threads do), no lock is left behind on a pooled connection."""
    from sqlalchemy import text

    from app.worker.core.context import run_guard

    def held() -> list[int]:
        with ctx.factory() as session:
            return list(
                session.scalars(
                    text(
                        "select l.objid from pg_locks l join pg_stat_activity a using (pid) "
                        "where l.locktype = 'advisory' and a.datname = current_database()"
                    )
                )
            )

    for _ in range(3):
        with run_guard(ctx, 42) as mine:
            assert mine
            with run_guard(ctx, 42) as other:  # another worker: refused, not blocked
                assert not other
            for _ in range(4):  # churn the pool while the guard is held
                with ctx.factory() as session:
                    session.execute(text("select 1"))
                    session.commit()
            assert held() == [42]
        assert held() == []


def test_temporary_backend_errors_back_off_then_succeed(
    ctx: WorkerContext, fake: FakeBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.backends.base import TemporaryBackendError

    job_id = make_job(ctx)
    run_id = _run_op(ctx, _enqueue(ctx, job_id, "submit", {"version": 1})).run_id
    # A step of the operation that meets a temporary backend error is retried with backoff
    # (the kill request stands in for any step: only the reconciler calls the backend for a
    # run, see the next test).
    outage = {"left": 2}
    real_request = runs_service.request_kill

    def flaky_request(*args: object, **kwargs: object) -> Run:
        if outage["left"] > 0:
            outage["left"] -= 1
            raise TemporaryBackendError("master answered 503")
        return real_request(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(runs_service, "request_kill", flaky_request)
    op_id = _enqueue(ctx, job_id, "cancel", {}, run_id)
    worker = Worker(ctx, concurrency=1)
    for attempt, delay in ((1, 1), (2, 2)):
        assert worker.claim() == op_id
        before = utcnow()
        ops.execute(ctx, op_id)
        with ctx.factory() as session:
            op = session.get(Operation, op_id)
            assert op is not None and op.state == "running" and op.lease_owner is None
            assert op.error is not None and "master answered 503" in op.error, op.error
            assert f"retrying in {delay}s" in op.error and op.attempts == attempt
            assert op.lease_expires_at is not None
            assert op.lease_expires_at >= before + timedelta(seconds=delay - 0.5)
        assert worker.claim() is None  # not before its backoff has passed
        with transaction(ctx.factory) as session:
            session.execute(
                update(Operation).values(lease_expires_at=utcnow() - timedelta(seconds=1))
            )
    assert worker.claim() == op_id
    ops.execute(ctx, op_id)
    with ctx.factory() as session:
        op = session.get(Operation, op_id)
        assert op is not None and op.state == "succeeded" and op.error is None, op.error
    assert _run(ctx, run_id).state == states.CANCELLED  # type: ignore[arg-type]
    assert fake.alive() == []


def test_the_reconciler_alone_kills_and_retries_a_kill_the_backend_refused_for_a_while(
    ctx: WorkerContext, fake: FakeBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cancel states what it wants (the run stopping, a kill requested for its attempt);
    the reconciler thread calls the backend, retrying the kill on its next passes."""
    from app.backends.base import TemporaryBackendError

    job_id = make_job(ctx)
    run_id = _run_op(ctx, _enqueue(ctx, job_id, "submit", {"version": 1})).run_id
    assert run_id is not None
    attempt = _run(ctx, run_id).attempt
    outage = {"left": 2}
    callers: list[str] = []
    real_kill = fake.kill

    def flaky_kill(backend_id: str) -> None:
        callers.append(threading.current_thread().name)
        if outage["left"] > 0:
            outage["left"] -= 1
            raise TemporaryBackendError("master answered 503")
        real_kill(backend_id)

    monkeypatch.setattr(fake, "kill", flaky_kill)
    op = _run_op(ctx, _enqueue(ctx, job_id, "cancel", {}, run_id))
    assert op.state == "succeeded", op.error
    names = [s["name"] for s in op.steps][:4]
    assert names == ["release_standbys", "request_stop", "graceful_stop", "kill"]
    assert op.steps[0]["detail"] == {"released": []}  # no update was waiting on a standby
    assert op.steps[3]["detail"] == {
        "kill_requested": True,
        "attempt": attempt,
        "run_state": states.STOPPING,
    }
    run = _run(ctx, run_id)
    assert run.state == states.CANCELLED and run.kill_attempt == attempt
    assert callers == ["reconciler"] * 3 and fake.alive() == []


def test_a_kill_requested_for_one_attempt_never_reaches_the_next(
    ctx: WorkerContext, fake: FakeBackend
) -> None:
    job_id = make_job(ctx)
    run_id = _run_op(ctx, _enqueue(ctx, job_id, "submit", {"version": 1})).run_id
    assert run_id is not None
    with transaction(ctx.factory) as session:  # stopping, a kill asked for attempt 0 ...
        run = session.get(Run, run_id)
        assert run is not None
        transition(session, run, states.STOPPING, reason="test", stop_reason="stop")
        runs_service.request_kill(session, run.id, "test")
    with transaction(ctx.factory) as session:  # ... which ended before the kill went out
        run = session.get(Run, run_id)
        assert run is not None and run.kill_attempt == 0
        transition(session, run, states.STOPPED, reason="test")
        runs_service.resubmit(session, run, reason="test")
    with ctx.factory() as session:
        run = session.get(Run, run_id)
        assert run is not None and run.attempt == 1 and run.kill_attempt is None
    for _ in range(10):  # fence attempt 0's driver, submit attempt 1, see it run
        reconcile_run(ctx, run_id)
        if _run(ctx, run_id).state == states.RUNNING:
            break
    run = _run(ctx, run_id)
    assert run.state == states.RUNNING and run.attempt == 1
    assert [fake.apps[i].spec.tag for i in fake.alive()] == [f"tidegate-run-{run_id}-a1"]


def test_a_backend_that_never_recovers_fails_the_operation_with_the_reason(
    ctx: WorkerContext, fake: FakeBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.backends.base import TemporaryBackendError

    def down(*args: object, **kwargs: object) -> None:
        raise TemporaryBackendError("master answered 503")

    job_id = make_job(ctx)
    run_id = _run_op(ctx, _enqueue(ctx, job_id, "submit", {"version": 1})).run_id
    monkeypatch.setattr(runs_service, "request_kill", down)
    worker = Worker(ctx, concurrency=1)
    op_id = _enqueue(ctx, job_id, "cancel", {}, run_id)
    with transaction(ctx.factory) as session:
        session.execute(
            update(Operation)
            .where(Operation.id == op_id)
            .values(attempts=op_state.RETRY_MAX_ATTEMPTS - 1)
        )
    assert worker.claim() == op_id
    ops.execute(ctx, op_id)
    with ctx.factory() as session:
        op = session.get(Operation, op_id)
        assert op is not None and op.state == "failed" and op.error is not None
        assert "kept failing" in op.error and "master answered 503" in op.error
    assert [op_state.retry_delay(n) for n in (1, 2, 3, 7, 8, 20)] == [1, 2, 4, 60, 60, 60]


def test_an_unexpected_error_is_retried_with_backoff_then_fails_the_operation(
    ctx: WorkerContext, fake: FakeBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An exception no step classifies is retried like a temporary backend error (released
    with backoff, each attempt counted), not forever: past the last attempt it fails."""
    job_id = make_job(ctx)
    run_id = _run_op(ctx, _enqueue(ctx, job_id, "submit", {"version": 1})).run_id

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a bug in a step")

    monkeypatch.setattr(runs_service, "request_kill", broken)
    worker = Worker(ctx, concurrency=1)
    op_id = _enqueue(ctx, job_id, "cancel", {}, run_id)
    assert worker.claim() == op_id
    ops.execute(ctx, op_id)  # does not raise: the retry is recorded on the operation
    with ctx.factory() as session:
        op = session.get(Operation, op_id)
        assert op is not None and op.state == "running" and op.lease_owner is None
        assert op.error is not None and "unexpected error (attempt 1" in op.error
        assert "RuntimeError: a bug in a step" in op.error
        assert op.lease_expires_at is not None and op.lease_expires_at > utcnow()
    with transaction(ctx.factory) as session:
        session.execute(
            update(Operation)
            .where(Operation.id == op_id)
            .values(
                attempts=op_state.RETRY_MAX_ATTEMPTS - 1,
                lease_expires_at=utcnow() - timedelta(seconds=1),
            )
        )
    assert worker.claim() == op_id
    ops.execute(ctx, op_id)
    with ctx.factory() as session:
        op = session.get(Operation, op_id)
        assert op is not None and op.state == "failed" and op.finished_at is not None
        assert op.error is not None and "kept failing with an unexpected error" in op.error
        assert op.attempts == op_state.RETRY_MAX_ATTEMPTS
    assert worker.claim() is None  # never taken up again


def test_notify_wakes_the_worker_long_before_its_fallback_poll(
    ctx: WorkerContext, fake: FakeBackend, db: Engine
) -> None:
    """LISTEN/NOTIFY is what makes the worker react: with a 30 s fallback poll, a new
    operation is still claimed and carried out within seconds."""
    import threading
    import time

    slow = WorkerContext(ctx.factory, ctx.settings, "notified-worker", poll_seconds=30.0)
    slow.backend = ctx.backend  # type: ignore[method-assign]
    job_id = make_job(ctx)
    worker = Worker(slow, concurrency=1)
    # The end of the worker's first pass: after it the worker only sleeps on LISTEN.
    first_pass = threading.Event()
    housekeeping = worker.retention

    def retention_then_mark() -> None:
        housekeeping()
        first_pass.set()

    worker.retention = retention_then_mark  # type: ignore[method-assign]
    serving = threading.Thread(target=worker.serve, daemon=True)
    serving.start()
    try:
        assert first_pass.wait(30), "the worker did not finish its first pass"
        # A cancel with nothing to cancel: the worker finishes it the moment it claims it.
        op_id = _enqueue(ctx, job_id, "cancel", {})
        enqueued = time.monotonic()

        def operation() -> Operation:
            with ctx.factory() as session:
                found = session.get(Operation, op_id)
                assert found is not None
                return found

        op = wait_for(operation, lambda o: o.finished_at is not None, 20, 0.02, "the cancel")
        reacted = time.monotonic() - enqueued
        assert op.attempts == 1, (op.state, op.error)
        assert reacted < 10, reacted  # claimed and carried out far below the 30 s poll
    finally:
        worker.request_stop()
        with transaction(ctx.factory) as session:  # wake it so it sees the stop
            session.execute(text("select pg_notify('tidegate_operations', 'stop')"))
        serving.join(30)


def test_a_run_healthy_for_the_stable_period_starts_its_backoff_over(
    ctx: WorkerContext, fake: FakeBackend
) -> None:
    """PSTL's n counts failures since the run last stayed healthy for stable_period: after
    that, the next failure waits min_backoff again, not the doubled delay."""
    job_id = make_job(ctx, {"min_backoff": "1s", "stable_period": "1m"})
    run_id = _run_op(ctx, _enqueue(ctx, job_id, "submit", {"version": 1})).run_id
    assert run_id is not None

    def fail_and_restart() -> float:
        app = fake.apps[_run(ctx, run_id).backend_id]  # type: ignore[index]
        app.state = AppState.FAILED
        reconcile_run(ctx, run_id)
        run = _run(ctx, run_id)
        assert run.state == states.RESTARTING
        delay = (run.next_restart_at - run.updated_at).total_seconds()  # type: ignore[operator]
        with transaction(ctx.factory) as session:  # let the backoff elapse
            session.execute(update(Run).values(next_restart_at=utcnow() - timedelta(seconds=1)))
        for _ in range(4):
            reconcile_run(ctx, run_id)
        assert _run(ctx, run_id).state == states.RUNNING
        return round(delay)

    assert fail_and_restart() == 1
    assert fail_and_restart() == 2  # unhealthy again at once: n grows
    with transaction(ctx.factory) as session:  # ... then it ran fine for longer than 1m
        session.execute(update(Run).values(running_since=utcnow() - timedelta(minutes=2)))
    reconcile_run(ctx, run_id)
    assert _run(ctx, run_id).failures == 0
    assert fail_and_restart() == 1  # the backoff starts over


def test_a_new_run_is_verified_by_its_first_batch_or_by_spark_saying_it_is_idle(
    ctx: WorkerContext, fake: FakeBackend
) -> None:
    """An update verifies the new run by a batch past the restored one; a query with no new
    input runs none, so Spark's idle event (reported by the runtime) verifies it instead.
    Neither, and the update fails (the caller rolls back)."""
    job_id = make_job(ctx)
    run_id = _run_op(ctx, _enqueue(ctx, job_id, "submit", {"version": 1})).run_id
    assert run_id is not None
    with ctx.factory() as session:
        query = session.get(Run, run_id).version.queries[0]["name"]  # type: ignore[union-attr]
    plan = {"queries": [{"query": query, "source": None, "parts": []}]}
    with pytest.raises(ops.OperationFailed, match="did not commit a first batch"):
        verify.verify(ctx, run_id, plan, 0.05, 0.5)
    with transaction(ctx.factory) as session:
        run = session.get(Run, run_id)
        assert run is not None
        run.progress = {query: {"idle_at": utcnow().isoformat()}}  # no batch yet
    verified = verify.verify(ctx, run_id, plan, 0.05, 0.5)
    assert "runs idle with no new input" in verified["verified"], verified
    with transaction(ctx.factory) as session:  # idle before this attempt started: not proof
        run = session.get(Run, run_id)
        assert run is not None
        run.running_since = utcnow() + timedelta(seconds=5)
    with pytest.raises(ops.OperationFailed):
        verify.verify(ctx, run_id, plan, 0.05, 0.5)


def test_a_query_that_fails_in_a_new_run_fails_its_verification_at_once(
    ctx: WorkerContext, fake: FakeBackend
) -> None:
    """Its driver restarts the failed query alone (per-query supervision) and stays up, so
    the run never stops; the update must not wait out its first-batch timeout for it: the
    failure the runtime reported for this attempt fails the verification (the caller rolls
    back). One reported for an earlier attempt does not."""
    job_id = make_job(ctx)
    run_id = _run_op(ctx, _enqueue(ctx, job_id, "submit", {"version": 1})).run_id
    assert run_id is not None
    with ctx.factory() as session:
        query = session.get(Run, run_id).version.queries[0]["name"]  # type: ignore[union-attr]
    plan = {"queries": [{"query": query, "source": None, "parts": []}]}
    failure = {"restarts": 1, "failures": 1, "last_error": "boom in batch 0", "gave_up": False}
    with transaction(ctx.factory) as session:
        run = session.get(Run, run_id)
        assert run is not None
        run.query_restarts = {query: {**failure, "attempt": run.attempt + 1}}
    with pytest.raises(ops.OperationFailed, match="did not commit a first batch"):
        verify.verify(ctx, run_id, plan, 0.05, 0.5)  # another attempt's failure: no proof
    with transaction(ctx.factory) as session:
        run = session.get(Run, run_id)
        assert run is not None
        run.query_restarts = {query: {**failure, "attempt": run.attempt}}
    started = time.monotonic()
    with pytest.raises(ops.OperationFailed) as failed:
        verify.verify(ctx, run_id, plan, 0.05, 60)
    assert time.monotonic() - started < 30  # not the first-batch timeout
    message = str(failed.value)
    assert f"query '{query}' failed after it started" in message and "boom in batch 0" in message
    assert "before every query committed its first batch" in message


def test_a_run_change_wakes_the_operation_waiting_for_it_long_before_its_poll(
    ctx: WorkerContext, fake: FakeBackend, db: Engine
) -> None:
    """An operation waiting on a run (e.g. for the old driver to be fenced before go) reads
    it again the moment it changes, through the worker's LISTEN connection: with a 30 s poll
    the wait still ends within seconds of the change."""
    import time

    from app.core.notify import Notifier
    from app.runs.service import RUN_CHANNEL
    from app.worker.reconcile.reconciler import wait_for_run

    slow = WorkerContext(ctx.factory, ctx.settings, "notified-operation", poll_seconds=30.0)
    slow.backend = ctx.backend  # type: ignore[method-assign]
    slow.notifier = Notifier(db, (RUN_CHANNEL,), max_waiters=4)
    job_id = make_job(ctx)
    run_id = make_run(ctx, job_id)
    seen: list[Run] = []
    waiting = threading.Thread(
        target=lambda: seen.append(
            wait_for_run(slow, run_id, lambda r: r.state != states.SUBMITTING, 60, "stop")
        ),
        daemon=True,
    )
    try:
        waiting.start()
        # Its first pass is over (the fake has the driver) and it sleeps on its 30 s poll.
        wait_for(lambda: fake.submits, lambda n: n == 1, 20, 0.02, "the run's submission")
        wait_for(lambda: slow.notifier.listening, bool, 20, 0.02, "the LISTEN connection")
        time.sleep(0.5)
        assert waiting.is_alive() and not seen
        with transaction(ctx.factory) as session:
            run = session.get(Run, run_id)
            assert run is not None
            transition(session, run, states.STOPPING, reason="test", stop_reason="stop")
        changed = time.monotonic()
        waiting.join(20)
        assert not waiting.is_alive(), "the change did not wake the wait"
        assert time.monotonic() - changed < 10  # far below the 30 s poll
        assert seen[0].state in (states.STOPPING, states.STOPPED, states.CANCELLED), seen[0].state
    finally:
        slow.notifier.close()
        if slow.reconciler is not None:
            slow.reconciler.stop()


def _fenced_run(ctx: WorkerContext, fake: FakeBackend, job_id: int) -> tuple[int, str]:
    """A running run stopped by tidegate whose runtime said it is fenced: the run ends at
    once, its application still up."""
    from app.channel.service import record_fence
    from app.runs.schemas import FenceReport

    run_id = make_run(ctx, job_id)
    reconcile_run(ctx, run_id)  # submitted
    (backend_id,) = fake.apps
    fake.apps[backend_id].state = AppState.RUNNING
    reconcile_run(ctx, run_id)
    with transaction(ctx.factory) as session:
        run = session.get(Run, run_id)
        assert run is not None and run.state == states.RUNNING
        transition(session, run, states.STOPPING, reason="stop requested", stop_reason="stop")
    with transaction(ctx.factory) as session:
        run = record_fence(session, run_id, FenceReport(attempt=0))
        assert run.state == states.STOPPED and run.fenced_backend_id == backend_id
    return run_id, backend_id


def test_a_fenced_driver_that_lingers_is_killed_after_the_grace_one_that_exits_is_let_be(
    ctx: WorkerContext, fake: FakeBackend
) -> None:
    """The fence ends the run before its process exits; a job's code can keep that process
    alive (a non-daemon thread). The reconciler lets it exit on its own for
    TIDEGATE_FENCED_EXIT_SECONDS, then kills it; one that exits is only forgotten."""
    job_id = make_job(ctx)
    run_id, backend_id = _fenced_run(ctx, fake, job_id)
    assert run_id in rec.due_runs(ctx)  # watched although its run has ended
    reconcile_run(ctx, run_id)
    assert fake.kills == []  # within the grace: left to exit
    with transaction(ctx.factory) as session:
        session.execute(
            update(Run)
            .where(Run.id == run_id)
            .values(fenced_at=utcnow() - timedelta(seconds=ctx.settings.fenced_exit_seconds + 1))
        )
    reconcile_run(ctx, run_id)
    assert fake.kills == [backend_id]
    with ctx.factory() as session:
        run = session.get(Run, run_id)
        assert run is not None and run.state == states.STOPPED  # still what the fence said
        assert run.fenced_backend_id is None and run.fenced_at is None
    assert run_id not in rec.due_runs(ctx)

    fake.apps.clear()
    other_id, other_app = _fenced_run(ctx, fake, job_id)
    fake.apps[other_app].state = AppState.SUCCEEDED  # it exited by itself
    reconcile_run(ctx, other_id)
    assert fake.kills == [backend_id]
    assert other_id not in rec.due_runs(ctx)

    # A backend that does not know the app (relaunching, recovering) is not taken for its
    # exit at once: only once it has not known it for lost_after_seconds.
    fake.apps.clear()
    third_id, third_app = _fenced_run(ctx, fake, job_id)
    del fake.apps[third_app]
    reconcile_run(ctx, third_id)
    assert third_id in rec.due_runs(ctx)
    with transaction(ctx.factory) as session:
        session.execute(
            update(Run)
            .where(Run.id == third_id)
            .values(fenced_at=utcnow() - timedelta(seconds=ctx.lost_after_seconds + 1))
        )
    reconcile_run(ctx, third_id)
    assert third_id not in rec.due_runs(ctx) and fake.kills == [backend_id]


def test_a_listing_a_moment_old_does_not_set_a_running_driver_back_to_pending(
    ctx: WorkerContext, fake: FakeBackend
) -> None:
    """A fresh status saw the driver RUNNING; the sweep's listing, taken a moment before,
    still says PENDING. What the run shows does not step back (what a dashboard, or an
    update's result, would otherwise show flapping)."""
    import time as clock

    from app.backends.base import AppStatus
    from app.worker.core.context import backend_key
    from app.worker.core.listing import _Listing

    job_id = make_job(ctx)
    run_id = make_run(ctx, job_id)
    with ctx.factory() as session:
        run = session.get(Run, run_id)
        assert run is not None
        key = backend_key(run.version.cluster)
    reconcile_run(ctx, run_id)
    (backend_id,) = fake.apps
    fake.apps[backend_id].state = AppState.RUNNING
    reconcile_run(ctx, run_id)  # fresh: RUNNING
    stale = {backend_id: AppStatus(backend_id, AppState.PENDING, "SUBMITTED")}
    ctx.listings._taken[key] = _Listing(clock.monotonic(), stale)
    reconcile_run(ctx, run_id, fresh=False)
    with ctx.factory() as session:
        run = session.get(Run, run_id)
        assert run is not None and run.state == states.RUNNING
        assert run.observed_state == AppState.RUNNING.value
