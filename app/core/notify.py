"""One LISTEN connection per API process, fanned out to the requests that wait on it.

A long-poll (a standby or a spare waiting for go) used to LISTEN on a PostgreSQL connection of
its own and block an API thread for its whole wait, so a few dozen waiting drivers exhausted
the thread pool, the connection slots and, at fleet size, PostgreSQL's ``max_connections``.
Here one thread holds one connection LISTENing on every channel the process waits on, and
wakes waiting coroutines (``asyncio`` events, set thread-safely); a waiter holds no thread and
no connection.

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


@dataclass(eq=False)
class Waiter:
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


class Notifier:
    """``subscribe(channel, payload)`` → a Waiter woken by ``NOTIFY channel, payload``."""

    def __init__(self, engine: Engine, channels: tuple[str, ...], *, max_waiters: int) -> None:
        self._engine = engine
        self._channels = channels
        self.max_waiters = max_waiters
        self._waiters: dict[tuple[str, str], set[Waiter]] = defaultdict(set)
        self._count = 0
        self._lock = threading.Lock()
        self._listening = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def listening(self) -> bool:
        return self._listening.is_set()

    @property
    def waiting(self) -> int:
        return self._count

    @contextmanager
    def subscribe(self, channel: str, payload: str) -> Iterator[Waiter]:
        if channel not in self._channels:
            raise ValueError(f"not a channel this notifier listens on: {channel}")
        self._start()
        waiter = Waiter(asyncio.get_running_loop())
        key = (channel, payload)
        with self._lock:
            if self._count >= self.max_waiters:
                raise TooManyWaiters(f"{self._count} long-polls are waiting in this process")
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
                waiters = list(self._waiters.get(key, ()))
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
                    self._wake(None)  # whatever was notified while we were not listening
                    while not self._stopping.is_set():
                        for note in conn.notifies(timeout=1.0):
                            self._wake((note.channel, note.payload))
            except psycopg.Error as exc:
                if self._listening.is_set():
                    log.warning("the LISTEN connection failed (%s); waiters poll meanwhile", exc)
            finally:
                self._listening.clear()
                self._wake(None)
            if not self._stopping.is_set():
                time.sleep(RECONNECT_PAUSE_SECONDS)
