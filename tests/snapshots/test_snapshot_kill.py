"""SIGKILL the worker during a snapshot and during an update by snapshot (step names read
from app/worker/), on the real local runner with a real pipeline. After a
fresh worker takes over: the operation completes, the snapshot is in the catalog once, one
driver per run, and the two versions' committed outputs together are every input record
exactly once (the new version resumed where the snapshot stopped the old one)."""

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
# The steps of a pre-warmed update by snapshot (the default) when all goes well, and those a
# cold one takes instead of go; each must be a step of the code.
SNAPSHOT_UPDATE_STEPS = [
    "dry_run_plan",
    "dry_run_prepare",
    "standby",
    "standby_ready",
    "dry_run",
    "pre_copy",
    "prestage",
    "request_stop",
    "graceful_stop",
    "kill",
    "stopped",
    "export",
    "plan",
    "reserve_run",
    "materialise",
    "go",
    "verify",
    "retention",
]
COLD_UPDATE_STEPS = ["create_run", "await_submitted"]
assert set(SNAPSHOT_UPDATE_STEPS + COLD_UPDATE_STEPS) <= set(step_names()["update"]), step_names()[
    "update"
]


def _log(root: Path, count: int, offset_ms: int = 0) -> None:
    produce(str(root), "clicks", 2, rate=0, count=count, start_ts_ms=T0 + offset_ms, ts_step_ms=50)


def _everything(root: Path) -> list[tuple[int, int, float]]:
    return sorted((r.partition, r.offset, r.amount) for r in expected_enrich(root, "clicks"))


def _running_job(chaos: Chaos, tmp: Path) -> tuple[str, Path, int, int]:
    """Version 1 (enrich into out-1) runs and has read the log so far; version 2 enriches
    into out-2. Returns (job, root, v2, run id)."""
    job = f"chaos-snap-{uuid.uuid4().hex[:8]}"
    root = tmp / "log"
    EventLog(root).create_stream("clicks", 2)
    _log(root, 200)
    assert chaos.client.post("/jobs", json={"name": job}).status_code == 201
    v1 = enrich_version(chaos, job, root, tmp / "out-1")
    v2 = enrich_version(chaos, job, root, tmp / "out-2")
    first = chaos.operate(job, "submit", {"version": v1})
    assert first["state"] == "succeeded", first
    wait_until(caught_up(chaos, first["run_id"], root), bool, 180)
    return job, root, v2, first["run_id"]


def _snapshots(chaos: Chaos, job: str) -> list[dict[str, object]]:
    items: list[dict[str, object]] = chaos.client.get(
        "/snapshots", params={"job": job, "limit": 100}
    ).json()["items"]
    return items


def _finish(chaos: Chaos, job: str, run_id: int, root: Path, tmp: Path, versions: int = 2) -> None:
    """More input, the new run reads it all, a clean stop; then every record once, over the
    outputs of every version."""
    _log(root, 60, offset_ms=60_000)
    wait_until(caught_up(chaos, run_id, root), bool, 180)
    assert chaos.operate(job, "stop")["state"] == "succeeded"
    rows = [row for v in range(1, versions + 1) for row in enrich_rows(tmp / f"out-{v}")]
    assert sorted(rows) == _everything(root)


def test_snapshot_and_update_by_snapshot_survive_a_killed_worker(
    chaos: Chaos, tmp_path: Path
) -> None:
    """Smoke: a snapshot of the running job killed mid-export's aftermath, then an update by
    snapshot killed after the new run's checkpoint was restored but before the run exists,
    then another killed during its pre-copy."""
    job, root, v2, old_run = _running_job(chaos, tmp_path)
    saved = chaos.killed_at("snapshot:export", job, "snapshots", {"name": "live", "stop": False})
    assert saved is not None
    assert [s["name"] for s in _snapshots(chaos, job)] == ["live"]
    assert chaos.assert_one_driver_per_attempt(old_run)["state"] == "running"

    _log(root, 100, offset_ms=20_000)
    body = {"version": v2, "strategy": "snapshot", "snapshot_name": "to-v2", "verify_seconds": 0}
    update = chaos.killed_at("update:materialise", job, "update", body)
    assert update is not None and update["result"]["previous_run_id"] == old_run
    assert sorted(s["name"] for s in _snapshots(chaos, job)) == ["live", "to-v2"]
    assert chaos.assert_one_driver_per_attempt(old_run)["state"] == "stopped"
    new_run = update["result"]["run_id"]
    assert chaos.assert_one_driver_per_attempt(new_run)["state"] == "running"

    # Killed in the middle of the pre-copy (its blobs stored, its manifest not yet written),
    # while the old run still processes: the next worker copies again, then stops and
    # switches; one driver throughout, the update finished.
    _log(root, 100, offset_ms=40_000)
    wait_until(caught_up(chaos, new_run, root), bool, 180)
    v3 = enrich_version(chaos, job, root, tmp_path / "out-3")
    body = {"version": v3, "strategy": "snapshot", "snapshot_name": "to-v3", "verify_seconds": 0}
    update = chaos.killed_at("update:pre_copy:copying", job, "update", body)
    assert update is not None and update["state"] == "succeeded", update
    names = [s["name"] for s in update["steps"]]
    assert names.count("pre_copy") == 1 and names.index("pre_copy") < names.index("request_stop")
    assert chaos.assert_one_driver_per_attempt(new_run)["state"] == "stopped"
    last_run = update["result"]["run_id"]
    assert chaos.assert_one_driver_per_attempt(last_run)["state"] == "running"
    _finish(chaos, job, last_run, root, tmp_path, versions=3)


FULL_CASES = [
    pytest.param("snapshot", f"snapshot:{s}", id=f"snapshot:{s}") for s in step_names()["snapshot"]
] + [
    pytest.param("update", f"update:{s}", id=f"update:{s}")
    for s in SNAPSHOT_UPDATE_STEPS + COLD_UPDATE_STEPS
]


@pytest.mark.skipif(not FULL, reason="every step boundary runs under `make chaos`")
@pytest.mark.parametrize(("kind", "fault"), FULL_CASES)
def test_worker_killed_at_every_snapshot_step(
    chaos: Chaos, tmp_path: Path, kind: str, fault: str
) -> None:
    job, root, v2, old_run = _running_job(chaos, tmp_path)
    _log(root, 100, offset_ms=20_000)
    if kind == "snapshot":  # with stop: every step of the kind is on its path
        done = chaos.killed_at(fault, job, "snapshots", {"name": "snap", "stop": True})
    else:
        body = {"version": v2, "strategy": "snapshot", "verify_seconds": 0}
        if fault.removeprefix("update:") in COLD_UPDATE_STEPS:
            body["prewarm"] = False  # a cold update creates and submits its run
        done = chaos.killed_at(fault, job, "update", body)
    assert done is not None, f"{fault} was not on the path"
    assert len(_snapshots(chaos, job)) == 1
    assert chaos.assert_one_driver_per_attempt(old_run)["state"] == "stopped"
    if kind == "snapshot":  # the snapshot is whole: version 2 starts from it exactly
        done = chaos.operate(job, "submit", {"version": v2, "snapshot": "snap"})
        assert done["state"] == "succeeded", done
    new_run = done["result"]["run_id"]
    assert chaos.assert_one_driver_per_attempt(new_run)["state"] == "running"
    _finish(chaos, job, new_run, root, tmp_path)
