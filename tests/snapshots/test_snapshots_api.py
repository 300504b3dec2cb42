"""Snapshots through the API, carried out by the worker: export while running, save-snapshot,
the copy before the stop, retention (a scripted backend stands in for Spark; checkpoints are
written the way Spark writes them)."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.core.config import Settings
from app.operations.models import Operation
from app.snapshots.retention import collect_garbage
from app.snapshots.store.access import store_for
from app.snapshots.store.blobs import SnapshotStore
from app.worker.core.context import WorkerContext
from app.worker.kinds import snapshot as snapshot_kind
from tests.support.flows import (
    API,
    get_snapshot,
    operate,
    running_job,
    work,
)
from tests.support.worker import FakeBackend


def test_export_while_running_then_list_get_and_dedup(
    client: TestClient, cluster: str, ctx: WorkerContext, settings: Settings
) -> None:
    run_id, ck = running_job(client, ctx, settings, batches=8)
    ck.batch(commit=False)  # a batch in flight is not part of the snapshot
    op = operate(client, ctx, "j", "snapshots", {"name": "s1", "stop": False})
    assert op["state"] == "succeeded", op
    assert op["steps"] == ["export", "retention"] and op["result"]["run_state"] == "running"
    s1 = get_snapshot(client, "j", "s1")
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
    op = operate(client, ctx, "j", "snapshots", {"name": "s2"})
    assert op["state"] == "succeeded", op
    s2 = get_snapshot(client, "j", "s2")
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
    running_job(client, ctx, settings)
    op = operate(client, ctx, "j", "snapshots", {"name": "final", "stop": True})
    assert op["state"] == "succeeded", op
    assert op["steps"][:5] == ["pre_copy", "request_stop", "graceful_stop", "kill", "stopped"]
    assert op["result"]["run_state"] == "stopped" and len(fake.kills) == 1
    snapshot = get_snapshot(client, "j", "final")
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
    _, ck = running_job(client, ctx, settings, batches=6)
    seen: dict[str, Any] = {}
    real_stop = snapshot_kind.stop_run

    def stop_after_two_more_batches(*args: Any, **kwargs: Any) -> Any:
        snapshot = get_snapshot(client, "j", "final")
        seen["state"] = snapshot["state"]
        seen["gc"] = collect_garbage(ctx.factory, settings)
        ck.batch()
        ck.batch()
        return real_stop(*args, **kwargs)

    monkeypatch.setattr(snapshot_kind, "stop_run", stop_after_two_more_batches)
    r = client.post(f"{API}/jobs/j/snapshots", json={"name": "final", "stop": True})
    assert r.status_code == 202, r.text
    op_id = r.json()["id"]
    done = work(ctx, op_id)
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
    snapshot = get_snapshot(client, "j", "final")
    assert snapshot["state"] == "ready" and snapshot["queries"][0]["batch_id"] == 7
    manifest = store_for(settings).read_manifest("j", "final")
    assert manifest is not None and "pre_copy" not in manifest


def test_snapshot_of_a_job_that_never_committed_fails_clearly(
    client: TestClient, cluster: str, ctx: WorkerContext, settings: Settings
) -> None:
    running_job(client, ctx, settings, batches=0)
    op = operate(client, ctx, "j", "snapshots", {"name": "empty"})
    assert op["state"] == "failed" and "no query of run" in op["error"]
    assert get_snapshot(client, "j", "empty")["state"] == "failed"
    # A failed snapshot's name can be used again.
    r = client.post(f"{API}/jobs/j/snapshots", json={"name": "empty"})
    assert r.status_code == 202, r.text


def test_retention_keeps_the_newest_and_those_in_use(
    client: TestClient, cluster: str, ctx: WorkerContext, settings: Settings
) -> None:
    _, ck = running_job(client, ctx, settings)
    r = client.put(f"{API}/jobs/j/snapshot-retention", json={"keep_last": 1})
    assert r.status_code == 200 and r.json()["keep_last"] == 1
    for name in ("a", "b"):
        ck.batch()
        assert operate(client, ctx, "j", "snapshots", {"name": name})["state"] == "succeeded"
    names = [s["name"] for s in client.get(f"{API}/snapshots").json()["items"]]
    assert names == ["b"]
    events = client.get(f"{API}/events", params={"action": "snapshot.delete"}).json()["items"]
    assert events[0]["actor"] == "tidegate-retention" and events[0]["target"] == "snapshot a"
    store = SnapshotStore(settings.resolved_snapshot_root)
    assert store.manifests() == [("j", "b")]
    assert (
        client.put(f"{API}/jobs/j/snapshot-retention", json={"max_age": "soon"}).status_code == 422
    )
