"""The operations API on its own (no worker): acceptance, idempotency, conflicts."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from fastapi.testclient import TestClient
from sqlalchemy import Engine, delete, select

from app.core.config import Settings
from app.core.db import make_sessionmaker, transaction
from app.jobs.models import Job, JobVersion
from app.runs.models import Run
from tests.support.api import version_body


def _job(client: TestClient) -> None:
    assert client.post("/api/v1/jobs", json={"name": "j"}).status_code == 201
    assert client.post("/api/v1/jobs/j/versions", json=version_body()).status_code == 201


def test_submit_is_accepted_and_idempotent(client: TestClient, cluster: str) -> None:
    _job(client)
    r = client.post("/api/v1/jobs/j/submit", json={"version": 1}, headers={"Idempotency-Key": "k1"})
    assert r.status_code == 202, r.text
    op = r.json()
    assert (
        op["state"] == "pending"
        and op["kind"] == "submit"
        and op["params"] == {"version": 1, "dry_run": True}
    )
    assert r.headers["location"] == f"/api/v1/operations/{op['id']}"
    again = client.post(
        "/api/v1/jobs/j/submit", json={"version": 1}, headers={"Idempotency-Key": "k1"}
    )
    assert again.status_code == 202 and again.json()["id"] == op["id"]
    other = client.post(
        "/api/v1/jobs/j/submit", json={"version": 2}, headers={"Idempotency-Key": "k1"}
    )
    assert other.status_code == 422 and "different request" in other.json()["detail"]
    busy = client.post("/api/v1/jobs/j/submit", json={"version": 1})
    assert busy.status_code == 409 and busy.json()["operation_id"] == op["id"]
    assert client.get(f"/api/v1/operations/{op['id']}").json()["id"] == op["id"]
    listed = client.get("/api/v1/jobs/j/operations").json()["items"]
    assert [o["id"] for o in listed] == [op["id"]]
    events = client.get("/api/v1/events", params={"action": "operation.submit"}).json()["items"]
    # one accepted (the replay had no second effect), the 422 and the 409 audited as refusals
    assert [(e["result"], e["status_code"]) for e in events] == [
        ("error", 409),
        ("error", 422),
        ("ok", 202),
    ]


def test_refusals(client: TestClient, cluster: str) -> None:
    _job(client)
    assert client.post("/api/v1/jobs/j/submit", json={"version": 7}).status_code == 404
    assert client.post("/api/v1/jobs/j/submit", json={}).status_code == 422
    assert client.post("/api/v1/jobs/nope/submit", json={"version": 1}).status_code == 404
    for path in ("stop", "cancel", "restart"):
        r = client.post(f"/api/v1/jobs/j/{path}")
        assert r.status_code == 409, (path, r.text)
    assert client.get("/api/v1/operations/999").status_code == 404
    assert client.get("/api/v1/jobs/j/operations").json()["items"] == []


def test_concurrent_conflicting_operations_accept_exactly_one(
    client: TestClient, cluster: str
) -> None:
    _job(client)
    with ThreadPoolExecutor(16) as pool:
        codes = list(
            pool.map(
                lambda i: client.post("/api/v1/jobs/j/submit", json={"version": 1}).status_code,
                range(32),
            )
        )
    assert codes.count(202) == 1 and codes.count(409) == 31, codes
    assert len(client.get("/api/v1/jobs/j/operations").json()["items"]) == 1


def _running_run(db: Engine, job: str = "j", version: int = 1) -> int:
    """A run the worker would have started (the API on its own has no worker)."""
    with transaction(make_sessionmaker(db)) as session:
        row = session.scalar(select(Job).where(Job.name == job))
        assert row is not None
        v = session.scalar(
            select(JobVersion).where(JobVersion.job_id == row.id, JobVersion.number == version)
        )
        assert v is not None
        run = Run(job_id=row.id, version_id=v.id, state="running", created_by="t", progress={})
        session.add(run)
        session.flush()
        row.current_run_id, row.state = run.id, "running"
        return run.id


def test_drain_needs_a_running_run_and_capable_sources(
    client: TestClient, cluster: str, db: Engine
) -> None:
    _job(client)
    r = client.post("/api/v1/jobs/j/drain", json={})
    assert r.status_code == 409 and "no running run" in r.json()["detail"]
    rate = version_body(
        queries=[{"sources": [{"name": "r", "kind": "rate", "options": {"rowsPerSecond": 5}}]}]
    )
    assert client.post("/api/v1/jobs/j/versions", json=rate).status_code == 201
    run = _running_run(db, version=2)
    r = client.post("/api/v1/jobs/j/drain", json={})
    assert r.status_code == 422, r.text
    assert "'r' (rate)" in r.json()["detail"] and "…/stop" in r.json()["detail"]
    kinds = {k["kind"]: k for k in client.get("/api/v1/source-kinds").json()}
    assert kinds["eventlog"]["drain"] == "native" and kinds["eventlog"]["drain_handoff"]
    assert kinds["kafka"]["drain_handoff"] and not kinds["file"]["drain_handoff"]
    assert kinds["kafka"]["drain"] == "bounded" and kinds["file"]["startpoints"] == [
        "OLDEST",
        "OFFSET",
    ]
    assert client.post("/api/v1/jobs/j/drain", json={"timeout_seconds": 1}).status_code == 422
    with transaction(make_sessionmaker(db)) as session:
        session.execute(delete(Run).where(Run.id == run))
    _running_run(db, version=1)
    r = client.post("/api/v1/jobs/j/drain", json={"timeout_seconds": 60})
    assert r.status_code == 202, r.text
    assert r.json()["kind"] == "drain" and r.json()["params"] == {"timeout_seconds": 60}


def test_update_by_drain_is_checked_before_the_run_is_touched(
    client: TestClient, cluster: str, db: Engine, settings: Settings
) -> None:
    _job(client)
    _running_run(db)
    elsewhere = version_body(
        queries=[{"sources": [{"name": "other", "kind": "eventlog", "options": {"stream": "o"}}]}]
    )
    fixed = version_body(
        queries=[
            {
                "sources": [{"name": "events", "kind": "eventlog", "options": {"stream": "s"}}],
                "checkpoint_location": str(settings.resolved_checkpoint_root / "j" / "fixed"),
            }
        ]
    )
    # Files: a drained position in a file log cannot seed a fresh query (Kafka's can).
    as_files = version_body(queries=[{"sources": [{"name": "events", "kind": "file"}]}])
    for body in (elsewhere, fixed, version_body(), as_files):
        assert client.post("/api/v1/jobs/j/versions", json=body).status_code == 201
    r = client.post("/api/v1/jobs/j/update", json={"version": 5, "strategy": "drain"})
    assert r.status_code == 422 and "kind file in the new version" in r.json()["detail"], r.text
    r = client.post("/api/v1/jobs/j/update", json={"version": 2, "strategy": "drain"})
    assert r.status_code == 422 and "reads none of the sources" in r.json()["detail"], r.text
    r = client.post("/api/v1/jobs/j/update", json={"version": 3, "strategy": "drain"})
    assert r.status_code == 422 and "fixed checkpoint_location" in r.json()["detail"], r.text
    r = client.post("/api/v1/jobs/j/update", json={"version": 4, "strategy": "stateless"})
    assert r.status_code == 422 and "would lose" in r.json()["detail"], r.text
    assert client.get("/api/v1/jobs/j/operations").json()["items"] == []
    r = client.post(
        "/api/v1/jobs/j/update",
        json={"version": 4, "strategy": "drain", "timeout_seconds": 900},
        headers={"Idempotency-Key": "up-1"},
    )
    assert r.status_code == 202, r.text
    again = client.post(
        "/api/v1/jobs/j/update",
        json={"version": 4, "strategy": "drain", "timeout_seconds": 900},
        headers={"Idempotency-Key": "up-1"},
    )
    assert again.status_code == 202 and again.json()["id"] == r.json()["id"]


def test_a_chain_is_declared_with_upstream_queries(client: TestClient, cluster: str) -> None:
    _job(client)

    def query(name: str, *upstream: str) -> dict[str, object]:
        source = {"name": f"in-{name}", "kind": "eventlog", "options": {"stream": name}}
        return {"name": name, "sources": [source], "upstream": list(upstream)}

    r = client.post(
        "/api/v1/jobs/j/versions", json=version_body(queries=[query("a"), query("b", "a")])
    )
    assert r.status_code == 201, r.text
    assert [q["upstream"] for q in r.json()["queries"]] == [[], ["a"]]
    r = client.post("/api/v1/jobs/j/versions", json=version_body(queries=[query("b", "zz")]))
    assert r.status_code == 422 and "upstream zz is not another query" in r.json()["detail"]
    loop = version_body(queries=[query("a", "b"), query("b", "a")])
    r = client.post("/api/v1/jobs/j/versions", json=loop)
    assert r.status_code == 422 and "cycle" in r.json()["detail"], r.text
