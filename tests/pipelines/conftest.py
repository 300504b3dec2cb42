"""A database of its own for each test of a sink that writes to PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.database import scratch_database


@pytest.fixture
def sink_dsn(pg_server: str) -> Iterator[str]:
    """On the tests' server (tests/conftest.py::pg_server), as every test database is."""
    with scratch_database(pg_server, "tidegate_sink") as dsn:
        yield dsn
