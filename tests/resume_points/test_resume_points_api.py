"""Resume points through the API, carried out by the worker: a new version from a snapshot
keeping state and adding a query, the rules a resume point must follow, state from two jobs
(a scripted backend stands in for Spark)."""

from __future__ import annotations

from fastapi.testclient import TestClient

from app.core.config import Settings
from app.snapshots.checkpoint_files import select_files
from app.snapshots.store.blobs import SnapshotStore
from app.worker.core.context import WorkerContext
from tests.support.flows import (
    API,
    COUNTS,
    ENRICH,
    checkpoint_dir,
    get_snapshot,
    make_version,
    operate,
    running_job,
)


def test_new_version_from_snapshot_keeps_state_and_adds_a_query(
    client: TestClient, cluster: str, ctx: WorkerContext, settings: Settings
) -> None:
    old_run, ck = running_job(client, ctx, settings)
    assert operate(client, ctx, "j", "snapshots", {"name": "s1"})["state"] == "succeeded"
    assert operate(client, ctx, "j", "stop")["state"] == "succeeded"
    v2 = make_version(client, "j", COUNTS, ENRICH)

    compat = client.post(f"{API}/jobs/j/compatibility", json={"version": v2, "snapshot": "s1"})
    assert compat.status_code == 200, compat.text
    body = compat.json()
    assert body["compatible"] and body["resume"] == ["counts"] and body["initialize"] == ["enrich"]
    built = client.post(f"{API}/jobs/j/resume-points/build", json={"version": v2, "snapshot": "s1"})
    assert built.json()["resume_point"] == {
        "counts": {"mode": "resume", "job": "j", "query": "counts", "snapshot": "s1"},
        "enrich": {"mode": "initialize"},
    }

    op = operate(client, ctx, "j", "submit", {"version": v2, "snapshot": "s1"})
    assert op["state"] == "succeeded", op
    assert op["steps"] == [
        "plan",
        *("dry_run_prepare", "dry_run_submit", "dry_run"),  # counts resumes state
        *("reserve_run", "materialise", "create_run", "await_submitted"),
    ]
    new_run = op["run_id"]
    assert new_run != old_run and op["result"]["from"]["enrich"] == {"mode": "initialize"}
    restored = checkpoint_dir(settings, "j", new_run)
    expected = select_files(ck.root, 2).files
    for rel in expected:
        assert (restored / rel).read_bytes() == (ck.root / rel).read_bytes(), rel
    assert sorted(
        p.relative_to(restored).as_posix() for p in restored.rglob("*") if p.is_file()
    ) == sorted(expected)  # nothing of tidegate's in the driver's folder
    assert not checkpoint_dir(settings, "j", new_run, "enrich").exists()  # starts empty

    used = get_snapshot(client, "j", "s1")["started_runs"]
    assert [(u["run_id"], u["query"], u["parts"]) for u in used] == [
        (new_run, "counts", "offsets+state")
    ]
    in_use = client.delete(f"{API}/jobs/j/snapshots/s1")
    assert in_use.status_code == 409 and str(new_run) in in_use.json()["detail"]
    assert operate(client, ctx, "j", "stop")["state"] == "succeeded"
    assert client.delete(f"{API}/jobs/j/snapshots/s1").status_code == 204
    store = SnapshotStore(settings.resolved_snapshot_root)
    assert store.manifests() == [] and store.total_blob_bytes() == 0  # collected


def test_resume_point_rules(
    client: TestClient, cluster: str, ctx: WorkerContext, settings: Settings
) -> None:
    run_id, _ = running_job(client, ctx, settings)
    assert operate(client, ctx, "j", "snapshots", {"name": "s1"})["state"] == "succeeded"
    assert operate(client, ctx, "j", "stop")["state"] == "succeeded"
    other = {**COUNTS, "name": "other"}
    v2 = make_version(client, "j", COUNTS, other, ENRICH)
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
    op = operate(
        client,
        ctx,
        "j",
        "submit",
        {"version": v2, "resume_point": {"counts": resume, "other": coords}},
    )
    assert op["state"] == "succeeded", op
    new_run = op["run_id"]
    assert op["result"]["from"]["other"]["batch_id"] == 2
    a, b = (checkpoint_dir(settings, "j", new_run, q) for q in ("counts", "other"))
    assert (a / "state/0/0/3.delta").read_bytes() == (b / "state/0/0/3.delta").read_bytes()
    assert (a / "metadata").read_bytes() != (b / "metadata").read_bytes()  # distinct query ids


def test_state_from_two_jobs(
    client: TestClient, cluster: str, ctx: WorkerContext, settings: Settings
) -> None:
    for job in ("left", "right"):
        running_job(client, ctx, settings, job=job, batches=2 if job == "left" else 4)
        assert (
            operate(client, ctx, job, "snapshots", {"name": "snap", "stop": True})["state"]
            == "succeeded"
        )
    assert client.post(f"{API}/jobs", json={"name": "merged"}).status_code == 201
    v = make_version(client, "merged", {**COUNTS, "name": "a"}, {**COUNTS, "name": "b"})
    point = {
        "a": {"mode": "resume", "job": "left", "snapshot": "snap", "query": "counts"},
        "b": {"mode": "resume", "job": "right", "snapshot": "snap", "query": "counts"},
    }
    compat = client.post(
        f"{API}/jobs/merged/compatibility", json={"version": v, "resume_point": point}
    )
    assert compat.json()["compatible"] and compat.json()["resume"] == ["a", "b"]
    op = operate(client, ctx, "merged", "submit", {"version": v, "resume_point": point})
    assert op["state"] == "succeeded", op
    run = op["run_id"]
    assert (checkpoint_dir(settings, "merged", run, "a") / "commits/1").exists()
    assert (checkpoint_dir(settings, "merged", run, "b") / "commits/3").exists()
    for job in ("left", "right"):
        (use,) = get_snapshot(client, job, "snap")["started_runs"]
        assert use["job"] == "merged" and use["run_id"] == run
