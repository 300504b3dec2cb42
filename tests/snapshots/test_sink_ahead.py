"""An older snapshot must not be restored onto a file sink that already holds later batches:
Spark's file sink skips batch ids it has written, so the re-run batches' output would be lost."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient
from sqlalchemy import update

from app.core.config import Settings
from app.core.db import transaction
from app.runs.models import Run
from app.worker.context import WorkerContext
from tests.snapshots.test_snapshots_api import API, _operate, _running_job


def _file_sink(ctx: WorkerContext, run_id: int, out: Path, batches: int) -> None:
    """What a run's runtime reports of a file sink, and the sink's own batch log."""
    (out / "_spark_metadata").mkdir(parents=True, exist_ok=True)
    for batch in range(batches):
        (out / "_spark_metadata" / str(batch)).write_text("v1\n")
    with transaction(ctx.factory) as session:
        progress = {"counts": {"batch_id": batches - 1, "sink": f"FileSink[{out}]"}}
        session.execute(update(Run).where(Run.id == run_id).values(progress=progress))


def test_an_older_snapshot_onto_a_file_sink_ahead_of_it_is_refused(
    client: TestClient, cluster: str, ctx: WorkerContext, settings: Settings, tmp_path: Path
) -> None:
    run_id, ck = _running_job(client, ctx, settings)  # batches 0..2 committed
    assert _operate(client, ctx, "j", "snapshots", {"name": "old"})["state"] == "succeeded"
    for _ in range(3):
        ck.batch()  # 3..5: the job goes on after the snapshot, its sink too
    out = tmp_path / "out"
    _file_sink(ctx, run_id, out, 6)
    assert _operate(client, ctx, "j", "snapshots", {"name": "new"})["state"] == "succeeded"
    assert _operate(client, ctx, "j", "stop")["state"] == "succeeded"

    r = client.post(f"{API}/jobs/j/submit", json={"version": 1, "snapshot": "old"})
    assert r.status_code == 409, r.text
    body = r.json()
    assert "already holds batches up to 5" in body["detail"] and "batches 3..5" in body["detail"]
    assert (body["query"], body["restored_batch"], body["sink_batch"]) == ("counts", 2, 5)

    # The newer snapshot is at the sink's last batch: nothing would be skipped.
    ok = client.post(f"{API}/jobs/j/submit", json={"version": 1, "snapshot": "new"})
    assert ok.status_code == 202, ok.text
