"""The plan is computed once: the API stores the plan it checked on the operation, and the
worker binds it to the checkpoints it uses now and re-validates it, never re-planning."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import update

from app.core.config import Settings
from app.operations import state as op_state
from app.operations.models import FAILED, Operation
from app.resume_points.plan import bind_to_latest, bind_to_snapshot
from app.snapshots.models import Snapshot
from app.snapshots.pins import pinned_by
from app.worker.core.context import WorkerContext
from app.worker.loop import Worker
from tests.support.flows import (
    API,
    COUNTS,
    ENRICH,
    make_version,
    operate,
    running_job,
    work,
)


def _stored(ctx: WorkerContext, op_id: int) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    with ctx.factory() as session:
        op = session.get(Operation, op_id)
        assert op is not None
        return op.plan, {s["name"]: s.get("detail") or {} for s in op.steps}


def _by_query(plan: dict[str, Any]) -> dict[str, Any]:
    return {q["query"]: q for q in plan["queries"]}


def _pending_submit_from_a_snapshot(
    client: TestClient, ctx: WorkerContext, settings: Settings
) -> Any:
    """Job j ran, stopped with snapshot s1; a submit from s1 is accepted, not carried out."""
    running_job(client, ctx, settings)
    assert operate(client, ctx, "j", "snapshots", {"name": "s1", "stop": True})["state"] == (
        "succeeded"
    )
    r = client.post(f"{API}/jobs/j/submit", json={"version": 1, "snapshot": "s1"})
    assert r.status_code == 202, r.text
    return r


def test_an_update_stores_its_plan_and_the_worker_binds_it_to_the_live_batch_then_the_snapshot(
    client: TestClient, cluster: str, ctx: WorkerContext, settings: Settings
) -> None:
    old_run, ck = running_job(client, ctx, settings)  # committed batches 0..2
    v2 = make_version(client, "j", COUNTS, ENRICH)
    r = client.post(f"{API}/jobs/j/update", json={"version": v2, "verify_seconds": 0})
    assert r.status_code == 202, r.text
    op_id = r.json()["id"]
    stored, _ = _stored(ctx, op_id)
    assert stored is not None
    assert stored["version"] == v2
    assert stored["origin"] == {"kind": "run", "job": "j", "run": old_run}
    planned = _by_query(stored)
    assert planned["counts"]["source"]["run"] == old_run
    assert planned["counts"]["source"]["batch_id"] == 2
    assert planned["counts"]["parts"] == ["offsets", "state"]
    assert planned["enrich"]["source"] is None  # a new query: initialized

    ck.batch()
    ck.batch()  # the run goes on: batches 3 and 4 commit after the API planned
    done = work(ctx, op_id)
    assert done["state"] == "succeeded", done
    _, steps = _stored(ctx, op_id)
    dry = _by_query(steps["dry_run_plan"])
    assert dry["counts"]["source"]["run"] == old_run
    assert dry["counts"]["source"]["batch_id"] == 4  # bound to the latest committed batch
    final = _by_query(steps["plan"])
    snapshot = done["result"]["snapshot"]
    assert final["counts"]["source"]["snapshot"] == snapshot  # bound to the saved snapshot
    assert final["counts"]["parts"] == ["offsets", "state"] and final["enrich"]["source"] is None
    again, _ = _stored(ctx, op_id)
    assert again == stored  # the stored plan itself is never rewritten


def test_a_stateless_update_stores_the_fresh_plan_and_starts_from_it(
    client: TestClient, cluster: str, ctx: WorkerContext, settings: Settings
) -> None:
    assert client.post(f"{API}/jobs", json={"name": "s"}).status_code == 201
    v1 = make_version(client, "s", ENRICH)
    assert operate(client, ctx, "s", "submit", {"version": v1})["state"] == "succeeded"
    v2 = make_version(client, "s", ENRICH, **{"spark.sql.shuffle.partitions": 3})
    r = client.post(
        f"{API}/jobs/s/update", json={"version": v2, "strategy": "stateless", "verify_seconds": 0}
    )
    assert r.status_code == 202, r.text
    stored, _ = _stored(ctx, r.json()["id"])
    assert stored == {
        "version": v2,
        "queries": [{"query": "enrich", "parts": [], "fresh_id": False, "source": None}],
        "origin": {"kind": "fresh"},
    }
    done = work(ctx, r.json()["id"])
    assert done["state"] == "succeeded", done
    _, steps = _stored(ctx, r.json()["id"])
    assert steps["plan"] == stored


def test_a_submit_whose_snapshot_was_deleted_after_the_api_checked_it_fails_clearly(
    client: TestClient, cluster: str, ctx: WorkerContext, settings: Settings
) -> None:
    r = _pending_submit_from_a_snapshot(client, ctx, settings)
    op_id = r.json()["id"]
    stored, _ = _stored(ctx, op_id)
    assert stored is not None
    assert stored["origin"] == {"kind": "snapshot", "job": "j", "snapshot": "s1"}
    assert _by_query(stored)["counts"]["source"]["snapshot"] == "s1"
    with ctx.factory.begin() as session:  # gone after the API checked it (e.g. retention)
        session.execute(update(Snapshot).values(state="failed", error="expired"))
    done = work(ctx, op_id)
    assert done["state"] == "failed" and "Snapshot 's1' of job 'j' is failed" in done["error"]
    assert "create_run" not in done["steps"]


def test_a_submit_whose_snapshot_no_longer_fits_the_version_is_refused_by_the_worker(
    client: TestClient, cluster: str, ctx: WorkerContext, settings: Settings
) -> None:
    r = _pending_submit_from_a_snapshot(client, ctx, settings)
    with ctx.factory.begin() as session:  # what the snapshot recorded differs now
        snapshot = session.query(Snapshot).filter_by(name="s1").one()
        queries = {q: {**info, "sources": []} for q, info in snapshot.queries.items()}
        session.execute(update(Snapshot).values(queries=queries))
    done = work(ctx, r.json()["id"])
    assert done["state"] == "failed", done
    assert (
        "cannot start from snapshot 's1'" in done["error"] and "read 0 source(s)" in done["error"]
    )
    assert "create_run" not in done["steps"]


RUN_PLAN: dict[str, Any] = {
    "version": 2,
    "origin": {"kind": "run", "job": "j", "run": 7},
    "queries": [
        {
            "query": "counts",
            "parts": ["offsets", "state"],
            "fresh_id": False,
            "source": {
                "mode": "resume",
                "job": "j",
                "query": "counts",
                "run": 7,
                "batch_id": 2,
                "snapshot_id": None,
                "checkpoint": "/x",
            },
        },
        {"query": "late", "parts": [], "fresh_id": False, "source": None},
        {"query": "new", "parts": [], "fresh_id": False, "source": None},
    ],
}


def test_binding_moves_only_the_runs_sources() -> None:
    latest = _by_query(bind_to_latest(RUN_PLAN, 7))
    assert latest["counts"]["source"]["batch_id"] is None  # resolved to the latest commit
    assert latest["new"]["source"] is None
    assert _by_query(bind_to_latest(RUN_PLAN, 8))["counts"]["source"]["batch_id"] == 2

    held = _by_query(bind_to_snapshot(RUN_PLAN, 7, "snap", {"counts", "late"}))
    assert held["counts"]["source"] == {
        "mode": "resume",
        "job": "j",
        "query": "counts",
        "snapshot": "snap",
    }
    # planned by name: "late" had not committed when the API planned; the snapshot holds it
    assert held["late"]["source"]["snapshot"] == "snap" and held["late"]["parts"] == [
        "offsets",
        "state",
    ]
    assert held["new"]["source"] is None
    by_point = {**RUN_PLAN, "origin": {"kind": "resume_point"}}
    assert _by_query(bind_to_snapshot(by_point, 7, "snap", {"late"}))["late"]["source"] is None


def test_a_pending_submit_pins_its_snapshot_until_it_ends(
    client: TestClient, cluster: str, ctx: WorkerContext, settings: Settings
) -> None:
    r = _pending_submit_from_a_snapshot(client, ctx, settings)
    op_id = r.json()["id"]
    refused = client.delete(f"{API}/jobs/j/snapshots/s1")
    assert refused.status_code == 409, refused.text
    assert f"about to be used by operation(s) {op_id}" in refused.json()["detail"]
    with ctx.factory() as session:
        assert pinned_by(session, _snapshot_id(ctx, "s1")) == [op_id]
    assert work(ctx, op_id)["state"] == "succeeded"
    with ctx.factory() as session:  # released when it ended; the new run's use protects it now
        assert pinned_by(session, _snapshot_id(ctx, "s1")) == []
    assert operate(client, ctx, "j", "stop")["state"] == "succeeded"
    assert client.delete(f"{API}/jobs/j/snapshots/s1").status_code == 204


def test_an_update_pins_the_snapshot_it_saves_while_it_runs(
    client: TestClient, cluster: str, ctx: WorkerContext, settings: Settings
) -> None:
    running_job(client, ctx, settings)
    v2 = make_version(client, "j", COUNTS, ENRICH)
    r = client.post(f"{API}/jobs/j/update", json={"version": v2, "snapshot_name": "u1"})
    assert r.status_code == 202, r.text
    op_id = r.json()["id"]
    with ctx.factory() as session:
        assert pinned_by(session, _snapshot_id(ctx, "u1")) == [op_id]
    assert Worker(ctx, concurrency=1).claim() == op_id
    op_state.finish(ctx.factory, op_id, ctx.worker_id, FAILED, "ended by the test")
    with ctx.factory() as session:  # released when it ended, however it ended
        assert pinned_by(session, _snapshot_id(ctx, "u1")) == []


def _snapshot_id(ctx: WorkerContext, name: str) -> int:
    with ctx.factory() as session:
        snapshot = session.query(Snapshot).filter_by(name=name).one()
        return snapshot.id
