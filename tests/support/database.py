"""The tests' PostgreSQL: the one server every test, benchmark run and pipeline sink uses,
databases of their own on it, and emptying the test database between tests.

The server is TIDEGATE_TEST_DATABASE_URL's when it is set (the one documented override), else
an embedded PostgreSQL started under the session's tmp dir. No test names a host or port.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path

import psycopg
from psycopg import sql
from sqlalchemy import Engine, make_url, text

OVERRIDE = "TIDEGATE_TEST_DATABASE_URL"


_server: str | None = None


def server_url(tmp_root: Path) -> str:
    """A URL to the server's ``postgres`` database: the override's server, else an embedded
    one, started by the first caller under ``tmp_root`` and shared by every later caller of
    this test process (a stack, a chaos harness, the session's fixture)."""
    global _server
    if _server is None:
        explicit = os.environ.get(OVERRIDE)
        if explicit:
            _server = on_database(explicit, "postgres")
        else:
            from app.core.embedded import embedded_database_url

            _server = on_database(embedded_database_url(tmp_root / "embedded"), "postgres")
    return _server


def on_database(url: str, name: str) -> str:
    """``url`` with its database replaced by ``name`` (host, port, socket dir, query kept)."""
    return make_url(url).set(database=name).render_as_string(hide_password=False)


@contextmanager
def scratch_database(server: str, prefix: str) -> Iterator[str]:
    """A new, empty database on ``server`` for the block; dropped after it, even when in use."""
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(sql.SQL("create database {}").format(sql.Identifier(name)))
    try:
        yield on_database(server, name)
    finally:
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(
                sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(name))
            )


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


@cache
def _superuser(engine: Engine) -> bool:
    """Whether the tests' role may set ``session_replication_role`` (a superuser's right)."""
    with engine.connect() as conn:
        return bool(conn.scalar(text("select rolsuper from pg_roles where rolname = current_user")))


def empty_every_table(engine: Engine) -> None:
    """Every table of the schema emptied and its ids from 1 again (alembic's own kept)."""
    if _superuser(engine):
        with engine.begin() as conn:
            conn.execute(text(_EMPTY_EVERY_TABLE))
    else:  # a role of its own (TIDEGATE_TEST_DATABASE_URL): no replica role, TRUNCATE
        with engine.begin() as conn:
            tables = conn.scalars(
                text(
                    "select tablename from pg_tables where schemaname = 'public' "
                    "and tablename <> 'alembic_version'"
                )
            ).all()
            if tables:
                conn.execute(text(f"truncate {', '.join(tables)} restart identity cascade"))
