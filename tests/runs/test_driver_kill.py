"""SIGKILL the Spark driver of a supervised job (the windowed pipeline, on the local runner).
The worker restarts it on the restart policy's schedule (PSTL: 1 s, then 2 s, …), one driver
per attempt, from the same checkpoint; the committed output is exactly the ground truth
computed from the log in plain Python: no window lost, none written twice."""

from __future__ import annotations

import signal
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.support.chaos.harness import Chaos
from tests.support.chaos.windowed import committed_windows, expected_windows, windowed_version
from tests.support.e2e import spark_submit_processes
from tests.support.sizes import FULL
from tests.support.stack import wait_until
from tidegate_runtime.sources.eventlog import EventLog
from tidegate_runtime.sources.eventlog_producer import produce

pytestmark = [pytest.mark.chaos, pytest.mark.e2e]

T0 = 1_767_225_600_000
KILLS = 3
POLICY = {"min_backoff": "1s", "max_backoff": "30s", "stable_period": "10m"}


def _caught_up(chaos: Chaos, run_id: int, root: Path) -> bool:
    latest = {str(p): o for p, o in EventLog(root).stream("clicks").latest_offsets().items()}
    run = chaos.stack.run(run_id)
    progress = run["progress"].get("windowed_counts") or {}
    done = (progress.get("sources") or [{}])[0].get("end_offset") == latest
    return bool(run["state"] == "running" and done)


def _kill_driver(tag: str) -> int:
    """SIGKILL the driver JVM of ``tag`` (the runner's spark-submit in local mode)."""
    procs = spark_submit_processes(tag)
    assert len(procs) == 1, [p.info["cmdline"] for p in procs]
    procs[0].send_signal(signal.SIGKILL)
    psutil.wait_procs(procs, timeout=30)
    return procs[0].pid


def _restarts(run: dict[str, Any]) -> list[tuple[str, float]]:
    """(reason, seconds from the failure to the resubmission) of each supervised restart."""
    history = list(reversed(run["transitions"]))  # oldest first
    out = []
    for i, t in enumerate(history):
        if t["to_state"] == "restarting":
            after = next(x for x in history[i + 1 :] if x["to_state"] == "submitting")
            gap = datetime.fromisoformat(after["at"]) - datetime.fromisoformat(t["at"])
            out.append((t["reason"], gap.total_seconds()))
    return out


# CI's one kill on each backend is tests/runs/test_supervised_restart.py; here, three in a row
# and the backoff schedule between them.
@pytest.mark.skipif(not FULL, reason="three kills and the backoff schedule run under `make chaos`")
def test_killed_driver_restarts_on_schedule_exactly_once(chaos: Chaos, tmp_path: Path) -> None:
    job = f"supervised-{uuid.uuid4().hex[:8]}"
    root, out = tmp_path / "log", tmp_path / "out"
    EventLog(root).create_stream("clicks", 2)
    produce(str(root), "clicks", 2, rate=0, count=300, start_ts_ms=T0, ts_step_ms=400)
    r = chaos.client.post("/jobs", json={"name": job, "restart_policy": POLICY})
    assert r.status_code == 201, r.text
    version = windowed_version(chaos.client, job, root, out)
    submitted = chaos.operate(job, "submit", {"version": version})
    assert submitted["state"] == "succeeded", submitted
    run_id = submitted["run_id"]
    wait_until(lambda: _caught_up(chaos, run_id, root), bool, 180)

    for attempt in range(KILLS):
        _kill_driver(f"tidegate-run-{run_id}-a{attempt}")
        # Input keeps arriving while the job is down; the next attempt must read all of it.
        produce(
            str(root),
            "clicks",
            2,
            rate=0,
            count=100,
            start_ts_ms=T0 + 120_000 + 60_000 * attempt,
            ts_step_ms=400,
        )
        wait_until(
            lambda attempt=attempt: chaos.stack.run(run_id),
            lambda run, attempt=attempt: (
                run["attempt"] == attempt + 1 and run["state"] == "running"
            ),
            180,
        )
        wait_until(lambda: _caught_up(chaos, run_id, root), bool, 180)

    run = chaos.assert_one_driver_per_attempt(run_id)
    assert run["failures"] == KILLS
    schedule = _restarts(run)
    assert [reason.split("; ")[1] for reason, _ in schedule] == [
        f"restarting in {2**n}s" for n in range(KILLS)
    ], schedule
    for n, (_, gap) in enumerate(schedule):
        # Not before its time, nor long after (the bound leaves room for a loaded machine).
        assert 2**n <= gap < 2**n + 30, schedule

    wait_until(lambda: committed_windows(out), lambda rows: rows == expected_windows(root), 120)
    stop = chaos.operate(job, "stop")
    assert stop["state"] == "succeeded", stop
    chaos.assert_one_driver_per_attempt(run_id)
    assert committed_windows(out) == expected_windows(root)
