"""Migrations go up and down cleanly, and the models hold no change they lack."""

from __future__ import annotations

import uuid

import psycopg
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from psycopg import sql

import app.models  # noqa: F401
from app.core import migrate
from app.core.db import Base, make_engine


def _fresh(database_url: str) -> tuple[str, str]:
    server = database_url.rsplit("/", 1)[0]
    query = ""
    if "?" in database_url:
        server, query = (
            database_url.split("?")[0].rsplit("/", 1)[0],
            "?" + database_url.split("?")[1],
        )
    name = f"tidegate_mig_{uuid.uuid4().hex[:8]}"
    admin = f"{server}/postgres{query}"
    with psycopg.connect(admin, autocommit=True) as c:
        c.execute(sql.SQL("create database {}").format(sql.Identifier(name)))
    return admin, f"{server}/{name}{query}"


def test_upgrade_downgrade_and_no_drift(database_url: str) -> None:
    admin, url = _fresh(database_url)
    try:
        migrate.upgrade(url)
        migrate.downgrade(url, "base")
        migrate.upgrade(url)
        engine = make_engine(url, pool_size=1)
        assert migrate.current_revision(engine) == migrate.head_revision()
        with engine.connect() as conn:
            diff = compare_metadata(
                MigrationContext.configure(conn, opts={"compare_type": True}), Base.metadata
            )
        engine.dispose()
        assert diff == [], f"models and migrations differ; autogenerate a migration: {diff}"
    finally:
        with psycopg.connect(admin, autocommit=True) as c:
            c.execute(
                sql.SQL("drop database {} with (force)").format(
                    sql.Identifier(url.split("/")[-1].split("?")[0])
                )
            )
