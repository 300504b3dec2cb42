"""The API's pool on a real PostgreSQL: a connection is pinged before use only when it sat
idle (a busy API pays no round trip per request, a restarted PostgreSQL still poisons
nothing), and concurrent requests never open connections beyond the pool's steady size."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import httpx
import psycopg
import pytest
from sqlalchemy import Engine, event, text
from sqlalchemy.pool import QueuePool

from app.api.main import create_app
from app.core import db as core_db
from app.core.config import Settings
from app.core.db import make_engine
from tests.conftest import ADMIN_TOKEN


@pytest.fixture
def small_engine(database_url: str) -> Iterator[Engine]:
    engine = make_engine(database_url, pool_size=2, application_name="tidegate-pool-test")
    yield engine
    engine.dispose()


def _pings(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> list[float]:
    pings: list[float] = []
    real = engine.dialect.do_ping

    def counted(dbapi_connection: Any) -> bool:
        pings.append(time.monotonic())
        return real(dbapi_connection)

    monkeypatch.setattr(engine.dialect, "do_ping", counted)
    return pings


def _backend_pid(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.scalar(text("select pg_backend_pid()")))


def test_a_connection_just_used_is_not_pinged_again(
    small_engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    pings = _pings(small_engine, monkeypatch)
    monkeypatch.setattr(core_db, "PING_AFTER_IDLE_SECONDS", 60.0)  # however slow the machine
    first = _backend_pid(small_engine)
    for _ in range(20):
        assert _backend_pid(small_engine) == first
    assert pings == []


def test_an_idle_connection_killed_under_the_pool_is_replaced_before_use(
    small_engine: Engine, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    pings = _pings(small_engine, monkeypatch)
    monkeypatch.setattr(core_db, "PING_AFTER_IDLE_SECONDS", 0.2)
    dead = _backend_pid(small_engine)
    with psycopg.connect(database_url.replace("+psycopg", ""), autocommit=True) as admin:
        assert admin.execute("select pg_terminate_backend(%s)", (dead,)).fetchone() == (True,)
    time.sleep(0.3)
    # The ping finds the dead connection: the pool replaces it and the query succeeds.
    replacement = _backend_pid(small_engine)
    assert replacement != dead
    assert len(pings) == 1


def test_a_burst_of_reads_opens_no_connection_beyond_the_pool(
    small_engine: Engine, settings: Settings
) -> None:
    opened: list[int] = []
    event.listen(small_engine, "connect", lambda *_: opened.append(1))
    app = create_app(settings, engine=small_engine)
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}

    async def burst() -> list[int]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://t", headers=headers
        ) as client:
            answers = await asyncio.gather(*(client.get("/api/v1/jobs?limit=5") for _ in range(64)))
        return [a.status_code for a in answers]

    assert asyncio.run(burst()) == [200] * 64
    # 64 requests at once, a pool of 2 (and 2 of overflow): the requests queue for the 2
    # pooled connections instead of opening and closing overflow ones.
    assert isinstance(small_engine.pool, QueuePool) and small_engine.pool.checkedout() == 0
    assert len(opened) <= 2, len(opened)
