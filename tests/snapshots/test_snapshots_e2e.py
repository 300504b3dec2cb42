"""Snapshots on real Spark (both backends: tests/support/backends.py): export a running
windowed job, refuse incompatible versions before the run is touched, start a new version
with an added query from the snapshot, and see the window state carried over: no gap, no
duplicate."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from app.resume_points.compat import PROVIDER_CLASS, ROCKSDB_PROVIDER
from app.snapshots.store.digests import content_id
from pipelines.ground_truth import expected_enrich
from tests.operations.test_lifecycle_e2e import _expected, _job, _operate, _output
from tests.support.backends import Target
from tests.support.e2e import APPS
from tests.support.stack import Stack, assert_switch, wait_until, watching_standbys
from tidegate_runtime.checkpoints import checkpoint as cp
from tidegate_runtime.sources.eventlog import EventLog
from tidegate_runtime.sources.eventlog_producer import produce

pytestmark = pytest.mark.e2e

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z
KEY_DDL = "window STRUCT<start: TIMESTAMP, end: TIMESTAMP>, key STRING"
VALUE_DDL = "count BIGINT, sum DOUBLE"


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
    target: Target,
    job: str,
    app: str,
    args: list[str],
    queries: list[dict[str, Any]],
    **conf: Any,
) -> int:
    body = {
        "app": {"file": app, "args": args},
        "cluster": target.cluster,
        "conf": target.conf(**conf),
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


@contextmanager
def _trickle(root: Path, start_ts_ms: int) -> Iterator[list[int]]:
    """Append 4 records a second, event time going on from ``start_ts_ms``, while the block
    runs; yields [the next event time] (final once the block is done)."""
    clock, done = [start_ts_ms], threading.Event()

    def loop() -> None:
        while not done.wait(1.0):
            produce(str(root), "clicks", 2, rate=0, count=4, start_ts_ms=clock[0], ts_step_ms=400)
            clock[0] += 1600

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield clock
    finally:
        done.set()
        thread.join(10)


# The whole story of a job's snapshots in one scenario: eleven operations, three of them
# updates with a driver start each; on two loaded cores it ran past the default 600 s.
@pytest.mark.timeout(1200)
def test_new_version_from_a_snapshot_of_a_running_job(
    clusters: Stack, target: Target, tmp_path: Path
) -> None:
    stack, job = clusters, f"snapshots-windowed-{target.cluster}"
    root, out, enrich_out = tmp_path / "log", tmp_path / "out", tmp_path / "enrich"
    EventLog(root).create_stream("clicks", 2)
    produce(str(root), "clicks", 2, rate=0, count=600, start_ts_ms=T0, ts_step_ms=400)
    _job(stack, job)
    args = ["--root", str(root), "--stream", "clicks", "--output", str(out)]
    v1 = _version(
        stack, target, job, target.pipeline("windowed_counts.py"), args, [_windowed(root)]
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

    def idle() -> None:
        wait_until(lambda: _output(out), lambda rows: rows and rows == _expected(root), 180)
        wait_until(
            lambda: (cp.latest_offsets_batch(checkpoint), cp.latest_commit_batch(checkpoint)),
            lambda b: b[0] == b[1],
            30,
        )

    first = _operate(stack, job, "snapshots", {"name": "first", "stop": False})
    assert first["state"] == "succeeded", first
    first_batch = cp.latest_commit_batch(checkpoint)
    assert first_batch is not None
    # A few batches later, a second snapshot of the same running job: its state files are
    # mostly those of the first (immutable, shared), so it writes far less than its size.
    produce(str(root), "clicks", 2, rate=0, count=150, start_ts_ms=T0 + 240_000, ts_step_ms=400)
    wait_until(lambda: cp.latest_commit_batch(checkpoint), lambda b: b >= first_batch + 1, 120)
    idle()
    snap = _operate(stack, job, "snapshots", {"name": "before-v2", "stop": False})
    assert snap["state"] == "succeeded", snap
    assert stack.run(old_run)["state"] == "running"  # exported while running
    snapshot = stack.client.get(f"/jobs/{job}/snapshots/before-v2").json()
    one = stack.client.get(f"/jobs/{job}/snapshots/first").json()
    assert 0 < one["bytes_written"] <= one["size_bytes"]
    # (This small state is mostly offsets/commits, so the ratio is ~0.6 here; it falls with
    # the size of the state: bench/snapshots.py measures it on hundreds of MB.)
    assert 0 < snapshot["bytes_written"] < snapshot["size_bytes"], snapshot
    store = stack.snapshot_store()  # S3 (tests/support/stack.py): read the manifests there
    assert store.url.startswith("s3://"), store.url

    def blobs(name: str) -> dict[str, dict[str, Any]]:
        doc = store.read_manifest(job, name)
        assert doc is not None, name
        files: dict[str, dict[str, Any]] = doc["queries"]["windowed_counts"]["files"]
        return files

    old_blobs, new_blobs = blobs("first"), blobs("before-v2")
    shared = {
        r
        for r, e in new_blobs.items()
        if r in old_blobs and content_id(old_blobs[r]) == content_id(e)
    }
    assert any(r.startswith("state/") for r in shared), (old_blobs, new_blobs)
    assert any(r.startswith("state/") and r not in shared for r in new_blobs)  # new deltas
    # Only files the first snapshot did not hold were written (each content once; the store
    # may hold some already, from other jobs).
    known = {content_id(e) for e in old_blobs.values()}
    fresh = {content_id(e): e["size"] for e in new_blobs.values() if content_id(e) not in known}
    assert 0 < snapshot["bytes_written"] <= sum(fresh.values()), (snapshot, fresh)
    (query,) = snapshot["queries"]
    coordinates = stack.client.get(f"/jobs/{job}/snapshot-coordinates").json()["coordinates"]
    assert coordinates[0]["batch_id"] == query["batch_id"] == cp.latest_commit_batch(checkpoint)
    latest = EventLog(root).stream("clicks").latest_offsets()
    assert query["offsets"] == {"clicks": {str(p): o for p, o in latest.items()}}
    (operator,) = query["operators"]
    assert (operator["name"], operator["partitions"]) == ("stateStoreSave", 2)
    listed = stack.client.get("/snapshots", params={"job": job}).json()["items"]
    assert [(s["name"], s["size_bytes"]) for s in listed] == [
        ("before-v2", snapshot["size_bytes"]),
        ("first", one["size_bytes"]),
    ]

    # Incompatible versions are refused with the reason; the running job is not touched.
    app = target.pipeline("windowed_counts.py")
    incompatible = {
        "state_partitions": _version(
            stack,
            target,
            job,
            app,
            args,
            [_windowed(root)],
            **{"spark.sql.shuffle.partitions": "4"},
        ),
        "renamed": _version(
            stack, target, job, app, args, [_windowed(root, name="counts_per_minute")]
        ),
        # The job runs on Spark's default store (HDFS-backed): RocksDB cannot read its state.
        "state_store_provider": _version(
            stack, target, job, app, args, [_windowed(root)], **{PROVIDER_CLASS: ROCKSDB_PROVIDER}
        ),
        "operator_kind": _version(
            stack,
            target,
            job,
            app,
            args,
            [_windowed(root, stateful_operators=[{"kind": "session_window"}])],
        ),
        "value_schema": _version(
            stack,
            target,
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

    # A truly different app with the same declarations (avg instead of sum): only Spark can
    # tell. The update's dry run, on a scratch copy of the running run's state, is refused
    # by Spark before the old run is touched, and says which query and state differ.
    averaging = _version(stack, target, job, str(APPS / "windowed_avg.py"), args, [_windowed(root)])
    declared = stack.client.post(
        f"/jobs/{job}/compatibility", json={"version": averaging, "snapshot": "before-v2"}
    ).json()
    assert declared["compatible"], declared  # the declarations cannot see it
    before = _output(out)
    dry = _operate(stack, job, "update", {"version": averaging, "dry_run_timeout_seconds": 120})
    assert dry["state"] == "failed", dry
    error = dry["error"]
    assert "refused by a dry run" in error and "query 'windowed_counts'" in error, error
    assert "value schema of operator 0 (stateStoreSave) changed" in error, error
    assert "STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE" in error, error
    names = [s["name"] for s in dry["steps"]]
    # Pre-warmed (the job's default): the dry run ran inside the standby's driver, the one
    # driver of the new version, and its refusal released it.
    assert "standby_ready" in names and "dry_run_submit" not in names, names
    assert "request_stop" not in names, names
    assert stack.run(old_run)["state"] == "running" and _output(out) == before
    (refused,) = [
        r for r in stack.client.get(f"/jobs/{job}/runs").json()["items"] if r["id"] > old_run
    ]
    assert refused["stop_reason"] == "released" and refused["go_at"] is None, refused
    assert not (stack.checkpoint_root / job / str(refused["id"])).exists()
    assert not any(
        s["name"].startswith("update-") and s["state"] == "ready"
        for s in stack.client.get("/snapshots", params={"job": job}).json()["items"]
    )

    v2 = _version(
        stack,
        target,
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
    produce(str(root), "clicks", 2, rate=0, count=300, start_ts_ms=T0 + 300_000, ts_step_ms=400)
    started = _operate(stack, job, "submit", {"version": v2, "snapshot": "before-v2"})
    assert started["state"] == "succeeded", started
    assert "materialise" in [s["name"] for s in started["steps"]]
    # Its dry run found the resumed state fit (the fresh query has nothing to check).
    # (The last attempt's: one failed for Spark infrastructure reasons is tried again.)
    attempts = [s for s in started["steps"] if re.fullmatch(r"dry_run(_\d)?", s["name"])]
    checked = attempts[-1]["detail"]
    assert checked["ok"] and list(checked["checked"]) == ["windowed_counts"], checked
    new_run = started["run_id"]
    # The windows that were open at the snapshot continue from its state: the output over the
    # whole log is exactly the ground truth, no window lost or written twice.
    wait_until(lambda: _output(out), lambda rows: rows == _expected(root), 180)
    expected = [
        (e.partition, e.offset, e.key, e.amount, e.size) for e in expected_enrich(root, "clicks")
    ]
    wait_until(lambda: _enriched(enrich_out), lambda rows: rows == expected, 60)
    stack.progress(
        new_run, "windowed_counts", lambda p: p.get("batch_id", -1) > query["batch_id"], 60
    )
    used = stack.client.get(f"/jobs/{job}/snapshots/before-v2").json()["started_runs"]
    assert [(u["run_id"], u["query"]) for u in used] == [(new_run, "windowed_counts")]
    assert stack.client.delete(f"/jobs/{job}/snapshots/before-v2").status_code == 409

    # update: save-snapshot, start the next version from it, in one call.
    enrich = {"name": "enrich", "sources": [_source(root)]}
    queries_v2 = [_windowed(root), {**enrich, "trigger": "1 SECONDS"}]
    v3 = _version(
        stack,
        target,
        job,
        str(APPS / "windowed_and_enrich.py"),
        [*args, "--enrich-output", str(enrich_out)],
        [{**_windowed(root), "trigger": "2 SECONDS"}, {**enrich, "trigger": "2 SECONDS"}],
    )
    # The update is verified when every query commits a first batch past the snapshot: input
    # keeps coming while it runs (the job was idle), as it would in production. Pre-warmed on
    # standalone, cold on the runner (test_drain.py's update does the other way round).
    prewarm = target.cluster == "standalone"
    with _trickle(root, T0 + 420_000) as clock, watching_standbys(stack, job) as watch:
        body = {"version": v3, "verify_seconds": 5, "prewarm": prewarm}
        updated = _operate(stack, job, "update", body)
    assert updated["state"] == "succeeded", updated
    assert_switch(stack, job, updated, watch, prewarm)
    assert updated["result"]["previous_run_id"] == new_run
    assert stack.run(new_run)["state"] == "stopped"
    v3_run = updated["result"]["run_id"]

    assert updated["result"]["verified"].startswith("every query committed"), updated
    assert all(
        updated["result"]["batches"][q] > updated["result"]["restored"][q]
        for q in ("windowed_counts", "enrich")
    ), updated["result"]

    # A version that starts but fails inside its first batch (a UDF raises): the update
    # rolls back to v3 from the same snapshot.
    broken = _version(
        stack,
        target,
        job,
        str(APPS / "fail_in_batch.py"),
        [*args, "--enrich-output", str(enrich_out)],
        queries_v2,
    )
    # (dry_run false: its empty batch calls no UDF, so a dry run would pass; this is about
    # the rollback.)
    with _trickle(root, clock[0]) as clock:
        failed = _operate(
            stack, job, "update", {"version": broken, "verify_seconds": 5, "dry_run": False}
        )
    assert failed["state"] == "failed", failed
    assert f"Rolled back: version {v3} runs again from snapshot" in failed["error"], failed
    # It started, then its first batch failed (not a failure to start, not a timeout).
    assert "before every query committed its first batch" in failed["error"], failed
    back = failed["result"]["run_id"]
    assert stack.run(failed["result"]["failed_run_id"])["state"] == "stopped"
    assert stack.run(back)["state"] == "running" and stack.run(v3_run)["state"] == "stopped"
    # The state went through both the update and the rollback: still no gap, no duplicate.
    produce(str(root), "clicks", 2, rate=0, count=150, start_ts_ms=clock[0], ts_step_ms=400)
    wait_until(lambda: _output(out), lambda rows: rows == _expected(root), 180)
    assert _operate(stack, job, "stop")["state"] == "succeeded"
