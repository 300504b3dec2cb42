"""The standby's wait for go (tidegate_runtime/standby.py), against a scripted channel: go
ends it, a release or the timeout raises, an unreachable control plane is asked again."""

from __future__ import annotations

import logging
import urllib.error
from typing import Any

import pytest

from tidegate_runtime.standby import LONG_POLL_SECONDS, StandbyReleased, await_go, warm_up


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


class Channel:
    def __init__(self, clock: Clock, answers: list[Any]) -> None:
        self.clock, self.answers, self.waits = clock, answers, []

    def standby(self, attempt: int, wait: int) -> dict[str, Any]:
        self.waits.append(wait)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            self.clock.now += 1
            raise answer
        self.clock.now += wait if not (answer.get("go") or answer.get("stop")) else 0.1
        return dict(answer)


def test_it_asks_again_until_go() -> None:
    clock = Clock()
    channel = Channel(clock, [{"go": False}, {"go": False}, {"go": True, "state": "running"}])
    assert await_go(channel, 0, 3600, clock=clock, sleep=clock.sleep)["go"] is True
    assert channel.waits == [LONG_POLL_SECONDS] * 3


def test_a_release_ends_the_wait_saying_why() -> None:
    clock = Clock()
    channel = Channel(clock, [{"go": False}, {"stop": True, "reason": "released"}])
    with pytest.raises(StandbyReleased, match="released without go: released"):
        await_go(channel, 0, 3600, clock=clock, sleep=clock.sleep)


def test_no_go_within_the_timeout_exits() -> None:
    clock = Clock()
    channel = Channel(clock, [{"go": False}] * 10)
    with pytest.raises(StandbyReleased, match="no go within 60s"):
        await_go(channel, 0, 60, clock=clock, sleep=clock.sleep)
    assert channel.waits == [25, 25, 10]  # the last wait ends at the deadline


def test_an_unreachable_control_plane_is_asked_again_but_a_refusal_is_not() -> None:
    clock = Clock()
    down = urllib.error.URLError(ConnectionRefusedError(111, "refused"))
    channel = Channel(clock, [down, down, {"go": True}])
    assert await_go(channel, 0, 3600, clock=clock, sleep=clock.sleep)["go"] is True
    refused = urllib.error.HTTPError("u", 403, "Forbidden", {}, None)  # type: ignore[arg-type]
    with pytest.raises(urllib.error.HTTPError):
        await_go(Channel(clock, [refused]), 0, 3600, clock=clock, sleep=clock.sleep)


@pytest.mark.spark
def test_the_warm_up_runs_every_step_on_a_real_session(
    spark: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Every step runs (none is skipped with a warning) on a session with no pandas: the
    data source manager, a Python worker, an Arrow read of a Python data source, an
    aggregation; afterwards the event-log source is registered."""
    with caplog.at_level(logging.WARNING, logger="tidegate.runtime"):
        warm_up(spark)
    assert [r.getMessage() for r in caplog.records] == []
    assert spark.read.format("tidegate_warm_up").load().count() == max(
        1, spark.sparkContext.defaultParallelism
    )
