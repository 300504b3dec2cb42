"""One bounded wait for everything asynchronous in the tests: a value another process posts
later (a driver's progress, an operation's state, a sink's rows) is polled until it holds or
a deadline passes; never read once, never waited for with a fixed sleep."""

from __future__ import annotations

import ctypes
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

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


@contextmanager
def served(app: Any, *, lifespan: str = "on") -> Iterator[str]:
    """``app`` under a real uvicorn on a free loopback port, in a thread, for the block;
    yields its URL. ``lifespan="off"`` when the caller owns what the app's lifespan would
    close (a session-wide engine)."""
    import uvicorn

    from app.devtools.spark_local import find_free_port

    port = find_free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            host="127.0.0.1",
            port=port,
            log_level="warning",
            log_config=None,
            lifespan=lifespan,  # type: ignore[arg-type]
        )
    )
    thread = threading.Thread(target=server.run, name="test-uvicorn", daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "the server did not start"
        assert thread.is_alive(), "the server stopped while starting"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


def stop_process(proc: subprocess.Popen[Any], grace: float = 20.0) -> None:
    """End a process the test started: SIGTERM, ``grace`` seconds to exit, then SIGKILL."""
    if proc.poll() is None:
        proc.terminate()
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


def ends_with_the_tests() -> None:
    """``preexec_fn`` for a long-lived helper process (an API, a worker): the kernel sends it
    SIGTERM when the test process dies, so a killed pytest leaves no worker polling on.

    Linux only (``prctl(PR_SET_PDEATHSIG)``; elsewhere it does nothing); the signal follows
    the thread that started the child, so start such helpers from the test's main thread, as
    the stacks do."""
    if not sys.platform.startswith("linux"):  # elsewhere the helpers end with the stacks only
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


_PR_SET_PDEATHSIG = 1
