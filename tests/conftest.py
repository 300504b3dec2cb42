"""Shared fixtures: a real PostgreSQL database per test session, migrated to head.

Uses TIDEGATE_TEST_DATABASE_URL's server, else 127.0.0.1:5432, else an embedded PostgreSQL.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from sqlalchemy import Engine

from app.core import migrate
from app.core.db import make_engine
from tests.support.database import empty_every_table

ADMIN_TOKEN = "tg_test_admin_token_0123456789abcdef"

# Tests live by domain, as app/ does (tests/jobs, tests/snapshots, tests/worker, ...); what
# kind of test each is (e2e, spark, chaos, fuzz) is a marker. The fixtures they share are
# plugins in tests/support: the in-process API, a worker on a scripted backend, synthetic
# checkpoints and snapshot stores, a local SparkSession, and the session-wide real Spark
# (standalone cluster, local runner, the e2e stack: one of each per session, whichever test
# asks first) with the chaos stacks on it.
pytest_plugins = [
    "tests.support.api",
    "tests.support.worker",
    "tests.support.checkpoints",
    "tests.support.spark",
    "tests.support.e2e",
    "tests.support.backends",
    "tests.support.chaos.fixtures",
]


def _server_url(tmp_root: Path) -> str:
    explicit = os.environ.get("TIDEGATE_TEST_DATABASE_URL")
    if explicit:
        return explicit
    local = "postgresql://postgres@127.0.0.1:5432/postgres"
    try:
        psycopg.connect(local, connect_timeout=3).close()
        return local
    except psycopg.OperationalError:
        from app.core.embedded import embedded_database_url

        return embedded_database_url(tmp_root / "embedded").replace("/tidegate?", "/postgres?")


def _with_db(url: str, name: str) -> str:
    base, _, query = url.partition("?")
    base = base.rsplit("/", 1)[0]
    return f"{base}/{name}" + (f"?{query}" if query else "")


@pytest.fixture(scope="session")
def database_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    server = _server_url(tmp_path_factory.mktemp("pg"))
    name = f"tidegate_test_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(sql.SQL("create database {}").format(sql.Identifier(name)))
    url = _with_db(server, name)
    migrate.upgrade(url)
    yield url
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(
            sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(name))
        )


@pytest.fixture(scope="session")
def engine(database_url: str) -> Iterator[Engine]:
    eng = make_engine(database_url, pool_size=5)
    yield eng
    eng.dispose()


@pytest.fixture
def db(engine: Engine) -> Engine:
    """A clean database for one test: every table emptied (cheaper than re-creating it)."""
    empty_every_table(engine)
    return engine
