"""Spares (app/runs/spares.py, app/worker/reconcile/spare.py): a run's next attempt started
ahead — for a pre-warmed restart, and as a job's hot spare after a crash — against a real
PostgreSQL and a scripted backend. The same on real Spark: tests/runs/test_supervised_restart.py."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

from app.auth.models import ApiToken
from app.backends.base import AppState
from app.channel import service as channel
from app.core import run_states as states
from app.core.db import transaction, utcnow
from app.jobs.models import Job, JobVersion
from app.runs import spares
from app.runs.models import Run, RunTransition
from app.runs.schemas import ProgressReport
from app.worker.core.context import WorkerContext
from app.worker.reconcile.run import reconcile_run
from app.worker.reconcile.spare import DRY_RUN_WAIT
from tests.support.checkpoints import FakeCheckpoint
from tests.support.worker import FakeBackend, die_after_step_then_resume, make_job
from tests.worker.test_worker import _enqueue, _run, _run_op
from tidegate_runtime import contract

RESTART_STEPS = [
    "target",
    "spare",
    "spare_ready",
    "request_stop",
    "graceful_stop",
    "kill",
    "stopped",
]


def _running(ctx: WorkerContext, job_id: int, *, hot_spare: bool = False) -> int:
    with transaction(ctx.factory) as session:
        session.get(Job, job_id).hot_spare = hot_spare  # type: ignore[union-attr]
    op = _run_op(ctx, _enqueue(ctx, job_id, "submit", {"version": 1}))
    assert op.state == "succeeded", op.error
    assert op.run_id is not None
    return op.run_id


def _stateful_job(ctx: WorkerContext, policy: dict[str, object] | None = None) -> int:
    """A job whose one query ``q`` holds state: its spares dry-run on a copy of it."""
    job_id = make_job(ctx, policy)
    with transaction(ctx.factory) as session:
        version = session.scalars(select(JobVersion).where(JobVersion.job_id == job_id)).one()
        version.queries = [{"name": "q", "sources": [], "stateful_operators": [{"kind": "x"}]}]
    return job_id


def _passes(ctx: WorkerContext, run_id: int, n: int = 3) -> Run:
    for _ in range(n):
        reconcile_run(ctx, run_id)
    return _run(ctx, run_id)


def _reports(ctx: WorkerContext, run_id: int, batch_id: int, *, idle: bool = False) -> None:
    """What the run's runtime posts: query q committed ``batch_id``, or idles after it."""
    with transaction(ctx.factory) as session:
        channel.record_progress(
            session, run_id, ProgressReport(query="q", batch_id=batch_id, idle=idle)
        )


def _spares(fake: FakeBackend) -> list[str]:
    return [i for i, a in fake.apps.items() if contract.SPARE in a.spec.conf]


def test_a_prewarmed_restart_hands_over_to_its_spare(ctx: WorkerContext, fake: FakeBackend) -> None:
    job_id = make_job(ctx)
    run_id = _running(ctx, job_id)
    first = _run(ctx, run_id).backend_id
    op = _run_op(ctx, _enqueue(ctx, job_id, "restart", {"prewarm": True}, run_id))
    assert op.state == "succeeded", op.error
    assert [s["name"] for s in op.steps] == RESTART_STEPS
    assert op.result is not None and op.result["spare_taken_over"] is True
    run = _run(ctx, run_id)
    [spare] = _spares(fake)
    # The spare's driver is the new attempt: nothing else was submitted, the old one is gone.
    assert run.state == states.RUNNING and run.attempt == 1 and run.backend_id == spare
    assert fake.submits == 2 and fake.alive() == [spare] and fake.apps[first].state.terminal  # type: ignore[index]
    spec = fake.apps[spare].spec
    assert spec.tag == f"tidegate-run-{run_id}-a1-spare1"
    assert spec.conf["spark.tidegate.attempt"] == "1" and spec.conf[contract.SPARE] == "1"
    assert spec.conf["spark.tidegate.standby"] == "true"
    # It waits as long as its run needs it (a standby's hour would end a hot spare hourly).
    timeout = spec.conf["spark.tidegate.standby_timeout_seconds"]
    assert timeout == str(ctx.settings.spare_timeout_seconds) == str(7 * 86_400)
    assert run.attempt_spare_seq == 1 and run.spare_attempt is None and not run.spare_requested
    with transaction(ctx.factory) as session:  # its long-poll now answers go; an old one stop
        assert channel.standby(session, run_id, 1, 1).go
        assert channel.standby(session, run_id, 1, 7).stop
        assert channel.standby(session, run_id, 0, 1).stop
    assert _passes(ctx, run_id).spare_attempt is None  # not asked for again: none kept


def test_a_cold_restart_starts_no_spare(ctx: WorkerContext, fake: FakeBackend) -> None:
    job_id = make_job(ctx)
    run_id = _running(ctx, job_id)
    op = _run_op(ctx, _enqueue(ctx, job_id, "restart", {"prewarm": False}, run_id))
    assert op.state == "succeeded", op.error
    assert "spare" not in [s["name"] for s in op.steps]
    assert op.result is not None and op.result["spare_taken_over"] is False
    assert _spares(fake) == [] and fake.submits == 2 and len(fake.alive()) == 1


def test_a_restart_whose_spare_never_is_ready_stops_nothing(
    ctx: WorkerContext, fake: FakeBackend
) -> None:
    job_id = make_job(ctx)
    run_id = _running(ctx, job_id)
    fake.factory = None  # drivers never call in
    params = {"prewarm": True, "start_timeout_seconds": 1}
    op = _run_op(ctx, _enqueue(ctx, job_id, "restart", params, run_id))
    assert op.state == "failed" and "nothing was stopped" in (op.error or "")
    run = _run(ctx, run_id)
    assert run.state == states.RUNNING and run.attempt == 0 and run.spare_attempt is None
    assert fake.alive() == [run.backend_id]  # the spare was withdrawn and killed


def test_a_hot_spare_takes_over_a_crashed_driver_at_once(
    ctx: WorkerContext, fake: FakeBackend
) -> None:
    job_id = make_job(ctx, {"min_backoff": "1h", "max_backoff": "1h"})
    run_id = _running(ctx, job_id, hot_spare=True)
    run = _passes(ctx, run_id)
    assert run.spare_attempt == 1 and run.spare_ready_at is not None
    [spare] = _spares(fake)
    assert run.spare_backend_id == spare and fake.apps[spare].state == AppState.RUNNING
    fake.apps[run.backend_id].state = AppState.FAILED  # type: ignore[index]  # SIGKILL
    run = _passes(ctx, run_id)
    # No backoff (it is 1 h): a ready spare pays no start-up, so it takes over at once.
    assert run.state == states.RUNNING and run.attempt == 1 and run.backend_id == spare
    with ctx.factory() as session:
        reasons = session.scalars(
            select(RunTransition.reason).where(RunTransition.run_id == run_id)
        ).all()
    assert run.failures == 1 and "failure 1; restarting in 0s" in reasons
    # And the next spare is on its way, for the attempt after.
    run = _passes(ctx, run_id)
    assert run.spare_attempt == 2 and run.spare_backend_id not in (None, spare)
    assert sorted(fake.alive()) == sorted([spare, run.spare_backend_id])


def test_a_spare_that_dies_is_dropped_and_retried_later(
    ctx: WorkerContext, fake: FakeBackend
) -> None:
    job_id = make_job(ctx)
    run_id = _running(ctx, job_id, hot_spare=True)
    spare = _passes(ctx, run_id).spare_backend_id
    assert spare is not None
    fake.apps[spare].state = AppState.FAILED
    run = _passes(ctx, run_id)
    assert run.state == states.RUNNING and run.attempt == 0  # the run is not touched
    assert run.spare_attempt is None and "boom" in (run.spare_error or "")
    assert run.spare_retry_at is not None and run.spare_retry_at > utcnow()
    assert _spares(fake) == [spare]  # not resubmitted in a loop
    with transaction(ctx.factory) as session:
        session.get(Run, run_id).spare_retry_at = utcnow() - timedelta(seconds=1)  # type: ignore[union-attr]
    run = _passes(ctx, run_id)
    assert run.spare_attempt == 1 and run.spare_seq == 2 and len(_spares(fake)) == 2


@pytest.mark.parametrize("how", ["stop", "hot_spare_off"])
def test_a_spare_no_longer_wanted_is_dropped_and_its_driver_killed(
    ctx: WorkerContext, fake: FakeBackend, how: str
) -> None:
    job_id = make_job(ctx)
    run_id = _running(ctx, job_id, hot_spare=True)
    spare = _passes(ctx, run_id).spare_backend_id
    assert spare is not None
    if how == "stop":
        op = _run_op(ctx, _enqueue(ctx, job_id, "stop", {"timeout_seconds": 1}, run_id))
        assert op.state == "succeeded", op.error
        _passes(ctx, run_id, 1)
        assert fake.alive() == []
    else:
        with transaction(ctx.factory) as session:
            session.get(Job, job_id).hot_spare = False  # type: ignore[union-attr]
        run = _passes(ctx, run_id)
        assert run.state == states.RUNNING and fake.alive() == [run.backend_id]
    assert spare in fake.kills and _run(ctx, run_id).spare_attempt is None
    with transaction(ctx.factory) as session:  # were it still asking, it would be told stop
        assert channel.standby(session, run_id, 1, 1).stop
        # ... and its token is dead already (issue 26, #9), not when the run ends.
        token = session.scalar(select(ApiToken).where(ApiToken.name == f"run-{run_id}-spare1"))
        assert token is not None and token.revoked_at is not None
        if how != "stop":  # the run's own token still works
            own = session.scalar(select(ApiToken).where(ApiToken.name == f"run-{run_id}"))
            assert own is not None and own.revoked_at is None


def test_a_spare_submitted_by_a_worker_that_died_is_found_not_submitted_again(
    ctx: WorkerContext, fake: FakeBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    job_id = make_job(ctx)
    run_id = _running(ctx, job_id)
    with transaction(ctx.factory) as session:
        session.get(Job, job_id).hot_spare = True  # type: ignore[union-attr]
    real_submit = fake.submit

    def submit_then_die(spec):  # type: ignore[no-untyped-def]
        real_submit(spec)
        raise SystemExit("killed")  # after the backend took it, before it was recorded

    monkeypatch.setattr(fake, "submit", submit_then_die)
    with pytest.raises(SystemExit):
        reconcile_run(ctx, run_id)
    monkeypatch.setattr(fake, "submit", real_submit)
    run = _passes(ctx, run_id)
    assert len(_spares(fake)) == 1 and run.spare_backend_id == _spares(fake)[0]


RESTART_CRASH_STEPS = ["target", "spare", "spare_ready", "request_stop", "graceful_stop", "kill"]


@pytest.mark.parametrize("step", RESTART_CRASH_STEPS)
def test_a_prewarmed_restart_survives_the_worker_dying_after_every_step(
    ctx: WorkerContext, fake: FakeBackend, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    job_id = make_job(ctx)
    run_id = _running(ctx, job_id)
    op_id = _enqueue(ctx, job_id, "restart", {"prewarm": True}, run_id)
    op = die_after_step_then_resume(ctx, monkeypatch, op_id, f"restart:{step}")
    assert op.state == "succeeded", op.error
    run = _passes(ctx, run_id)
    # One driver for the run, one spare ever submitted: nothing twice, nothing left over.
    assert run.state == states.RUNNING and run.attempt == 1
    assert len(_spares(fake)) == 1 and fake.alive() == [run.backend_id]
    assert run.backend_id == _spares(fake)[0]


def test_spare_rules() -> None:
    """keep/due in the states a run passes through (without a database)."""
    job = Job(name="j", restart_policy={}, created_by="t", hot_spare=True)
    run = Run(state=states.RUNNING, attempt=3, spare_seq=0, spare_requested=False, job=job)
    assert spares.due(run) and not spares.keep(run)
    spares.intend(run)
    assert (run.spare_attempt, run.spare_seq, run.spare_tag) == (
        4,
        1,
        f"tidegate-run-{run.id}-a4-spare1",
    )
    for state, reason, kept in [
        (states.RUNNING, None, True),
        (states.STOPPING, "restart", True),
        (states.STOPPING, "stop", False),
        (states.DRAINING, None, False),
        (states.RESTARTING, None, True),
        (states.STOPPED, "stop", False),
    ]:
        run.state, run.stop_reason = state, reason
        assert spares.keep(run) is kept, (state, reason)
    run.state, run.attempt = states.SUBMITTING, 4  # its attempt came: adopted, not dropped
    assert spares.keep(run)
    run.attempt = 5  # an attempt it was not adopted for
    assert not spares.keep(run)


def test_a_spare_of_a_run_with_state_dry_runs_on_a_copy_of_it(
    ctx: WorkerContext, fake: FakeBackend
) -> None:
    """Its submission names a scratch copy of the run's latest committed state (the dry run's
    confs, its own checkpoint untouched); the copy goes with a spare that is dropped."""
    job_id = make_job(ctx)
    run_id = _running(ctx, job_id)
    live = FakeCheckpoint(ctx.settings.resolved_checkpoint_root / "job" / str(run_id) / "q")
    for _ in range(2):
        live.batch()
    with transaction(ctx.factory) as session:
        session.get(Job, job_id).hot_spare = True  # type: ignore[union-attr]
    run = _passes(ctx, run_id)
    (spare,) = _spares(fake)
    conf = fake.apps[spare].spec.conf
    scratch = Path(conf[contract.STANDBY_DRY_RUN_DIR])
    assert scratch.name == run.spare_tag and ".tidegate-dryrun" in scratch.parts
    assert json.loads(conf["spark.tidegate.dry_run_queries"]) == ["q"]
    assert conf["spark.tidegate.checkpoint_dir"].endswith(f"/job/{run_id}")
    # The committed batch (1) copied, and the empty batch 2 planned on the copy only.
    assert (scratch / "q" / "commits" / "1").is_file() and (
        scratch / "q" / "offsets" / "2"
    ).is_file()
    assert not (live.root / "offsets" / "2").exists()
    with transaction(ctx.factory) as session:
        session.get(Job, job_id).hot_spare = False  # type: ignore[union-attr]
    _passes(ctx, run_id)
    assert spare in fake.kills and not scratch.exists()


def test_a_spare_of_a_run_without_state_only_warms_up(
    ctx: WorkerContext, fake: FakeBackend
) -> None:
    job_id = make_job(ctx)
    run_id = _running(ctx, job_id, hot_spare=True)
    _passes(ctx, run_id)
    (spare,) = _spares(fake)
    assert contract.STANDBY_DRY_RUN_DIR not in fake.apps[spare].spec.conf


def test_a_hot_spare_of_a_stateful_run_waits_for_its_first_commit(
    ctx: WorkerContext, fake: FakeBackend
) -> None:
    """So that it has state to dry-run on (at most DRY_RUN_WAIT after the run started)."""
    job_id = _stateful_job(ctx)
    run_id = _running(ctx, job_id, hot_spare=True)
    assert _passes(ctx, run_id).spare_attempt is None and _spares(fake) == []
    live = FakeCheckpoint(ctx.settings.resolved_checkpoint_root / "job" / str(run_id) / "q")
    live.batch()
    _reports(ctx, run_id, 0)
    run = _passes(ctx, run_id)
    (spare,) = _spares(fake)
    assert run.spare_attempt == 1 and contract.STANDBY_DRY_RUN_DIR in fake.apps[spare].spec.conf


@pytest.mark.parametrize("first", ["batch", "idle"])
def test_after_a_takeover_the_next_spare_waits_until_the_new_attempt_has_run(
    ctx: WorkerContext, fake: FakeBackend, first: str
) -> None:
    """Not for any commit: the checkpoint holds the crashed attempt's, and a spare started at
    once would start its JVM beside the recovering driver's first batch. The new attempt's
    word that it committed a batch, or that it idles (nothing to recover), lets it start."""
    job_id = _stateful_job(ctx, {"min_backoff": "1h", "max_backoff": "1h"})
    run_id = _running(ctx, job_id, hot_spare=True)
    live = FakeCheckpoint(ctx.settings.resolved_checkpoint_root / "job" / str(run_id) / "q")
    live.batch()
    _reports(ctx, run_id, 0)
    run = _passes(ctx, run_id)
    (spare,) = _spares(fake)
    fake.apps[run.backend_id].state = AppState.FAILED  # type: ignore[index]  # SIGKILL
    run = _passes(ctx, run_id)
    assert run.state == states.RUNNING and run.attempt == 1 and run.backend_id == spare
    assert run.spare_attempt is None and _spares(fake) == [spare]  # the old commit is not enough
    if first == "batch":
        live.batch()
        _reports(ctx, run_id, 1)
    else:
        _reports(ctx, run_id, 0, idle=True)
    run = _passes(ctx, run_id)
    assert run.spare_attempt == 2 and len(_spares(fake)) == 2


def test_a_hot_spare_waits_no_longer_than_its_bound(ctx: WorkerContext, fake: FakeBackend) -> None:
    job_id = _stateful_job(ctx)
    run_id = _running(ctx, job_id, hot_spare=True)
    with transaction(ctx.factory) as session:
        run = session.get(Run, run_id)
        assert run is not None and run.running_since is not None
        run.running_since -= DRY_RUN_WAIT + timedelta(seconds=1)
    assert _passes(ctx, run_id).spare_attempt == 1  # an idle source: a spare that only warms up
