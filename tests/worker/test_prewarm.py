"""A pre-warmed update's standby on real Spark, where the update does not reach go: the job is
cancelled while the standby waits. The standby exits (it hears "stop" on its long-poll; the
reconciler kills what is left), its run ends released, and it leaves no driver and no
checkpoint behind; nothing restarts the cancelled job. (A standby that gets go: the updates of
tests/worker/test_drain_e2e.py and test_snapshots.py, checked by ``assert_switch``.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.operations.test_lifecycle_e2e import _job, _operate, _windowed_version
from tests.support.e2e import driver_jvms
from tests.support.stack import Stack, wait_until
from tidegate_runtime.sources.eventlog import EventLog
from tidegate_runtime.sources.eventlog_producer import produce

pytestmark = pytest.mark.e2e

T0 = 1_767_225_600_000


def test_a_standby_whose_job_is_cancelled_exits_and_leaves_nothing_behind(
    runner: Stack, tmp_path: Path
) -> None:
    stack, job = runner, "prewarm-cancelled"
    root = tmp_path / "log"
    EventLog(root).create_stream("clicks", 2)
    produce(str(root), "clicks", 2, rate=0, count=100, start_ts_ms=T0, ts_step_ms=400)
    _job(stack, job)
    # 50 records a batch: the backlog below keeps the drain busy for many batches, so the
    # cancel lands while the standby is ready and waiting for go.
    v1 = _windowed_version(stack, job, "runner", root, tmp_path / "out", max_records_per_batch=50)
    v2 = _windowed_version(stack, job, "runner", root, tmp_path / "out2", window="2 minutes")
    submitted = _operate(stack, job, "submit", {"version": v1})
    assert submitted["state"] == "succeeded", submitted
    old = submitted["run_id"]
    stack.progress(old, "windowed_counts", lambda p: p.get("batch_id") is not None, 180)
    produce(str(root), "clicks", 2, rate=0, count=6000, start_ts_ms=T0 + 40_000, ts_step_ms=10)
    r = stack.client.post(f"/jobs/{job}/update", json={"version": v2, "strategy": "drain"})
    assert r.status_code == 202, r.text
    update_id = r.json()["id"]

    def standby() -> dict[str, Any]:
        runs = stack.client.get(f"/jobs/{job}/runs").json()["items"]
        return next((run for run in runs if run["id"] != old), {})

    ready = wait_until(standby, lambda run: bool(run.get("standby_ready_at")), 240)
    assert ready["state"] == "standby" and ready["go_at"] is None
    tag = ready["tag"]
    assert len(driver_jvms(tag)) == 1  # warm and waiting: one driver
    cancelled = _operate(stack, job, "cancel")
    assert cancelled["state"] == "succeeded", cancelled
    assert cancelled["steps"][0]["detail"] == {"released": [ready["id"]]}, cancelled["steps"]
    update = stack.wait_operation(update_id, 240)
    assert update["state"] == "failed", update
    released = stack.run(ready["id"])
    assert released["state"] == "stopped" and released["stop_reason"] == "released", released
    assert released["go_at"] is None
    wait_until(lambda: driver_jvms(tag), lambda procs: procs == [], 60)
    assert not (stack.checkpoint_root / job / str(ready["id"])).exists()
    # Cancelled means down: the update restarted nothing, and no other run is left.
    assert stack.run(old)["state"] == "cancelled"
    runs = stack.client.get(f"/jobs/{job}/runs").json()["items"]
    assert sorted(run["id"] for run in runs) == sorted([old, ready["id"]])
    assert stack.client.get(f"/jobs/{job}").json()["state"] == "cancelled"
