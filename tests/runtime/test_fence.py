"""The runtime's fence (tidegate_runtime/driver/batch_boundary.py::fence, called by
Runtime.await_termination), against a scripted session and channel: a driver stopped by
tidegate, or drained, stops its Spark session before it says it is fenced (the JVM's
context first, PySpark's tidying after the report), and says nothing when the session
would not stop or when tidegate did not stop it. (On real Spark, both
backends: tests/support/stack.py::assert_switch.)"""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace
from typing import Any

from tidegate_runtime.driver.progress_listener import ProgressReporter
from tidegate_runtime.driver.runtime import Runtime


class Session:
    def __init__(self, calls: list[str], fail: bool = False) -> None:
        self.calls, self.fail = calls, fail

    def stop(self) -> None:
        self.calls.append("spark.stop")
        if self.fail:
            raise RuntimeError("the JVM is gone")


class JavaContext:
    def __init__(self, calls: list[str]) -> None:
        self.calls = calls

    def stop(self) -> None:
        self.calls.append("jvm context stop")


class SparkContextOf:
    def __init__(self, calls: list[str]) -> None:
        self._jsc = JavaContext(calls)


class JvmSession(Session):
    """A session whose SparkContext lives in a JVM of this process (not Spark Connect)."""

    def __init__(self, calls: list[str]) -> None:
        super().__init__(calls)
        self.sparkContext = SparkContextOf(calls)


class Channel:
    def __init__(self, calls: list[str], fail: bool = False) -> None:
        self.calls, self.fail = calls, fail

    def fenced(self, attempt: int) -> None:
        self.calls.append(f"fenced {attempt}")
        if self.fail:
            raise OSError("connection refused")


def _runtime(calls: list[str], **kwargs: Any) -> Runtime:
    spark_fails = kwargs.pop("spark_fails", False)
    channel_fails = kwargs.pop("channel_fails", False)
    return Runtime(
        Session(calls, spark_fails),  # type: ignore[arg-type]
        client=Channel(calls, channel_fails),  # type: ignore[arg-type]
        attempt=3,
        **kwargs,
    )


def test_a_stopped_driver_stops_its_session_then_says_it_is_fenced() -> None:
    calls: list[str] = []
    runtime = _runtime(calls)
    runtime._stop.set()  # what stop_all does once every query stopped at a boundary
    runtime.await_termination()
    assert calls == ["spark.stop", "fenced 3"]


def test_a_drained_driver_is_fenced_too() -> None:
    calls: list[str] = []
    runtime = _runtime(calls)
    runtime._drain_state.done = True
    runtime.await_termination()
    assert calls == ["spark.stop", "fenced 3"]


def test_no_fence_when_tidegate_did_not_stop_it_or_the_session_would_not_stop() -> None:
    calls: list[str] = []
    _runtime(calls).await_termination()  # its queries ended on their own: the backend decides
    assert calls == []
    runtime = _runtime(calls, spark_fails=True)
    runtime._stop.set()
    runtime.await_termination()
    assert calls == ["spark.stop"]  # not fenced: the run ends when the process exits


def test_an_unreachable_control_plane_does_not_fail_the_driver() -> None:
    calls: list[str] = []
    runtime = _runtime(calls, channel_fails=True)
    runtime._stop.set()
    runtime.await_termination()  # no exception: the run ends when the backend sees the exit
    assert calls == ["spark.stop", "fenced 3"]


def test_the_report_waits_for_the_jvm_context_not_for_pysparks_tidying() -> None:
    calls: list[str] = []
    runtime = Runtime(
        JvmSession(calls),  # type: ignore[arg-type]
        client=Channel(calls),  # type: ignore[arg-type]
        attempt=3,
    )
    runtime._stop.set()
    runtime.await_termination()
    assert calls == ["jvm context stop", "fenced 3", "spark.stop"]


def test_the_flush_before_the_fence_waits_for_each_end_and_report_and_no_longer() -> None:
    """Before the fence the runtime posts what its listener still has: it waits until Spark's
    listener bus has said every stopped query ended (after its last progress) and every
    report is posted, woken as each comes (inside an update's pause), never waiting out its
    timeout once they have."""
    calls: list[str] = []

    class Posting(Channel):
        def progress(self, report: dict[str, Any]) -> None:
            calls.append(f"posted {report['batch_id']}")

    runtime = Runtime(Session(calls), client=Posting(calls), attempt=1)  # type: ignore[arg-type]
    runtime.queries = {"q": SimpleNamespace(runId="run-1", isActive=False)}  # type: ignore[dict-item]
    threading.Thread(target=runtime._post_loop, daemon=True).start()

    def listener_bus() -> None:
        time.sleep(0.2)
        runtime._outbox.put({"query": "q", "batch_id": 7})  # the last batch's progress
        ProgressReporter(runtime).onQueryTerminated(SimpleNamespace(runId="run-1"))

    threading.Thread(target=listener_bus, daemon=True).start()
    began = time.monotonic()
    runtime._flush_progress(timeout=60)
    assert calls == ["posted 7"] and "run-1" in runtime._terminated
    assert time.monotonic() - began < 30  # woken, not timed out
