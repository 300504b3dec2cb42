"""Both backends against real Spark: the standalone REST API of a local cluster, and Livy's
batch API served by tidegate's local runner."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import pytest

from app.backends.base import (
    AppState,
    Backend,
    PermanentBackendError,
    SubmitSpec,
    TemporaryBackendError,
)
from app.backends.livy import LivyBackend
from app.backends.standalone import StandaloneBackend
from app.devtools.spark_local import LocalStandaloneCluster, find_free_port
from tests.support.e2e import (
    RUNNER_AUTH,
    SPARK_TEST_CONF,
    app_path,
    processes_mentioning,
    serve_runner,
    unique_tag,
    wait_for,
)

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def standalone(standalone_cluster: LocalStandaloneCluster) -> Iterator[StandaloneBackend]:
    backend = StandaloneBackend(
        standalone_cluster.rest_url,
        standalone_cluster.master_url,
        ui_url=standalone_cluster.ui_url,
    )
    yield backend
    backend.close()


@pytest.fixture(scope="module")
def livy(livy_runner: str) -> Iterator[LivyBackend]:
    backend = LivyBackend(livy_runner, http_client=httpx.Client(timeout=10, headers=RUNNER_AUTH))
    yield backend
    backend.close()


def _observe_until(backend: Backend, backend_id: str, wanted: set[AppState]) -> list[AppState]:
    """Poll the status; the distinct states seen, in order, ending with one of ``wanted``."""
    seen: list[AppState] = []

    def poll() -> AppState:
        state = backend.status(backend_id).state
        if not seen or seen[-1] is not state:
            seen.append(state)
        return state

    wait_for(poll, lambda s: s in wanted or s.terminal, timeout=150)
    assert seen[-1] in wanted, seen
    return seen


def _found(backend: Backend, tag: str) -> str | None:
    """``find`` once it can tell. A standalone master says RUNNING as it hands the driver to
    a worker, which writes the launch command (where the tag is) a moment later; until then
    ``find`` says it cannot tell yet (TemporaryBackendError), as a caller retries."""

    def attempt() -> tuple[bool, str | None]:
        try:
            return True, backend.find(tag)
        except TemporaryBackendError:
            return False, None

    return wait_for(attempt, lambda answer: answer[0], timeout=60, what=f"find({tag!r})")[1]


def _stream_lifecycle(backend: Backend) -> tuple[str, str]:
    """Submit the stream, see it run and find it by tag, kill it, see it KILLED.
    Returns (tag, backend id)."""
    tag = unique_tag("stream")
    spec = SubmitSpec(
        tag=tag,
        file=app_path("stream.py"),
        args=["--tag", tag],
        conf=SPARK_TEST_CONF,
        env={"TIDEGATE_E2E": "hello"},
    )
    backend_id = backend.submit(spec)

    seen = _observe_until(backend, backend_id, {AppState.RUNNING})
    assert seen in ([AppState.PENDING, AppState.RUNNING], [AppState.RUNNING]), seen
    assert _found(backend, tag) == backend_id
    assert _found(backend, unique_tag("nobody")) is None

    log = wait_for(
        # The whole log: Spark logs hundreds of lines between the start and the first batch.
        lambda: backend.log_tail(backend_id, 20_000) or "",
        lambda text: "E2E_FIRST_BATCH" in text,
        timeout=120,
    )
    assert "E2E_ENV=hello" in log
    assert f"E2E_ARGS=['--tag', '{tag}']" in log

    backend.kill(backend_id)
    backend.kill(backend_id)  # idempotent while it stops
    assert _observe_until(backend, backend_id, {AppState.KILLED})[-1] is AppState.KILLED
    backend.kill(backend_id)  # and after it ended
    return tag, backend_id


def _fail_and_succeed(backend: Backend) -> tuple[str, str]:
    """A failing app ends FAILED with its error in the message, a good one SUCCEEDED with
    its env and args. Returns (tag, backend id) of the good one."""
    failing = backend.submit(
        SubmitSpec(tag=unique_tag("fail"), file=app_path("fail.py"), conf=SPARK_TEST_CONF)
    )
    ok_tag = unique_tag("ok")
    ok = backend.submit(
        SubmitSpec(
            tag=ok_tag,
            file=app_path("succeed.py"),
            args=["a b", "--x=1"],
            conf=SPARK_TEST_CONF,
            env={"TIDEGATE_E2E": "env-ok"},
        )
    )
    status = wait_for(lambda: backend.status(failing), lambda s: s.state.terminal)
    assert status.state is AppState.FAILED, status
    assert status.message and "tidegate-e2e: failing at start on purpose" in status.message

    status = wait_for(lambda: backend.status(ok), lambda s: s.state.terminal)
    assert status.state is AppState.SUCCEEDED, status
    assert "E2E_OK env=env-ok args=['a b', '--x=1']" in (backend.log_tail(ok) or "")
    return ok_tag, ok


# -- standalone ------------------------------------------------------------------------------


def test_standalone_ready(standalone: StandaloneBackend) -> None:
    assert standalone.ready()


def test_standalone_stream_lifecycle(
    standalone: StandaloneBackend, standalone_cluster: LocalStandaloneCluster
) -> None:
    tag, driver_id = _stream_lifecycle(standalone)
    # The driver's JVM and Python process ran in <worker dir>/<driver id>/: both are gone,
    # and so is the app (its executor).
    wait_for(lambda: processes_mentioning(driver_id), lambda procs: not procs, timeout=30)
    wait_for(
        lambda: httpx.get(f"{standalone_cluster.ui_url}/json/").json()["activeapps"],
        lambda apps: all(app["name"] != tag for app in apps),
        timeout=30,
    )


def test_standalone_fail_and_succeed(
    standalone: StandaloneBackend, standalone_cluster: LocalStandaloneCluster
) -> None:
    tag, driver_id = _fail_and_succeed(standalone)
    # With the worker's work dir readable, find and log_tail need no worker web UI.
    local = StandaloneBackend(
        standalone_cluster.rest_url,
        standalone_cluster.master_url,
        ui_url=standalone_cluster.ui_url,
        work_dir=standalone_cluster.worker_dir,
    )
    try:
        assert local.find(tag) == driver_id
        assert "E2E_OK" in (local.log_tail(driver_id) or "")
    finally:
        local.close()


def test_standalone_bad_request_is_permanent(standalone: StandaloneBackend) -> None:
    spec = SubmitSpec(
        tag=unique_tag("bad"), file=app_path("succeed.py"), conf={"spark.driver.memory": "lots"}
    )
    with pytest.raises(PermanentBackendError, match="Malformed request"):
        standalone.submit(spec)
    with pytest.raises(PermanentBackendError, match="absolute path"):
        standalone.submit(SubmitSpec(tag=unique_tag("bad"), file="relative/job.py"))


def test_standalone_unknown_driver(standalone: StandaloneBackend) -> None:
    status = standalone.status("driver-20000101000000-9999")
    assert status.state is AppState.UNKNOWN
    standalone.kill("driver-20000101000000-9999")


def test_standalone_unreachable_is_temporary() -> None:
    port = find_free_port()
    backend = StandaloneBackend(
        f"http://127.0.0.1:{port}",
        f"spark://127.0.0.1:{port}",
        ui_url=f"http://127.0.0.1:{port}",
        timeout=2,
    )
    assert not backend.ready()
    spec = SubmitSpec(tag="t", file=app_path("succeed.py"))
    for call in (
        lambda: backend.submit(spec),
        lambda: backend.status("driver-1"),
        lambda: backend.kill("driver-1"),
        lambda: backend.find("t"),
    ):
        with pytest.raises(TemporaryBackendError):
            call()


# -- livy (tidegate's runner) ----------------------------------------------------------------


def test_livy_ready(livy: LivyBackend) -> None:
    assert livy.ready()


def test_livy_stream_lifecycle(livy: LivyBackend, runner_state_dir: Path) -> None:
    _, batch_id = _stream_lifecycle(livy)
    # Every process of the batch (wrapper, spark-submit JVM, Python driver) is gone.
    record = json.loads((runner_state_dir / "batches" / batch_id / "batch.json").read_text())
    assert record["state"] == "killed"
    assert not _session_members(record["pid"])


def _session_members(sid: int) -> list[int]:
    pids = []
    for proc in psutil.process_iter(["status"]):
        try:
            if os.getsid(proc.pid) == sid and proc.info["status"] != psutil.STATUS_ZOMBIE:
                pids.append(proc.pid)
        except OSError:
            continue
    return pids


def test_livy_fail_and_succeed(livy: LivyBackend) -> None:
    _fail_and_succeed(livy)


def test_livy_bad_request_is_permanent(livy: LivyBackend) -> None:
    with pytest.raises(PermanentBackendError, match="does not exist"):
        livy.submit(SubmitSpec(tag=unique_tag("bad"), file="/nonexistent/job.py"))


def test_livy_resubmitting_a_tag_returns_the_same_batch(livy: LivyBackend) -> None:
    spec = SubmitSpec(tag=unique_tag("twice"), file=app_path("succeed.py"))
    first = livy.submit(spec)
    assert livy.submit(spec) == first
    wait_for(lambda: livy.status(first), lambda s: s.state.terminal)


def test_livy_unknown_batch(livy: LivyBackend) -> None:
    assert livy.status("999999").state is AppState.UNKNOWN
    livy.kill("999999")


def test_livy_unreachable_is_temporary() -> None:
    backend = LivyBackend(f"http://127.0.0.1:{find_free_port()}", timeout=2)
    assert not backend.ready()
    spec = SubmitSpec(tag="t", file=app_path("succeed.py"))
    for call in (
        lambda: backend.submit(spec),
        lambda: backend.status("1"),
        lambda: backend.kill("1"),
        lambda: backend.find("t"),
    ):
        with pytest.raises(TemporaryBackendError):
            call()


def test_runner_restart_keeps_batches(tmp_path: Path) -> None:
    """A runner restarted on the same state dir and port reports earlier batches: one that
    finished while no runner was up, and one still running, which it can still kill."""
    port = find_free_port()
    short_tag, long_tag = unique_tag("short"), unique_tag("long")
    with serve_runner(tmp_path, port) as url:
        first = LivyBackend(url, http_client=httpx.Client(timeout=10, headers=RUNNER_AUTH))
        short = first.submit(
            SubmitSpec(tag=short_tag, file=app_path("succeed.py"), args=["--sleep", "2"])
        )
        long = first.submit(
            SubmitSpec(tag=long_tag, file=app_path("succeed.py"), args=["--sleep", "600"])
        )
        assert first.status(short).state is AppState.PENDING
        first.close()

    # No runner is up now; the short batch ends meanwhile.
    wait_for(lambda: (tmp_path / "batches" / short / "exit_code").exists(), bool, timeout=90)

    with serve_runner(tmp_path, port) as url:
        second = LivyBackend(url, http_client=httpx.Client(timeout=10, headers=RUNNER_AUTH))
        assert second.status(short).state is AppState.SUCCEEDED
        assert second.find(short_tag) == short
        assert "E2E_OK" in (second.log_tail(short) or "")
        assert second.status(long).state is AppState.PENDING  # alive, no SparkContext
        assert second.find(long_tag) == long

        pid = json.loads((tmp_path / "batches" / long / "batch.json").read_text())["pid"]
        try:
            second.kill(long)
            assert second.status(long).state is AppState.KILLED
            assert not _session_members(pid)
        finally:
            for leftover in _session_members(pid):
                os.kill(leftover, signal.SIGKILL)
            second.close()
