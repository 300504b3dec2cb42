"""The LISTEN fan-out for threads (the worker's waits), against a real PostgreSQL."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, text

from app.core.notify import Notifier
from tests.support.waiting import wait_for


def _notify(db: Engine, channel: str, payload: str) -> None:
    with db.begin() as conn:
        conn.execute(text("select pg_notify(:c, :p)"), {"c": channel, "p": payload})


def test_a_thread_waits_for_its_payload_or_for_any_on_its_channel(db: Engine) -> None:
    notifier = Notifier(db, ("test_ops", "test_runs"), max_waiters=3)
    try:
        with (
            notifier.subscribe_blocking("test_ops", None) as any_op,
            notifier.subscribe_blocking("test_runs", "5") as run_5,
        ):
            wait_for(lambda: notifier.listening, bool, 20, 0.02, "the LISTEN connection")
            any_op.wait(0.2)  # the wake-up every (re)connection starts with
            run_5.wait(0.2)
            assert notifier.waiting == 2

            _notify(db, "test_runs", "6")  # another run: nobody here waits for it
            assert not run_5.wait(0.5) and not any_op.wait(0.0)

            _notify(db, "test_runs", "5")
            assert run_5.wait(10) and not any_op.wait(0.0)

            _notify(db, "test_ops", "42")  # any operation wakes the loop
            assert any_op.wait(10) and not run_5.wait(0.0)
        assert notifier.waiting == 0
    finally:
        notifier.close()


def test_an_unknown_channel_is_refused(db: Engine) -> None:
    notifier = Notifier(db, ("test_ops",), max_waiters=1)
    with (
        pytest.raises(ValueError, match="not a channel"),
        notifier.subscribe_blocking("test_other", None),
    ):
        pass
    notifier.close()
