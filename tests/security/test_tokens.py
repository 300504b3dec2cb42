"""Extends the route table of tests/api/test_auth.py (401 without a token, 403 with too weak
a scope, for every route) with what a token must not do: a run's token reaches only its own
run's runtime channel; revoked, expired and malformed credentials are refused everywhere."""

from __future__ import annotations

from datetime import timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from app.auth.service import Scope, create_token, revoke_token
from app.core.db import make_sessionmaker, transaction, utcnow
from app.jobs.models import Job
from app.runs.models import Run
from tests.api.conftest import version_body
from tests.api.test_auth import REQUIRED, _concrete

# The runtime channel: the only routes a run token may call, and only for its own run.
CHANNEL = {(m, p) for (m, p) in REQUIRED if p.startswith("/api/v1/runs/{run_id}/") and m != "GET"}
CHANNEL |= {("GET", "/api/v1/runs/{run_id}/directives")}
CHANNEL |= {("GET", "/api/v1/runs/{run_id}/standby")}


def _run(client: TestClient, db: Engine) -> int:
    assert client.post("/api/v1/jobs", json={"name": "j"}).status_code == 201
    assert client.post("/api/v1/jobs/j/versions", json=version_body()).status_code == 201
    with transaction(make_sessionmaker(db)) as session:
        job = session.query(Job).filter_by(name="j").one()
        run = Run(
            job_id=job.id,
            version_id=job.versions[0].id,
            state="running",
            attempt=0,
            failures=0,
            created_by="t",
            progress={},
        )
        session.add(run)
        session.flush()
        return run.id


def _token(db: Engine, **kw: object) -> str:
    with transaction(make_sessionmaker(db)) as session:
        _, secret = create_token(session, name="t", **kw)  # type: ignore[arg-type]
    return secret


def _call(client: TestClient, method: str, path: str, token: str, run_id: int) -> int:
    url = _concrete(path).replace("/runs/1", f"/runs/{run_id}")
    r = client.request(method, url, headers={"Authorization": f"Bearer {token}"}, json={})
    return r.status_code


def test_run_token_is_confined_to_its_own_runtime_channel(
    client: TestClient,
    db: Engine,
    cluster: str,
) -> None:
    run_id = _run(client, db)
    mine = _token(db, scope=Scope.RUN, run_id=run_id)
    refused = {}
    for method, path in sorted(REQUIRED):
        status = _call(client, method, path, mine, run_id)
        allowed = (method, path) in CHANNEL
        if allowed != (status not in (401, 403)):
            refused[(method, path)] = status
    assert not refused, refused
    # The same token on another run's channel: 403, whatever the route.
    for method, path in sorted(CHANNEL):
        assert _call(client, method, path, mine, run_id + 1) == 403, (method, path)


@pytest.mark.parametrize("how", ["revoked", "expired"])
def test_dead_tokens_are_refused_everywhere(client: TestClient, db: Engine, how: str) -> None:
    with transaction(make_sessionmaker(db)) as session:
        row, secret = create_token(
            session,
            name="dead",
            scope=Scope.ADMIN,
            expires_at=utcnow() - timedelta(seconds=1) if how == "expired" else None,
        )
        if how == "revoked":
            revoke_token(session, row.id)
    for method, path in sorted(REQUIRED):
        status = _call(client, method, path, secret, 1)
        assert status == 401, (method, path, status)


@pytest.mark.parametrize(
    "header",
    [
        "Basic YWRtaW46YWRtaW4=",
        "Bearer",
        "Bearer ",
        "Token tg_x",
        "bearer tg_" + "x" * 5000,
        "Bearer tg_\u00e9t\u00e9".encode(),  # UTF-8 bytes in a latin-1 header
        b"Bearer tg_\x00\x01",
        "Bearer tg_a tg_b",
    ],
)
def test_malformed_authorization_is_401(client: TestClient, header: str | bytes) -> None:
    for method, path in [("GET", "/api/v1/jobs"), ("POST", "/api/v1/tokens")]:
        r = client.request(method, path, headers={"Authorization": header}, json={})
        assert r.status_code == 401, (header, r.status_code, r.text)
        assert r.headers["content-type"].startswith("application/problem+json")
        assert "www-authenticate" in r.headers


@pytest.mark.parametrize("expires_at", [0, "1970-01-01T00:00:00Z", "2000-01-01T00:00:00"])
def test_a_token_cannot_be_made_expired_already(client: TestClient, expires_at: object) -> None:
    """Issue 26, #15: ``"expires_at": 0`` made a token that had expired in 1970."""
    r = client.post(
        "/api/v1/tokens", json={"name": "late", "scope": "read", "expires_at": expires_at}
    )
    assert r.status_code == 422, r.text
    assert "future" in r.text
    assert "late" not in {t["name"] for t in client.get("/api/v1/tokens").json()}
    later = client.post(
        "/api/v1/tokens",
        json={"name": "later", "scope": "read", "expires_at": "2999-01-01T00:00:00"},
    )
    assert later.status_code == 201 and later.json()["expires_at"].startswith("2999-01-01")
