"""Snapshots of checkpoints in object storage (TIDEGATE_CHECKPOINT_ROOT=s3a://…), through the
API and the worker, against moto's S3 server behind a fault proxy (checkpoints written the way
Spark's S3A writes them: no .crc sidecars; a scripted backend for Spark): exported into a
store in the same bucket by server-side copies (no byte of a blob through tidegate) or into a
local store; restored into a new run's checkpoint in S3, byte for byte; a store failing in the
middle of an export or of a restore fails the operation clearly, leaves nothing anyone would
use, and the same operation succeeds once the server is back; a restore cut short (a worker
killed) is found marked and done again. The same on real Spark:
tests/operations/test_s3_checkpoints_e2e.py."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import fsspec
import pytest
from fastapi.testclient import TestClient

from app.core import checkpoint_store
from app.core.config import Settings
from app.core.paths import checkpoint_path, open_checkpoint
from app.operations.models import Operation
from app.snapshots.checkpoint_files import select_files
from app.snapshots.restore_objects import in_place
from app.snapshots.store.object_files import RESTORING
from app.worker import execute as ops
from app.worker.core.context import WorkerContext
from app.worker.loop import Worker
from tests.support.api import ADMIN_TOKEN
from tests.support.checkpoints import FakeCheckpoint
from tests.support.flows import API, COUNTS, ENRICH, get_snapshot, make_version, operate, work
from tests.support.s3 import ACCESS_KEY, SECRET_KEY, S3Store
from tidegate_runtime.checkpoints.object_dir import ObjectDir, UrlPath


@pytest.fixture(params=["same-bucket", "local"])
def settings(request: pytest.FixtureRequest, tmp_path: Path, s3: S3Store) -> Settings:
    """Checkpoints in the bucket; snapshots beside them (same server) or in a local folder."""
    same = request.param == "same-bucket"
    options = json.dumps(s3.options())
    settings = Settings(
        database_url=None,
        admin_token=ADMIN_TOKEN,  # type: ignore[arg-type]
        data_dir=tmp_path / "data",
        checkpoint_root=f"s3a://{s3.bucket}/checkpoints",  # type: ignore[arg-type]
        checkpoint_storage_options=options,  # type: ignore[arg-type]
        snapshot_root=s3.url if same else str(tmp_path / "snapshots"),
        snapshot_storage_options=options if same else None,  # type: ignore[arg-type]
        log_json=False,
    )
    checkpoint_store.register(settings)
    return settings


def _fs(s3: S3Store) -> Any:
    return fsspec.filesystem("s3", **s3.options(), skip_instance_cache=True)


def _key(settings: Settings, job: str, run_id: int) -> str:
    root = settings.resolved_checkpoint_root
    assert isinstance(root, UrlPath)
    return str(checkpoint_path(root, job, run_id, {"name": "counts"})).split("://", 1)[1]


def _upload(fs: Any, ck: FakeCheckpoint, key: str) -> list[str]:
    """The local checkpoint's files put where S3A would have written them (no sidecars)."""
    files = [
        p.relative_to(ck.root).as_posix()
        for p in sorted(ck.root.rglob("*"))
        if p.is_file() and not p.name.endswith(".crc")
    ]
    for rel in files:
        fs.pipe_file(f"{key}/{rel}", (ck.root / rel).read_bytes())
    return files


def _running_job(
    client: TestClient, ctx: WorkerContext, settings: Settings, s3: S3Store, tmp: Path
) -> tuple[int, FakeCheckpoint]:
    assert client.post(f"{API}/jobs", json={"name": "j"}).status_code == 201
    op = operate(client, ctx, "j", "submit", {"version": make_version(client, "j")})
    assert op["state"] == "succeeded", op
    ck = FakeCheckpoint(tmp / "spark-wrote")
    ck.batch()
    ck.batch()
    _upload(_fs(s3), ck, _key(settings, "j", op["run_id"]))
    return op["run_id"], ck


def _restored_exactly(fs: Any, settings: Settings, run_id: int, ck: FakeCheckpoint) -> None:
    key = _key(settings, "j", run_id)
    fs.invalidate_cache()
    assert not fs.exists(f"{key}/{RESTORING}")
    wanted = [f for f in select_files(ck.root, ck.batches).files if not f.endswith(".crc")]
    for rel in wanted:
        if rel != "metadata":
            assert fs.cat_file(f"{key}/{rel}") == (ck.root / rel).read_bytes(), rel
    restored = {k.split(f"{key}/", 1)[1] for k in fs.find(key)}
    assert restored == set(wanted), restored ^ set(wanted)


def test_a_snapshot_of_checkpoints_in_s3_is_exported_and_restored_into_s3(
    client: TestClient,
    cluster: str,
    ctx: WorkerContext,
    settings: Settings,
    s3: S3Store,
    tmp_path: Path,
) -> None:
    _, ck = _running_job(client, ctx, settings, s3, tmp_path)
    before = len(s3.proxy.bodies)
    op = operate(client, ctx, "j", "snapshots", {"name": "s1"})
    assert op["state"] == "succeeded", op
    s1 = get_snapshot(client, "j", "s1")
    (query,) = s1["queries"]
    assert s1["state"] == "ready" and query["batch_id"] == 1, s1
    assert query["files"] == len(
        [f for f in select_files(ck.root, 1).files if not f.endswith(".crc")]
    )
    exported = s3.proxy.bodies[before:]
    if settings.snapshot_storage_options:  # same server: every blob a server-side copy
        copies = [p for m, p, n in exported if m == "PUT" and "/blobs/" in p]
        assert len(copies) == query["files"] and s3.proxy.bytes_put("/blobs/") == 0
    else:
        assert s3.proxy.bytes_put("/blobs/") == 0  # nothing written to the bucket but the state
        assert not [p for m, p, _ in exported if m == "PUT"]

    # A second export of the same state reads nothing again and writes nothing.
    again = operate(client, ctx, "j", "snapshots", {"name": "s2"})
    assert again["state"] == "succeeded", again
    assert again["result"]["files_written"] == 0 and again["result"]["hashed"] == 0, again

    # Restored into a new run of a new version: the run's checkpoint in S3, byte for byte.
    assert operate(client, ctx, "j", "stop")["state"] == "succeeded"
    v2 = make_version(client, "j", COUNTS, ENRICH)
    op = operate(client, ctx, "j", "submit", {"version": v2, "snapshot": "s1"})
    assert op["state"] == "succeeded", op
    fs = _fs(s3)
    _restored_exactly(fs, settings, op["run_id"], ck)
    assert json.loads(fs.cat_file(f"{_key(settings, 'j', op['run_id'])}/metadata"))["id"]

    # A resume point from the run's own coordinates (its checkpoint in S3) is planned too.
    compat = client.post(
        f"{API}/jobs/j/compatibility", json={"version": v2, "snapshot": "s1"}
    ).json()
    assert compat["compatible"] is True, compat


def test_a_store_failing_mid_export_or_mid_restore_leaves_nothing_used(
    client: TestClient,
    cluster: str,
    ctx: WorkerContext,
    settings: Settings,
    s3: S3Store,
    tmp_path: Path,
) -> None:
    _, ck = _running_job(client, ctx, settings, s3, tmp_path)
    s3.proxy.arm("error", after=1, method="GET")
    op = operate(client, ctx, "j", "snapshots", {"name": "broken"})
    s3.proxy.disarm()
    assert op["state"] == "failed", op
    snapshot = get_snapshot(client, "j", "broken")
    assert snapshot["state"] == "failed" and snapshot["manifest"] is None
    assert SECRET_KEY not in op["error"] and ACCESS_KEY not in op["error"]
    # The same name again, the server back: exported whole.
    op = operate(client, ctx, "j", "snapshots", {"name": "broken"})
    assert op["state"] == "succeeded", op

    assert operate(client, ctx, "j", "stop")["state"] == "succeeded"
    # The server fails after the restore's marker and two files: the operation is released
    # for a retry (a store's outage is temporary), says why, and nothing is started.
    s3.proxy.arm("error", after=3, method="PUT")
    r = client.post(f"{API}/jobs/j/submit", json={"version": 1, "snapshot": "broken"})
    assert r.status_code == 202, r.text
    first = work(ctx, r.json()["id"])
    assert s3.proxy.faulted > 0
    s3.proxy.disarm()
    assert first["state"] == "running" and "retrying" in first["error"], first
    assert "internal error" in first["error"] and SECRET_KEY not in first["error"]
    # The dry run read the snapshot into its local scratch; no driver of the run was started.
    assert first["details"]["dry_run"]["ok"] is True, first
    assert first["steps"][-1] == "reserve_run", first["steps"]
    # Its retry finds the marked, half-restored checkpoint, empties it and restores it whole.
    op = _retried(ctx, r.json()["id"])
    assert op["state"] == "succeeded", op
    fs = _fs(s3)
    _restored_exactly(fs, settings, op["run_id"], ck)


def _retried(ctx: WorkerContext, op_id: int) -> dict[str, Any]:
    """The operation worked again once its retry is due (a second or two)."""
    deadline = time.monotonic() + 30
    while Worker(ctx, concurrency=1).claim() != op_id:
        assert time.monotonic() < deadline, f"operation {op_id} was not due again in 30 s"
        time.sleep(0.2)
    ops.execute(ctx, op_id)
    with ctx.factory() as session:
        op = session.get(Operation, op_id)
        assert op is not None
        return {"state": op.state, "error": op.error, "run_id": op.run_id}


def test_a_restore_cut_short_is_found_marked_and_emptied(settings: Settings, s3: S3Store) -> None:
    """A worker killed between the marker and the last file: the retried step sees the mark,
    empties the folder and restores it again; a folder without the mark is complete."""
    root = settings.resolved_checkpoint_root
    assert isinstance(root, UrlPath)
    dest = checkpoint_path(root, "j", 7, {"name": "counts"})
    fs = _fs(s3)
    key = str(dest).split("://", 1)[1]
    fs.pipe_file(f"{key}/{RESTORING}", b"")
    fs.pipe_file(f"{key}/offsets/0", b"half")
    parent = open_checkpoint(root, dest.parent, create=True)
    assert isinstance(parent, ObjectDir)
    assert in_place(parent, dest.name) is False
    fs.invalidate_cache()
    assert not fs.find(key)
    fs.pipe_file(f"{key}/offsets/0", b"whole")
    assert in_place(parent, dest.name) is True


def test_an_update_by_snapshot_prestages_into_s3_and_restores_only_what_changed(
    client: TestClient,
    cluster: str,
    ctx: WorkerContext,
    settings: Settings,
    s3: S3Store,
    tmp_path: Path,
) -> None:
    """Issue 25 in object storage: the pre-copy restored in place before the stop, inside the
    marker (step ``prestage``); after the stop ``materialise`` keeps those objects, removes the
    list and the marker, and leaves exactly the snapshot."""
    _, ck = _running_job(client, ctx, settings, s3, tmp_path)
    v2 = make_version(client, "j", COUNTS, ENRICH)
    op = operate(client, ctx, "j", "update", {"version": v2, "verify_seconds": 0})
    assert op["state"] == "succeeded", op
    names = op["steps"]
    assert names.index("pre_copy") < names.index("prestage") < names.index("request_stop")
    prestaged = op["details"]["prestage"]["counts"]
    assert prestaged["files"] > 0 and prestaged["bytes"] > 0, op["details"]["prestage"]
    restored = op["details"]["materialise"]["queries"]["counts"]
    assert 0 < restored["prestaged_bytes"] <= restored["bytes"], restored
    fs = _fs(s3)
    _restored_exactly(fs, settings, op["run_id"], ck)
    key = _key(settings, "j", op["run_id"])
    assert not fs.exists(f"{key}/.tidegate-prestaged.json")


def test_a_resume_point_from_a_runs_coordinates_in_s3_is_copied_within_the_bucket(
    client: TestClient,
    cluster: str,
    ctx: WorkerContext,
    settings: Settings,
    s3: S3Store,
    tmp_path: Path,
) -> None:
    """No snapshot: the new run's checkpoint copied from the old run's committed batch, object
    by object inside the bucket (server-side), exactly the files a restart at it needs."""
    run_id, ck = _running_job(client, ctx, settings, s3, tmp_path)
    assert operate(client, ctx, "j", "stop")["state"] == "succeeded"
    before = len(s3.proxy.bodies)
    coordinates = {"mode": "resume", "run": run_id, "query": "counts"}
    body = {"version": 1, "resume_point": {"counts": coordinates}, "dry_run": False}
    op = operate(client, ctx, "j", "submit", body)
    assert op["state"] == "succeeded", op
    assert op["result"]["from"]["counts"]["batch_id"] == 1, op["result"]
    _restored_exactly(_fs(s3), settings, op["run_id"], ck)
    copied = [n for m, p, n in s3.proxy.bodies[before:] if m == "PUT" and "/checkpoints/" in p]
    assert copied and all(n == 0 for n in copied[1:-1]), copied  # marker, copies, metadata


def test_where_the_server_refuses_a_copy_the_bytes_go_through_tidegate(
    client: TestClient,
    cluster: str,
    ctx: WorkerContext,
    settings: Settings,
    s3: S3Store,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A server-side copy the server refuses (another account's bucket, a server without
    CopyObject): each blob read again, checked against the hash and uploaded; each object
    of a restore copied through a spool. The snapshot and the restore are the same."""
    from app.snapshots.store import object_files

    monkeypatch.setattr(object_files, "_server_copy", lambda *_: False)
    _, ck = _running_job(client, ctx, settings, s3, tmp_path)
    op = operate(client, ctx, "j", "snapshots", {"name": "s1"})
    assert op["state"] == "succeeded", op
    (query,) = get_snapshot(client, "j", "s1")["queries"]
    if settings.snapshot_storage_options:  # same server: uploaded after all
        assert s3.proxy.bytes_put("/blobs/") == query["size_bytes"] > 0
    assert operate(client, ctx, "j", "stop")["state"] == "succeeded"
    op = operate(client, ctx, "j", "submit", {"version": 1, "snapshot": "s1", "dry_run": False})
    assert op["state"] == "succeeded", op
    _restored_exactly(_fs(s3), settings, op["run_id"], ck)
