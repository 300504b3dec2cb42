"""The dry-run driver on a backend: submitted once under its own tag (a resumed worker finds
it instead of submitting again), never as a run, and bounded in time."""

from __future__ import annotations

import json
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from app.backends.base import AppState, SubmitSpec
from app.core.db import transaction
from app.operations.models import Operation
from app.worker.core.context import WorkerContext
from app.worker.core.steps import OperationFailed, Steps
from app.worker.core.version import read_target
from app.worker.dry_run import attempts, driver, scratch_copy, verdict
from tests.support.worker import FakeBackend, make_job
from tidegate_runtime import contract

VERSION = SimpleNamespace(
    cluster=None,
    number=3,
    conf={"spark.sql.shuffle.partitions": "2"},
    app={"file": "/apps/new.py", "args": ["--x", "1"]},
    queries=[
        {
            "name": "counts",
            "trigger": "5 SECONDS",
            "checkpoint_location": "/real/checkpoint",
            "stateful_operators": [{"kind": "tumbling_window"}],
            "sources": [{"name": "clicks", "kind": "eventlog", "options": {"root": "/log"}}],
        }
    ],
)


def test_submitted_once_under_its_own_tag(
    ctx: WorkerContext, fake: FakeBackend, tmp_path: Path
) -> None:
    scratch = tmp_path / "scratch"
    first = driver.submit(ctx, 41, VERSION, "job", scratch, {"counts": 5})
    # A worker that died before recording the step runs it again: the driver is found.
    again = driver.submit(ctx, 41, VERSION, "job", scratch, {"counts": 5})
    assert fake.submits == 1 and again["backend_id"] == first["backend_id"] and again["found"]
    spec = fake.apps[first["backend_id"]].spec
    assert spec.tag == "tidegate-dryrun-41" and not spec.tag.startswith("tidegate-run-")
    assert spec.env == {}  # no run token: it is no run and cannot call the API as one
    assert "spark.tidegate.run_id" not in spec.conf
    assert spec.conf["spark.tidegate.dry_run"] == "true"
    assert spec.conf["spark.tidegate.checkpoint_dir"] == str(scratch)
    assert json.loads(spec.conf[contract.DRY_RUN_QUERIES]) == ["counts"]
    (query,) = json.loads(spec.conf["spark.tidegate.queries"])
    assert query["checkpoint_location"] is None  # never the real checkpoint
    assert (spec.file, spec.args) == ("/apps/new.py", ["--x", "1"])


def test_outcome_is_the_drivers_result_file(
    ctx: WorkerContext, fake: FakeBackend, tmp_path: Path
) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    submitted = driver.submit(ctx, 7, VERSION, "job", scratch, {"counts": 5})
    fake.apps[submitted["backend_id"]].state = AppState.SUCCEEDED
    refused = {
        "ok": False,
        "queries": {"counts": {"ok": False, "error_class": "X", "message": "differs"}},
    }
    (scratch / contract.DRY_RUN_RESULT_FILE).write_text(json.dumps(refused))
    outcome = driver.await_outcome(ctx, VERSION, submitted["backend_id"], time.time(), scratch, 60)
    assert outcome["ok"] is False and outcome["queries"] == refused["queries"]
    assert verdict.problems(outcome, {}) == ["query 'counts': differs [X]"]


def test_a_driver_without_a_result_or_too_slow_is_a_refusal(
    ctx: WorkerContext, fake: FakeBackend, tmp_path: Path
) -> None:
    scratch = tmp_path / "scratch"
    done = driver.submit(ctx, 8, VERSION, "job", scratch, {"counts": 5})
    fake.apps[done["backend_id"]].state = AppState.FAILED
    outcome = driver.await_outcome(ctx, VERSION, done["backend_id"], time.time(), scratch, 60)
    assert outcome["ok"] is False and "without a dry-run result" in outcome["message"]
    assert "boom: bad config" in outcome["message"]  # the driver's own words

    slow = driver.submit(ctx, 9, VERSION, "job", scratch, {"counts": 5})
    fake.apps[slow["backend_id"]].state = AppState.RUNNING
    # The bound counts from the submission (a resumed worker does not start it again).
    outcome = driver.await_outcome(ctx, VERSION, slow["backend_id"], time.time() - 61, scratch, 60)
    assert outcome["ok"] is False and outcome["timeout"] and "within 60s" in outcome["message"]
    assert fake.kills == [slow["backend_id"]]


INFRA = {
    "q": {
        "ok": False,
        "error_class": "StreamingQueryException",
        "message": "Python worker failed to connect back.\n\tat org.apache.spark.api.python",
    }
}
REFUSED = {
    "q": {
        "ok": False,
        "error_class": "STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA",
        "message": "Streaming stateful operator name does not match with the operator in state "
        "metadata.\nStateful operators in the metadata: [(OperatorId: 0 -> OperatorName: "
        "stateStoreSave)]; Stateful operators in current batch: [(OperatorId: 0 -> "
        "OperatorName: sessionWindowStateStoreSaveExec)].",
    }
}


class Killed(BaseException):
    """The worker dying at that instant (nothing after it runs)."""


@pytest.fixture
def update_op(ctx: WorkerContext, monkeypatch: pytest.MonkeyPatch) -> tuple[Operation, list[Path]]:
    """An update operation leased by this worker; the scratch copy is scripted (one stateful
    query 'q' at batch 5), each prepared directory recorded."""
    job_id = make_job(ctx)
    with transaction(ctx.factory) as session:
        op = Operation(
            job_id=job_id,
            kind="update",
            state="running",
            params={},
            request_hash="x",
            lease_owner=ctx.worker_id,
            created_by="test",
        )
        session.add(op)
        session.flush()
        session.expunge(op)
    prepared: list[Path] = []

    def prepare(
        ctx: WorkerContext, plan: Any, job: str, queries: Any, scratch: Path, positions: Any
    ) -> dict[str, Any]:
        scratch.mkdir(parents=True, exist_ok=True)
        prepared.append(scratch)
        operators = {"q": [{"id": 0, "name": "stateStoreSave"}]}
        return {"scratch": str(scratch), "check": {"q": 5}, "operators": operators}

    monkeypatch.setattr(scratch_copy, "make_copy", prepare)
    return op, prepared


def _old_run(fake: FakeBackend) -> str:
    backend_id = fake.submit(SubmitSpec(tag="tidegate-run-1", file="/x.py"))
    fake.apps[backend_id].state = AppState.RUNNING
    return backend_id


def _dry_run(ctx: WorkerContext, op: Operation) -> Steps:
    steps = Steps(ctx, op.id)
    target = read_target(ctx, op.job_id, 1)
    attempts.dry_run(ctx, steps.load(), steps, target, {"queries": []})
    return steps


def _step_names(steps: Steps) -> list[str]:
    return [s["name"] for s in steps.load().steps]


def test_an_infrastructure_failure_is_tried_again_from_a_fresh_copy(
    ctx: WorkerContext, fake: FakeBackend, update_op: tuple[Operation, list[Path]]
) -> None:
    op, prepared = update_op
    fake.dry_run_outcomes = [INFRA, None]
    steps = _dry_run(ctx, op)
    assert fake.submits == 2
    assert [a.spec.tag for a in fake.apps.values()] == [
        f"tidegate-dryrun-{op.id}",
        f"tidegate-dryrun-{op.id}-2",
    ]
    assert _step_names(steps) == [
        "dry_run_prepare",
        "dry_run_submit",
        "dry_run",
        "dry_run_prepare_2",
        "dry_run_submit_2",
        "dry_run_2",
    ]
    first = next(s for s in steps.load().steps if s["name"] == "dry_run")["detail"]
    assert first["ok"] is False and first["attempt"] == 1
    assert first["infrastructure_error"] == "Python worker failed to connect back."
    assert next(s for s in steps.load().steps if s["name"] == "dry_run_2")["detail"]["ok"]
    assert len(set(prepared)) == 2 and not any(p.exists() for p in prepared)  # fresh, then gone


def test_infrastructure_failures_on_every_attempt_fail_without_refusing(
    ctx: WorkerContext, fake: FakeBackend, update_op: tuple[Operation, list[Path]]
) -> None:
    op, _ = update_op
    old = _old_run(fake)
    fake.dry_run_outcome = INFRA
    with pytest.raises(OperationFailed) as failed:
        _dry_run(ctx, op)
    message = str(failed.value)
    assert "could not be completed because of a Spark infrastructure error" in message
    assert "Python worker failed to connect back." in message
    assert "Nothing was stopped; retrying the update is safe" in message
    assert "refused" not in message and "Keep the state" not in message
    assert failed.value.result is not None
    assert (
        failed.value.result["infrastructure_errors"]
        == ["Python worker failed to connect back."] * 3
    )
    assert fake.submits == 1 + verdict.ATTEMPTS  # the old run and three drivers
    assert fake.apps[old].state == AppState.RUNNING and old not in fake.kills


def test_a_state_refusal_is_refused_at_once(
    ctx: WorkerContext, fake: FakeBackend, update_op: tuple[Operation, list[Path]]
) -> None:
    op, _ = update_op
    fake.dry_run_outcomes = [REFUSED, None]
    with pytest.raises(OperationFailed) as failed:
        _dry_run(ctx, op)
    assert "was refused by a dry run" in str(failed.value)
    assert "operator 0 is stateStoreSave in the saved state" in str(failed.value)
    assert fake.submits == 1
    assert _step_names(Steps(ctx, op.id)) == ["dry_run_prepare", "dry_run_submit"]


def test_a_worker_killed_after_the_second_submit_finds_that_driver(
    ctx: WorkerContext,
    fake: FakeBackend,
    update_op: tuple[Operation, list[Path]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    op, _ = update_op
    fake.dry_run_outcomes = [INFRA, None]
    submit = fake.submit

    def dies_after_the_second(spec: SubmitSpec) -> str:
        backend_id = submit(spec)
        if fake.submits == 2:
            raise Killed  # submitted, its step not recorded
        return backend_id

    monkeypatch.setattr(fake, "submit", dies_after_the_second)
    with pytest.raises(Killed):
        _dry_run(ctx, op)
    assert _step_names(Steps(ctx, op.id))[-1] == "dry_run_prepare_2"
    steps = _dry_run(ctx, op)  # the worker resuming the operation
    assert fake.submits == 2
    resumed = next(s for s in steps.load().steps if s["name"] == "dry_run_submit_2")["detail"]
    assert resumed["found"] and resumed["tag"] == f"tidegate-dryrun-{op.id}-2"
    assert next(s for s in steps.load().steps if s["name"] == "dry_run_2")["detail"]["ok"]
