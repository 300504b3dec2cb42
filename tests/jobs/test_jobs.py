from __future__ import annotations

import os

from fastapi.testclient import TestClient
from sqlalchemy import Engine

from app.core.db import make_sessionmaker, transaction
from app.core.pagination import Page
from app.jobs.models import Job
from app.jobs.schemas import JobResponse
from app.runs.models import Run
from tests.support.api import version_body

PROBLEM = "application/problem+json"


def _problem(r, status: int) -> dict:  # type: ignore[no-untyped-def]
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith(PROBLEM)
    body = r.json()
    assert body["status"] == status and body["title"] and body["detail"]
    return body


def test_create_get_list_jobs(client: TestClient) -> None:
    r = client.post("/api/v1/jobs", json={"name": "clicks", "description": "per minute"})
    assert r.status_code == 201
    job = r.json()
    assert job["state"] == "idle"
    assert job["restart_policy"] == {
        "enabled": True,
        "min_backoff": "1s",
        "max_backoff": "1h",
        "random_factor": 0.0,
        "max_attempts": None,
        "stable_period": "1m",
    }
    assert r.headers["etag"] == f'"{job["revision"]}"'
    assert client.get("/api/v1/jobs/clicks").json()["description"] == "per minute"
    _problem(client.post("/api/v1/jobs", json={"name": "clicks"}), 409)
    _problem(client.get("/api/v1/jobs/nope"), 404)


def test_job_reads_answer_exactly_the_documented_schema(
    client: TestClient, engine: Engine, cluster: str
) -> None:
    """GET /jobs and GET /jobs/{job} write their JSON from rows, without FastAPI's response
    validation: each must be what JobResponse itself would write, key for key."""
    client.post("/api/v1/jobs", json={"name": "shape", "description": "d", "hot_spare": True})
    assert client.post("/api/v1/jobs/shape/versions", json=version_body()).status_code == 201
    client.post("/api/v1/jobs", json={"name": "shape-old"})
    # A row from before a policy key existed still answers with every key (PSTL's default).
    with transaction(make_sessionmaker(engine)) as session:
        old = session.query(Job).filter_by(name="shape-old").one()
        old.restart_policy = {"enabled": False, "min_backoff": "2s"}
    page = client.get("/api/v1/jobs")
    one = client.get("/api/v1/jobs/shape")
    assert page.headers["content-type"] == one.headers["content-type"] == "application/json"
    assert one.headers["etag"] == f'"{one.json()["revision"]}"'
    listed = Page[JobResponse].model_validate_json(page.content)
    assert page.json() == listed.model_dump(mode="json")
    assert list(page.json()["items"][0]) == list(JobResponse.model_fields)
    assert one.json() == JobResponse.model_validate_json(one.content).model_dump(mode="json")
    assert one.json() == next(j for j in page.json()["items"] if j["name"] == "shape")
    assert one.json()["latest_version"] == 1 and one.json()["hot_spare"] is True
    old_policy = next(j for j in page.json()["items"] if j["name"] == "shape-old")
    assert old_policy["restart_policy"] == {
        "enabled": False,
        "min_backoff": "2s",
        "max_backoff": "1h",
        "random_factor": 0.0,
        "max_attempts": None,
        "stable_period": "1m",
    }


def test_job_list_is_paginated_and_filterable(client: TestClient) -> None:
    for i in range(7):
        assert client.post("/api/v1/jobs", json={"name": f"job-{i}"}).status_code == 201
    seen, cursor = [], None
    while True:
        params = {"limit": 3, **({"cursor": cursor} if cursor else {})}
        page = client.get("/api/v1/jobs", params=params).json()
        seen += [j["name"] for j in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == [f"job-{i}" for i in range(7)]
    assert len(client.get("/api/v1/jobs", params={"state": "idle"}).json()["items"]) == 7
    assert client.get("/api/v1/jobs", params={"state": "running"}).json()["items"] == []
    _problem(client.get("/api/v1/jobs", params={"state": "bogus"}), 422)
    _problem(client.get("/api/v1/jobs", params={"cursor": "!!notacursor"}), 400)


def test_job_name_rules(client: TestClient) -> None:
    for bad in ["", "../x", "a/b", "has space", "x" * 129, "-lead"]:
        body = _problem(client.post("/api/v1/jobs", json={"name": bad}), 422)
        assert body["errors"][0]["field"] == "body.name"
    _problem(client.post("/api/v1/jobs", json={"name": "ok", "surprise": 1}), 422)


def test_patch_honours_if_match(client: TestClient) -> None:
    etag = client.post("/api/v1/jobs", json={"name": "j"}).headers["etag"]
    r = client.patch(
        "/api/v1/jobs/j",
        json={"restart_policy": {"min_backoff": "100ms", "max_backoff": "2s", "max_attempts": 3}},
        headers={"If-Match": etag},
    )
    assert r.status_code == 200, r.text
    assert r.json()["restart_policy"]["max_attempts"] == 3
    assert r.headers["etag"] != etag
    stale = client.patch("/api/v1/jobs/j", json={"description": "x"}, headers={"If-Match": etag})
    assert _problem(stale, 412)
    assert client.get("/api/v1/jobs/j").json()["description"] is None  # nothing half-written
    assert client.patch("/api/v1/jobs/j", json={"description": "y"}).status_code == 200


def test_restart_policy_validation(client: TestClient) -> None:
    for bad in [
        {"min_backoff": "1 s"},
        {"max_backoff": "10x"},
        {"random_factor": -1},
        {"min_backoff": "2h", "max_backoff": "1h"},
        {"max_attempts": -1},
    ]:
        _problem(client.post("/api/v1/jobs", json={"name": "j", "restart_policy": bad}), 422)
    r = client.post(
        "/api/v1/jobs",
        json={"name": "j", "restart_policy": {"min_backoff": "250us", "max_backoff": "1d"}},
    )
    assert r.status_code == 201


def test_delete_job(client: TestClient, cluster: str) -> None:
    client.post("/api/v1/jobs", json={"name": "gone"})
    assert client.post("/api/v1/jobs/gone/versions", json=version_body()).status_code == 201
    assert client.delete("/api/v1/jobs/gone").status_code == 204
    _problem(client.get("/api/v1/jobs/gone"), 404)
    _problem(client.delete("/api/v1/jobs/gone"), 404)


def test_delete_job_with_an_active_run_is_refused(
    client: TestClient, db: Engine, cluster: str
) -> None:
    client.post("/api/v1/jobs", json={"name": "busy"})
    assert client.post("/api/v1/jobs/busy/versions", json=version_body()).status_code == 201
    with transaction(make_sessionmaker(db)) as session:
        job = session.query(Job).filter_by(name="busy").one()
        run = Run(
            job_id=job.id,
            version_id=job.versions[0].id,
            state="running",
            created_by="t",
            progress={},
        )
        session.add(run)
        session.flush()
        job.current_run_id, job.state = run.id, "running"
    problem = _problem(client.delete("/api/v1/jobs/busy"), 409)
    assert "active run" in problem["detail"] and "stop or cancel" in problem["detail"]
    assert client.get("/api/v1/jobs/busy").json()["state"] == "running"  # nothing removed


def test_versions_are_numbered_and_immutable(client: TestClient, cluster: str) -> None:
    client.post("/api/v1/jobs", json={"name": "j"})
    for n in (1, 2, 3):
        r = client.post("/api/v1/jobs/j/versions", json=version_body())
        assert r.status_code == 201, r.text
        assert r.json()["number"] == n
    v = client.get("/api/v1/jobs/j/versions/2").json()
    q = v["queries"][0]
    assert q["name"] == "events" and q["name_derived"] is True
    assert q["trigger"] == "15 SECONDS" and q["trigger_ms"] == 15_000 and q["stateful"] is True
    assert v["conf"] == {"spark.sql.shuffle.partitions": "2"}
    assert [x["number"] for x in client.get("/api/v1/jobs/j/versions").json()["items"]] == [3, 2, 1]
    assert client.put("/api/v1/jobs/j/versions/2", json=version_body()).status_code == 405
    assert client.get("/api/v1/jobs/j").json()["latest_version"] == 3
    _problem(client.get("/api/v1/jobs/j/versions/9"), 404)
    _problem(client.post("/api/v1/jobs/nope/versions", json=version_body()), 404)


def test_query_name_clash_is_named(client: TestClient, cluster: str) -> None:
    client.post("/api/v1/jobs", json={"name": "j"})
    src = [{"name": "events", "kind": "eventlog", "options": {}}]
    body = version_body(queries=[{"sources": src}, {"sources": src}])
    problem = _problem(client.post("/api/v1/jobs/j/versions", json=body), 422)
    assert "events" in problem["detail"] and "name" in problem["detail"]
    assert {e["field"] for e in problem["errors"]} == {"queries.0.name", "queries.1.name"}
    named = version_body(queries=[{"sources": src}, {"name": "archive", "sources": src}])
    assert client.post("/api/v1/jobs/j/versions", json=named).status_code == 201


def test_version_validation(client: TestClient, cluster: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    client.post("/api/v1/jobs", json={"name": "j"})
    src = [{"name": "events", "kind": "eventlog", "options": {}}]
    cases = {
        "trigger": version_body(queries=[{"sources": src, "trigger": "15 FORTNIGHTS"}]),
        "mode": version_body(queries=[{"sources": src, "output_mode": "upsert"}]),
        "no queries": version_body(queries=[]),
        "no sources": version_body(queries=[{"sources": []}]),
        "cluster": version_body(cluster="elsewhere"),
        "relative file": version_body(app={"file": "job.py"}),
        "reserved conf": version_body(conf={"spark.app.name": "x"}),
        "dotdot": version_body(queries=[{"sources": src, "checkpoint_location": "/tmp/../etc/cp"}]),
        "outside": version_body(queries=[{"sources": src, "checkpoint_location": "/etc/cp"}]),
    }
    for case, body in cases.items():
        r = client.post("/api/v1/jobs/j/versions", json=body)
        assert r.status_code == 422, (case, r.text)
    root = client.app.state.settings.resolved_checkpoint_root  # type: ignore[attr-defined]
    os.symlink("/etc", root / "escape")
    body = version_body(queries=[{"sources": src, "checkpoint_location": str(root / "escape/cp")}])
    _problem(client.post("/api/v1/jobs/j/versions", json=body), 422)
    # A URL below a local root: said what to set, never a local folder named s3a:.
    for url in ("s3a://bucket/ck", "gs://bucket/ck", "hdfs:/ck"):
        body = version_body(queries=[{"sources": src, "checkpoint_location": url}])
        refused = _problem(client.post("/api/v1/jobs/j/versions", json=body), 422)
        assert "TIDEGATE_CHECKPOINT_ROOT" in refused["detail"], refused
        assert refused["errors"][0]["field"] == "queries.0.checkpoint_location"
    inside = version_body(queries=[{"sources": src, "checkpoint_location": str(root / "j/q")}])
    assert client.post("/api/v1/jobs/j/versions", json=inside).status_code == 201
    as_url = version_body(queries=[{"sources": src, "checkpoint_location": f"file://{root}/j/r"}])
    assert client.post("/api/v1/jobs/j/versions", json=as_url).status_code == 201
    assert client.get("/api/v1/jobs/j").json()["latest_version"] == 2  # refusals left nothing


def test_a_kafka_source_tidegate_cannot_drive_is_refused_with_what_is_missing(
    client: TestClient, cluster: str
) -> None:
    client.post("/api/v1/jobs", json={"name": "k"})

    def kafka(**options: str) -> dict[str, object]:
        return version_body(
            queries=[{"sources": [{"name": "clicks", "kind": "kafka", "options": options}]}]
        )

    cases = {
        "no brokers": (kafka(subscribe="clicks"), "'kafka.bootstrap.servers' is missing"),
        "pattern": (
            kafka(**{"kafka.bootstrap.servers": "k:9092", "subscribePattern": "c.*"}),
            "'subscribePattern' and 'assign'",
        ),
        "two topics": (
            kafka(**{"kafka.bootstrap.servers": "k:9092", "subscribe": "a,b"}),
            "exactly one topic",
        ),
        "overruled": (
            kafka(
                **{"kafka.bootstrap.servers": "k:9092", "subscribe": "c", "startingTimestamp": "1"}
            ),
            "'startingTimestamp' overrules",
        ),
        "kerberos": (
            kafka(
                **{
                    "kafka.bootstrap.servers": "k:9092",
                    "subscribe": "c",
                    "kafka.security.protocol": "SASL_SSL",
                }
            ),
            "SASL mechanism GSSAPI",
        ),
        "jks": (
            kafka(
                **{
                    "kafka.bootstrap.servers": "k:9092",
                    "subscribe": "c",
                    "kafka.security.protocol": "SSL",
                    "kafka.ssl.truststore.location": "/etc/kafka/trust.jks",
                }
            ),
            "PEM trust store",
        ),
    }
    for case, (body, needle) in cases.items():
        r = client.post("/api/v1/jobs/k/versions", json=body)
        assert r.status_code == 422, (case, r.text)
        problem = r.json()
        assert needle in problem["detail"], (case, problem)
        assert problem["errors"][0]["field"] == "queries.0.sources.0.options", (case, problem)
    assert client.get("/api/v1/jobs/k").json()["latest_version"] is None  # nothing stored
    secret = "p4ss-w0rd"
    ok = kafka(
        **{
            "kafka.bootstrap.servers": "k1:9092,k2:9092",
            "subscribe": "clicks",
            "kafka.security.protocol": "SASL_SSL",
            "kafka.sasl.mechanism": "SCRAM-SHA-512",
            "kafka.sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule "
            f'required username="svc" password="{secret}";',
        }
    )
    r = client.post("/api/v1/jobs/k/versions", json=ok)
    assert r.status_code == 201, r.text
    assert secret not in r.text  # stored for the driver, never shown


def test_every_run_state_is_a_job_state() -> None:
    """A job shows its current run's state: every state a run can reach must be one the
    job schema accepts, or reading the job fails after that transition."""
    from typing import get_args

    from app.core import run_states as states
    from app.jobs.schemas import JobState

    run_states = set(states.ALLOWED) | {s for to in states.ALLOWED.values() for s in to}
    assert run_states | {"idle"} == set(get_args(JobState))


def test_lists_take_a_fixed_number_of_statements(
    client: TestClient, db: Engine, cluster: str
) -> None:
    """A page of jobs or snapshots costs the same few statements whatever its size (no
    statement per row): counted on the real database."""
    from sqlalchemy import event

    from app.snapshots.models import Snapshot

    for n in range(12):
        assert client.post("/api/v1/jobs", json={"name": f"j{n}"}).status_code == 201
        assert client.post(f"/api/v1/jobs/j{n}/versions", json=version_body()).status_code == 201
    with transaction(make_sessionmaker(db)) as session:
        for job in session.query(Job).all():
            session.add(Snapshot(job_id=job.id, name="s", state="ready", created_by="t"))
    statements: list[str] = []

    def count(conn, cursor, statement, *args):  # type: ignore[no-untyped-def]
        statements.append(statement)

    event.listen(db, "before_cursor_execute", count)
    try:
        costs = {}
        for path in ("/api/v1/jobs?limit=3", "/api/v1/jobs?limit=12"):
            statements.clear()
            assert client.get(path).status_code == 200
            costs[path] = len(statements)
        for path in ("/api/v1/snapshots?limit=3", "/api/v1/snapshots?limit=12"):
            statements.clear()
            page = client.get(path)
            assert page.status_code == 200 and page.json()["items"][0]["job"].startswith("j")
            costs[path] = len(statements)
    finally:
        event.remove(db, "before_cursor_execute", count)
    assert costs["/api/v1/jobs?limit=3"] == costs["/api/v1/jobs?limit=12"], costs
    assert costs["/api/v1/snapshots?limit=3"] == costs["/api/v1/snapshots?limit=12"], costs
    assert max(costs.values()) <= 6, costs


def test_a_cluster_that_job_versions_target_cannot_be_deleted(
    client: TestClient, cluster: str
) -> None:
    assert client.post("/api/v1/jobs", json={"name": "pinned"}).status_code == 201
    r = client.post("/api/v1/jobs/pinned/versions", json=version_body())
    assert r.status_code == 201, r.text
    body = _problem(client.delete(f"/api/v1/clusters/{cluster}"), 409)
    assert "is the target of job versions" in body["detail"]
    assert client.get(f"/api/v1/clusters/{cluster}").status_code == 200
    assert client.delete("/api/v1/jobs/pinned").status_code == 204
    assert client.delete(f"/api/v1/clusters/{cluster}").status_code == 204
    assert client.get(f"/api/v1/clusters/{cluster}").status_code == 404
