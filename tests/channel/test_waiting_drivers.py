"""Waiting drivers cost nothing: a standby's or a spare's long-poll holds no API thread and no
database connection while it waits (one LISTEN connection per API process fans NOTIFY out),
so reads keep answering however many drivers wait, and no go is missed."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import Engine, text, update

from app.api.main import create_app
from app.auth.service import Scope, create_token
from app.channel.routes import PLACES_PER_RUN
from app.core import run_states as states
from app.core.config import Settings
from app.core.db import make_engine, make_sessionmaker, transaction
from app.jobs.models import Job
from app.runs import service as runs
from app.runs.models import Run
from tests.conftest import ADMIN_TOKEN
from tests.support.api import version_body
from tests.support.waiting import served

POOL = 2  # the API's pool: 2 pooled + 2 overflow connections, far fewer than the waiters
WAITERS = 60
LIMIT = WAITERS + 2


@dataclass
class Api:
    url: str
    app: FastAPI
    engine: Engine

    def admin(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.url, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=30
        )


@pytest.fixture
def api(db: Engine, database_url: str, tmp_path: Path) -> Iterator[Api]:
    settings = Settings(
        database_url=None,
        admin_token=ADMIN_TOKEN,  # type: ignore[arg-type]
        data_dir=tmp_path / "data",
        checkpoint_root=tmp_path / "checkpoints",
        log_json=False,
        db_pool_size=POOL,
        max_waiting_drivers=LIMIT,
    )
    engine = make_engine(database_url, pool_size=POOL, application_name="tidegate-test-api")
    app = create_app(settings, engine)
    with served(app) as url:  # its lifespan closes the notifier and the engine
        yield Api(url, app, engine)


def _standbys(api: Api, db: Engine, count: int) -> list[tuple[int, str]]:
    """``count`` standbys of one running job, each with its own run token."""
    _job(api, "fleet")
    out = []
    with transaction(make_sessionmaker(db)) as session:
        job = session.query(Job).filter_by(name="fleet").one()
        version = job.versions[0]
        old = runs.create_run(session, job, version, created_by="t")
        runs.transition(session, old, states.RUNNING, reason="test")
        for i in range(count):
            warm = runs.create_standby(session, job, version, created_by="t", operation_id=i)
            _, secret = create_token(
                session, name=f"run-{warm.id}", scope=Scope.RUN, run_id=warm.id
            )
            out.append((warm.id, secret))
    return out


def _job(api: Api, name: str) -> None:
    """A cluster and the job ``name`` with one version, through the API."""
    with api.admin() as client:
        assert client.post("/api/v1/clusters", json=_cluster()).status_code == 201
        assert client.post("/api/v1/jobs", json={"name": name}).status_code == 201
        r = client.post(f"/api/v1/jobs/{name}/versions", json=version_body())
        assert r.status_code == 201, r.text


def _cluster() -> dict[str, str]:
    return {"name": "local", "kind": "livy", "url": "http://127.0.0.1:9"}


def _ask(url: str, run_id: int, token: str, wait: int) -> tuple[float, int, Any, httpx.Headers]:
    with httpx.Client(timeout=wait + 30) as client:
        r = client.get(
            f"{url}/api/v1/runs/{run_id}/standby",
            params={"attempt": 0, "wait": wait},
            headers={"Authorization": f"Bearer {token}"},
        )
    return time.monotonic(), r.status_code, r.json(), r.headers


def _go(db: Engine, run_id: int) -> None:
    with transaction(make_sessionmaker(db)) as session:
        run = session.get(Run, run_id)
        assert run is not None
        # The run it replaces has ended, as an update's stop leaves it (go is refused before).
        session.execute(
            update(Run)
            .where(Run.job_id == run.job_id, Run.id != run_id, Run.state == states.RUNNING)
            .values(state=states.STOPPED)
        )
        runs.go(session, run.id, reason="test go")


def _until(predicate: Any, seconds: float = 15) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def _connections(db: Engine) -> dict[str, int]:
    with db.connect() as conn:
        rows = conn.execute(
            text(
                "select application_name, count(*) from pg_stat_activity "
                "where datname = current_database() group by 1"
            )
        ).all()
    return {name: n for name, n in rows}


def test_many_waiting_drivers_leave_reads_fast_and_connections_few(api: Api, db: Engine) -> None:
    standbys = _standbys(api, db, WAITERS)
    with ThreadPoolExecutor(WAITERS) as pool:
        asks = [pool.submit(_ask, api.url, run_id, token, 20) for run_id, token in standbys]
        _until(lambda: api.app.state.notifier.waiting == WAITERS)

        # Every driver is waiting: reads still answer at once, none a 503.
        latencies = []
        with api.admin() as client:
            for _ in range(20):
                started = time.monotonic()
                r = client.get("/api/v1/jobs")
                latencies.append(time.monotonic() - started)
                assert r.status_code == 200, r.text
                assert client.get("/api/v1/jobs/fleet").status_code == 200
        assert max(latencies) < 2.0, latencies  # a 5 s slot wait (503) was the failure

        # PostgreSQL sees the API's pool (at most 2 x POOL) and one LISTEN connection,
        # not one connection per waiting driver.
        seen = _connections(db)
        assert seen.get("tidegate-test-api", 0) <= 2 * POOL, seen
        assert seen.get("tidegate-listen", 0) == 1, seen
        assert all(not a.done() for a in asks), "a long-poll answered before go"

        went = time.monotonic()
        answers = []
        for (run_id, _), ask in zip(standbys, asks, strict=True):
            _go(db, run_id)
            # Its answer before the next go: that go stops this run, as the one it replaces,
            # and a driver that read after the stop would rightly hear "no go".
            answers.append(ask.result())
    assert all(status == 200 and body["go"] for _, status, body, _ in answers), answers[:3]
    assert max(at for at, *_ in answers) - went < 5.0


def test_a_go_racing_the_start_of_the_wait_is_not_missed(api: Api, db: Engine) -> None:
    rounds = 30
    standbys = _standbys(api, db, rounds)
    rng = random.Random(2411)
    with ThreadPoolExecutor(2) as pool:
        for run_id, token in standbys:
            ask = pool.submit(_ask, api.url, run_id, token, 20)
            time.sleep(rng.uniform(0, 0.03))  # go lands before, during or after the first read
            go_at = time.monotonic()
            _go(db, run_id)
            at, status, body, _ = ask.result()
            assert status == 200 and body["go"], body
            assert at - go_at < 3.0, f"run {run_id}: go heard after {at - go_at:.1f}s"


def test_a_lost_listen_connection_misses_no_go(api: Api, db: Engine) -> None:
    (run_id, token), *_ = _standbys(api, db, 1)
    notifier = api.app.state.notifier
    with ThreadPoolExecutor(1) as pool:
        ask = pool.submit(_ask, api.url, run_id, token, 20)
        _until(lambda: notifier.waiting == 1 and notifier.listening)
        with db.connect() as conn:  # PostgreSQL drops the notifier's connection
            conn.execute(
                text(
                    "select pg_terminate_backend(pid) from pg_stat_activity "
                    "where application_name = 'tidegate-listen' and datname = current_database()"
                )
            )
        _until(lambda: not notifier.listening, 5)
        go_at = time.monotonic()
        _go(db, run_id)  # its NOTIFY may fall while nobody listens
        at, status, body, _ = ask.result()
    assert status == 200 and body["go"], body
    assert at - go_at < 3.0
    _until(lambda: notifier.listening, 10)  # and it listens again


def test_waiters_beyond_the_limit_get_503_with_retry_after(api: Api, db: Engine) -> None:
    standbys = _standbys(api, db, LIMIT + 1)
    with ThreadPoolExecutor(LIMIT) as pool:
        asks = [pool.submit(_ask, api.url, rid, tok, 20) for rid, tok in standbys[:LIMIT]]
        _until(lambda: api.app.state.notifier.waiting == LIMIT)
        _, status, body, headers = _ask(api.url, *standbys[LIMIT], 20)
        assert status == 503, body
        assert headers["retry-after"] == "2"
        assert "No place to wait" in body["detail"] and "long-polls" in body["detail"]
        # wait=0 is a plain read, never refused for the limit.
        _, status, body, _ = _ask(api.url, *standbys[LIMIT], 0)
        assert status == 200 and not body["go"]
        for (run_id, _), ask in zip(standbys[:LIMIT], asks, strict=True):
            _go(db, run_id)
            assert ask.result()[2]["go"]  # heard before the next go stops this run


def test_one_run_token_holds_only_its_runs_places(api: Api, db: Engine) -> None:
    """Issue 51 L5: one run's token long-polls at most PLACES_PER_RUN times at once; the next
    is a 503 with Retry-After while other runs still find places, and a plain read answers."""
    (mine, token), (other, other_token) = _standbys(api, db, 2)
    notifier = api.app.state.notifier
    with ThreadPoolExecutor(PLACES_PER_RUN + 1) as pool:
        asks = [pool.submit(_ask, api.url, mine, token, 20) for _ in range(PLACES_PER_RUN)]
        _until(lambda: notifier.waiting == PLACES_PER_RUN)
        _, status, body, headers = _ask(api.url, mine, token, 20)
        assert status == 503 and headers["retry-after"] == "2", body
        assert "for this run" in body["detail"], body
        assert _ask(api.url, mine, token, 0)[1] == 200
        theirs = pool.submit(_ask, api.url, other, other_token, 4)
        _until(lambda: notifier.waiting == PLACES_PER_RUN + 1)
        _go(db, mine)
        assert all(ask.result()[2]["go"] for ask in asks)
    assert not theirs.result()[2]["go"]  # its wait ran out: the go was mine


def _running_runs(api: Api, db: Engine, count: int) -> list[tuple[int, str]]:
    """``count`` running runs of one job (as many drivers), each with its own run token."""
    _job(api, "busy")
    out = []
    with transaction(make_sessionmaker(db)) as session:
        job = session.query(Job).filter_by(name="busy").one()
        for _ in range(count):
            run = runs.create_run(session, job, job.versions[0], created_by="t")
            runs.transition(session, run, states.RUNNING, reason="test")
            _, secret = create_token(session, name=f"run-{run.id}", scope=Scope.RUN, run_id=run.id)
            out.append((run.id, secret))
    return out


def _directives(url: str, run_id: int, token: str, wait: int) -> tuple[float, int, Any]:
    with httpx.Client(timeout=wait + 30) as client:
        r = client.get(
            f"{url}/api/v1/runs/{run_id}/directives",
            params={"attempt": 0, "wait": wait},
            headers={"Authorization": f"Bearer {token}"},
        )
    return time.monotonic(), r.status_code, r.json()


def test_a_running_driver_hears_its_stop_the_moment_it_is_decided(api: Api, db: Engine) -> None:
    """A driver's directives long-poll is answered when its run is set stopping (NOTIFY on
    the run's change), not at its next poll; the others wait on, and one with nothing to do
    is answered after its wait with no directive. Waiting holds no database connection."""
    (stopped, stopped_token), (other, other_token), (idle, idle_token) = _running_runs(api, db, 3)
    with ThreadPoolExecutor(3) as pool:
        asked = time.monotonic()
        stop_ask = pool.submit(_directives, api.url, stopped, stopped_token, 20)
        other_ask = pool.submit(_directives, api.url, other, other_token, 20)
        idle_at, idle_status, idle_answer = _directives(api.url, idle, idle_token, 1)
        assert idle_status == 200 and not idle_answer["stop"] and idle_answer["drain"] is None
        assert idle_at - asked >= 0.9  # held for its wait: nothing to do
        _until(lambda: api.app.state.notifier.waiting == 2)
        with transaction(make_sessionmaker(db)) as session:
            run = session.get(Run, stopped)
            assert run is not None
            runs.transition(session, run, states.STOPPING, reason="stop", stop_reason="stop")
        decided = time.monotonic()
        answered_at, status, answer = stop_ask.result(timeout=15)
        assert status == 200 and answer["stop"] is True and answer["reason"] == "stop", answer
        assert answered_at - decided < 5  # far inside its 20 s wait
        assert not other_ask.done(), "a run that was not stopped answered early"
        assert api.app.state.notifier.waiting == 1
        with transaction(make_sessionmaker(db)) as session:
            run = session.get(Run, other)
            assert run is not None
            runs.transition(session, run, states.DRAINING, reason="drain", stop_reason="drain")
        _, status, answer = other_ask.result(timeout=15)
        assert status == 200 and answer["drain"] is not None and not answer["stop"], answer


def test_running_drivers_leave_half_the_waiting_places_to_standbys(api: Api, db: Engine) -> None:
    """Running drivers long-poll their directives only while fewer than half of the process's
    waiting places are taken; past that, one is answered at once (it asks again later), and a
    standby waiting for go still finds a place."""
    half = LIMIT // 2
    drivers = _running_runs(api, db, half + 1)
    with transaction(make_sessionmaker(db)) as session:
        job = session.query(Job).filter_by(name="busy").one()
        warm = runs.create_standby(session, job, job.versions[0], created_by="t", operation_id=1)
        standby = warm.id
        _, standby_token = create_token(
            session, name=f"run-{standby}", scope=Scope.RUN, run_id=standby
        )
    notifier = api.app.state.notifier
    with ThreadPoolExecutor(half + 1) as pool:
        held = [pool.submit(_directives, api.url, rid, tok, 6) for rid, tok in drivers[:half]]
        _until(lambda: notifier.waiting == half)
        asked = time.monotonic()
        answered_at, status, answer = _directives(api.url, *drivers[half], 6)
        assert status == 200 and not answer["stop"] and answer["drain"] is None, answer
        assert answered_at - asked < 3, "held for its wait: the driver took a place past half"
        assert notifier.waiting == half
        ask = pool.submit(_ask, api.url, standby, standby_token, 20)
        _until(lambda: notifier.waiting == half + 1)  # the standby waits in a place of its own
        _go(db, standby)
        _, status, body, _ = ask.result(timeout=15)
        assert status == 200 and body["go"], body
        assert all(h.result(timeout=30)[1] == 200 for h in held)
