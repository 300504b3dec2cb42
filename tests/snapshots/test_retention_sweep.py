"""Retention between exports: the worker loop applies every job's max_age now and then (not
only after that job's next export), and never deletes a snapshot a running run started from."""

from __future__ import annotations

from datetime import timedelta

from fastapi.testclient import TestClient
from sqlalchemy import update

from app.core.config import Settings
from app.core.db import transaction, utcnow
from app.snapshots.models import Snapshot
from app.snapshots.store.blobs import SnapshotStore
from app.worker.core.context import WorkerContext
from app.worker.loop import Worker
from tests.support.flows import API, operate, running_job


def _age(ctx: WorkerContext, name: str, days: int) -> None:
    with transaction(ctx.factory) as session:
        session.execute(
            update(Snapshot)
            .where(Snapshot.name == name)
            .values(created_at=utcnow() - timedelta(days=days))
        )


def _names(client: TestClient) -> list[str]:
    return sorted(s["name"] for s in client.get(f"{API}/snapshots").json()["items"])


def test_max_age_is_applied_by_the_worker_loop_between_exports(
    client: TestClient, cluster: str, ctx: WorkerContext, settings: Settings
) -> None:
    _, ck = running_job(client, ctx, settings)
    for name in ("old", "new"):
        ck.batch()
        assert operate(client, ctx, "j", "snapshots", {"name": name})["state"] == "succeeded"
    r = client.put(f"{API}/jobs/j/snapshot-retention", json={"max_age": "2d"})
    assert r.status_code == 200, r.text
    worker = Worker(ctx, concurrency=1, retention_every=3600)
    worker.retention()
    assert _names(client) == ["new", "old"]  # both younger than 2 days: nothing expires
    _age(ctx, "old", 3)
    worker.retention()  # not due yet: the sweep runs at most every retention_every seconds
    assert _names(client) == ["new", "old"]
    worker.retention(force=True)
    assert _names(client) == ["new"]
    events = client.get(f"{API}/events", params={"action": "snapshot.delete"}).json()["items"]
    assert events[0]["actor"] == "tidegate-retention" and events[0]["target"] == "snapshot old"
    assert "older than 172800s" in str(events[0]["detail"])
    assert SnapshotStore(settings.resolved_snapshot_root).manifests() == [("j", "new")]


def test_retention_sweep_never_deletes_a_snapshot_in_use(
    client: TestClient, cluster: str, ctx: WorkerContext, settings: Settings
) -> None:
    _, ck = running_job(client, ctx, settings)
    for name in ("used", "unused"):
        ck.batch()
        assert operate(client, ctx, "j", "snapshots", {"name": name})["state"] == "succeeded"
    assert operate(client, ctx, "j", "stop")["state"] == "succeeded"
    started = operate(client, ctx, "j", "submit", {"version": 1, "snapshot": "used"})
    assert started["state"] == "succeeded", started
    _age(ctx, "used", 10)
    _age(ctx, "unused", 10)
    r = client.put(f"{API}/jobs/j/snapshot-retention", json={"max_age": "1d", "keep_last": 1})
    assert r.status_code == 200, r.text
    # A newer snapshot that keep_last keeps; both old ones are past max_age.
    newest = operate(client, ctx, "j", "snapshots", {"name": "newest"})
    assert newest["state"] == "succeeded", newest
    # The export applied retention too, but only now is its own snapshot the newest.
    Worker(ctx, concurrency=1, retention_every=3600).retention(force=True)
    assert _names(client) == ["newest", "used"]  # in use by the running run: kept
    assert client.get(f"{API}/runs/{started['run_id']}").json()["state"] == "running"
    assert operate(client, ctx, "j", "stop")["state"] == "succeeded"
    Worker(ctx, concurrency=1, retention_every=3600).retention(force=True)
    assert _names(client) == ["newest"]  # no longer in use: expired
