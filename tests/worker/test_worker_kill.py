"""SIGKILL the worker at step boundaries of submit, stop, cancel and restart (the names are
read from app/worker/), on the real local runner with a real pipeline. After a
fresh worker takes over: the operation completes, every attempt was submitted exactly once,
no stale driver is left, a startpoint is applied once, and the pipeline's committed output
is every input record exactly once."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from pipelines.ground_truth import expected_enrich
from tests.support.chaos.harness import (
    Chaos,
    caught_up,
    enrich_rows,
    enrich_version,
    fault_points,
    step_names,
)
from tests.support.sizes import FULL
from tests.support.stack import wait_until
from tidegate_runtime.sources.eventlog import EventLog
from tidegate_runtime.sources.eventlog_producer import produce

pytestmark = [pytest.mark.chaos, pytest.mark.e2e]

T0 = 1_767_225_600_000
COVERED = ("submit", "stop", "cancel", "restart")
# Drain, update by drain and stateless update: tests/worker/test_drain_kill.py; snapshot and
# update by snapshot: tests/snapshots/test_snapshot_kill.py. A new kind without a scenario shows
# as skipped.
PENDING = sorted(set(step_names()) - set(COVERED) - {"drain", "snapshot", "update"})


def _log(root: Path, count: int, offset_ms: int = 0) -> None:
    produce(str(root), "clicks", 2, rate=0, count=count, start_ts_ms=T0 + offset_ms, ts_step_ms=50)


def _expected(root: Path) -> list[tuple[int, int, float]]:
    return sorted((r.partition, r.offset, r.amount) for r in expected_enrich(root, "clicks"))


def _job(chaos: Chaos, tmp: Path) -> tuple[str, int, Path, Path]:
    job = f"chaos-{uuid.uuid4().hex[:8]}"
    root, out = tmp / "log", tmp / "out"
    EventLog(root).create_stream("clicks", 2)
    _log(root, 200)
    assert chaos.client.post("/jobs", json={"name": job}).status_code == 201
    return job, enrich_version(chaos, job, root, out), root, out


def _pin_startpoint(chaos: Chaos, job: str, root: Path, at: int | None = None) -> int:
    """A startpoint at where partition 0 already is (or ``at``: where a fresh query starts,
    its oldest offset): applying it moves nothing, applying it twice (or losing it) shows in the
    startpoint view."""
    if at is None:
        at = EventLog(root).stream("clicks").latest_offsets()[0]
    r = chaos.client.put(
        f"/jobs/{job}/startpoints",
        json={"startpoints": [{"source": "clicks", "partition": 0, "type": "OFFSET", "value": at}]},
    )
    assert r.status_code == 200, r.text
    pending = chaos.client.get(f"/jobs/{job}/startpoints").json()["pending"]
    sp_id: int = pending[0]["id"]
    return sp_id


def _assert_applied_once(
    chaos: Chaos, job: str, sp_id: int, run_id: int, *, committed: bool = False
) -> None:
    """One application of the startpoint, by this run; once a later batch has committed
    (``committed``), the startpoint is gone, so no restart can apply it again."""

    def mine(view: dict[str, Any]) -> list[dict[str, Any]]:
        return [a for a in view["applied"] if sp_id in [s["id"] for s in a["startpoints"]]]

    view = wait_until(
        lambda: chaos.client.get(f"/jobs/{job}/startpoints").json(),
        lambda v: bool(mine(v)) and (not committed or v["pending"] == []),
        120,
    )
    assert [a["run_id"] for a in mine(view)] == [run_id], view["applied"]


def _finish_and_check_output(chaos: Chaos, job: str, run_id: int, root: Path, out: Path) -> None:
    """Bring the run to a clean stop with all input read; compare the committed output."""
    run = chaos.stack.run(run_id)
    if run["state"] not in ("running", "submitting"):
        assert chaos.operate(job, "restart")["state"] == "succeeded"
    _log(root, 60, offset_ms=60_000)
    wait_until(caught_up(chaos, run_id, root), bool, 180)
    assert chaos.operate(job, "stop")["state"] == "succeeded"
    chaos.assert_one_driver_per_attempt(run_id)
    assert enrich_rows(out) == _expected(root)


def _faulted(chaos: Chaos, job: str, kind: str, fault: str, version: int) -> dict[str, Any] | None:
    body = {"version": version} if kind == "submit" else None
    return chaos.killed_at(fault, job, kind, body)


def test_worker_killed_along_a_job_lifecycle(chaos: Chaos, tmp_path: Path) -> None:
    """Smoke: one job through submit, restart and stop, the worker killed once in each:
    before anything reached Spark, right after a driver was handed to the backend (its id
    not yet recorded), and while waiting for a graceful stop."""
    job, version, root, out = _job(chaos, tmp_path)
    submitted = chaos.killed_at("submit:create_run", job, "submit", {"version": version})
    assert submitted is not None
    run_id = submitted["run_id"]
    assert chaos.assert_one_driver_per_attempt(run_id)["state"] == "running"
    wait_until(caught_up(chaos, run_id, root), bool, 180)

    sp_id = _pin_startpoint(chaos, job, root)
    # Cold: the point is the new attempt's own submission (a pre-warmed restart adopts its
    # spare instead; tests/worker/test_spares.py kills the worker after each of its steps).
    cold = {"prewarm": False}
    assert chaos.killed_at("reconcile:after_backend_submit", job, "restart", cold) is not None
    run = chaos.assert_one_driver_per_attempt(run_id)
    assert (run["state"], run["attempt"]) == ("running", 1)
    _assert_applied_once(chaos, job, sp_id, run_id)

    _log(root, 100, offset_ms=30_000)
    wait_until(caught_up(chaos, run_id, root), bool, 180)
    _assert_applied_once(chaos, job, sp_id, run_id, committed=True)
    assert chaos.killed_at("stop:graceful_stop", job, "stop") is not None
    assert chaos.assert_one_driver_per_attempt(run_id)["state"] == "stopped"
    assert enrich_rows(out) == _expected(root)


FULL_CASES = [
    pytest.param(kind, point, id=point if point.startswith(kind) else f"{kind}-{point}")
    for kind in COVERED
    for point in fault_points(kind)
] + [
    pytest.param(kind, "-", marks=pytest.mark.skip(reason=f"no chaos scenario for {kind} yet"))
    for kind in PENDING
]


@pytest.mark.skipif(not FULL, reason="every step boundary runs under `make chaos`")
@pytest.mark.parametrize(("kind", "fault"), FULL_CASES)
def test_worker_killed_at_every_step(chaos: Chaos, tmp_path: Path, kind: str, fault: str) -> None:
    job, version, root, out = _job(chaos, tmp_path)
    sp_id = None
    if kind == "submit":
        run_id = None
        # Pending before the submit: the fresh query starts there (partition 0's oldest
        # offset, where it would start anyway), whatever attempt the killed submit made.
        sp_id = _pin_startpoint(
            chaos, job, root, at=EventLog(root).stream("clicks").earliest_offsets()[0]
        )
    else:
        first = chaos.operate(job, "submit", {"version": version})
        assert first["state"] == "succeeded", first
        run_id = first["run_id"]
        wait_until(caught_up(chaos, run_id, root), bool, 180)
        if kind == "restart":
            sp_id = _pin_startpoint(chaos, job, root)
    done = _faulted(chaos, job, kind, fault, version)
    if done is None:
        if run_id is not None:
            chaos.operate(job, "cancel")
        pytest.skip(f"{fault} is not on the path of a plain {kind}")
    run_id = run_id or done["run_id"]
    run = chaos.assert_one_driver_per_attempt(run_id)
    expected_state = {"stop": "stopped", "cancel": "cancelled"}.get(kind, "running")
    assert run["state"] == expected_state, run
    assert run["attempt"] == (1 if kind == "restart" else 0)
    if sp_id is not None:
        _assert_applied_once(chaos, job, sp_id, run_id)
    _finish_and_check_output(chaos, job, run_id, root, out)
    if sp_id is not None:
        _assert_applied_once(chaos, job, sp_id, run_id, committed=True)
