"""Snapshots in S3 through the API and the worker: export with dedup, retention, restore into a
new run, delete with gc, and a store that fails mid-export (moto's server behind a fault
proxy; checkpoints written the way Spark writes them, a scripted backend for Spark)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.core.config import Settings
from app.snapshots import retention
from app.snapshots.checkpoint_files import select_files
from app.snapshots.store.blobs import SnapshotStore
from app.snapshots.store.digests import content_id
from app.worker.core.context import WorkerContext
from tests.support.api import ADMIN_TOKEN
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
from tests.support.s3 import ACCESS_KEY, SECRET_KEY, S3Store


@pytest.fixture
def settings(tmp_path: Path, s3: S3Store) -> Settings:
    return Settings(
        database_url=None,
        admin_token=ADMIN_TOKEN,  # type: ignore[arg-type]
        data_dir=tmp_path / "data",
        checkpoint_root=tmp_path / "checkpoints",
        snapshot_root=s3.url,
        snapshot_storage_options=json.dumps(s3.options()),  # type: ignore[arg-type]
        log_json=False,
    )


def _store(settings: Settings) -> SnapshotStore:
    return SnapshotStore(settings.resolved_snapshot_root, settings.snapshot_storage_options_dict)


def _blob_names(store: SnapshotStore) -> set[str]:
    return set(store.fs.find(f"{store.root}/blobs"))


def _named(store: SnapshotStore, job: str, name: str) -> set[str]:
    doc = store.read_manifest(job, name)
    assert doc is not None
    files = [e for q in doc["queries"].values() for e in q["files"].values()]
    return {store.blob_path(content_id(e)) for e in files}


def test_export_dedup_retention_restore_and_delete_in_s3(
    client: TestClient, cluster: str, ctx: WorkerContext, settings: Settings, s3: S3Store
) -> None:
    _, ck = running_job(client, ctx, settings, batches=2)
    first = operate(client, ctx, "j", "snapshots", {"name": "s1"})
    assert first["state"] == "succeeded", first
    s1 = get_snapshot(client, "j", "s1")
    assert s1["state"] == "ready" and s1["manifest"] == f"{s3.url}/manifests/j/s1.json"

    # Keep only the newest: s2's export applies retention, deletes s1 and collects the blobs
    # only s1 named. s2 uploaded only the new batch's files, each once.
    r = client.put(f"{API}/jobs/j/snapshot-retention", json={"keep_last": 1})
    assert r.status_code == 200, r.text
    ck.batch()
    second = operate(client, ctx, "j", "snapshots", {"name": "s2"})
    assert second["state"] == "succeeded", second
    s2 = get_snapshot(client, "j", "s2")
    assert s2["bytes_written"] < s1["bytes_written"] < s2["size_bytes"]
    puts = s3.proxy.puts()
    assert len(puts) == len(set(puts))
    assert len(puts) == first["result"]["files_written"] + second["result"]["files_written"]
    names = [s["name"] for s in client.get(f"{API}/snapshots").json()["items"]]
    store = _store(settings)
    assert names == ["s2"] and store.manifests() == [("j", "s2")]
    assert _blob_names(store) == _named(store, "j", "s2")

    # Restore s2 into a new run of a new version: byte for byte what the checkpoint held.
    assert operate(client, ctx, "j", "stop")["state"] == "succeeded"
    v2 = make_version(client, "j", COUNTS, ENRICH)
    body = {"version": v2, "snapshot": "s2", "dry_run": False}
    op = operate(client, ctx, "j", "submit", body)
    assert op["state"] == "succeeded", op
    restored = checkpoint_dir(settings, "j", op["run_id"])
    for rel in select_files(ck.root, ck.batches).files:
        assert (restored / rel).read_bytes() == (ck.root / rel).read_bytes(), rel

    assert operate(client, ctx, "j", "stop")["state"] == "succeeded"
    assert client.delete(f"{API}/jobs/j/snapshots/s2").status_code == 204
    assert store.manifests() == [] and store.total_blob_bytes() == 0  # collected


def test_a_store_failing_mid_export_fails_the_snapshot(
    client: TestClient, cluster: str, ctx: WorkerContext, settings: Settings, s3: S3Store
) -> None:
    running_job(client, ctx, settings, batches=2)
    s3.proxy.arm("error", after=2)
    op = operate(client, ctx, "j", "snapshots", {"name": "broken"})
    assert op["state"] == "failed" and op["steps"] == []
    snapshot = get_snapshot(client, "j", "broken")
    assert snapshot["state"] == "failed" and snapshot["manifest"] is None
    for error in (op["error"], snapshot["error"]):
        assert f"snapshot store {s3.url}" in error and "check that the worker reaches" in error
        assert SECRET_KEY not in error and ACCESS_KEY not in error
    s3.proxy.disarm()
    store = _store(settings)
    assert store.manifests() == [] and store.total_blob_bytes() > 0  # two orphan blobs
    listed = client.get(f"{API}/snapshots", params={"job": "j"}).json()["items"]
    assert [(s["name"], s["state"]) for s in listed] == [("broken", "failed")]
    # Had the manifest's PUT landed after the client gave up, gc would still drop it: a failed
    # snapshot names nothing anyone may restore. Its orphan blobs go with it.
    store.write_manifest("j", "broken", {"queries": {}})
    assert retention.collect_garbage(ctx.factory, settings) is not None
    assert store.manifests() == [] and store.total_blob_bytes() == 0

    # The name can be taken again.
    op = operate(client, ctx, "j", "snapshots", {"name": "broken"})
    assert op["state"] == "succeeded", op
    assert get_snapshot(client, "j", "broken")["state"] == "ready"
    assert _blob_names(store) == _named(store, "j", "broken")


def test_after_the_stop_the_export_asks_the_store_only_of_files_it_does_not_know(
    client: TestClient, cluster: str, ctx: WorkerContext, settings: Settings, s3: S3Store
) -> None:
    """Issue 25: a snapshot that stops its run pre-copies first; after the stop, the files
    the pre-copy stored are known to be there (its manifest, read under the store lock, names
    them), so the export sends no request for them: on an object store one HEAD a file,
    most of the state's files, inside the pause. Only files it hashes are looked for."""
    running_job(client, ctx, settings, batches=3)
    op = operate(client, ctx, "j", "snapshots", {"name": "s", "stop": True})
    assert op["state"] == "succeeded", op
    pre, after = op["details"]["pre_copy"], op["details"]["export"]
    # Every file known from the pre-copy: nothing committed between it and the stop here.
    assert after["files"] > 0 and after["hashed"] == 0, after
    looked_for = [p for m, p in s3.proxy.requests if m == "HEAD" and "/blobs/" in p]
    assert len(looked_for) == pre["hashed"] + after["hashed"], (pre, after, looked_for)
    assert get_snapshot(client, "j", "s")["state"] == "ready"
    store = _store(settings)
    assert _blob_names(store) == _named(store, "j", "s")
