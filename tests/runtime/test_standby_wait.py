"""The standby's wait for go (tidegate_runtime/driver/standby.py), against a scripted channel: go
ends it, a release or the timeout raises, an unreachable control plane is asked again."""

from __future__ import annotations

import email.message
import logging
import sys
import types
import urllib.error
from pathlib import Path
from typing import Any

import pytest

from tidegate_runtime import contract
from tidegate_runtime.driver import standby
from tidegate_runtime.driver.standby import (
    LONG_POLL_SECONDS,
    StandbyReleased,
    await_go,
    warm_up,
)


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


def test_a_busy_control_plane_is_asked_again_after_its_retry_after() -> None:
    clock = Clock()
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        clock.sleep(seconds)

    busy = urllib.error.HTTPError(
        "u",
        503,
        "Service Unavailable",
        _headers({"Retry-After": "7"}),
        None,
    )
    channel = Channel(clock, [busy, {"go": True}])
    assert await_go(channel, 0, 3600, clock=clock, sleep=sleep)["go"] is True
    assert slept == [7.0]  # not the 0.5 s back-off: the server said when


def _headers(headers: dict[str, str]) -> email.message.Message:
    message = email.message.Message()
    for key, value in headers.items():
        message[key] = value
    return message


@pytest.mark.spark
def test_the_warm_up_runs_every_step_on_a_real_session(
    spark: Any, caplog: pytest.LogCaptureFixture, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every step runs (none is skipped with a warning) on a session with no pandas: the
    data source manager, a Python worker, an Arrow read of a Python data source, an
    aggregation, Parquet files written into the dry run's scratch folder and removed;
    afterwards the event-log source is registered."""
    removed: dict[str, list[str]] = {}
    rmtree = standby.shutil.rmtree

    def seen_then_removed(path: Any, **kwargs: Any) -> None:
        removed[str(path)] = sorted(p.name for p in Path(path).glob("*.parquet"))
        rmtree(path, **kwargs)

    monkeypatch.setattr(standby.shutil, "rmtree", seen_then_removed)
    spark.conf.set(contract.STANDBY_DRY_RUN_DIR, f"file:{tmp_path}")
    try:
        with caplog.at_level(logging.WARNING, logger="tidegate.runtime"):
            warm_up(spark)
    finally:
        spark.conf.unset(contract.STANDBY_DRY_RUN_DIR)
    assert [r.getMessage() for r in caplog.records] == []
    assert spark.read.format("tidegate_warm_up").load().count() == max(
        1, spark.sparkContext.defaultParallelism
    )
    written = removed[str(tmp_path / ".tidegate-warm-up-files")]
    assert len(written) == max(1, spark.sparkContext.defaultParallelism)  # one file a slot
    assert list(tmp_path.iterdir()) == []  # nothing left in the scratch folder


class Conf:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = values

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)


class Session:
    def __init__(self, values: dict[str, str]) -> None:
        self.conf = Conf(values)


def test_a_standby_with_a_dry_run_runs_the_job_again_after_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first pass is the dry run (dry_run_dir names the scratch root); at go the job's
    main file runs again in this process, and its second from_spark waits for nothing: it
    goes on with the channel that gave go."""
    monkeypatch.setattr(standby, "_went_with", None)
    scratch = str(tmp_path / "scratch")
    session = Session({contract.STANDBY: "true", contract.STANDBY_DRY_RUN_DIR: scratch})
    not_a_standby = Session({contract.STANDBY_DRY_RUN_DIR: scratch})
    assert standby.dry_run_dir(not_a_standby) is None
    assert standby.dry_run_dir(Session({contract.STANDBY: "true"})) is None  # no dry run in it
    assert standby.dry_run_dir(session) == scratch
    main = tmp_path / "job.py"
    marker = tmp_path / "ran"
    main.write_text(
        "from tidegate_runtime.driver import standby\n"
        f"open({str(marker)!r}, 'a').write(str(standby.went_with() is not None))\n"
    )
    monkeypatch.setattr(sys, "argv", [str(main)])
    monkeypatch.setitem(sys.modules, "__main__", types.ModuleType("__main__"))
    clock = Clock()
    channel = Channel(clock, [{}, {"go": True}])
    standby.go_then_run_again(session, channel, 0)
    assert marker.read_text() == "True"  # ran once more, after go
    assert len(channel.waits) == 2 and standby.went_with() is channel
    # The second pass: no dry run again, no wait (the channel is asked nothing more).
    assert standby.dry_run_dir(session) is None
    assert standby.wait_if_standby(session, channel, 0) is True
    assert len(channel.waits) == 2


def test_a_standby_released_after_its_dry_run_never_runs_the_job_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(standby, "_went_with", None)
    main = tmp_path / "job.py"
    main.write_text("raise AssertionError('must not run')\n")
    monkeypatch.setattr(sys, "argv", [str(main)])
    monkeypatch.setitem(sys.modules, "__main__", types.ModuleType("__main__"))
    session = Session({contract.STANDBY: "true", contract.STANDBY_DRY_RUN_DIR: str(tmp_path)})
    channel = Channel(Clock(), [{"stop": True, "reason": "refused by its dry run"}])
    with pytest.raises(StandbyReleased, match="refused by its dry run"):
        standby.go_then_run_again(session, channel, 0)
    assert standby.went_with() is None
