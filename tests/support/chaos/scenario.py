"""The enrich pipeline scenario the random-kill and PostgreSQL-crash tests share: a job with
two versions (out-1, out-2), input, and the ground truth its committed output must equal."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from pipelines.ground_truth import expected_enrich
from tests.support.chaos.harness import Chaos, caught_up, enrich_rows, enrich_version
from tests.support.waiting import wait_for
from tidegate_runtime.sources.eventlog import EventLog
from tidegate_runtime.sources.eventlog_producer import produce

T0 = 1_767_225_600_000


def log_clicks(root: Path, count: int, offset_ms: int = 0) -> None:
    produce(str(root), "clicks", 2, rate=0, count=count, start_ts_ms=T0 + offset_ms, ts_step_ms=50)


def expected(
    root: Path, ranges: dict[int, tuple[int, int]] | None = None
) -> list[tuple[int, int, float]]:
    """(partition, offset, amount) the pipeline must commit for ``ranges`` (default: all)."""
    rows = expected_enrich(root, "clicks", ranges) if ranges else expected_enrich(root, "clicks")
    return sorted((r.partition, r.offset, r.amount) for r in rows)


def new_job(chaos: Chaos, tmp: Path, prefix: str) -> tuple[str, Path, int, int]:
    """A job with input and two versions, enriching into out-1 and out-2: (job, log, v1, v2)."""
    job = f"{prefix}-{uuid.uuid4().hex[:8]}"
    root = tmp / "log"
    EventLog(root).create_stream("clicks", 2)
    log_clicks(root, 200)
    assert chaos.client.post("/jobs", json={"name": job}).status_code == 201
    v1 = enrich_version(chaos, job, root, tmp / "out-1")
    return job, root, v1, enrich_version(chaos, job, root, tmp / "out-2")


def running(chaos: Chaos, job: str, version: int, root: Path) -> int:
    """Submit ``version`` and wait until it has read the log; its run id."""
    first = chaos.operate(job, "submit", {"version": version})
    assert first["state"] == "succeeded", first
    run_id: int = first["run_id"]
    wait_for(caught_up(chaos, run_id, root), bool, 180, what=f"run {run_id} to read the log")
    return run_id


def finish(chaos: Chaos, job: str, run_id: int, root: Path) -> None:
    """The run (restarted if it is not running) reads more input, all of it, then stops."""
    if chaos.stack.run(run_id)["state"] not in ("running", "submitting"):
        assert chaos.operate(job, "restart")["state"] == "succeeded"
    log_clicks(root, 60, offset_ms=60_000)
    wait_for(caught_up(chaos, run_id, root), bool, 180, what=f"run {run_id} to read the log")
    assert chaos.operate(job, "stop")["state"] == "succeeded"
    chaos.assert_one_driver_per_attempt(run_id)


def end_offsets(op: dict[str, Any]) -> dict[int, int]:
    return {int(p): int(o) for p, o in op["result"]["end_offsets"]["clicks"].items()}


def check_update(
    chaos: Chaos, kind: str, job: str, op: dict[str, Any], old_run: int, v1: int, tmp: Path
) -> None:
    """An update (``kind``: update-drain or update-snapshot) that finished: either it
    succeeded, verified, and the two outputs are the ground truth split where the new version
    took over; or it rolled back, the old version runs again and its output is the truth."""
    root, out1, out2 = tmp / "log", tmp / "out-1", tmp / "out-2"
    if op["state"] == "failed":
        assert "Rolled back" in (op["error"] or ""), op
        back = op["result"]["run_id"]
        assert chaos.stack.run(back)["version"] == v1
        finish(chaos, job, back, root)
        assert enrich_rows(out1) == expected(root)
        return
    assert op["state"] == "succeeded", op
    new_run = op["result"]["run_id"]
    assert op["result"]["previous_run_id"] == old_run
    assert op["result"]["verified"].startswith("every query committed"), op["result"]
    old_state = "drained" if kind == "update-drain" else "stopped"
    assert chaos.assert_one_driver_per_attempt(old_run)["state"] == old_state
    assert chaos.assert_one_driver_per_attempt(new_run)["state"] == "running"
    finish(chaos, job, new_run, root)
    if kind == "update-drain":
        end, latest = end_offsets(op), EventLog(root).stream("clicks").latest_offsets()
        assert enrich_rows(out1) == expected(root, {p: (0, o) for p, o in end.items()})
        assert enrich_rows(out2) == expected(root, {p: (end[p], latest[p]) for p in end})
    else:  # resumed from the snapshot: the two outputs together, every record once
        assert sorted(enrich_rows(out1) + enrich_rows(out2)) == expected(root)
