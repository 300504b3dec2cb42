"""SIGKILL the worker during a drain, an update by drain and a stateless update (step names
read from app/worker/), on the real local runner with a real pipeline. After a
fresh worker takes over: the operation completes, one driver per run, the drained (or, for a
stateless update, committed) offsets are where the next version starts, its startpoints are
applied once, and the two versions' committed outputs together are every input record
exactly once."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from pipelines.ground_truth import expected_enrich
from tests.support.chaos.harness import Chaos, caught_up, enrich_rows, enrich_version, step_names
from tests.support.sizes import FULL
from tests.support.stack import wait_until
from tidegate_runtime.sources.eventlog import EventLog
from tidegate_runtime.sources.eventlog_producer import produce

pytestmark = [pytest.mark.chaos, pytest.mark.e2e]

T0 = 1_767_225_600_000
# The steps of an update by drain when all goes well (the update handler also holds the
# snapshot strategy's and the rollbacks'); each must still be a step of the worker's code.
DRAIN_UPDATE_STEPS = [
    "target",
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
# Pre-warmed (the default): the new version's standby is ready before the drain; go
# replaces the run's creation.
PREWARMED_DRAIN_UPDATE_STEPS = [
    "target",
    "dry_run_prepare",
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
assert set(DRAIN_UPDATE_STEPS) <= set(step_names()["update"]), step_names()["update"]
assert set(PREWARMED_DRAIN_UPDATE_STEPS) <= set(step_names()["update"]), step_names()["update"]
# The steps of a stateless update: the old run stops at a batch boundary instead of draining.
STATELESS_UPDATE_STEPS = [
    "target",
    "request_stop",
    "graceful_stop",
    "kill",
    "stopped",
    "positions",
    "hand_off",
    "plan",
    "reserve_run",
    "materialise",
    "create_run",
    "await_submitted",
    "verify",
]
assert set(STATELESS_UPDATE_STEPS) <= set(step_names()["update"]), step_names()["update"]


def _log(root: Path, count: int, offset_ms: int = 0) -> None:
    produce(str(root), "clicks", 2, rate=0, count=count, start_ts_ms=T0 + offset_ms, ts_step_ms=50)


def _expected(root: Path, ranges: dict[int, tuple[int, int]]) -> list[tuple[int, int, float]]:
    return sorted(
        (r.partition, r.offset, r.amount) for r in expected_enrich(root, "clicks", ranges)
    )


def _running_job(chaos: Chaos, tmp: Path) -> tuple[str, Path, int, int, int]:
    """A job whose version 1 (enrich into out-1) runs and has read the log so far; version 2
    enriches into out-2. Returns (job, root, v1, v2, run id)."""
    job = f"chaos-drain-{uuid.uuid4().hex[:8]}"
    root = tmp / "log"
    EventLog(root).create_stream("clicks", 2)
    _log(root, 200)
    assert chaos.client.post("/jobs", json={"name": job}).status_code == 201
    v1 = enrich_version(chaos, job, root, tmp / "out-1")
    v2 = enrich_version(chaos, job, root, tmp / "out-2")
    first = chaos.operate(job, "submit", {"version": v1})
    assert first["state"] == "succeeded", first
    wait_until(caught_up(chaos, first["run_id"], root), bool, 180)
    return job, root, v1, v2, first["run_id"]


def _end(op: dict[str, object]) -> dict[int, int]:
    result = op["result"]
    assert isinstance(result, dict)
    return {int(p): int(o) for p, o in result["end_offsets"]["clicks"].items()}


def _new_version_continues(
    chaos: Chaos, job: str, tmp: Path, root: Path, end: dict[int, int], new_run: int
) -> None:
    """The new run started at ``end``: it applied the handed-off startpoints once, and once
    it has read more input and stopped, out-2 is exactly the log from ``end`` on."""
    assert chaos.assert_one_driver_per_attempt(new_run)["state"] == "running"
    _log(root, 60, offset_ms=60_000)  # so the new run commits batches past its first
    wait_until(caught_up(chaos, new_run, root), bool, 180)
    view = wait_until(
        lambda: chaos.client.get(f"/jobs/{job}/startpoints").json(),
        lambda v: v["pending"] == [],
        120,
    )
    (applied,) = view["applied"]
    assert applied["run_id"] == new_run, view["applied"]
    assert applied["after_offsets"] == {str(p): o for p, o in end.items()}, applied
    assert chaos.operate(job, "stop")["state"] == "succeeded"
    latest = EventLog(root).stream("clicks").latest_offsets()
    assert enrich_rows(tmp / "out-2") == _expected(root, {p: (end[p], latest[p]) for p in end})


def test_drain_and_update_by_drain_survive_a_killed_worker(chaos: Chaos, tmp_path: Path) -> None:
    """Smoke: a pre-warmed update by drain killed between its standby's ready and its go
    (the old run still processing), then a drain of the new version killed right after it
    was asked. The standby is found again, not submitted twice, and gets go."""
    job, root, _, v2, old_run = _running_job(chaos, tmp_path)
    _log(root, 100, offset_ms=20_000)  # a backlog for the drain
    update = chaos.killed_at(
        "update:standby_ready",
        job,
        "update",
        {"version": v2, "strategy": "drain", "verify_seconds": 0},
    )
    assert update is not None and update["result"]["previous_run_id"] == old_run
    end1 = _end(update)
    assert end1 == EventLog(root).stream("clicks").latest_offsets()
    assert chaos.assert_one_driver_per_attempt(old_run)["state"] == "drained"
    new_run = update["result"]["run_id"]
    assert chaos.assert_one_driver_per_attempt(new_run)["state"] == "running"

    wait_until(caught_up(chaos, new_run, root), bool, 180)
    _log(root, 100, offset_ms=40_000)  # a backlog for the drain
    drain = chaos.killed_at("drain:request_drain", job, "drain", {"timeout_seconds": 300})
    assert drain is not None
    end2 = _end(drain)
    assert chaos.assert_one_driver_per_attempt(new_run)["state"] == "drained"
    assert enrich_rows(tmp_path / "out-1") == _expected(root, {p: (0, o) for p, o in end1.items()})
    assert enrich_rows(tmp_path / "out-2") == _expected(root, {p: (end1[p], end2[p]) for p in end2})


def test_stateless_update_survives_a_killed_worker(chaos: Chaos, tmp_path: Path) -> None:
    """Smoke: an update with strategy stateless killed once the old run has stopped at a batch
    boundary and the new version's startpoints are set (its run not yet reserved); input
    keeps arriving meanwhile."""
    job, root, _, v2, old_run = _running_job(chaos, tmp_path)
    _log(root, 100, offset_ms=20_000)
    update = chaos.killed_at(
        "update:hand_off",
        job,
        "update",
        {"version": v2, "strategy": "stateless", "verify_seconds": 0, "prewarm": False},
    )
    assert update is not None, "a stateless update passes hand_off"
    result = update["result"]
    assert result["strategy"] == "stateless" and result["previous_run_id"] == old_run
    end = _end(update)
    assert chaos.assert_one_driver_per_attempt(old_run)["state"] == "stopped"
    assert enrich_rows(tmp_path / "out-1") == _expected(root, {p: (0, o) for p, o in end.items()})
    _new_version_continues(chaos, job, tmp_path, root, end, result["run_id"])


FULL_CASES = [pytest.param("drain", f"drain:{s}", id=f"drain:{s}") for s in step_names()["drain"]]
FULL_CASES += [pytest.param("update", f"update:{s}", id=f"update:{s}") for s in DRAIN_UPDATE_STEPS]
FULL_CASES += [
    pytest.param("prewarmed", f"update:{s}", id=f"update-prewarmed:{s}")
    for s in PREWARMED_DRAIN_UPDATE_STEPS
]
FULL_CASES += [
    pytest.param("stateless", f"update:{s}", id=f"update-stateless:{s}")
    for s in STATELESS_UPDATE_STEPS
]


@pytest.mark.skipif(not FULL, reason="every step boundary runs under `make chaos`")
@pytest.mark.parametrize(("kind", "fault"), FULL_CASES)
def test_worker_killed_at_every_drain_step(
    chaos: Chaos, tmp_path: Path, kind: str, fault: str
) -> None:
    """``kind``: drain, update (by drain, cold), prewarmed (by drain) or stateless (an update
    with that strategy, cold)."""
    job, root, _, v2, old_run = _running_job(chaos, tmp_path)
    _log(root, 100, offset_ms=20_000)
    verb = "drain" if kind == "drain" else "update"
    strategy = "stateless" if kind == "stateless" else "drain"
    body = (
        {"version": v2, "strategy": strategy, "verify_seconds": 0, "prewarm": kind == "prewarmed"}
        if verb == "update"
        else {"timeout_seconds": 300}
    )
    done = chaos.killed_at(fault, job, verb, body)
    if done is None:
        chaos.operate(job, "cancel")
        pytest.skip(f"{fault} is not on the path of this {kind} ({verb})")
    end = _end(done)
    old_state = "stopped" if kind == "stateless" else "drained"
    assert chaos.assert_one_driver_per_attempt(old_run)["state"] == old_state
    assert enrich_rows(tmp_path / "out-1") == _expected(root, {p: (0, o) for p, o in end.items()})
    if verb == "update":
        _new_version_continues(chaos, job, tmp_path, root, end, done["result"]["run_id"])
