"""Engine and sessions for the metadata store (PostgreSQL, kept apart from Spark checkpoints)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import DateTime, Engine, MetaData, create_engine, event, exc, func, select
from sqlalchemy.orm import DeclarativeBase, Session, sessionmaker
from sqlalchemy.types import TypeDecorator

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


class UTCDateTime(TypeDecorator[datetime]):
    """timestamptz that always comes back timezone-aware in UTC."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_result_value(self, value: Any, dialect: Any) -> datetime | None:
        return value.astimezone(UTC) if value is not None else None


def utcnow() -> datetime:
    return datetime.now(UTC)


def sqlalchemy_url(url: str) -> str:
    """Accept plain postgres:// URLs too, and always use psycopg 3."""
    for prefix in ("postgresql+psycopg://", "postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    raise ValueError(f"not a PostgreSQL URL: {url.split('@')[-1]}")


def make_engine(
    url: str,
    *,
    pool_size: int = 10,
    statement_timeout_ms: int = 15_000,
    application_name: str = "tidegate",
) -> Engine:
    engine = create_engine(
        sqlalchemy_url(url),
        pool_size=pool_size,
        max_overflow=pool_size,
        pool_timeout=5,
        connect_args={
            "connect_timeout": 5,
            "options": f"-c statement_timeout={statement_timeout_ms}",
            # libpq's own PGAPPNAME, when set, names the process in pg_stat_activity
            "application_name": os.environ.get("PGAPPNAME") or application_name,
        },
    )
    _ping_when_idle(engine)
    return engine


# A connection handed back less than this long ago is not pinged again before its next use: a
# busy API would otherwise pay a round trip per request. A PostgreSQL restart inside that
# second costs at most the request that finds the dead connection (a 503 with Retry-After);
# that error invalidates every older pooled connection, so the next requests reconnect.
PING_AFTER_IDLE_SECONDS = 1.0


def _ping_when_idle(engine: Engine) -> None:
    """Pessimistic disconnect handling (SQLAlchemy's pre-ping) for connections that sat idle,
    where a restarted PostgreSQL or a failover leaves them dead."""

    @event.listens_for(engine, "checkin")
    def _returned(dbapi_connection: Any, record: Any) -> None:
        record.info["checked_in_at"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _check(dbapi_connection: Any, record: Any, proxy: Any) -> None:
        returned = record.info.get("checked_in_at")
        if returned is None or time.monotonic() - returned < PING_AFTER_IDLE_SECONDS:
            return  # just opened, or just used
        try:
            engine.dialect.do_ping(dbapi_connection)
        except Exception as error:
            # As pre-ping does: this connection and every one pooled before it are replaced.
            raise exc.InvalidatePoolError(f"a pooled connection failed a ping: {error}") from error


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False, autoflush=True)


@contextmanager
def transaction(factory: sessionmaker[Session]) -> Iterator[Session]:
    """One unit of work: commit on success, roll back on any error."""
    with factory() as session, session.begin():
        yield session


@contextmanager
def advisory_lock(
    factory: sessionmaker[Session], namespace: int, key: int, *, shared: bool = False, wait: bool
) -> Iterator[bool]:
    """A session-level PostgreSQL advisory lock, held on one connection of its own for the
    block (released by PostgreSQL if the process dies). Yields whether it was taken; with
    ``wait`` it always is. One Connection for lock and unlock: a Session hands its connection
    back to the pool on commit, and an unlock on another connection would leave it held."""
    suffix = "_shared" if shared else ""
    take = getattr(func, f"pg_{'' if wait else 'try_'}advisory_lock{suffix}")
    release = getattr(func, f"pg_advisory_unlock{suffix}")
    engine = factory.kw["bind"]
    with engine.connect() as conn:
        got = conn.scalar(select(take(namespace, key)))
        got = True if wait else bool(got)
        conn.commit()  # session-level: survives the commit, not the connection
        try:
            yield got
        finally:
            if got:
                conn.scalar(select(release(namespace, key)))
                conn.commit()
