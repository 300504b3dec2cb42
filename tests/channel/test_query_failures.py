"""POST /runs/{id}/query-failures: a driver's runtime restarts a failed query alone and says so;
the run shows each query's restarts, /metrics counts them, and the directives carry the
job's restart policy in seconds. (On real Spark: tests/runtime/test_query_supervision.py.)"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import Engine, text

from tests.support.api import make_current_run, version_body

POLICY = {"min_backoff": "2s", "max_backoff": "1m", "max_attempts": 3, "stable_period": "5m"}


def _job(client: TestClient) -> None:
    body = version_body(
        queries=[
            {"name": name, "sources": [{"name": f"in-{name}", "kind": "rate", "options": {}}]}
            for name in ("counts", "enrich")
        ]
    )
    r = client.post("/api/v1/jobs", json={"name": "j", "restart_policy": POLICY})
    assert r.status_code == 201, r.text
    assert client.post("/api/v1/jobs/j/versions", json=body).status_code == 201


def _report(client: TestClient, run_id: int, token: str, **over: Any) -> Any:
    body = {
        "attempt": 0,
        "query": "enrich",
        "failures": 1,
        "error": "org.apache.spark.SparkException: boom at line 1",
        "restart_in_seconds": 2.0,
        **over,
    }
    return client.post(
        f"/api/v1/runs/{run_id}/query-failures",
        headers={"Authorization": f"Bearer {token}"},
        json=body,
    )


def test_the_directives_carry_the_job_s_restart_policy_in_seconds(
    client: TestClient, db: Engine, cluster: str
) -> None:
    _job(client)
    run_id, token = make_current_run(db, "j")
    r = client.get(
        f"/api/v1/runs/{run_id}/directives", headers={"Authorization": f"Bearer {token}"}
    )
    assert r.status_code == 200, r.text
    assert r.json()["query_restart_policy"] == {
        "enabled": True,
        "min_backoff_seconds": 2.0,
        "max_backoff_seconds": 60.0,
        "random_factor": 0.0,
        "max_attempts": 3,
        "stable_period_seconds": 300.0,
    }


def test_each_query_s_restarts_show_on_the_run_and_in_metrics(
    client: TestClient, db: Engine, cluster: str
) -> None:
    _job(client)
    run_id, token = make_current_run(db, "j")
    assert _report(client, run_id, token).status_code == 204
    r = _report(client, run_id, token, failures=2, restart_in_seconds=4.0, error="boom again")
    assert r.status_code == 204, r.text
    run = client.get(f"/api/v1/runs/{run_id}").json()
    enrich = run["query_restarts"]["enrich"]
    assert enrich["restarts"] == 2 and enrich["failures"] == 2 and not enrich["gave_up"]
    assert enrich["last_error"] == "boom again" and enrich["next_restart_at"] is not None
    assert run["attempt"] == 0 and run["state"] == "running"
    assert list(run["query_restarts"]) == ["enrich"]  # counts never failed

    # Used up: the driver ends with the error (the run's own policy takes over from there).
    r = _report(client, run_id, token, failures=4, restart_in_seconds=None, error="for good")
    assert r.status_code == 204
    enrich = client.get(f"/api/v1/runs/{run_id}").json()["query_restarts"]["enrich"]
    assert enrich["gave_up"] and enrich["restarts"] == 2 and enrich["next_restart_at"] is None

    metrics = client.get("/metrics").text
    assert 'tidegate_query_restarts_total{job="j",query="enrich"} 2.0' in metrics


def test_a_report_for_another_attempt_changes_nothing_and_an_unknown_query_is_refused(
    client: TestClient, db: Engine, cluster: str
) -> None:
    _job(client)
    run_id, token = make_current_run(db, "j")
    assert _report(client, run_id, token, attempt=7).status_code == 204
    assert client.get(f"/api/v1/runs/{run_id}").json()["query_restarts"] == {}
    r = _report(client, run_id, token, query="nope")
    assert r.status_code == 409
    assert "is not declared by version 1" in r.json()["detail"]
    assert "declared: counts, enrich" in r.json()["detail"]
    # Another run's token reaches nothing here.
    other_id, other_token = make_current_run(db, "j")
    assert _report(client, run_id, other_token).status_code == 403
    assert other_id != run_id


def test_a_report_with_a_body_renews_a_run_token_in_the_second_half_of_its_life(
    client: TestClient, db: Engine, cluster: str
) -> None:
    # A request with a body is authenticated by the middleware, before its body is read; its
    # renewal of the run token used to be rolled back with that check's session.
    _job(client)
    run_id, token = make_current_run(db, "j")
    with db.begin() as conn:
        conn.execute(
            text("update api_tokens set expires_at = now() + interval '1 hour' where run_id = :r"),
            {"r": run_id},
        )
    assert _report(client, run_id, token).status_code == 204
    with db.connect() as conn:
        left = conn.scalar(
            text("select expires_at - now() from api_tokens where run_id = :r"), {"r": run_id}
        )
    assert left > timedelta(hours=20)


def test_a_declared_sink_is_shown_with_its_secrets_hidden_and_its_options_reach_only_the_run(
    client: TestClient, db: Engine, cluster: str
) -> None:
    sink = {
        "format": "jdbc-like",
        "path": "s3a://key:hunter2@bucket/out",
        "options": {"password": "hunter2", "batchsize": "500"},
    }
    body = version_body(
        queries=[
            {"name": "q", "sources": [{"name": "in", "kind": "rate", "options": {}}], "sink": sink}
        ]
    )
    assert client.post("/api/v1/jobs", json={"name": "j"}).status_code == 201
    created = client.post("/api/v1/jobs/j/versions", json=body)
    assert created.status_code == 201, created.text
    shown = client.get("/api/v1/jobs/j/versions/1").json()["queries"][0]["sink"]
    assert shown["format"] == "jdbc-like" and shown["options"]["batchsize"] == "500"
    assert "hunter2" not in json.dumps(shown)
    run_id, token = make_current_run(db, "j")
    directives = client.get(
        f"/api/v1/runs/{run_id}/directives", headers={"Authorization": f"Bearer {token}"}
    ).json()
    assert directives["sink_options"] == {"q": {"password": "hunter2", "batchsize": "500"}}
