"""Driving the API and the worker together, one operation at a time: a job with a version,
its operations carried out by the worker on the scripted backend (``tests/support/worker.py``),
its checkpoint written the way Spark writes it (``tests/support/checkpoints.py``). Shared by the
snapshot, resume point and update tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from app.core.config import Settings
from app.operations.models import Operation
from app.worker import execute as ops
from app.worker.core.context import WorkerContext
from app.worker.loop import Worker
from tests.support.checkpoints import FakeCheckpoint

API = "/api/v1"
SOURCE = {"name": "events", "kind": "eventlog", "options": {"stream": "s"}}
COUNTS = {
    "name": "counts",
    "sources": [SOURCE],
    "stateful_operators": [{"kind": "tumbling_window"}],
    "trigger": "5 seconds",
}
ENRICH = {"name": "enrich", "sources": [SOURCE]}


def make_version(client: TestClient, job: str, *queries: dict[str, Any], **conf: Any) -> int:
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


def work(ctx: WorkerContext, op_id: int) -> dict[str, Any]:
    assert Worker(ctx, concurrency=1).claim() == op_id
    ops.execute(ctx, op_id)
    with ctx.factory() as session:
        op = session.get(Operation, op_id)
        assert op is not None
        return {
            "state": op.state,
            "error": op.error,
            "result": op.result,
            "run_id": op.run_id,
            "steps": [s["name"] for s in op.steps],
            "details": {s["name"]: s.get("detail") for s in op.steps},
        }


def operate(
    client: TestClient, ctx: WorkerContext, job: str, verb: str, body: dict[str, Any] | None = None
) -> dict[str, Any]:
    r = client.post(f"{API}/jobs/{job}/{verb}", json=body)
    assert r.status_code == 202, r.text
    return work(ctx, r.json()["id"])


def checkpoint_dir(settings: Settings, job: str, run_id: int, query: str = "counts") -> Path:
    return settings.resolved_checkpoint_root / job / str(run_id) / query


def running_job(
    client: TestClient, ctx: WorkerContext, settings: Settings, job: str = "j", batches: int = 3
) -> tuple[int, FakeCheckpoint]:
    assert client.post(f"{API}/jobs", json={"name": job}).status_code == 201
    version = make_version(client, job)
    op = operate(client, ctx, job, "submit", {"version": version})
    assert op["state"] == "succeeded", op
    ck = FakeCheckpoint(checkpoint_dir(settings, job, op["run_id"]))
    for _ in range(batches):
        ck.batch()
    return op["run_id"], ck


def get_snapshot(client: TestClient, job: str, name: str) -> dict[str, Any]:
    r = client.get(f"{API}/jobs/{job}/snapshots/{name}")
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body
