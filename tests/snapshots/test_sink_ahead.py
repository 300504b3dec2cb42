"""An older snapshot must not be restored onto a file sink that already holds later batches:
Spark's file sink skips batch ids it has written, so the re-run batches' output would be lost."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import update

from app.core.config import Settings
from app.core.db import transaction
from app.jobs.service import get_job, get_version
from app.resume_points.restore_guards import sink_missing_for_compaction
from app.resume_points.service import plan_for_request
from app.runs.models import Run
from app.worker.core.context import WorkerContext
from app.worker.core.steps import OperationFailed
from app.worker.runs.verify import verify
from tests.support.flows import API, COUNTS, make_version, operate, running_job


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
    run_id, ck = running_job(client, ctx, settings)  # batches 0..2 committed
    assert operate(client, ctx, "j", "snapshots", {"name": "old"})["state"] == "succeeded"
    for _ in range(3):
        ck.batch()  # 3..5: the job goes on after the snapshot, its sink too
    out = tmp_path / "out"
    _file_sink(ctx, run_id, out, 6)
    assert operate(client, ctx, "j", "snapshots", {"name": "new"})["state"] == "succeeded"
    assert operate(client, ctx, "j", "stop")["state"] == "succeeded"

    r = client.post(f"{API}/jobs/j/submit", json={"version": 1, "snapshot": "old"})
    assert r.status_code == 409, r.text
    body = r.json()
    assert "already holds batches up to 5" in body["detail"] and "batches 3..5" in body["detail"]
    assert (body["query"], body["restored_batch"], body["sink_batch"]) == ("counts", 2, 5)

    # The newer snapshot is at the sink's last batch: nothing would be skipped.
    ok = client.post(f"{API}/jobs/j/submit", json={"version": 1, "snapshot": "new"})
    assert ok.status_code == 202, ok.text


def test_a_sink_log_that_cannot_compact_is_named() -> None:
    """Spark compacts a file sink's log at batch K with (K + 1) % 10 == 0 and reads the
    previous compaction and every batch after it: a run resumed at batch R + 1 needs those up
    to R already in the log."""
    assert sink_missing_for_compaction(None, 5, [Path("/")]) is None
    assert sink_missing_for_compaction("ConsoleSink", 5, [Path("/")]) is None
    assert (
        sink_missing_for_compaction("FileSink[s3a://b/out]", 5, [Path("/")]) is None
    )  # not read here


def test_compaction_needs_the_batches_since_the_last_compaction(tmp_path: Path) -> None:
    log = tmp_path / "out" / "_spark_metadata"
    log.mkdir(parents=True)
    sink = f"FileSink[file:{tmp_path / 'out'}]"
    roots = [tmp_path]
    (log / "46").write_text("v1\n")  # the new run's first batch, in a new directory
    assert sink_missing_for_compaction(sink, 45, roots) == (
        f"file:{tmp_path / 'out'}",
        49,
        [39, 40, 41, 42, 43, 44, 45],
    )
    for batch in range(39, 46):
        (log / (f"{batch}.compact" if batch == 39 else str(batch))).write_text("v1\n")
    assert sink_missing_for_compaction(sink, 45, roots) is None  # the previous version's directory
    assert sink_missing_for_compaction(sink, 3, roots) == (sink[9:-1], 9, [0, 1, 2, 3])
    assert sink_missing_for_compaction(sink, 49, roots, interval=10) == (sink[9:-1], 59, [49])
    assert sink_missing_for_compaction(sink, 47, roots, interval=4) == (sink[9:-1], 51, [47])
    assert sink_missing_for_compaction(sink, -1, roots) is None  # a fresh query writes every batch


def test_verify_refuses_a_resumed_query_whose_new_sink_cannot_compact(
    client: TestClient, cluster: str, ctx: WorkerContext, settings: Settings, tmp_path: Path
) -> None:
    """The update's new run resumed at batch 3 but writes to an empty directory: it would
    run fine until its batch 9 and fail there, so verify fails now and the update rolls back."""
    run_id, _ck = running_job(client, ctx, settings)
    out = tmp_path / "elsewhere"
    (out / "_spark_metadata").mkdir(parents=True)
    (out / "_spark_metadata" / "3").write_text("v1\n")
    with transaction(ctx.factory) as session:
        progress = {"counts": {"batch_id": 3, "sink": f"FileSink[{out}]"}}
        session.execute(update(Run).where(Run.id == run_id).values(progress=progress))
    plan = {"queries": [{"query": "counts", "source": {"batch_id": 2}}]}
    with pytest.raises(OperationFailed) as failed:
        verify(ctx, run_id, plan, seconds=1, first_batch=5)
    message = str(failed.value)
    assert f"writes its file sink to {out}" in message and "lacks batches 0..2" in message
    assert "at batch 9" in message and "update by drain" in message


def _logged(out: Path, batches: range) -> Path:
    (out / "_spark_metadata").mkdir(parents=True, exist_ok=True)
    for batch in batches:
        (out / "_spark_metadata" / str(batch)).write_text("v1\n")
    return out


def test_a_declared_file_sink_is_checked_before_anything_stops(
    client: TestClient, cluster: str, ctx: WorkerContext, settings: Settings
) -> None:
    """A version that declares its file sink is checked against the state it resumes when
    the request comes: an empty new output folder (its log cannot compact) or a folder ahead
    of the snapshot is a 409 and the running job is not touched; the folder it wrote before
    passes."""
    run_id, _ck = running_job(client, ctx, settings)  # batches 0..2 committed
    assert operate(client, ctx, "j", "snapshots", {"name": "s", "stop": False})["state"] == (
        "succeeded"
    )
    root = settings.resolved_sink_roots[0]
    written = _logged(root / "out-v1", range(3))
    empty = root / "out-new"

    def declaring(path: Path) -> int:
        return make_version(
            client, "j", {**COUNTS, "sink": {"format": "parquet", "path": str(path)}}
        )

    v_empty, v_same = declaring(empty), declaring(written)
    compat = client.post(f"{API}/jobs/j/compatibility", json={"version": v_empty, "snapshot": "s"})
    body = compat.json()
    assert compat.status_code == 200 and not body["compatible"], body
    (problem,) = body["problems"]
    assert (problem["query"], problem["kind"]) == ("counts", "sink_log")
    assert f"file sink {empty}" in problem["detail"] and "lacks batches 0..2" in problem["detail"]
    assert "at batch 9" in problem["detail"] and "update by drain" in problem["detail"]

    refused = client.post(f"{API}/jobs/j/update", json={"version": v_empty})
    assert refused.status_code == 409, refused.text
    assert [p["kind"] for p in refused.json()["problems"]] == ["sink_log"]
    run = client.get(f"{API}/runs/{run_id}").json()
    assert run["state"] == "running" and run["version"] == 1  # nothing was stopped
    operations = client.get(f"{API}/jobs/j/operations").json()["items"]
    assert [o["kind"] for o in operations if o["kind"] == "update"] == []

    same = client.post(f"{API}/jobs/j/compatibility", json={"version": v_same, "snapshot": "s"})
    assert same.json()["compatible"], same.json()

    # The job went on writing to that folder: the snapshot at batch 2 is behind it now.
    _logged(written, range(3, 6))
    ahead = client.post(f"{API}/jobs/j/compatibility", json={"version": v_same, "snapshot": "s"})
    (problem,) = ahead.json()["problems"]
    assert problem["kind"] == "sink_ahead" and "holds batches up to 5" in problem["detail"]
    assert (problem["expected"], problem["actual"]) == (2, 5)
    # A rollback is planned on the worker (app/worker/runs/plan.py::replan) with the same
    # planner: a sink never refuses the way back to the version that wrote it.
    with ctx.factory() as session:
        plan = plan_for_request(
            session,
            settings,
            get_job(session, "j"),
            get_version(session, "j", v_same),
            snapshot="s",
        )
    assert plan.problems == []


def test_a_declared_sink_outside_the_sink_roots_is_not_read(
    client: TestClient, cluster: str, ctx: WorkerContext, settings: Settings, tmp_path: Path
) -> None:
    """The API lists a declared sink's log only inside TIDEGATE_SINK_ROOTS: a version names
    any folder it likes, and the server reads none of them for it."""
    running_job(client, ctx, settings)
    assert operate(client, ctx, "j", "snapshots", {"name": "s", "stop": False})["state"] == (
        "succeeded"
    )
    outside = Path("/proc/self")
    assert not any(outside.is_relative_to(r) for r in settings.resolved_sink_roots)
    version = make_version(
        client, "j", {**COUNTS, "sink": {"format": "parquet", "path": str(outside)}}
    )
    r = client.post(f"{API}/jobs/j/compatibility", json={"version": version, "snapshot": "s"})
    assert r.json()["compatible"] and r.json()["problems"] == [], r.json()


@pytest.mark.parametrize(
    ("sink", "message"),
    [
        ({"format": "parquet"}, "a parquet sink needs its 'path'"),
        ({"format": "json", "path": "/o", "options": {"PATH": "/x"}}, "not among 'options'"),
        ({"format": "no spaces allowed"}, "String should match pattern"),
    ],
)
def test_a_sink_that_cannot_be_checked_is_refused_at_creation(
    client: TestClient, cluster: str, sink: dict[str, Any], message: str
) -> None:
    assert client.post(f"{API}/jobs", json={"name": "j"}).status_code == 201
    body = {
        "app": {"file": "/opt/pipelines/windowed_counts.py"},
        "cluster": "local",
        "queries": [{**COUNTS, "sink": sink}],
    }
    r = client.post(f"{API}/jobs/j/versions", json=body)
    assert r.status_code == 422 and message in r.text, r.text


def test_a_sink_a_driver_reports_outside_the_sink_roots_is_not_read(tmp_path: Path) -> None:
    """A driver's progress names its sink; the API lists its log only inside the roots."""
    log = tmp_path / "out" / "_spark_metadata"
    log.mkdir(parents=True)
    (log / "46").write_text("v1\n")
    sink = f"FileSink[{tmp_path / 'out'}]"
    assert sink_missing_for_compaction(sink, 45, [tmp_path]) is not None
    assert sink_missing_for_compaction(sink, 45, [tmp_path / "elsewhere"]) is None


def test_a_fresh_query_onto_a_file_sink_that_holds_batches_is_refused(
    client: TestClient, cluster: str, ctx: WorkerContext, settings: Settings
) -> None:
    """A query on a new checkpoint counts its batches from 0, and Spark's file sink skips
    every batch id its log holds: a plain submit, or an update by drain, onto a declared sink
    folder with a log would lose that many batches of output. Refused at the request."""
    run_id, _ck = running_job(client, ctx, settings)
    written = _logged(settings.resolved_sink_roots[0] / "out-v1", range(4))
    sink = {"format": "parquet", "path": str(written)}
    version = make_version(client, "j", {**COUNTS, "sink": sink})
    r = client.post(f"{API}/jobs/j/update", json={"version": version, "strategy": "drain"})
    assert r.status_code == 409, r.text
    (problem,) = r.json()["problems"]
    assert problem["kind"] == "sink_ahead" and "starts fresh at batch 0" in problem["detail"]
    assert "batches 0..3 of the new query would be lost" in problem["detail"]
    assert client.get(f"{API}/runs/{run_id}").json()["state"] == "running"

    assert operate(client, ctx, "j", "stop")["state"] == "succeeded"
    r = client.post(f"{API}/jobs/j/submit", json={"version": version})
    assert r.status_code == 409 and "fresh checkpoints" in r.json()["detail"], r.text
    empty = make_version(
        client, "j", {**COUNTS, "sink": {**sink, "path": str(written.parent / "out-v2")}}
    )
    assert client.post(f"{API}/jobs/j/submit", json={"version": empty}).status_code == 202
