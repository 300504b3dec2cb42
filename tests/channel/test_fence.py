"""POST /runs/{id}/fenced: a driver that stopped its queries at a batch boundary and its Spark
session says so, and its stopping run ends then, not when the backend sees the process exit.
Only the run's current attempt counts; a repeat changes nothing. (On real Spark, both
backends: tests/runtime/test_fence.py.)"""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import Engine, select

from app.core import run_states as states
from app.core.db import make_sessionmaker, transaction
from app.runs.models import Run, RunTransition
from tests.support.api import make_current_run, version_body


def _job(client: TestClient) -> None:
    body = version_body(
        queries=[{"name": "q", "sources": [{"name": "events", "kind": "rate", "options": {}}]}]
    )
    assert client.post("/api/v1/jobs", json={"name": "j"}).status_code == 201
    assert client.post("/api/v1/jobs/j/versions", json=body).status_code == 201


def _set(db: Engine, run_id: int, **fields: Any) -> None:
    with transaction(make_sessionmaker(db)) as session:
        run = session.get_one(Run, run_id)
        for key, value in fields.items():
            setattr(run, key, value)


def _run(db: Engine, run_id: int) -> Run:
    with make_sessionmaker(db)() as session:
        run = session.get_one(Run, run_id)
        session.expunge(run)
        return run


def _last_reason(db: Engine, run_id: int) -> str:
    with make_sessionmaker(db)() as session:
        return (
            session.scalars(
                select(RunTransition.reason)
                .where(RunTransition.run_id == run_id)
                .order_by(RunTransition.id.desc())
            ).first()
            or ""
        )


def _fence(client: TestClient, run_id: int, token: str, attempt: int = 0) -> None:
    r = client.post(
        f"/api/v1/runs/{run_id}/fenced",
        headers={"Authorization": f"Bearer {token}"},
        json={"attempt": attempt},
    )
    assert r.status_code == 204, r.text


def test_a_stopping_run_ends_when_its_driver_is_fenced(
    client: TestClient, db: Engine, cluster: str
) -> None:
    _job(client)
    run_id, token = make_current_run(db, "j", state=states.STOPPING)
    _set(db, run_id, stop_reason="update", backend_id="driver-1")
    _fence(client, run_id, token)
    run = _run(db, run_id)
    assert run.state == states.STOPPED and run.ended_at is not None
    assert "fenced" in _last_reason(db, run_id)
    assert client.get("/api/v1/jobs/j").json()["state"] == states.STOPPED
    # The token died with the run: a second report is refused, nothing changes.
    r = client.post(
        f"/api/v1/runs/{run_id}/fenced",
        headers={"Authorization": f"Bearer {token}"},
        json={"attempt": 0},
    )
    assert r.status_code == 401, r.text
    assert _run(db, run_id).state == states.STOPPED


def test_a_cancelled_run_ends_cancelled(client: TestClient, db: Engine, cluster: str) -> None:
    _job(client)
    run_id, token = make_current_run(db, "j", state=states.STOPPING)
    _set(db, run_id, stop_reason="cancel")
    _fence(client, run_id, token)
    assert _run(db, run_id).state == states.CANCELLED


def test_only_the_current_attempt_and_a_stopping_run_count(
    client: TestClient, db: Engine, cluster: str
) -> None:
    """An older attempt's driver being replaced, or a driver of a run nobody asked to stop
    (its user code stopped its queries): the run goes on; the backend decides."""
    _job(client)
    run_id, token = make_current_run(db, "j", state=states.STOPPING)
    _set(db, run_id, stop_reason="update", attempt=2)
    _fence(client, run_id, token, attempt=1)
    assert _run(db, run_id).state == states.STOPPING
    _set(db, run_id, state=states.RUNNING)
    _fence(client, run_id, token, attempt=2)
    assert _run(db, run_id).state == states.RUNNING


def test_a_finished_drain_ends_drained_and_an_unfinished_one_waits(
    client: TestClient, db: Engine, cluster: str
) -> None:
    _job(client)
    run_id, token = make_current_run(db, "j", state=states.DRAINING)
    _fence(client, run_id, token)
    assert _run(db, run_id).state == states.DRAINING  # no drained report: not drained
    _set(db, run_id, drain={"end_offsets": {}, "drained_at": "2026-11-27T00:00:00+00:00"})
    _fence(client, run_id, token)
    assert _run(db, run_id).state == states.DRAINED


def test_a_restart_hands_over_to_its_spare_without_a_kill(
    client: TestClient, db: Engine, cluster: str
) -> None:
    """Fenced, the old attempt's application is not remembered to be killed: the spare is
    adopted on the reconciler's next pass instead of the one after the kill."""
    _job(client)
    run_id, token = make_current_run(db, "j", state=states.STOPPING)
    _set(
        db,
        run_id,
        stop_reason="restart",
        backend_id="driver-1",
        spare_seq=1,
        spare_attempt=1,
        spare_backend_id="driver-2",
    )
    _fence(client, run_id, token)
    run = _run(db, run_id)
    assert (run.state, run.attempt) == (states.SUBMITTING, 1)
    assert run.previous_backend_id is None and run.backend_id is None
    assert "spare takes over" in _last_reason(db, run_id)


def test_a_bad_report_is_a_clear_error(client: TestClient, db: Engine, cluster: str) -> None:
    _job(client)
    run_id, token = make_current_run(db, "j", state=states.STOPPING)
    auth = {"Authorization": f"Bearer {token}"}
    for body in ({}, {"attempt": -1}, {"attempt": "two"}):
        r = client.post(f"/api/v1/runs/{run_id}/fenced", headers=auth, json=body)
        assert r.status_code == 422, r.text
        assert r.headers["content-type"].startswith("application/problem+json")
        assert "attempt" in r.text
    assert _run(db, run_id).state == states.STOPPING
