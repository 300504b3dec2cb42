"""A supervised job whose driver is SIGKILLed comes back on its own, on both backends: the
worker sees the driver gone (the runner's batch dead, the standalone master's driver FAILED),
resubmits it after the restart policy's backoff from the same checkpoint, and the committed
output is exactly the ground truth: no window lost, none written twice. (tests/chaos/
test_driver_kill.py repeats the kill on the runner and checks the backoff schedule.)"""

from __future__ import annotations

import signal
from pathlib import Path

import psutil
import pytest

from tests.chaos.windowed import committed_windows, expected_windows
from tests.e2e.backends import Target
from tests.e2e.fixtures import driver_jvms
from tests.e2e.stack import Stack, wait_until
from tests.e2e.test_tidegate import _job, _operate, _windowed_version
from tidegate_runtime.eventlog import EventLog
from tidegate_runtime.produce import produce

pytestmark = pytest.mark.e2e

T0 = 1_767_225_600_000
POLICY = {"min_backoff": "1s", "max_backoff": "30s", "stable_period": "10m"}


def _caught_up(stack: Stack, run_id: int, root: Path, attempt: int) -> bool:
    latest = {str(p): o for p, o in EventLog(root).stream("clicks").latest_offsets().items()}
    run = stack.run(run_id)
    progress = run["progress"].get("windowed_counts") or {}
    done = (progress.get("sources") or [{}])[0].get("end_offset") == latest
    return bool(run["attempt"] == attempt and run["state"] == "running" and done)


def test_a_killed_driver_is_restarted_with_the_output_exact(
    clusters: Stack, target: Target, tmp_path: Path
) -> None:
    stack, job = clusters, f"supervised-{target.cluster}"
    root, out = tmp_path / "log", tmp_path / "out"
    EventLog(root).create_stream("clicks", 2)
    produce(str(root), "clicks", 2, rate=0, count=300, start_ts_ms=T0, ts_step_ms=400)
    _job(stack, job, POLICY)
    version = _windowed_version(stack, job, target, root, out)
    submitted = _operate(stack, job, "submit", {"version": version})
    assert submitted["state"] == "succeeded", submitted
    run_id = submitted["run_id"]
    wait_until(lambda: _caught_up(stack, run_id, root, 0), bool, 180)

    (driver,) = wait_until(lambda: driver_jvms(f"tidegate-run-{run_id}-a0"), lambda d: len(d) == 1)
    driver.send_signal(signal.SIGKILL)
    psutil.wait_procs([driver], timeout=30)
    # Input keeps arriving while the job is down; the next attempt must read all of it.
    produce(str(root), "clicks", 2, rate=0, count=100, start_ts_ms=T0 + 120_000, ts_step_ms=400)
    wait_until(lambda: _caught_up(stack, run_id, root, 1), bool, 240)

    run = stack.run(run_id)
    assert run["failures"] == 1
    reasons = [t["reason"] for t in run["transitions"] if t["to_state"] == "restarting"]
    assert len(reasons) == 1 and "restarting in 1s" in reasons[0], run["transitions"]
    # One driver: the killed attempt's is gone, the new attempt's runs.
    assert driver_jvms(f"tidegate-run-{run_id}-a0") == []
    assert len(driver_jvms(f"tidegate-run-{run_id}-a1")) == 1

    wait_until(lambda: committed_windows(out), lambda rows: rows == expected_windows(root), 120)
    assert _operate(stack, job, "stop")["state"] == "succeeded"
    assert committed_windows(out) == expected_windows(root)
