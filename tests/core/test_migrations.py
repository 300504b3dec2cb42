"""Migrations go up and down cleanly, and the models hold no change they lack."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

import app.models  # noqa: F401
from app.core import migrate
from app.core.db import Base, make_engine
from tests.support.database import scratch_database


def test_upgrade_downgrade_and_no_drift(pg_server: str) -> None:
    with scratch_database(pg_server, "tidegate_mig") as url:
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
