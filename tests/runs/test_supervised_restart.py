"""A supervised job whose driver is SIGKILLed comes back on its own, on both backends: the
worker sees the driver gone (the runner's batch dead, the standalone master's driver FAILED),
resubmits it after the restart policy's backoff from the same checkpoint, and the committed
output is exactly the ground truth: no window lost, none written twice. (tests/runs/
test_driver_kill.py repeats the kill on the runner and checks the backoff schedule.)

On standalone the job keeps a *hot spare*: the next attempt's driver, warm and waiting. The
crash is taken over by that very driver (no backoff, no submission), the next spare comes up,
and a pre-warmed restart then hands over to it at a batch boundary, the output exact again."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.operations.test_lifecycle_e2e import _operate, _windowed_version
from tests.support.backends import Target
from tests.support.chaos.windowed import committed_windows, expected_windows
from tests.support.e2e import APPS, driver_jvms, processes_mentioning
from tests.support.stack import Stack, wait_until
from tidegate_runtime.sources.eventlog import EventLog
from tidegate_runtime.sources.eventlog_producer import produce

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
    hot = target.cluster == "standalone"
    root, out = tmp_path / "log", tmp_path / "out"
    EventLog(root).create_stream("clicks", 2)
    produce(str(root), "clicks", 2, rate=0, count=300, start_ts_ms=T0, ts_step_ms=400)
    r = stack.client.post("/jobs", json={"name": job, "restart_policy": POLICY, "hot_spare": hot})
    assert r.status_code == 201, r.text
    version = _windowed_version(stack, job, target, root, out)
    submitted = _operate(stack, job, "submit", {"version": version})
    assert submitted["state"] == "succeeded", submitted
    run_id = submitted["run_id"]
    wait_until(lambda: _caught_up(stack, run_id, root, 0), bool, 180)
    if hot:  # warm and waiting before the crash: its driver is what attempt 1 will run on
        spare = wait_until(lambda: stack.run(run_id)["spare"], _ready(1), 240)
        (spare_jvm,) = driver_jvms(f"tidegate-run-{run_id}-a1-spare1")

    (driver,) = wait_until(lambda: driver_jvms(f"tidegate-run-{run_id}-a0"), lambda d: len(d) == 1)
    driver.send_signal(signal.SIGKILL)
    psutil.wait_procs([driver], timeout=30)
    # Input keeps arriving while the job is down; the next attempt must read all of it.
    produce(str(root), "clicks", 2, rate=0, count=100, start_ts_ms=T0 + 120_000, ts_step_ms=400)
    wait_until(lambda: _caught_up(stack, run_id, root, 1), bool, 240)

    run = stack.run(run_id)
    assert run["failures"] == 1
    reasons = [t["reason"] for t in run["transitions"] if t["to_state"] == "restarting"]
    backoff = "restarting in 0s" if hot else "restarting in 1s"
    assert len(reasons) == 1 and backoff in reasons[0], run["transitions"]
    # One driver: the killed attempt's is gone, the new attempt's runs.
    assert driver_jvms(f"tidegate-run-{run_id}-a0") == []
    assert len(driver_jvms(run["tag"])) == 1
    if hot:  # the spare took over: the same driver, nothing submitted in between
        assert run["tag"] == f"tidegate-run-{run_id}-a1-spare1"
        assert run["backend_id"] == spare["backend_id"]
        assert driver_jvms(run["tag"])[0].pid == spare_jvm.pid

    wait_until(lambda: committed_windows(out), lambda rows: rows == expected_windows(root), 120)
    if hot:
        _prewarmed_restart(stack, job, run_id, root, out)
    assert _operate(stack, job, "stop")["state"] == "succeeded"
    assert committed_windows(out) == expected_windows(root)
    # No spare outlives its run.
    wait_until(lambda: driver_jvms_of(run_id), lambda procs: procs == [], 60)
    assert stack.run(run_id)["spare"] is None


def _prewarmed_restart(stack: Stack, job: str, run_id: int, root: Path, out: Path) -> None:
    """A restart (pre-warmed by default) on the job's next spare: it is ready before the run
    is asked to stop, and takes over at the batch boundary."""
    wait_until(lambda: stack.run(run_id)["spare"], _ready(2), 240)
    restart = _operate(stack, job, "restart")
    assert restart["state"] == "succeeded", restart
    assert restart["result"]["spare_taken_over"] is True, restart["result"]
    steps = [s["name"] for s in restart["steps"]]
    assert steps[:4] == ["target", "spare", "spare_ready", "request_stop"], steps
    graceful = next(s for s in restart["steps"] if s["name"] == "graceful_stop")
    assert graceful["detail"]["graceful"] is True, restart["steps"]  # at a batch boundary
    # Input arriving after the switch. (Before it, the stop could land between the batch that
    # read it and the no-data batch that emits the windows its watermark closes; Spark runs
    # that one after a restart only once new data comes, so the output would wait for more.)
    produce(str(root), "clicks", 2, rate=0, count=100, start_ts_ms=T0 + 240_000, ts_step_ms=400)
    wait_until(lambda: _caught_up(stack, run_id, root, 2), bool, 240)
    run = stack.run(run_id)
    assert run["tag"] == f"tidegate-run-{run_id}-a2-spare2"
    # Handed over on the old driver's fence (its session stopped at the boundary), with no
    # kill: that driver exits on its own.
    handover = next(t for t in run["transitions"] if t["to_state"] == "submitting")
    assert "(fenced)" in handover["reason"] and "spare takes over" in handover["reason"], run
    wait_until(lambda: driver_jvms(f"tidegate-run-{run_id}-a1-spare1"), lambda d: d == [], 60)
    wait_until(lambda: committed_windows(out), lambda rows: rows == expected_windows(root), 120)


def _ready(attempt: int) -> Callable[[dict[str, Any] | None], bool]:
    return lambda spare: bool(spare and spare["attempt"] == attempt and spare["ready_at"])


def driver_jvms_of(run_id: int) -> list[psutil.Process]:
    """Every driver JVM of the run: its attempts' and its spares'."""
    return [
        proc
        for proc in processes_mentioning(f"tidegate-run-{run_id}-a")
        if "java" in " ".join((proc.info["cmdline"] or [])[:1])
    ]


def test_a_fenced_driver_that_does_not_exit_is_killed(runner: Stack, tmp_path: Path) -> None:
    """A stop ends the run on the old driver's fence (queries stopped at a boundary, Spark
    session stopped), before its process exits. A job whose code keeps the process alive
    would hold the cluster's cores for ever: the worker kills what is left of it once it has
    lingered TIDEGATE_FENCED_EXIT_SECONDS (8 s for this test's worker: the test waits it out;
    the e2e stack's workers have 20 s)."""
    stack, job = runner, "lingers"
    stack.stop_workers()
    stack.start_worker(TIDEGATE_FENCED_EXIT_SECONDS=str(FENCED_EXIT))
    try:
        _lingers(stack, job, tmp_path)
    finally:
        stack.stop_workers()
        stack.start_worker()  # the stack's own, for the tests after this one


FENCED_EXIT = 8


def _lingers(stack: Stack, job: str, tmp_path: Path) -> None:
    root, out = tmp_path / "log", tmp_path / "out"
    EventLog(root).create_stream("clicks", 2)
    produce(str(root), "clicks", 2, rate=0, count=100, start_ts_ms=T0, ts_step_ms=400)
    assert stack.client.post("/jobs", json={"name": job}).status_code == 201
    version = _windowed_version(stack, job, "runner", root, out, app_file=str(APPS / "lingers.py"))
    submitted = _operate(stack, job, "submit", {"version": version})
    assert submitted["state"] == "succeeded", submitted
    run_id = submitted["run_id"]
    wait_until(lambda: _caught_up(stack, run_id, root, 0), bool, 180)
    tag = stack.run(run_id)["tag"]
    (driver,) = driver_jvms(tag)

    stopped = _operate(stack, job, "stop")
    assert stopped["state"] == "succeeded", stopped
    run = stack.run(run_id)
    assert run["state"] == "stopped", run
    assert "(fenced)" in run["transitions"][0]["reason"], run["transitions"]
    fenced = time.monotonic()
    assert driver.is_running(), "the driver exited by itself: the job did not linger"
    psutil.wait_procs([driver], timeout=FENCED_EXIT + 60)
    assert not driver.is_running(), "what was left of the fenced driver was never killed"
    # Not before its grace: a fenced driver that exits within it is never killed. (Timed
    # from the stop's end, a little after the fence.)
    assert time.monotonic() - fenced > FENCED_EXIT - 3, time.monotonic() - fenced
    log = "\n".join(p.read_text() for p in stack.tmp.glob("worker-*.log"))
    assert f"run {run_id}: " in log and "after it was fenced: killing what is left of it" in log
