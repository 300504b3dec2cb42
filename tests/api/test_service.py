from __future__ import annotations

import json
from pathlib import Path

from fastapi.testclient import TestClient

from app.api.main import create_app
from app.core.config import Settings
from app.core.db import make_engine
from tests.conftest import ADMIN_TOKEN

OPENAPI = Path(__file__).resolve().parents[2] / "openapi" / "openapi.json"


def test_health_readiness_metrics(client: TestClient) -> None:
    assert client.get("/healthz", headers={"Authorization": ""}).json() == {"status": "ok"}
    ready = client.get("/readyz", headers={"Authorization": ""})
    assert ready.status_code == 200 and ready.json()["status"] == "ready"
    client.get("/api/v1/jobs")
    metrics = client.get("/metrics")
    assert metrics.status_code == 200
    assert (
        'tidegate_http_requests_total{method="GET",operation="job.list",status="200"}'
        in metrics.text
    )
    assert client.get("/metrics", headers={"Authorization": ""}).status_code == 401
    assert ready.headers["x-request-id"]
    assert (
        client.get("/healthz", headers={"X-Request-Id": "abc-1"}).headers["x-request-id"] == "abc-1"
    )


def test_database_outage_is_503_problem(settings: Settings) -> None:
    dead = make_engine("postgresql://postgres@127.0.0.1:1/nothing", pool_size=1)
    app = create_app(settings, engine=dead)
    with TestClient(app, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as c:
        for method, path, body in [
            ("GET", "/api/v1/jobs", None),
            ("POST", "/api/v1/jobs", {"name": "x"}),
        ]:
            r = c.request(method, path, json=body)
            assert r.status_code == 503, r.text
            assert r.headers["content-type"].startswith("application/problem+json")
            assert r.headers["retry-after"]
        ready = c.get("/readyz", headers={"Authorization": ""})
        assert ready.status_code == 503
        # Unauthenticated: nothing of the driver's error (host, port, user, database).
        assert ready.json()["detail"] == "The database is unreachable."


def test_readiness_names_no_revisions(client: TestClient) -> None:
    client.app.state.migration_head = "9999-not-a-revision"  # type: ignore[attr-defined]
    ready = client.get("/readyz", headers={"Authorization": ""})
    assert ready.status_code == 503 and ready.headers["retry-after"]
    assert ready.json()["detail"] == "The database schema is not at head: run 'tidegate migrate'."


def test_bad_bodies_are_problems(client: TestClient) -> None:
    r = client.post(
        "/api/v1/jobs", content=b"{not json", headers={"Content-Type": "application/json"}
    )
    assert r.status_code == 422 and r.headers["content-type"].startswith("application/problem+json")
    big = client.post(
        "/api/v1/jobs",
        content=b"x" * (9 * 1024 * 1024),
        headers={"Content-Type": "application/json"},
    )
    assert big.status_code == 413 and "bytes" in big.json()["detail"]
    deep = "[" * 5000 + "]" * 5000
    r = client.post(
        "/api/v1/jobs", content=deep.encode(), headers={"Content-Type": "application/json"}
    )
    assert r.status_code in (400, 422)
    assert client.get("/api/v1/nothing-here").json()["status"] == 404
    assert client.post("/api/v1/jobs", json={"name": "ünïcödé"}).status_code == 422
    assert client.get("/api/v1/jobs/" + "x" * 300).status_code == 422


def test_openapi_is_committed_and_current(client: TestClient) -> None:
    committed = json.loads(OPENAPI.read_text())
    assert committed == client.app.openapi(), (  # type: ignore[attr-defined]
        "openapi/openapi.json is stale: run 'make openapi' and commit it"
    )
