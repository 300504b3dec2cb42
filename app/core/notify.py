"""One LISTEN connection per API process, fanned out to the requests that wait on it.

A long-poll (a standby or a spare waiting for go) used to LISTEN on a PostgreSQL connection of
its own and block an API thread for its whole wait, so a few dozen waiting drivers exhausted
the thread pool, the connection slots and, at fleet size, PostgreSQL's ``max_connections``.
Here one thread holds one connection LISTENing on every channel the process waits on, and
wakes waiting coroutines (``asyncio`` events, set thread-safely); a waiter holds no thread and
no connection. A worker's threads wait the same way (``subscribe_blocking``), on the same one
connection: its loop for new operations, its operations for the runs they wait on.

No missed wake-up: a waiter subscribes *before* it reads the state it waits on. A NOTIFY sent
by a transaction that commits after that read reaches the listening connection, which finds
the waiter registered. While the connection is down nothing is heard, so every (re)connection
wakes every waiter to read again; a waiter that subscribed while it was down polls.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

import psycopg
from psycopg import sql
from sqlalchemy import Engine

log = logging.getLogger(__name__)

# While the LISTEN connection is down, waiters read their state again this often.
POLL_WHILE_DOWN_SECONDS = 1.0
RECONNECT_PAUSE_SECONDS = 1.0
APPLICATION_NAME = "tidegate-listen"  # how deploy.md's connection count finds it


class TooManyWaiters(Exception):
    """This process already holds as many long-polls as it is allowed to."""


class _Wakeable(Protocol):
    def wake(self) -> None: ...


W = TypeVar("W", bound=_Wakeable)


@dataclass(eq=False)
class Waiter:
    """Waits in a coroutine: holds no thread while it waits."""

    loop: asyncio.AbstractEventLoop
    event: asyncio.Event = field(default_factory=asyncio.Event)

    def wake(self) -> None:
        self.loop.call_soon_threadsafe(self.event.set)

    async def wait(self, seconds: float) -> bool:
        """True when woken within ``seconds`` (then ready to be woken again)."""
        try:
            await asyncio.wait_for(self.event.wait(), timeout=max(0.0, seconds))
        except TimeoutError:
            return False
        self.event.clear()
        return True


@dataclass(eq=False)
class ThreadWaiter:
    """Waits in a thread (the worker's)."""

    event: threading.Event = field(default_factory=threading.Event)

    def wake(self) -> None:
        self.event.set()

    def wait(self, seconds: float) -> bool:
        """True when woken within ``seconds``. A wake-up that lands between the timeout and
        the clear is harmless: the caller reads its state again whenever this returns."""
        woken = self.event.wait(max(0.0, seconds))
        self.event.clear()
        return woken


class Notifier:
    """``subscribe(channel, payload)`` → a Waiter woken by ``NOTIFY channel, payload``
    (``payload`` None: by any payload on the channel)."""

    def __init__(self, engine: Engine, channels: tuple[str, ...], *, max_waiters: int) -> None:
        self._engine = engine
        self._channels = channels
        self.max_waiters = max_waiters
        self._waiters: dict[tuple[str, str | None], set[_Wakeable]] = defaultdict(set)
        self._count = 0
        self._lock = threading.Lock()
        self._listening = threading.Event()
        self._stopping = threading.Event()
        self._warned = False
        self._thread: threading.Thread | None = None

    @property
    def listening(self) -> bool:
        return self._listening.is_set()

    @property
    def waiting(self) -> int:
        return self._count

    @contextmanager
    def subscribe(
        self, channel: str, payload: str | None, *, most: int | None = None
    ) -> Iterator[Waiter]:
        """For a coroutine (a long-poll). ``most``: how many may wait on this payload at once
        (one run's drivers): past it TooManyWaiters, so one caller cannot take every place."""
        waiter = Waiter(asyncio.get_running_loop())
        with self._registered(channel, payload, waiter, most=most) as waiter:
            yield waiter

    @contextmanager
    def subscribe_blocking(self, channel: str, payload: str | None) -> Iterator[ThreadWaiter]:
        """For a thread."""
        with self._registered(channel, payload, ThreadWaiter()) as waiter:
            yield waiter

    @contextmanager
    def _registered(
        self, channel: str, payload: str | None, waiter: W, *, most: int | None = None
    ) -> Iterator[W]:
        if channel not in self._channels:
            raise ValueError(f"not a channel this notifier listens on: {channel}")
        self._start()
        key = (channel, payload)
        with self._lock:
            if self._count >= self.max_waiters:
                raise TooManyWaiters(f"{self._count} long-polls are waiting in this process")
            if most is not None and len(self._waiters.get(key, ())) >= most:
                raise TooManyWaiters(f"{most} long-polls are waiting for this run already")
            self._waiters[key].add(waiter)
            self._count += 1
        try:
            yield waiter
        finally:
            with self._lock:
                self._waiters[key].discard(waiter)
                if not self._waiters[key]:
                    del self._waiters[key]
                self._count -= 1

    def poll_interval(self, seconds: float) -> float:
        """How long a waiter may sleep before it reads again: its whole wait while the
        connection listens, a short poll while it does not."""
        return seconds if self.listening else min(seconds, POLL_WHILE_DOWN_SECONDS)

    def close(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    # --- the listening thread -------------------------------------------------------------

    def _start(self) -> None:
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return
            self._stopping.clear()
            self._thread = threading.Thread(target=self._run, name="tidegate-notify", daemon=True)
            self._thread.start()
        # A waiter does not wait for the connection: until it listens, waiters poll.

    def _wake(self, key: tuple[str, str] | None) -> None:
        with self._lock:
            if key is None:
                waiters = [w for group in self._waiters.values() for w in group]
            else:
                waiters = [*self._waiters.get(key, ()), *self._waiters.get((key[0], None), ())]
        for waiter in waiters:
            with contextlib.suppress(RuntimeError):  # its loop has closed: the request is gone
                waiter.wake()

    def _run(self) -> None:
        # The pool's server and credentials, on a connection of its own (a pooled one would
        # keep listening after it is handed back).
        dsn = self._engine.url.set(drivername="postgresql").render_as_string(hide_password=False)
        while not self._stopping.is_set():
            try:
                with psycopg.connect(
                    dsn, autocommit=True, connect_timeout=5, application_name=APPLICATION_NAME
                ) as conn:
                    for channel in self._channels:
                        conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
                    self._listening.set()
                    self._warned = False
                    self._wake(None)  # whatever was notified while we were not listening
                    while not self._stopping.is_set():
                        for note in conn.notifies(timeout=1.0):
                            self._wake((note.channel, note.payload))
            except psycopg.Error as exc:
                if self._listening.is_set() or not self._warned:  # once until it works again
                    log.warning("the LISTEN connection failed (%s); waiters poll meanwhile", exc)
                    self._warned = True
            finally:
                self._listening.clear()
                self._wake(None)
            if not self._stopping.is_set():
                time.sleep(RECONNECT_PAUSE_SECONDS)
