"""A request and a worker step that touch the same run take its job's rows in one order (the
job, then the run), so neither waits for the other in a circle. A cancel recorded while a
worker step held the run it names used to deadlock: PostgreSQL aborted one of them, and the
request answered 503."""

from __future__ import annotations

import threading
import time

from fastapi.testclient import TestClient
from sqlalchemy import Engine, text

from app.core.db import make_sessionmaker, transaction
from app.runs import service as runs
from tests.support.api import make_current_run, version_body


def _waiting_for_a_lock(db: Engine) -> int:
    with db.connect() as conn:
        return conn.scalar(
            text(
                "select count(*) from pg_stat_activity "
                "where datname = current_database() and wait_event_type = 'Lock'"
            )
        )


def test_a_cancel_while_a_worker_step_holds_the_run_waits_for_it_instead_of_deadlocking(
    client: TestClient, cluster: str, db: Engine
) -> None:
    assert client.post("/api/v1/jobs", json={"name": "locks"}).status_code == 201
    assert client.post("/api/v1/jobs/locks/versions", json=version_body()).status_code == 201
    run_id, _ = make_current_run(db, "locks")
    factory = make_sessionmaker(db)
    failures: list[BaseException] = []
    holding = threading.Event()

    def worker_step() -> None:
        # What a worker step does: lock the run, then change it (which updates its job too),
        # while the request below arrives and waits.
        try:
            with transaction(factory) as session:
                run = runs.lock_run(session, run_id)
                assert run is not None
                holding.set()
                deadline = time.monotonic() + 20
                while _waiting_for_a_lock(db) == 0:
                    assert time.monotonic() < deadline, "the request never waited for the step"
                    time.sleep(0.02)
                runs.transition(session, run, run.state, reason="a step of an operation")
        except BaseException as exc:
            failures.append(exc)

    step = threading.Thread(target=worker_step)
    step.start()
    assert holding.wait(10)
    r = client.post("/api/v1/jobs/locks/cancel")
    step.join(30)
    assert not step.is_alive()
    assert r.status_code == 202, r.text
    assert failures == []
    assert r.json()["run_id"] == run_id
