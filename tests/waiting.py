"""One bounded wait for everything asynchronous in the tests: a value another process posts
later (a driver's progress, an operation's state, a sink's rows) is polled until it holds or
a deadline passes; never read once, never waited for with a fixed sleep."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(
    fn: Callable[[], T],
    until: Callable[[T], bool],
    timeout: float = 120.0,
    every: float = 0.5,
    what: str = "",
) -> T:
    """Call ``fn`` until ``until(value)`` holds and return that value; on timeout fail with
    what was awaited and the last value seen."""
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if until(value):
            return value
        if time.monotonic() > deadline:
            awaited = what or getattr(until, "__name__", "the condition")
            raise AssertionError(
                f"timed out after {timeout:.0f}s waiting for {awaited}; last value: {value!r}"
            )
        time.sleep(every)


def free_port() -> int:
    """A loopback port nobody listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
