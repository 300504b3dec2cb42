"""Snapshots, resume points and updates through the API, carried out by the worker (a
scripted backend stands in for Spark; checkpoints are written the way Spark writes them)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.backends.base import AppState, AppStatus
from app.core.config import Settings
from app.operations.models import Operation
from app.snapshots.checkpoint_files import RESTORED_HINTS, select_files
from app.snapshots.retention import collect_garbage
from app.snapshots.store.access import store_for
from app.snapshots.store.blobs import SnapshotStore
from app.worker import execute as ops
from app.worker.core.context import WorkerContext
from app.worker.kinds import snapshot as snapshot_kind
from app.worker.loop import Worker
from tests.snapshots.conftest import FakeCheckpoint
from tests.worker.conftest import FakeBackend
from tidegate_runtime.standby import DRY_RUN_DIR_CONF

API = "/api/v1"
SOURCE = {"name": "events", "kind": "eventlog", "options": {"stream": "s"}}
COUNTS = {
    "name": "counts",
    "sources": [SOURCE],
    "stateful_operators": [{"kind": "tumbling_window"}],
    "trigger": "5 seconds",
}
ENRICH = {"name": "enrich", "sources": [SOURCE]}


def _version(client: TestClient, job: str, *queries: dict[str, Any], **conf: Any) -> int:
    body = {
        "app": {"file": "/opt/pipelines/windowed_counts.py"},
        "cluster": "local",
        "conf": {"spark.sql.shuffle.partitions": 2, **conf},
        "queries": list(queries) or [COUNTS],
    }
    r = client.post(f"{API}/jobs/{job}/versions", json=body)
    assert r.status_code == 201, r.text
    number: int = r.json()["number"]
    return number


def _work(ctx: WorkerContext, op_id: int) -> dict[str, Any]:
    assert Worker(ctx, concurrency=1).claim() == op_id
    ops.execute(ctx, op_id)
    with ctx.factory() as session:
        from app.operations.models import Operation

        op = session.get(Operation, op_id)
        assert op is not None
        return {
            "state": op.state,
            "error": op.error,
            "result": op.result,
            "run_id": op.run_id,
            "steps": [s["name"] for s in op.steps],
        }


def _operate(
    client: TestClient, ctx: WorkerContext, job: str, verb: str, body: dict[str, Any] | None = None
) -> dict[str, Any]:
    r = client.post(f"{API}/jobs/{job}/{verb}", json=body)
    assert r.status_code == 202, r.text
    return _work(ctx, r.json()["id"])


def _checkpoint(settings: Settings, job: str, run_id: int, query: str = "counts") -> Path:
    return settings.resolved_checkpoint_root / job / str(run_id) / query


def _running_job(
    client: TestClient, ctx: WorkerContext, settings: Settings, job: str = "j", batches: int = 3
) -> tuple[int, FakeCheckpoint]:
    assert client.post(f"{API}/jobs", json={"name": job}).status_code == 201
    version = _version(client, job)
    op = _operate(client, ctx, job, "submit", {"version": version})
    assert op["state"] == "succeeded", op
    ck = FakeCheckpoint(_checkpoint(settings, job, op["run_id"]))
    for _ in range(batches):
        ck.batch()
    return op["run_id"], ck


def _snapshot(client: TestClient, job: str, name: str) -> dict[str, Any]:
    r = client.get(f"{API}/jobs/{job}/snapshots/{name}")
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def test_export_while_running_then_list_get_and_dedup(
    client: TestClient, cluster: str, ctx: WorkerContext, settings: Settings
) -> None:
    run_id, ck = _running_job(client, ctx, settings, batches=8)
    ck.batch(commit=False)  # a batch in flight is not part of the snapshot
    op = _operate(client, ctx, "j", "snapshots", {"name": "s1", "stop": False})
    assert op["state"] == "succeeded", op
    assert op["steps"] == ["export", "retention"] and op["result"]["run_state"] == "running"
    s1 = _snapshot(client, "j", "s1")
    assert s1["state"] == "ready" and s1["run_id"] == run_id and s1["version"] == 1
    assert s1["size_bytes"] == s1["bytes_written"] > 16 * 2000
    (query,) = s1["queries"]
    assert query["query"] == "counts" and query["batch_id"] == 7
    assert query["offsets"] == {"events": {"0": 80, "1": 40}} and query["watermark_ms"] == 7000
    (operator,) = query["operators"]
    assert (operator["name"], operator["partitions"]) == ("stateStoreSave", 2)
    assert [f["name"] for f in operator["value_schema"]["fields"]] == ["count", "sum"]
    assert query["declared_operators"] == [
        {"kind": "tumbling_window", "name": None, "key_schema": None, "value_schema": None}
    ]

    ck.commit(8)
    ck.batch()
    op = _operate(client, ctx, "j", "snapshots", {"name": "s2"})
    assert op["state"] == "succeeded", op
    s2 = _snapshot(client, "j", "s2")
    assert s2["queries"][0]["batch_id"] == 9
    # Only the four new deltas and the small log files were written; the rest is shared.
    assert s2["size_bytes"] > s1["size_bytes"]
    assert s2["bytes_written"] < 4 * 2000 + 3000 < s1["bytes_written"] / 3

    listed = client.get(f"{API}/snapshots", params={"job": "j", "limit": 1}).json()
    assert [s["name"] for s in listed["items"]] == ["s2"] and listed["next_cursor"]
    rest = client.get(f"{API}/snapshots", params={"cursor": listed["next_cursor"]}).json()
    assert [s["name"] for s in rest["items"]] == ["s1"] and rest["next_cursor"] is None
    assert {"created_at", "size_bytes", "job", "name"} <= set(rest["items"][0])

    coordinates = client.get(f"{API}/jobs/j/snapshot-coordinates").json()
    assert coordinates["coordinates"] == [
        {"job": "j", "run": run_id, "query": "counts", "batch_id": 9}
    ]

    taken = client.post(f"{API}/jobs/j/snapshots", json={"name": "s1"})
    assert taken.status_code == 409 and "already has a snapshot" in taken.json()["detail"]
    bad = client.post(f"{API}/jobs/j/snapshots", json={"name": "a..b"})
    assert bad.status_code == 422
    assert client.get(f"{API}/jobs/j/snapshots/nope").status_code == 404
    events = client.get(f"{API}/events", params={"job": "j"}).json()["items"]
    accepted = [e["action"] for e in events if e["result"] == "ok"]
    assert accepted.count("operation.snapshot") == 2


def test_save_snapshot_stops_the_run(
    client: TestClient, cluster: str, ctx: WorkerContext, settings: Settings, fake: FakeBackend
) -> None:
    _running_job(client, ctx, settings)
    op = _operate(client, ctx, "j", "snapshots", {"name": "final", "stop": True})
    assert op["state"] == "succeeded", op
    assert op["steps"][:5] == ["pre_copy", "request_stop", "graceful_stop", "kill", "stopped"]
    assert op["result"]["run_state"] == "stopped" and len(fake.kills) == 1
    snapshot = _snapshot(client, "j", "final")
    assert snapshot["stop"] is True and snapshot["queries"][0]["batch_id"] == 2


def test_a_snapshot_that_stops_the_run_copies_before_the_stop(
    client: TestClient,
    cluster: str,
    ctx: WorkerContext,
    settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The pre-copy puts what the run committed into the store while it still processes; the
    export after the stop hashes and writes only the files of the batches that came after.
    Until then the snapshot is not ready (nothing restores from a pre-copy) and garbage
    collection keeps what the pre-copy wrote."""
    _, ck = _running_job(client, ctx, settings, batches=6)
    seen: dict[str, Any] = {}
    real_stop = snapshot_kind.stop_run

    def stop_after_two_more_batches(*args: Any, **kwargs: Any) -> Any:
        snapshot = _snapshot(client, "j", "final")
        seen["state"] = snapshot["state"]
        seen["gc"] = collect_garbage(ctx.factory, settings)
        ck.batch()
        ck.batch()
        return real_stop(*args, **kwargs)

    monkeypatch.setattr(snapshot_kind, "stop_run", stop_after_two_more_batches)
    r = client.post(f"{API}/jobs/j/snapshots", json={"name": "final", "stop": True})
    assert r.status_code == 202, r.text
    op_id = r.json()["id"]
    done = _work(ctx, op_id)
    assert done["state"] == "succeeded", done
    assert done["steps"][:2] == ["pre_copy", "request_stop"]
    assert seen["state"] != "ready" and seen["gc"]["blobs_deleted"] == 0, seen
    with ctx.factory() as session:
        op = session.get(Operation, op_id)
        assert op is not None
        steps = {s["name"]: s["detail"] for s in op.steps}
    pre, export = steps["pre_copy"], steps["export"]
    assert pre["batches"] == {"counts": 5} and pre["bytes_written"] == pre["size_bytes"] > 0
    # Only what batches 6 and 7 added is hashed and written after the stop (their offsets,
    # commits and deltas, 2 partitions): everything the pre-copy had is reused.
    assert export["batches"] == {"counts": 7}
    assert 0 < export["files_written"] == export["hashed"] < pre["files"], (pre, export)
    assert export["bytes_written"] < export["size_bytes"] - pre["size_bytes"] / 2
    snapshot = _snapshot(client, "j", "final")
    assert snapshot["state"] == "ready" and snapshot["queries"][0]["batch_id"] == 7
    manifest = store_for(settings).read_manifest("j", "final")
    assert manifest is not None and "pre_copy" not in manifest


def test_snapshot_of_a_job_that_never_committed_fails_clearly(
    client: TestClient, cluster: str, ctx: WorkerContext, settings: Settings
) -> None:
    _running_job(client, ctx, settings, batches=0)
    op = _operate(client, ctx, "j", "snapshots", {"name": "empty"})
    assert op["state"] == "failed" and "no query of run" in op["error"]
    assert _snapshot(client, "j", "empty")["state"] == "failed"
    # A failed snapshot's name can be used again.
    r = client.post(f"{API}/jobs/j/snapshots", json={"name": "empty"})
    assert r.status_code == 202, r.text


def test_new_version_from_snapshot_keeps_state_and_adds_a_query(
    client: TestClient, cluster: str, ctx: WorkerContext, settings: Settings
) -> None:
    old_run, ck = _running_job(client, ctx, settings)
    assert _operate(client, ctx, "j", "snapshots", {"name": "s1"})["state"] == "succeeded"
    assert _operate(client, ctx, "j", "stop")["state"] == "succeeded"
    v2 = _version(client, "j", COUNTS, ENRICH)

    compat = client.post(f"{API}/jobs/j/compatibility", json={"version": v2, "snapshot": "s1"})
    assert compat.status_code == 200, compat.text
    body = compat.json()
    assert body["compatible"] and body["resume"] == ["counts"] and body["initialize"] == ["enrich"]
    built = client.post(f"{API}/jobs/j/resume-points/build", json={"version": v2, "snapshot": "s1"})
    assert built.json()["resume_point"] == {
        "counts": {"mode": "resume", "job": "j", "query": "counts", "snapshot": "s1"},
        "enrich": {"mode": "initialize"},
    }

    op = _operate(client, ctx, "j", "submit", {"version": v2, "snapshot": "s1"})
    assert op["state"] == "succeeded", op
    assert op["steps"] == [
        "plan",
        *("dry_run_prepare", "dry_run_submit", "dry_run"),  # counts resumes state
        *("reserve_run", "materialise", "create_run", "await_submitted"),
    ]
    new_run = op["run_id"]
    assert new_run != old_run and op["result"]["from"]["enrich"] == {"mode": "initialize"}
    restored = _checkpoint(settings, "j", new_run)
    expected = select_files(ck.root, 2).files
    for rel in expected:
        assert (restored / rel).read_bytes() == (ck.root / rel).read_bytes(), rel
    assert sorted(
        p.relative_to(restored).as_posix() for p in restored.rglob("*") if p.is_file()
    ) == sorted([*expected, RESTORED_HINTS])
    assert not _checkpoint(settings, "j", new_run, "enrich").exists()  # starts empty

    used = _snapshot(client, "j", "s1")["started_runs"]
    assert [(u["run_id"], u["query"], u["parts"]) for u in used] == [
        (new_run, "counts", "offsets+state")
    ]
    in_use = client.delete(f"{API}/jobs/j/snapshots/s1")
    assert in_use.status_code == 409 and str(new_run) in in_use.json()["detail"]
    assert _operate(client, ctx, "j", "stop")["state"] == "succeeded"
    assert client.delete(f"{API}/jobs/j/snapshots/s1").status_code == 204
    store = SnapshotStore(settings.resolved_snapshot_root)
    assert store.manifests() == [] and store.total_blob_bytes() == 0  # collected


@pytest.mark.parametrize(
    ("change", "kind"),
    [
        ({"conf": {"spark.sql.shuffle.partitions": 4}}, "state_partitions"),
        ({"queries": [{**COUNTS, "name": "counts_v2"}]}, "renamed"),
        (
            {"queries": [{**COUNTS, "stateful_operators": [{"kind": "session_window"}]}]},
            "operator_kind",
        ),
        (
            {
                "queries": [
                    {
                        **COUNTS,
                        "stateful_operators": [
                            {
                                "kind": "tumbling_window",
                                "value_schema": "count BIGINT, avg DOUBLE, n BIGINT",
                            }
                        ],
                    }
                ]
            },
            "value_schema",
        ),
    ],
)
def test_incompatible_version_is_refused_before_anything_stops(
    client: TestClient,
    cluster: str,
    ctx: WorkerContext,
    settings: Settings,
    change: dict[str, Any],
    kind: str,
) -> None:
    run_id, _ = _running_job(client, ctx, settings)
    assert _operate(client, ctx, "j", "snapshots", {"name": "s1"})["state"] == "succeeded"
    queries = change.get("queries", [COUNTS])
    bad = _version(client, "j", *queries, **change.get("conf", {}))

    compat = client.post(f"{API}/jobs/j/compatibility", json={"version": bad, "snapshot": "s1"})
    body = compat.json()
    assert compat.status_code == 200 and body["compatible"] is False
    assert [p["kind"] for p in body["problems"]] == [kind]
    problem = body["problems"][0]
    assert problem["query"] and problem["detail"]

    update = client.post(f"{API}/jobs/j/update", json={"version": bad})
    assert update.status_code == 409, update.text
    assert [p["kind"] for p in update.json()["problems"]] == [kind]
    assert client.get(f"{API}/runs/{run_id}").json()["state"] == "running"  # untouched
    kinds = [o["kind"] for o in client.get(f"{API}/jobs/j/operations").json()["items"]]
    assert kinds == ["snapshot", "submit"]

    assert _operate(client, ctx, "j", "stop")["state"] == "succeeded"
    submit = client.post(f"{API}/jobs/j/submit", json={"version": bad, "snapshot": "s1"})
    assert submit.status_code == 409 and submit.json()["problems"][0]["kind"] == kind


def test_resume_point_rules(
    client: TestClient, cluster: str, ctx: WorkerContext, settings: Settings
) -> None:
    run_id, _ = _running_job(client, ctx, settings)
    assert _operate(client, ctx, "j", "snapshots", {"name": "s1"})["state"] == "succeeded"
    assert _operate(client, ctx, "j", "stop")["state"] == "succeeded"
    other = {**COUNTS, "name": "other"}
    v2 = _version(client, "j", COUNTS, other, ENRICH)
    resume = {"mode": "resume", "snapshot": "s1", "query": "counts"}

    missing = client.post(
        f"{API}/jobs/j/submit", json={"version": v2, "resume_point": {"counts": resume}}
    )
    assert missing.status_code == 422 and missing.json()["missing"] == ["other"]
    assert "'other'" in missing.json()["detail"]
    unknown = client.post(
        f"{API}/jobs/j/submit",
        json={"version": v2, "resume_point": {"counts": resume, "other": resume, "x": resume}},
    )
    assert unknown.status_code == 422 and "'x'" in unknown.json()["detail"]
    split = client.post(
        f"{API}/jobs/j/submit",
        json={
            "version": v2,
            "resume_point": {
                "counts": {"offsets": resume, "state": {"mode": "initialize"}},
                "other": resume,
            },
        },
    )
    assert split.status_code == 422 and "stateful" in split.json()["detail"]
    assert (
        client.post(
            f"{API}/jobs/j/submit",
            json={"version": v2, "resume_point": {"counts": {"mode": "resume"}}},
        ).status_code
        == 422
    )

    # One snapshot query split into two queries, one of them from run coordinates.
    coords = {"mode": "resume", "run": run_id, "query": "counts"}
    op = _operate(
        client,
        ctx,
        "j",
        "submit",
        {"version": v2, "resume_point": {"counts": resume, "other": coords}},
    )
    assert op["state"] == "succeeded", op
    new_run = op["run_id"]
    assert op["result"]["from"]["other"]["batch_id"] == 2
    a, b = (_checkpoint(settings, "j", new_run, q) for q in ("counts", "other"))
    assert (a / "state/0/0/3.delta").read_bytes() == (b / "state/0/0/3.delta").read_bytes()
    assert (a / "metadata").read_bytes() != (b / "metadata").read_bytes()  # distinct query ids


def test_state_from_two_jobs(
    client: TestClient, cluster: str, ctx: WorkerContext, settings: Settings
) -> None:
    for job in ("left", "right"):
        _running_job(client, ctx, settings, job=job, batches=2 if job == "left" else 4)
        assert (
            _operate(client, ctx, job, "snapshots", {"name": "snap", "stop": True})["state"]
            == "succeeded"
        )
    assert client.post(f"{API}/jobs", json={"name": "merged"}).status_code == 201
    v = _version(client, "merged", {**COUNTS, "name": "a"}, {**COUNTS, "name": "b"})
    point = {
        "a": {"mode": "resume", "job": "left", "snapshot": "snap", "query": "counts"},
        "b": {"mode": "resume", "job": "right", "snapshot": "snap", "query": "counts"},
    }
    compat = client.post(
        f"{API}/jobs/merged/compatibility", json={"version": v, "resume_point": point}
    )
    assert compat.json()["compatible"] and compat.json()["resume"] == ["a", "b"]
    op = _operate(client, ctx, "merged", "submit", {"version": v, "resume_point": point})
    assert op["state"] == "succeeded", op
    run = op["run_id"]
    assert (_checkpoint(settings, "merged", run, "a") / "commits/1").exists()
    assert (_checkpoint(settings, "merged", run, "b") / "commits/3").exists()
    for job in ("left", "right"):
        (use,) = _snapshot(client, job, "snap")["started_runs"]
        assert use["job"] == "merged" and use["run_id"] == run


def test_update_carries_state_over(
    client: TestClient, cluster: str, ctx: WorkerContext, settings: Settings
) -> None:
    old_run, _ = _running_job(client, ctx, settings)
    v2 = _version(client, "j", COUNTS, ENRICH)
    op = _operate(client, ctx, "j", "update", {"version": v2, "verify_seconds": 0})
    assert op["state"] == "succeeded", op
    result = op["result"]
    assert result["previous_run_id"] == old_run and result["run_id"] != old_run
    assert client.get(f"{API}/runs/{old_run}").json()["state"] == "stopped"
    new = client.get(f"{API}/runs/{result['run_id']}").json()
    assert new["state"] == "running" and new["version"] == v2
    assert client.get(f"{API}/jobs/j").json()["current_run_id"] == new["id"]
    snapshot = _snapshot(client, "j", result["snapshot"])
    assert snapshot["stop"] and snapshot["started_runs"][0]["run_id"] == new["id"]
    assert (_checkpoint(settings, "j", new["id"]) / "commits" / "2").exists()
    assert (
        client.post(
            f"{API}/jobs/j/update", json={"version": v2, "strategy": "stateless"}
        ).status_code
        == 422
    )


def test_a_prewarmed_update_runs_its_dry_run_inside_the_standby(
    client: TestClient, cluster: str, ctx: WorkerContext, settings: Settings, fake: FakeBackend
) -> None:
    """One driver start serves the dry run and the switch: the standby's driver is submitted
    with the scratch copy to check, and no dry-run driver of its own is."""
    old_run, _ = _running_job(client, ctx, settings)
    v2 = _version(client, "j", COUNTS, ENRICH)
    op = _operate(client, ctx, "j", "update", {"version": v2, "verify_seconds": 0})
    assert op["state"] == "succeeded", op
    names = op["steps"]
    assert "dry_run_submit" not in names, names
    order = ["dry_run_prepare", "standby", "standby_ready", "dry_run", "request_stop", "go"]
    assert [n for n in names if n in order] == order, names
    standbys = [a.spec for a in fake.apps.values() if a.spec.conf.get(DRY_RUN_DIR_CONF)]
    (spec,) = standbys  # the standby's, the one driver of v2
    assert spec.tag == f"tidegate-run-{op['run_id']}-a0"
    scratch = Path(spec.conf[DRY_RUN_DIR_CONF])
    assert json.loads(spec.conf["spark.tidegate.dry_run_queries"]) == ["counts"]
    assert spec.conf["spark.tidegate.dry_run_result"] == f"{scratch}/_dryrun.json"
    # Its own checkpoint stays its run's; the scratch copy is gone once judged.
    assert spec.conf["spark.tidegate.checkpoint_dir"].endswith(f"/j/{op['run_id']}")
    assert "spark.tidegate.dry_run" not in spec.conf and not scratch.exists()
    assert client.get(f"{API}/runs/{old_run}").json()["state"] == "stopped"


def test_a_prewarmed_update_refused_by_its_dry_run_releases_the_standby(
    client: TestClient, cluster: str, ctx: WorkerContext, settings: Settings, fake: FakeBackend
) -> None:
    """The dry run runs inside the standby; its refusal releases the standby and leaves the
    old run, never asked to stop, running."""
    old_run, _ = _running_job(client, ctx, settings)
    v2 = _version(client, "j", COUNTS, ENRICH)
    fake.dry_run_outcome = {
        "counts": {"ok": False, "error_class": "STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE"}
    }
    op = _operate(client, ctx, "j", "update", {"version": v2, "verify_seconds": 0})
    assert op["state"] == "failed" and "refused by a dry run" in op["error"], op
    names = op["steps"]
    # (the refusing dry_run step is not recorded: the operation failed in it)
    assert names[-3:] == ["dry_run_prepare", "standby", "standby_ready"], names
    assert "request_stop" not in names
    runs = client.get(f"{API}/jobs/j/runs").json()["items"]
    by_id = {r["id"]: r for r in runs}
    assert by_id[old_run]["state"] == "running"
    (released,) = [r for r in runs if r["id"] != old_run]
    assert released["state"] == "stopped" and released["stop_reason"] == "released", released
    assert released["go_at"] is None
    assert client.get(f"{API}/jobs/j").json()["current_run_id"] == old_run
    assert fake.alive() == [by_id[old_run]["backend_id"]]


def test_a_standby_dry_run_hit_by_spark_infrastructure_is_retried_by_its_own_driver(
    client: TestClient, cluster: str, ctx: WorkerContext, settings: Settings, fake: FakeBackend
) -> None:
    """A "Python worker failed to connect back" proves nothing: the standby is released, a
    dry-run driver of its own tries again, and a second standby takes the switch."""
    old_run, _ = _running_job(client, ctx, settings)
    v2 = _version(client, "j", COUNTS, ENRICH)
    infra = {
        "counts": {
            "ok": False,
            "error_class": "StreamingQueryException",
            "message": "Python worker failed to connect back.",
        }
    }
    fake.dry_run_outcomes = [infra, None]
    op = _operate(client, ctx, "j", "update", {"version": v2, "verify_seconds": 0})
    assert op["state"] == "succeeded", op
    names = op["steps"]
    retried = ["dry_run", "cold_dry_run", "dry_run_prepare_2", "dry_run_submit_2", "dry_run_2"]
    assert [n for n in names if n in retried] == retried, names
    after = ["dry_run_2", "standby_2", "standby_ready_2", "request_stop", "go"]
    assert [n for n in names if n in after] == after, names
    assert "create_run" not in names, names
    runs = client.get(f"{API}/jobs/j/runs").json()["items"]
    released = [r for r in runs if r["stop_reason"] == "released"]
    assert len(released) == 1 and released[0]["go_at"] is None, runs
    assert op["run_id"] not in (old_run, released[0]["id"])
    new = client.get(f"{API}/runs/{op['run_id']}").json()
    assert new["state"] == "running" and new["go_at"] is not None


def test_a_job_without_prewarm_updates_cold_unless_the_request_says_otherwise(
    client: TestClient, cluster: str, ctx: WorkerContext, settings: Settings
) -> None:
    old_run, _ = _running_job(client, ctx, settings)
    patched = client.patch(f"{API}/jobs/j", json={"prewarm": False})
    assert patched.status_code == 200 and patched.json()["prewarm"] is False, patched.text
    v2 = _version(client, "j", COUNTS, ENRICH)
    cold = _operate(client, ctx, "j", "update", {"version": v2, "verify_seconds": 0})
    assert cold["state"] == "succeeded", cold
    assert "standby" not in cold["steps"] and "create_run" in cold["steps"]
    stated = client.get(f"{API}/operations/{_last_op(ctx)}").json()["params"]
    assert stated["prewarm"] is False  # the operation says what the worker did
    warm = _operate(
        client, ctx, "j", "update", {"version": 1, "verify_seconds": 0, "prewarm": True}
    )
    assert warm["state"] == "succeeded", warm
    assert "standby" in warm["steps"] and "go" in warm["steps"] and old_run != warm["run_id"]


def _last_op(ctx: WorkerContext) -> int:
    from app.operations.models import Operation

    with ctx.factory() as session:
        return int(session.query(Operation.id).order_by(Operation.id.desc()).limit(1).scalar())


def test_failed_update_rolls_back_from_the_same_snapshot(
    client: TestClient,
    cluster: str,
    ctx: WorkerContext,
    settings: Settings,
    fake: FakeBackend,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _running_job(client, ctx, settings)
    v2 = _version(client, "j", COUNTS, ENRICH)
    status = fake.status

    def failing_v2(backend_id: str) -> AppStatus:
        app = fake.apps.get(backend_id)
        if app is not None and app.spec.conf["spark.tidegate.version"] == str(v2):
            if not app.state.terminal:
                app.state = AppState.FAILED
            return AppStatus(backend_id, AppState.FAILED, "FAILED", "boom: v2 cannot start")
        return status(backend_id)

    monkeypatch.setattr(fake, "status", failing_v2)
    # (dry_run false: a dry run would refuse this v2 before anything stops; the rollback is
    # what is tested here.)
    op = _operate(
        client,
        ctx,
        "j",
        "update",
        {"version": v2, "verify_seconds": 0, "dry_run": False, "prewarm": False},
    )
    assert op["state"] == "failed", op
    assert "Rolled back: version 1 runs again from snapshot" in op["error"], op["error"]
    result = op["result"]
    assert result["rolled_back"] is True and result["version"] == 1
    assert "rollback_materialise" in op["steps"] and "rollback_stopped" in op["steps"]
    failed = client.get(f"{API}/runs/{result['failed_run_id']}").json()
    assert failed["state"] == "stopped" and failed["version"] == v2
    back = client.get(f"{API}/runs/{result['run_id']}").json()
    assert back["state"] == "running" and back["version"] == 1
    assert client.get(f"{API}/jobs/j").json()["current_run_id"] == back["id"]
    assert (_checkpoint(settings, "j", back["id"]) / "commits" / "2").exists()


def test_retention_keeps_the_newest_and_those_in_use(
    client: TestClient, cluster: str, ctx: WorkerContext, settings: Settings
) -> None:
    _, ck = _running_job(client, ctx, settings)
    r = client.put(f"{API}/jobs/j/snapshot-retention", json={"keep_last": 1})
    assert r.status_code == 200 and r.json()["keep_last"] == 1
    for name in ("a", "b"):
        ck.batch()
        assert _operate(client, ctx, "j", "snapshots", {"name": name})["state"] == "succeeded"
    names = [s["name"] for s in client.get(f"{API}/snapshots").json()["items"]]
    assert names == ["b"]
    events = client.get(f"{API}/events", params={"action": "snapshot.delete"}).json()["items"]
    assert events[0]["actor"] == "tidegate-retention" and events[0]["target"] == "snapshot a"
    store = SnapshotStore(settings.resolved_snapshot_root)
    assert store.manifests() == [("j", "b")]
    assert (
        client.put(f"{API}/jobs/j/snapshot-retention", json={"max_age": "soon"}).status_code == 422
    )
