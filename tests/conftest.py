"""Shared fixtures: a real PostgreSQL database per test session, migrated to head.

Uses TIDEGATE_TEST_DATABASE_URL's server, else an embedded PostgreSQL (tests/support/database.py).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import Engine

from app.core import migrate
from app.core.db import make_engine
from tests.support.database import empty_every_table, scratch_database, server_url

ADMIN_TOKEN = "tg_test_RgcUobkLaUxMGY4nq9mNDdNaWFbQL6h"  # random: a weak one stops the API

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
    "tests.support.kafka_broker",
    "tests.support.chaos.fixtures",
]


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The tests' PostgreSQL server (its ``postgres`` database): everything that needs a
    database of its own makes one here (tests.support.database.scratch_database)."""
    return server_url(tmp_path_factory.mktemp("pg"))


@pytest.fixture(scope="session")
def database_url(pg_server: str) -> Iterator[str]:
    with scratch_database(pg_server, "tidegate_test") as url:
        migrate.upgrade(url)
        yield url


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
