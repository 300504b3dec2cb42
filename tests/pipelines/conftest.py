"""A database of its own for each test of a sink that writes to PostgreSQL."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import psycopg
import pytest

ADMIN_DSN = "postgresql://postgres@127.0.0.1:5432/postgres"


@pytest.fixture
def sink_dsn() -> Iterator[str]:
    name = f"tidegate_sink_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(ADMIN_DSN, autocommit=True) as conn:
        conn.execute(f'create database "{name}"')
    yield f"postgresql://postgres@127.0.0.1:5432/{name}"
    with psycopg.connect(ADMIN_DSN, autocommit=True) as conn:
        conn.execute(f'drop database if exists "{name}" with (force)')
