"""Every route refuses a missing token (401) and a too-weak scope (403)."""

from __future__ import annotations

import json
import re

import pytest
from fastapi.testclient import TestClient

from app.api.openapi_dump import render

# The scope each route needs. A new route must be added here, or the coverage test fails.
REQUIRED = {
    ("GET", "/metrics"): "read",
    ("POST", "/api/v1/clusters"): "admin",
    ("GET", "/api/v1/clusters"): "read",
    ("GET", "/api/v1/clusters/{name}"): "read",
    ("DELETE", "/api/v1/clusters/{name}"): "admin",
    ("POST", "/api/v1/jobs"): "operate",
    ("GET", "/api/v1/jobs"): "read",
    ("GET", "/api/v1/jobs/{job}"): "read",
    ("PATCH", "/api/v1/jobs/{job}"): "operate",
    ("DELETE", "/api/v1/jobs/{job}"): "operate",
    ("POST", "/api/v1/jobs/{job}/versions"): "operate",
    ("GET", "/api/v1/jobs/{job}/versions"): "read",
    ("GET", "/api/v1/jobs/{job}/versions/{number}"): "read",
    ("POST", "/api/v1/jobs/{job}/submit"): "operate",
    ("POST", "/api/v1/jobs/{job}/stop"): "operate",
    ("POST", "/api/v1/jobs/{job}/cancel"): "operate",
    ("POST", "/api/v1/jobs/{job}/drain"): "operate",
    ("POST", "/api/v1/runs/{run_id}/drain"): "run",  # the run's own token only
    ("POST", "/api/v1/runs/{run_id}/fenced"): "run",
    ("POST", "/api/v1/runs/{run_id}/query-failures"): "run",
    ("POST", "/api/v1/jobs/{job}/restart"): "operate",
    ("GET", "/api/v1/operations/{op_id}"): "read",
    ("GET", "/api/v1/jobs/{job}/operations"): "read",
    ("GET", "/api/v1/jobs/{job}/runs"): "read",
    ("GET", "/api/v1/runs/{run_id}"): "read",
    ("GET", "/api/v1/runs/{run_id}/progress"): "read",
    ("GET", "/api/v1/runs/{run_id}/accounting"): "read",
    ("GET", "/api/v1/runs/{run_id}/directives"): "run",  # the run's own token only
    ("GET", "/api/v1/runs/{run_id}/standby"): "run",
    ("POST", "/api/v1/runs/{run_id}/token"): "bootstrap",  # a driver's one trade
    ("POST", "/api/v1/runs/{run_id}/progress"): "run",  # the run's own token only
    ("GET", "/api/v1/jobs/{job}/startpoints"): "read",
    ("PUT", "/api/v1/jobs/{job}/startpoints"): "operate",
    ("DELETE", "/api/v1/jobs/{job}/startpoints/{source}"): "operate",
    ("DELETE", "/api/v1/jobs/{job}/startpoints/{source}/{partition}"): "operate",
    ("POST", "/api/v1/jobs/{job}/startpoints/preview"): "read",
    ("POST", "/api/v1/jobs/{job}/startpoints/{application_id}/revert"): "operate",
    ("POST", "/api/v1/runs/{run_id}/startpoints/applied"): "run",  # the run's token only
    ("POST", "/api/v1/jobs/{job}/snapshots"): "operate",
    ("POST", "/api/v1/jobs/{job}/update"): "operate",
    ("GET", "/api/v1/snapshots"): "read",
    ("GET", "/api/v1/jobs/{job}/snapshots/{name}"): "read",
    ("DELETE", "/api/v1/jobs/{job}/snapshots/{name}"): "operate",
    ("GET", "/api/v1/jobs/{job}/snapshot-coordinates"): "read",
    ("GET", "/api/v1/jobs/{job}/snapshot-retention"): "read",
    ("PUT", "/api/v1/jobs/{job}/snapshot-retention"): "operate",
    ("POST", "/api/v1/jobs/{job}/resume-points/build"): "read",
    ("POST", "/api/v1/jobs/{job}/compatibility"): "read",
    ("GET", "/api/v1/events"): "read",
    ("GET", "/api/v1/source-kinds"): "read",
    ("POST", "/api/v1/tokens"): "admin",
    ("GET", "/api/v1/tokens"): "admin",
    ("DELETE", "/api/v1/tokens/{token_id}"): "admin",
}
PUBLIC = {("GET", "/healthz"), ("GET", "/readyz")}
# "run": the runtime channel, which no API token reaches, not even admin.
RANK = {"read": 1, "operate": 2, "admin": 3, "run": 4, "bootstrap": 5}


def _routes() -> list[tuple[str, str]]:
    spec = json.loads(render())  # the app's own spec, built without a database
    return sorted((method.upper(), path) for path, item in spec["paths"].items() for method in item)


def _concrete(path: str) -> str:
    return re.sub(
        r"\{[^}]+\}",
        lambda m: (
            "1"
            if m.group(0)
            in ("{number}", "{token_id}", "{op_id}", "{run_id}", "{partition}", "{application_id}")
            else "x"
        ),
        path,
    )


def test_every_route_is_in_the_table() -> None:
    routes = set(_routes())
    assert routes - PUBLIC == set(REQUIRED), "add new routes to REQUIRED"


@pytest.mark.parametrize(("method", "path"), sorted(REQUIRED))
def test_no_token_is_401(client: TestClient, method: str, path: str) -> None:
    r = client.request(method, _concrete(path), headers={"Authorization": ""}, json={})
    assert r.status_code == 401, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    assert r.headers["www-authenticate"].startswith("Bearer")
    bad = client.request(
        method, _concrete(path), headers={"Authorization": "Bearer tg_nope"}, json={}
    )
    assert bad.status_code == 401


@pytest.mark.parametrize(("method", "path"), sorted(REQUIRED))
def test_weaker_scope_is_403(client: TestClient, token_for, method: str, path: str) -> None:  # type: ignore[no-untyped-def]
    needed = RANK[REQUIRED[(method, path)]]
    for scope, rank in RANK.items():
        if rank >= needed:
            continue
        token = token_for(scope)
        r = client.request(
            method, _concrete(path), headers={"Authorization": f"Bearer {token}"}, json={}
        )
        assert r.status_code == 403, (scope, r.text)
        assert REQUIRED[(method, path)] in r.json()["detail"]


def test_run_tokens_hold_no_api_scope(client: TestClient, db) -> None:  # type: ignore[no-untyped-def]
    from app.auth.service import Scope, create_token
    from app.core.db import make_sessionmaker, transaction

    with transaction(make_sessionmaker(db)) as session:
        _, secret = create_token(session, name="run-1", scope=Scope.RUN, run_id=1)
    assert (
        client.get("/api/v1/jobs", headers={"Authorization": f"Bearer {secret}"}).status_code == 403
    )


def test_token_lifecycle(client: TestClient) -> None:
    r = client.post("/api/v1/tokens", json={"name": "ci", "scope": "read"})
    assert r.status_code == 201
    secret, token_id = r.json()["token"], r.json()["id"]
    auth = {"Authorization": f"Bearer {secret}"}
    assert client.get("/api/v1/jobs", headers=auth).status_code == 200
    listed = client.get("/api/v1/tokens").text
    assert secret not in listed and "ci" in listed
    assert client.delete(f"/api/v1/tokens/{token_id}").status_code == 204
    assert client.get("/api/v1/jobs", headers=auth).status_code == 401
    assert client.delete(f"/api/v1/tokens/{token_id}").status_code == 404
    assert secret not in client.get("/api/v1/events").text
