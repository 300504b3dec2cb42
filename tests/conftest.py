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
from sqlalchemy import Engine, text
from sqlalchemy.exc import DBAPIError

from app.core import migrate
from app.core.db import make_engine

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


# Emptying every table between tests: DELETE with foreign keys off (the session as a replica),
# then the sequences from 1 again. TRUNCATE does the same in 0.1-0.3 s on this machine (a new
# file per table), DELETE of a test's few rows in ~5 ms: a minute or more over the suite.
_EMPTY_EVERY_TABLE = """
DO $$
DECLARE r record;
BEGIN
  SET LOCAL session_replication_role = replica;
  FOR r IN SELECT tablename FROM pg_tables
           WHERE schemaname = 'public' AND tablename <> 'alembic_version' LOOP
    EXECUTE format('DELETE FROM %I', r.tablename);
  END LOOP;
  FOR r IN SELECT sequencename FROM pg_sequences WHERE schemaname = 'public' LOOP
    EXECUTE format('ALTER SEQUENCE %I RESTART', r.sequencename);
  END LOOP;
END $$;
"""


@pytest.fixture
def db(engine: Engine) -> Engine:
    """A clean database for one test: every table emptied (cheaper than re-creating it)."""
    try:
        with engine.begin() as conn:
            conn.execute(text(_EMPTY_EVERY_TABLE))
    except DBAPIError:  # not a superuser (TIDEGATE_TEST_DATABASE_URL): no replica role
        with engine.begin() as conn:
            tables = conn.scalars(
                text(
                    "select tablename from pg_tables where schemaname = 'public' "
                    "and tablename <> 'alembic_version'"
                )
            ).all()
            if tables:
                conn.execute(text(f"truncate {', '.join(tables)} restart identity cascade"))
    return engine
