"""Request-scoped dependencies: the request owns its transaction."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Annotated, TypeVar

import anyio
from fastapi import Depends, Request
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session, sessionmaker

from app.core.config import Settings
from app.core.errors import ServiceUnavailable

SLOT_WAIT_SECONDS = 5.0
T = TypeVar("T")


def _slots(request: Request) -> anyio.CapacityLimiter:
    """As many requests at work on the database as it has connections for.

    Sync endpoints (and their response validation) run on the thread pool (40 threads).
    Without this, a burst on one job filled it with requests waiting for that job's row lock
    or for a pooled connection, while the lock holder waited for a thread to serialise its
    response and commit: everything stalled until the pool timeout and answered 503. Waiting
    for a slot takes no thread and no connection."""
    slots: anyio.CapacityLimiter | None = getattr(request.app.state, "db_slots", None)
    if slots is None:
        # The pool's steady size, not its overflow: a slot beyond it would open a connection
        # for one request and close it after (PostgreSQL forks a backend each time). The
        # overflow is for the middleware's authentication and audit, which take no slot.
        size = getattr(request.app.state.engine.pool, "size", lambda: 10)()
        slots = request.app.state.db_slots = anyio.CapacityLimiter(max(1, size))
    return slots


# A GET that records something (a driver's directives call marks it seen) writes single
# statements, each committed as it goes; a long-poll opens transactions of its own
# (in_transaction). create_app builds both session factories.
READ_METHODS = frozenset({"GET", "HEAD"})


def _sessionmaker_for(request: Request) -> sessionmaker[Session]:
    state = request.app.state
    factory: sessionmaker[Session] = (
        state.read_sessionmaker if request.method in READ_METHODS else state.sessionmaker
    )
    return factory


def _end(session: Session, commit: bool) -> None:
    try:
        if commit:
            try:
                session.commit()
            except OperationalError as exc:
                # The connection died during COMMIT: PostgreSQL may have made the change
                # durable before it went. Say so instead of "nothing was changed".
                raise ServiceUnavailable(
                    "The metadata store failed while saving this change, so it may or may not "
                    "have been saved. Read the resource back, or retry: a create that went "
                    "through answers 409, an operation with the same Idempotency-Key answers "
                    "the same operation.",
                    headers={"Retry-After": "5"},
                    outcome="unknown",
                ) from exc
        else:
            session.rollback()
    finally:
        session.close()


@asynccontextmanager
async def _db_slot(request: Request) -> AsyncIterator[None]:
    """A claim on one of the database slots for the duration of the block; 503 after
    SLOT_WAIT_SECONDS without one."""
    slots = _slots(request)
    borrower = object()  # this claim
    acquired = False
    with anyio.move_on_after(SLOT_WAIT_SECONDS):
        await slots.acquire_on_behalf_of(borrower)
        acquired = True
    if not acquired:
        raise ServiceUnavailable(
            "Every database connection is busy; nothing was changed. Retry shortly.",
            headers={"Retry-After": "1"},
        )
    try:
        yield
    finally:
        slots.release_on_behalf_of(borrower)


async def in_transaction(request: Request, work: Callable[[Session], T]) -> T:
    """``work(session)`` in a transaction of its own, on the thread pool: for an async endpoint
    that must not hold a connection (or a slot) between its reads, such as a long-poll."""

    def unit() -> T:
        session: Session = request.app.state.sessionmaker()
        session.begin()
        try:
            result = work(session)
        except BaseException:
            _end(session, False)
            raise
        _end(session, True)
        return result

    async with _db_slot(request):
        return await anyio.to_thread.run_sync(unit)


async def _session(request: Request) -> AsyncIterator[Session]:
    # scope="function" (below) commits before the response is sent, so a failed commit
    # becomes an error response instead of an acknowledged write that was lost.
    async with _db_slot(request):
        session: Session = _sessionmaker_for(request)()
        session.begin()  # the connection is taken on first use, in the endpoint's thread
        request.state.session = session
        try:
            yield session
        except BaseException:
            with anyio.CancelScope(shield=True):  # a client gone away still gets its rollback
                await anyio.to_thread.run_sync(_end, session, False)
            raise
        if request.method in READ_METHODS:
            # An autocommit session has nothing to commit: closing it hands its connection
            # back without a round trip, so no thread hop (a tenth of a read's CPU).
            _end(session, True)
            return
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(_end, session, True)


def _settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


DbSession = Annotated[Session, Depends(_session, scope="function")]
AppSettings = Annotated[Settings, Depends(_settings)]
