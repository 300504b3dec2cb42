"""Extends the route table of tests/api/test_auth.py (401 without a token, 403 with too weak
a scope, for every route) with what a token must not do: a run's token reaches only its own
run's runtime channel; revoked, expired and malformed credentials are refused everywhere."""

from __future__ import annotations

from datetime import timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, select, update

from app.auth.models import ApiToken
from app.auth.service import (
    RUN_TOKEN_LIFETIME,
    Scope,
    create_run_token,
    create_token,
    revoke_run_tokens,
    revoke_token,
)
from app.core.db import make_sessionmaker, transaction, utcnow
from app.jobs.models import Job
from app.runs.models import Run
from tests.api.test_auth import REQUIRED, _concrete
from tests.support.api import version_body

# The runtime channel: the only routes a run token may call, and only for its own run.
CHANNEL = {(m, p) for (m, p) in REQUIRED if p.startswith("/api/v1/runs/{run_id}/") and m != "GET"}
CHANNEL |= {("GET", "/api/v1/runs/{run_id}/directives")}
CHANNEL |= {("GET", "/api/v1/runs/{run_id}/standby")}
EXCHANGE = ("POST", "/api/v1/runs/{run_id}/token")  # the bootstrap token's one call
CHANNEL -= {EXCHANGE}


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


def test_a_run_token_lives_a_day_and_its_driver_renews_it_by_using_it(
    client: TestClient, db: Engine, cluster: str
) -> None:
    """Issue 26 #9: a run token no longer lives as long as its run: it expires a day after
    its last renewal, and the driver's own channel calls renew it."""
    run_id = _run(client, db)
    with transaction(make_sessionmaker(db)) as session:
        token = create_run_token(session, run_id, f"run-{run_id}")
    factory = make_sessionmaker(db)

    def expires_in() -> timedelta:
        with transaction(factory) as session:
            row = session.scalars(select(ApiToken).where(ApiToken.run_id == run_id)).one()
            assert row.expires_at is not None
            return row.expires_at - utcnow()

    def set_expiry(delta: timedelta) -> None:
        with transaction(factory) as session:
            session.execute(
                update(ApiToken)
                .where(ApiToken.run_id == run_id)
                .values(expires_at=utcnow() + delta)
            )

    directives = f"/api/v1/runs/{run_id}/directives?attempt=0"
    auth = {"Authorization": f"Bearer {token}"}
    day = RUN_TOKEN_LIFETIME
    assert day - timedelta(minutes=1) < expires_in() <= day
    # In the first half of its life, a call changes nothing (no write per call).
    set_expiry(day - timedelta(hours=1))
    assert client.get(directives, headers=auth).status_code == 200
    assert expires_in() < day - timedelta(minutes=59)
    # In the second half, the driver's next call gives it a full day again.
    set_expiry(timedelta(hours=1))
    assert client.get(directives, headers=auth).status_code == 200
    assert expires_in() > day - timedelta(minutes=1)
    # Once past, it is refused like any expired token, and its use does not revive it.
    set_expiry(-timedelta(seconds=1))
    assert client.get(directives, headers=auth).status_code == 401
    assert expires_in() < timedelta(0)


def test_a_bootstrap_token_buys_one_run_token_and_nothing_else(
    client: TestClient, db: Engine, cluster: str
) -> None:
    """Issue 26 #14: a driver is started with a single-use bootstrap token (which Livy shows
    as conf); its one use is the trade for the run token, so what was shown is spent."""
    run_id = _run(client, db)
    with transaction(make_sessionmaker(db)) as session:
        bootstrap = create_run_token(session, run_id, f"run-{run_id}", Scope.BOOTSTRAP)
    for method, path in sorted(set(REQUIRED) - {EXCHANGE}):
        status = _call(client, method, path, bootstrap, run_id)
        assert status in (401, 403), (method, path, status)
    # Another run's exchange: refused, and the token is not spent by it.
    assert _call(client, *EXCHANGE, bootstrap, run_id + 1) == 403
    url = f"/api/v1/runs/{run_id}/token"
    traded = client.post(url, headers={"Authorization": f"Bearer {bootstrap}"})
    assert traded.status_code == 200, traded.text
    token = traded.json()["token"]
    assert _call(client, "GET", "/api/v1/runs/{run_id}/directives", token, run_id) == 200
    again = client.post(url, headers={"Authorization": f"Bearer {bootstrap}"})
    assert again.status_code == 401 and "already exchanged" in again.json()["detail"]
    # The run token itself buys nothing here: it is not a bootstrap token.
    assert client.post(url, headers={"Authorization": f"Bearer {token}"}).status_code == 403
    # Both rows carry the run's name, so revoking the run's tokens ends the traded one too.
    with transaction(make_sessionmaker(db)) as session:
        rows = session.scalars(select(ApiToken).where(ApiToken.run_id == run_id)).all()
        assert sorted((r.scope, r.name) for r in rows) == [
            ("bootstrap", f"run-{run_id}"),
            ("run", f"run-{run_id}"),
        ]
        revoke_run_tokens(session, run_id)
    assert _call(client, "GET", "/api/v1/runs/{run_id}/directives", token, run_id) == 401
