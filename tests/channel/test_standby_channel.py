"""A standby's long-poll: ready on its first call, answered the moment go or release is
committed (PostgreSQL NOTIFY, no polling interval), and refused to any other token."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from app.auth.service import Scope, create_token
from app.core import run_states as states
from app.core.db import make_sessionmaker, transaction
from app.core.errors import Conflict
from app.jobs.models import Job
from app.runs import service as runs
from app.runs.models import Run
from tests.support.api import version_body


def _standby(client: TestClient, db: Engine) -> tuple[int, str, int]:
    """A running run (the job's current) and a standby of the same job, with its token."""
    client.post("/api/v1/jobs", json={"name": "j"})
    client.post("/api/v1/jobs/j/versions", json=version_body())
    with transaction(make_sessionmaker(db)) as session:
        job = session.query(Job).filter_by(name="j").one()
        version = job.versions[0]
        old = runs.create_run(session, job, version, created_by="t")
        runs.transition(session, old, states.RUNNING, reason="test")
        warm = runs.create_standby(session, job, version, created_by="t", operation_id=1)
        _, secret = create_token(session, name=f"run-{warm.id}", scope=Scope.RUN, run_id=warm.id)
        return warm.id, secret, old.id


def _ask_in_background(
    client: TestClient, run_id: int, token: str, wait: int
) -> tuple[threading.Thread, dict[str, Any]]:
    out: dict[str, Any] = {}

    def ask() -> None:
        r = client.get(
            f"/api/v1/runs/{run_id}/standby",
            params={"attempt": 0, "wait": wait},
            headers={"Authorization": f"Bearer {token}"},
        )
        out["at"], out["status"], out["body"] = time.monotonic(), r.status_code, r.json()

    thread = threading.Thread(target=ask)
    thread.start()
    return thread, out


def _until_ready(db: Engine, run_id: int) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with make_sessionmaker(db)() as session:
            if session.get(Run, run_id).standby_ready_at is not None:  # type: ignore[union-attr]
                return
        time.sleep(0.02)
    raise AssertionError("the long-poll never marked the standby ready")


def test_go_answers_a_waiting_standby_at_once(client: TestClient, db: Engine, cluster: str) -> None:
    warm, token, old = _standby(client, db)
    thread, out = _ask_in_background(client, warm, token, wait=20)
    _until_ready(db, warm)  # committed before it waits: the worker sees it ready
    time.sleep(0.3)
    assert not out, "answered before go"
    with transaction(make_sessionmaker(db)) as session:
        runs.transition(session, runs.get_run(session, old), states.STOPPING, reason="t")
        runs.transition(session, runs.get_run(session, old), states.STOPPED, reason="t")
        runs.go(session, warm, reason="test")
    went = time.monotonic()
    thread.join(25)
    assert out["status"] == 200 and out["body"]["go"] is True and out["body"]["stop"] is False
    assert out["at"] - went < 2.0, f"go took {out['at'] - went:.2f}s to arrive"
    with make_sessionmaker(db)() as session:
        run = session.get(Run, warm)
        job = session.get(Job, run.job_id)  # type: ignore[union-attr]
        assert run is not None and run.state == states.RUNNING and run.go_at is not None
        assert job is not None and job.current_run_id == warm and job.state == states.RUNNING


def test_go_is_refused_while_the_run_it_replaces_may_still_run(
    client: TestClient, db: Engine, cluster: str
) -> None:
    """The run state's owner keeps one driver on a job's output: go waits for the end of the
    run it replaces, whoever asks (app/runs/service.py::go)."""
    warm, _, old = _standby(client, db)
    factory = make_sessionmaker(db)
    for state in (states.RUNNING, states.STOPPING):
        with transaction(factory) as session:
            if state != states.RUNNING:
                runs.transition(session, runs.get_run(session, old), state, reason="t")
        with transaction(factory) as session, pytest.raises(Conflict, match=f"is {state}"):
            runs.go(session, warm, reason="test")
        with factory() as session:
            assert runs.get_run(session, warm).state == states.STANDBY  # still waiting
    with transaction(factory) as session:
        runs.transition(session, runs.get_run(session, old), states.STOPPED, reason="t")
        runs.go(session, warm, reason="test")
    with factory() as session:
        run = session.get(Run, warm)
        assert run is not None and run.state == states.RUNNING and run.go_at is not None


def test_release_tells_the_standby_to_exit(client: TestClient, db: Engine, cluster: str) -> None:
    warm, token, _ = _standby(client, db)
    thread, out = _ask_in_background(client, warm, token, wait=20)
    _until_ready(db, warm)
    with transaction(make_sessionmaker(db)) as session:
        run = runs.release_standby(session, runs.get_run(session, warm), "operation cancelled")
        assert run.state == states.STOPPING and run.kill_attempt == run.attempt
    thread.join(25)
    body = out["body"]
    assert body["stop"] is True and body["go"] is False and body["reason"] == "released"


def test_no_answer_within_the_wait_is_neither_go_nor_stop(
    client: TestClient, db: Engine, cluster: str
) -> None:
    warm, token, _ = _standby(client, db)
    started = time.monotonic()
    r = client.get(
        f"/api/v1/runs/{warm}/standby",
        params={"attempt": 0, "wait": 1},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert r.status_code == 200 and 0.9 < time.monotonic() - started < 5
    assert r.json()["go"] is False and r.json()["stop"] is False
    assert r.json()["state"] == "standby"
    old_attempt = client.get(
        f"/api/v1/runs/{warm}/standby",
        params={"attempt": 3},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert old_attempt.json()["stop"] is True and "superseded" in old_attempt.json()["reason"]


def test_the_long_poll_is_bounded_and_the_run_token_only(
    client: TestClient, db: Engine, cluster: str
) -> None:
    warm, token, old = _standby(client, db)
    too_long = client.get(
        f"/api/v1/runs/{warm}/standby",
        params={"attempt": 0, "wait": 600},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert too_long.status_code == 422
    assert "wait" in str(too_long.json()) and too_long.headers["content-type"].startswith(
        "application/problem+json"
    )
    # The client's own (admin) token may not: the channel is the driver's.
    assert client.get(f"/api/v1/runs/{warm}/standby", params={"attempt": 0}).status_code == 403
    assert (
        client.get(
            f"/api/v1/runs/{old}/standby",
            params={"attempt": 0},
            headers={"Authorization": f"Bearer {token}"},
        ).status_code
        == 403
    )
