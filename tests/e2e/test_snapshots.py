"""Snapshots on real Spark (local runner): export a running windowed job, refuse incompatible
versions before the run is touched, start a new version with an added query from the
snapshot, and see the window state carried over: no gap, no duplicate."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.runtime import checkpoint as cp
from app.runtime.eventlog import EventLog
from app.runtime.produce import produce
from pipelines.ground_truth import expected_enrich
from tests.e2e.fixtures import APPS, SPARK_TEST_CONF
from tests.e2e.stack import ROOT, Stack, wait_until
from tests.e2e.test_tidegate import _expected, _job, _operate, _output

pytestmark = pytest.mark.e2e

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z
KEY_DDL = "window STRUCT<start: TIMESTAMP, end: TIMESTAMP>, key STRING"
VALUE_DDL = "count BIGINT, sum DOUBLE"


@pytest.fixture(scope="module")
def runner(stack: Stack, livy_runner: str) -> Stack:
    r = stack.client.post("/clusters", json={"name": "runner", "kind": "livy", "url": livy_runner})
    assert r.status_code in (201, 409), r.text
    if not stack.workers:
        stack.start_worker()
    return stack


def _source(root: Path) -> dict[str, Any]:
    return {
        "name": "clicks",
        "kind": "eventlog",
        "options": {"root": str(root), "stream": "clicks"},
    }


def _windowed(root: Path, **over: Any) -> dict[str, Any]:
    query = {
        "name": "windowed_counts",
        "sources": [_source(root)],
        "stateful_operators": [
            {"kind": "tumbling_window", "key_schema": KEY_DDL, "value_schema": VALUE_DDL}
        ],
        "output_mode": "append",
        "trigger": "1 SECONDS",
    }
    return {**query, **over}


def _version(
    stack: Stack,
    job: str,
    app: str,
    args: list[str],
    queries: list[dict[str, Any]],
    **conf: Any,
) -> int:
    body = {
        "app": {"file": app, "args": args},
        "cluster": "runner",
        "conf": {
            **SPARK_TEST_CONF,
            "spark.sql.session.timeZone": "UTC",
            "spark.executorEnv.PYTHONPATH": str(ROOT),
            **conf,
        },
        "queries": queries,
    }
    r = stack.client.post(f"/jobs/{job}/versions", json=body)
    assert r.status_code == 201, r.text
    number: int = r.json()["number"]
    return number


def _enriched(out: Path) -> list[tuple[Any, ...]]:
    rows = []
    for path in sorted(out.glob("part-*.json")) if out.exists() else []:
        for line in path.read_text().splitlines():
            r = json.loads(line)
            rows.append((r["partition"], r["offset"], r["key"], r["amount"], r["size"]))
    return sorted(rows)


def test_new_version_from_a_snapshot_of_a_running_job(runner: Stack, tmp_path: Path) -> None:
    stack, job = runner, "snapshots-windowed"
    root, out, enrich_out = tmp_path / "log", tmp_path / "out", tmp_path / "enrich"
    EventLog(root).create_stream("clicks", 2)
    produce(str(root), "clicks", 2, rate=0, count=600, start_ts_ms=T0, ts_step_ms=400)
    _job(stack, job)
    args = ["--root", str(root), "--stream", "clicks", "--output", str(out)]
    v1 = _version(
        stack, job, str(ROOT / "pipelines" / "windowed_counts.py"), args, [_windowed(root)]
    )
    submit = _operate(stack, job, "submit", {"version": v1})
    assert submit["state"] == "succeeded", submit
    old_run = submit["run_id"]
    # Every window the watermark closed is out and the batch that wrote them is committed:
    # the query is idle. (A file sink skips batch ids it has already written, so a snapshot
    # older than the sink's output would make the new version skip data it must write.)
    wait_until(lambda: _output(out), lambda rows: rows and rows == _expected(root), 180)
    checkpoint = stack.checkpoint_root / job / str(old_run) / "windowed_counts"
    wait_until(
        lambda: (cp.latest_offsets_batch(checkpoint), cp.latest_commit_batch(checkpoint)),
        lambda b: b[0] == b[1],
        30,
    )

    snap = _operate(stack, job, "snapshots", {"name": "before-v2", "stop": False})
    assert snap["state"] == "succeeded", snap
    assert stack.run(old_run)["state"] == "running"  # exported while running
    snapshot = stack.client.get(f"/jobs/{job}/snapshots/before-v2").json()
    (query,) = snapshot["queries"]
    coordinates = stack.client.get(f"/jobs/{job}/snapshot-coordinates").json()["coordinates"]
    assert coordinates[0]["batch_id"] == query["batch_id"] == cp.latest_commit_batch(checkpoint)
    latest = EventLog(root).stream("clicks").latest_offsets()
    assert query["offsets"] == {"clicks": {str(p): o for p, o in latest.items()}}
    (operator,) = query["operators"]
    assert (operator["name"], operator["partitions"]) == ("stateStoreSave", 2)
    assert 0 < snapshot["bytes_written"] <= snapshot["size_bytes"]  # identical files: once
    listed = stack.client.get("/snapshots", params={"job": job}).json()["items"]
    assert [(s["name"], s["size_bytes"]) for s in listed] == [("before-v2", snapshot["size_bytes"])]

    # Incompatible versions are refused with the reason; the running job is not touched.
    app = str(ROOT / "pipelines" / "windowed_counts.py")
    incompatible = {
        "state_partitions": _version(
            stack, job, app, args, [_windowed(root)], **{"spark.sql.shuffle.partitions": "4"}
        ),
        "renamed": _version(stack, job, app, args, [_windowed(root, name="counts_per_minute")]),
        "operator_kind": _version(
            stack,
            job,
            app,
            args,
            [_windowed(root, stateful_operators=[{"kind": "session_window"}])],
        ),
        "value_schema": _version(
            stack,
            job,
            app,
            args,
            [
                _windowed(
                    root,
                    stateful_operators=[
                        {
                            "kind": "tumbling_window",
                            "value_schema": "count BIGINT, avg DOUBLE, n BIGINT",
                        }
                    ],
                )
            ],
        ),
    }
    for kind, version in incompatible.items():
        r = stack.client.post(
            f"/jobs/{job}/compatibility", json={"version": version, "snapshot": "before-v2"}
        )
        assert r.status_code == 200 and r.json()["compatible"] is False, r.text
        (problem,) = r.json()["problems"]
        assert problem["kind"] == kind and problem["detail"], problem
    refused = stack.client.post(
        f"/jobs/{job}/update", json={"version": incompatible["state_partitions"]}
    )
    assert refused.status_code == 409 and "state partitions" in refused.json()["detail"]
    assert stack.run(old_run)["state"] == "running"

    v2 = _version(
        stack,
        job,
        str(APPS / "windowed_and_enrich.py"),
        [*args, "--enrich-output", str(enrich_out)],
        [_windowed(root), {"name": "enrich", "sources": [_source(root)], "trigger": "1 SECONDS"}],
    )
    missing = stack.client.post(
        f"/jobs/{job}/compatibility",
        json={"version": v2, "resume_point": {"enrich": {"mode": "initialize"}}},
    )
    assert missing.status_code == 422 and missing.json()["missing"] == ["windowed_counts"]
    compat = stack.client.post(
        f"/jobs/{job}/compatibility", json={"version": v2, "snapshot": "before-v2"}
    ).json()
    assert compat["compatible"] and (compat["resume"], compat["initialize"]) == (
        ["windowed_counts"],
        ["enrich"],
    )

    stop = _operate(stack, job, "stop")
    assert stop["state"] == "succeeded", stop
    produce(str(root), "clicks", 2, rate=0, count=300, start_ts_ms=T0 + 240_000, ts_step_ms=400)
    started = _operate(stack, job, "submit", {"version": v2, "snapshot": "before-v2"})
    assert started["state"] == "succeeded", started
    assert "materialise" in [s["name"] for s in started["steps"]]
    new_run = started["run_id"]
    # The windows that were open at the snapshot continue from its state: the output over the
    # whole log is exactly the ground truth, no window lost or written twice.
    wait_until(lambda: _output(out), lambda rows: rows == _expected(root), 180)
    expected = [
        (e.partition, e.offset, e.key, e.amount, e.size) for e in expected_enrich(root, "clicks")
    ]
    wait_until(lambda: _enriched(enrich_out), lambda rows: rows == expected, 60)
    progress = stack.run(new_run)["progress"]
    assert progress["windowed_counts"]["batch_id"] > query["batch_id"]
    used = stack.client.get(f"/jobs/{job}/snapshots/before-v2").json()["started_runs"]
    assert [(u["run_id"], u["query"]) for u in used] == [(new_run, "windowed_counts")]
    assert stack.client.delete(f"/jobs/{job}/snapshots/before-v2").status_code == 409

    # update: save-snapshot, start the next version from it, in one call.
    enrich = {"name": "enrich", "sources": [_source(root)]}
    queries_v2 = [_windowed(root), {**enrich, "trigger": "1 SECONDS"}]
    v3 = _version(
        stack,
        job,
        str(APPS / "windowed_and_enrich.py"),
        [*args, "--enrich-output", str(enrich_out)],
        [{**_windowed(root), "trigger": "2 SECONDS"}, {**enrich, "trigger": "2 SECONDS"}],
    )
    updated = _operate(stack, job, "update", {"version": v3, "verify_seconds": 5})
    assert updated["state"] == "succeeded", updated
    assert updated["result"]["previous_run_id"] == new_run
    assert stack.run(new_run)["state"] == "stopped"
    v3_run = updated["result"]["run_id"]

    # A version that cannot start: the update rolls back to v3 from the same snapshot.
    broken = _version(stack, job, str(APPS / "fail.py"), [], queries_v2)
    failed = _operate(stack, job, "update", {"version": broken, "verify_seconds": 5})
    assert failed["state"] == "failed", failed
    assert f"Rolled back: version {v3} runs again from snapshot" in failed["error"], failed
    back = failed["result"]["run_id"]
    assert stack.run(failed["result"]["failed_run_id"])["state"] == "stopped"
    assert stack.run(back)["state"] == "running" and stack.run(v3_run)["state"] == "stopped"
    # The state went through both the update and the rollback: still no gap, no duplicate.
    produce(str(root), "clicks", 2, rate=0, count=150, start_ts_ms=T0 + 360_000, ts_step_ms=400)
    wait_until(lambda: _output(out), lambda rows: rows == _expected(root), 180)
    assert _operate(stack, job, "stop")["state"] == "succeeded"
