"""Backends without Spark: request shapes, state mapping and error classification, over
``httpx.MockTransport``."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.backends import _http
from app.backends.base import AppState, PermanentBackendError, SubmitSpec, TemporaryBackendError
from app.backends.livy import LivyBackend
from app.backends.standalone import StandaloneBackend

REST = "http://master:6066"
UI = "http://master:8080"
WORKER_UI = "http://worker:8081"
Handler = Callable[[httpx.Request], httpx.Response]


def _standalone(handler: Handler, **kwargs: Any) -> StandaloneBackend:
    client = httpx.Client(transport=httpx.MockTransport(handler))
    return StandaloneBackend(REST, "spark://master:7077", http_client=client, **kwargs)


def _livy(handler: Handler, **kwargs: Any) -> LivyBackend:
    client = httpx.Client(transport=httpx.MockTransport(handler))
    return LivyBackend("http://livy:8998", http_client=client, **kwargs)


def _spec(**kwargs: Any) -> SubmitSpec:
    base: dict[str, Any] = {"tag": "job-a-run-1", "file": "/jobs/a.py"}
    return SubmitSpec(**{**base, **kwargs})


def _launch_line(tag: str) -> str:
    return (
        'Launch Command: "/usr/bin/java" "-cp" "/spark/jars/*" "-Xmx512M" '
        f'"-Dspark.app.name={tag}" "-Dspark.master=spark://master:7077" '
        '"org.apache.spark.deploy.worker.DriverWrapper" "spark://Worker@w:1" '
        '"/work/d/a.py" "org.apache.spark.deploy.PythonRunner" "file:/jobs/a.py" ""\n'
        "========================================\n"
    )


def _refuse_network(request: httpx.Request) -> httpx.Response:
    raise httpx.ConnectError("connection refused", request=request)


# -- standalone: requests ------------------------------------------------------------------


def test_standalone_submission_request_shape() -> None:
    backend = _standalone(_refuse_network)
    spec = _spec(
        py_files=["/jobs/lib.zip", "hdfs://nn/dep.py"],
        args=["--x", "1"],
        conf={"spark.app.name": "ignored", "spark.driver.memory": "1g"},
        env={"TIDEGATE_RUN": "r1"},
    )
    body = backend.submission_request(spec)
    assert body["action"] == "CreateSubmissionRequest"
    assert body["mainClass"] == "org.apache.spark.deploy.PythonRunner"
    assert body["appResource"] == "file:/jobs/a.py"
    assert body["appArgs"] == ["file:/jobs/a.py", "file:/jobs/lib.zip,hdfs://nn/dep.py", "--x", "1"]
    assert body["environmentVariables"] == {"TIDEGATE_RUN": "r1"}
    props = body["sparkProperties"]
    assert props["spark.master"] == "spark://master:7077"
    assert props["spark.submit.deployMode"] == "cluster"
    assert props["spark.app.name"] == "job-a-run-1"  # the tag wins: find relies on it
    assert props["spark.pyspark.python"] == sys.executable
    assert props["spark.driver.memory"] == "1g"
    assert props["spark.submit.pyFiles"] == "file:/jobs/lib.zip,hdfs://nn/dep.py"
    assert body["clientSparkVersion"]


def test_standalone_empty_py_files_and_python_override() -> None:
    body = _standalone(_refuse_network, python="/opt/py/bin/python").submission_request(_spec())
    assert body["appArgs"] == ["file:/jobs/a.py", ""]
    assert body["sparkProperties"]["spark.pyspark.python"] == "/opt/py/bin/python"
    conf = {"spark.pyspark.python": "/cluster/python"}
    body = _standalone(_refuse_network).submission_request(_spec(conf=conf))
    assert body["sparkProperties"]["spark.pyspark.python"] == "/cluster/python"


def test_standalone_relative_path_is_permanent() -> None:
    with pytest.raises(PermanentBackendError, match="absolute"):
        _standalone(_refuse_network).submit(_spec(file="jobs/a.py"))


def test_standalone_submit_returns_id_and_sends_auth() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(
            200,
            json={
                "action": "CreateSubmissionResponse",
                "success": True,
                "submissionId": "driver-20260101000000-0001",
            },
        )

    backend = _standalone(handler, auth_header="Bearer abc")
    assert backend.submit(_spec()) == "driver-20260101000000-0001"
    assert seen[0].url == f"{REST}/v1/submissions/create"
    assert seen[0].headers["Authorization"] == "Bearer abc"
    assert json.loads(seen[0].content)["sparkProperties"]["spark.app.name"] == "job-a-run-1"

    backend = _standalone(handler, auth_header=("X-Token", "t"))
    backend.submit(_spec())
    assert seen[1].headers["X-Token"] == "t"


@pytest.mark.parametrize(
    ("response", "error", "match"),
    [
        (
            httpx.Response(
                400,
                json={
                    "action": "ErrorResponse",
                    "message": "Malformed request: Validation failed!\n\tat x.y(z)",
                },
            ),
            PermanentBackendError,
            "Malformed request: Validation failed!$",
        ),
        (
            httpx.Response(
                200,
                json={
                    "success": False,
                    "message": "Current state is not alive: "
                    "STANDBY. Can only accept driver submissions in ALIVE state.",
                },
            ),
            TemporaryBackendError,
            "not alive",
        ),
        (
            httpx.Response(200, json={"success": False, "message": "Bad conf"}),
            PermanentBackendError,
            "Bad conf",
        ),
        (httpx.Response(503, text="<html>unavailable</html>"), TemporaryBackendError, "503"),
        (httpx.Response(500, json={"message": "boom"}), TemporaryBackendError, "500"),
        (httpx.Response(401, text="unauthorized"), PermanentBackendError, "unauthorized"),
        (httpx.Response(200, text="<html>proxy</html>"), TemporaryBackendError, "without JSON"),
        (httpx.Response(200, json={"success": True}), TemporaryBackendError, "no submissionId"),
    ],
)
def test_standalone_submit_errors(
    response: httpx.Response, error: type[Exception], match: str
) -> None:
    backend = _standalone(lambda request: response)
    with pytest.raises(error, match=match) as info:
        backend.submit(_spec())
    if isinstance(info.value, PermanentBackendError) and "Malformed" in match:
        assert info.value.detail and "at x.y(z)" in info.value.detail


@pytest.mark.parametrize(
    "exc",
    [httpx.ConnectError("refused"), httpx.ReadTimeout("slow"), httpx.RemoteProtocolError("x")],
)
def test_standalone_transport_errors_are_temporary(exc: Exception) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise exc

    backend = _standalone(handler)
    for call in (
        lambda: backend.submit(_spec()),
        lambda: backend.status("d"),
        lambda: backend.kill("d"),
        lambda: backend.find("t"),
    ):
        with pytest.raises(TemporaryBackendError):
            call()
    assert backend.ready() is False


# -- standalone: status, kill, ready -------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "state"),
    [
        ("SUBMITTED", AppState.PENDING),
        ("RUNNING", AppState.RUNNING),
        ("FINISHED", AppState.SUCCEEDED),
        ("FAILED", AppState.FAILED),
        ("ERROR", AppState.FAILED),
        ("KILLED", AppState.KILLED),
        ("RELAUNCHING", AppState.UNKNOWN),
        ("UNKNOWN", AppState.UNKNOWN),
        ("SOMETHING_NEW", AppState.UNKNOWN),
    ],
)
def test_standalone_state_mapping(raw: str, state: AppState) -> None:
    backend = _standalone(
        lambda r: (
            httpx.Response(200, json={"success": True, "driverState": raw, "workerId": "w1"})
            if r.url.path.startswith("/v1/")
            else httpx.Response(200, json={"workers": []})
        )
    )
    status = backend.status("driver-1")
    assert (status.state, status.raw_state, status.backend_id) == (state, raw, "driver-1")


def test_standalone_status_not_found_is_unknown() -> None:
    backend = _standalone(
        lambda r: httpx.Response(200, json={"success": False, "submissionId": "driver-x"})
    )
    status = backend.status("driver-x")
    assert (status.state, status.raw_state) == (AppState.UNKNOWN, "NOT_FOUND")


def test_standalone_status_of_standby_master_is_temporary() -> None:
    backend = _standalone(
        lambda r: httpx.Response(
            200, json={"success": False, "message": "Current state is not alive: STANDBY"}
        )
    )
    with pytest.raises(TemporaryBackendError):
        backend.status("driver-x")


def test_standalone_error_message_without_java_frames() -> None:
    message = (
        "Exception from the cluster:\njava.nio.file.NoSuchFileException: /jobs/a.py\n"
        "\tjava.base/sun.nio.fs.UnixException.translateToIOException(Unix.java:92)"
    )
    backend = _standalone(
        lambda r: httpx.Response(
            200, json={"success": True, "driverState": "ERROR", "message": message}
        ),
        work_dir="/nope",
    )
    status = backend.status("driver-1")
    assert status.state is AppState.FAILED
    assert status.message == (
        "Exception from the cluster:\njava.nio.file.NoSuchFileException: /jobs/a.py"
    )


def test_standalone_failed_status_carries_local_log_tail(tmp_path: Path) -> None:
    driver = tmp_path / "driver-1"
    driver.mkdir()
    (driver / "stderr").write_text(_launch_line("t") + "INFO x\nSparkUserAppException: exit 1\n")
    (driver / "stdout").write_text("Traceback (most recent call last):\nRuntimeError: boom\n")
    backend = _standalone(
        lambda r: httpx.Response(200, json={"success": True, "driverState": "FAILED"}),
        work_dir=tmp_path,
    )
    status = backend.status("driver-1")
    assert status.state is AppState.FAILED
    assert status.message is not None
    assert status.message.endswith("RuntimeError: boom")
    assert status.message.startswith("RuntimeError: boom\n[...]\n")  # the cause first
    assert "SparkUserAppException" in status.message
    assert "Launch Command" not in status.message
    assert backend.log_tail("driver-1", lines=1) == (
        "--- stderr ---\nSparkUserAppException: exit 1\n--- stdout ---\nRuntimeError: boom"
    )
    assert backend.log_tail("driver-2") is None
    assert backend.log_tail("../etc") is None


def test_standalone_log_tail_through_worker_ui() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.startswith("/v1/submissions/status/"):
            return httpx.Response(
                200, json={"success": True, "driverState": "RUNNING", "workerId": "worker-1"}
            )
        if request.url.path == "/json/":
            return httpx.Response(
                200, json={"workers": [{"id": "worker-1", "webuiaddress": WORKER_UI}]}
            )
        assert str(request.url).startswith(f"{WORKER_UI}/log/")
        kind = request.url.params["logType"]
        assert "offset" not in request.url.params  # no offset: the last byteLength bytes
        return httpx.Response(
            200,
            text=f"==== Bytes 0-9 of 9 of /w/driver-1/{kind} ====\n{kind} line 1\n{kind} line 2\n",
        )

    tail = _standalone(handler).log_tail("driver-1", lines=1)
    assert tail == "--- stderr ---\nstderr line 2\n--- stdout ---\nstdout line 2"


def test_cluster_credentials_go_only_to_the_registered_urls() -> None:
    """The master reports worker UI addresses; they may be anyone's. The cluster's
    credentials go to its REST and UI URLs only, never to a reported worker address."""
    seen: dict[str, str | None] = {}

    def handler(request: httpx.Request) -> httpx.Response:
        seen[str(request.url.copy_with(query=None))] = request.headers.get("Authorization")
        if request.url.path.startswith("/v1/submissions/status/"):
            return httpx.Response(
                200, json={"success": True, "driverState": "RUNNING", "workerId": "worker-1"}
            )
        if request.url.path == "/json/":
            return httpx.Response(
                200, json={"workers": [{"id": "worker-1", "webuiaddress": "http://evil:8081"}]}
            )
        return httpx.Response(200, text="==== Bytes 0-4 of 4 of /w/d/stderr ====\nline\n")

    assert _standalone(handler, auth_header="Bearer s3cret").log_tail("driver-1") is not None
    assert seen[f"{REST}/v1/submissions/status/driver-1"] == "Bearer s3cret"
    assert seen[f"{UI}/json/"] == "Bearer s3cret"
    assert seen["http://evil:8081/log/"] is None
    # Same host, another port: another origin.
    seen.clear()
    backend = _standalone(handler, auth_header="Bearer s3cret", ui_url="http://master:8080")
    backend._read_log("driver-1", "stderr", "http://master:9999", tail=10)
    assert seen["http://master:9999/log/"] is None


@pytest.mark.parametrize(
    ("body", "ok"),
    [
        ({"success": True, "message": "Kill request for d submitted"}, True),
        ({"success": False, "message": "Driver d has already finished or does not exist"}, True),
        ({"success": False, "message": "Current state is not alive: STANDBY"}, False),
    ],
)
def test_standalone_kill_is_idempotent(body: dict[str, Any], ok: bool) -> None:
    backend = _standalone(lambda r: httpx.Response(200, json=body))
    if ok:
        backend.kill("d")
    else:
        with pytest.raises(TemporaryBackendError):
            backend.kill("d")


def test_standalone_ready() -> None:
    ready = _standalone(lambda r: httpx.Response(200, json={"success": True}))
    assert ready.ready()
    assert not _standalone(lambda r: httpx.Response(503, json={"success": False})).ready()


def test_standalone_default_ui_url() -> None:
    backend = StandaloneBackend("http://spark-master:6066/", "spark://spark-master:7077")
    assert backend.ui_url == "http://spark-master:8080"
    backend.close()


# -- standalone: find ----------------------------------------------------------------------


def _master_json(*drivers: tuple[str, str, str]) -> dict[str, Any]:
    """drivers: (id, state, worker id or "None")."""
    rows = [
        {"id": i, "state": s, "worker": w, "mainclass": "org.apache.spark.deploy.PythonRunner"}
        for i, s, w in drivers
    ]
    active = [r for r in rows if r["state"] in ("SUBMITTED", "RUNNING", "RELAUNCHING")]
    return {
        "workers": [{"id": "worker-1", "webuiaddress": WORKER_UI, "state": "ALIVE"}],
        "activedrivers": active,
        "completeddrivers": [r for r in rows if r not in active],
    }


def _find_handler(master: dict[str, Any], launch: dict[str, str], log_calls: list[str]) -> Handler:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/json/":
            assert str(request.url) == f"{UI}/json/"
            return httpx.Response(200, json=master)
        driver = request.url.params["driverId"]
        assert request.url.params["offset"] == "0" and request.url.params["logType"] == "stderr"
        log_calls.append(driver)
        if driver not in launch:
            return httpx.Response(
                200,
                text="==== Bytes 0-0 of 0 of /w/x/stderr ====\n"
                f"Error: invalid log directory /w/{driver}/",
            )
        return httpx.Response(
            200,
            text=f"==== Bytes 0-99 of 99 of /w/{driver}/stderr ====\n"
            + launch[driver]
            + "more log\n",
        )

    return handler


def test_standalone_find_matches_the_launch_command() -> None:
    master = _master_json(
        ("driver-20260101000000-0000", "FINISHED", "worker-1"),
        ("driver-20260101000001-0001", "RUNNING", "worker-1"),
        ("driver-20260101000002-0002", "KILLED", "worker-1"),
    )
    launch = {
        "driver-20260101000000-0000": _launch_line("run-1"),
        "driver-20260101000001-0001": _launch_line("run-10"),
        "driver-20260101000002-0002": _launch_line("run-2"),
    }
    calls: list[str] = []
    backend = _standalone(_find_handler(master, launch, calls), ui_url=UI)
    assert backend.find("run-1") == "driver-20260101000000-0000"  # not run-10: exact match
    assert backend.find("run-10") == "driver-20260101000001-0001"
    assert backend.find("run-3") is None
    assert len(calls) == 3  # launch commands are read once, then cached


def test_standalone_find_refuses_to_guess_while_a_driver_waits() -> None:
    master = _master_json(
        ("driver-20260101000000-0000", "SUBMITTED", "None"),
        ("driver-20260101000001-0001", "FINISHED", "worker-1"),
    )
    backend = _standalone(_find_handler(master, {}, []), ui_url=UI)
    with pytest.raises(TemporaryBackendError, match="driver-20260101000000-0000"):
        backend.find("run-1")


def test_standalone_find_ignores_unreadable_ended_drivers() -> None:
    master = _master_json(
        ("driver-20260101000000-0000", "FAILED", "worker-1"),
        ("driver-20260101000001-0001", "RUNNING", "worker-1"),
    )
    launch = {"driver-20260101000001-0001": _launch_line("run-9")}
    backend = _standalone(_find_handler(master, launch, []), ui_url=UI)
    assert backend.find("run-1") is None


def test_standalone_find_reads_the_local_work_dir(tmp_path: Path) -> None:
    (tmp_path / "driver-20260101000000-0000").mkdir()
    (tmp_path / "driver-20260101000000-0000" / "stderr").write_text(_launch_line("run-1"))
    master = _master_json(("driver-20260101000000-0000", "RUNNING", "worker-1"))
    backend = _standalone(_find_handler(master, {}, []), ui_url=UI, work_dir=tmp_path)
    assert backend.find("run-1") == "driver-20260101000000-0000"


# -- livy ------------------------------------------------------------------------------------


def test_livy_batch_request_carries_env_as_conf() -> None:
    body = _livy(_refuse_network).batch_request(
        _spec(py_files=["/jobs/lib.zip"], args=["a"], conf={"spark.x": "1"}, env={"K": "v"})
    )
    assert body == {
        "file": "/jobs/a.py",
        "args": ["a"],
        "name": "job-a-run-1",
        "pyFiles": ["/jobs/lib.zip"],
        "conf": {"spark.x": "1", "spark.yarn.appMasterEnv.K": "v"},
    }
    # The env (the run token) is the driver's: executors never get it.
    token = _livy(_refuse_network).batch_request(_spec(env={"TIDEGATE_RUN_TOKEN": "tg_run_x"}))
    assert token["conf"] == {"spark.yarn.appMasterEnv.TIDEGATE_RUN_TOKEN": "tg_run_x"}
    assert not any(k.startswith("spark.executorEnv.") for k in token["conf"])
    assert "pyFiles" not in _livy(_refuse_network).batch_request(_spec())


def test_livy_submit_sends_csrf_header_and_auth() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(201, json={"id": 7, "state": "starting", "name": "job-a-run-1"})

    assert _livy(handler, auth=("u", "p")).submit(_spec()) == "7"
    assert seen[0].headers["X-Requested-By"] == "tidegate"
    assert seen[0].headers["Authorization"].startswith("Basic ")
    assert json.loads(seen[0].content)["name"] == "job-a-run-1"


@pytest.mark.parametrize(
    ("response", "error", "match"),
    [
        (
            httpx.Response(400, json={"msg": "file: '/x.py' does not exist"}),
            PermanentBackendError,
            "does not exist",
        ),
        (
            httpx.Response(400, json={"msg": "Rejected, too many sessions are being created!"}),
            TemporaryBackendError,
            "too many",
        ),
        (httpx.Response(500, text="oops"), TemporaryBackendError, "500"),
        (httpx.Response(502, text="bad gateway"), TemporaryBackendError, "502"),
        (httpx.Response(403, text="Forbidden"), PermanentBackendError, "Forbidden"),
    ],
)
def test_livy_submit_errors(response: httpx.Response, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        _livy(lambda r: response).submit(_spec())


def test_livy_duplicate_name_returns_the_existing_batch() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            return httpx.Response(400, json={"msg": "Duplicate session name: job-a-run-1"})
        return httpx.Response(
            200,
            json={
                "from": 0,
                "total": 2,
                "sessions": [{"id": 3, "name": "other"}, {"id": 4, "name": "job-a-run-1"}],
            },
        )

    assert _livy(handler).submit(_spec()) == "4"


@pytest.mark.parametrize(
    ("raw", "state"),
    [
        ("not_started", AppState.PENDING),
        ("starting", AppState.PENDING),
        ("running", AppState.RUNNING),
        ("success", AppState.SUCCEEDED),
        ("dead", AppState.FAILED),
        ("error", AppState.FAILED),
        ("killed", AppState.KILLED),
        ("recovering", AppState.UNKNOWN),
        ("unknown", AppState.UNKNOWN),
        ("brand_new", AppState.UNKNOWN),
    ],
)
def test_livy_state_mapping(raw: str, state: AppState) -> None:
    backend = _livy(lambda r: httpx.Response(200, json={"id": 1, "state": raw, "log": ["x"]}))
    status = backend.status("1")
    assert (status.state, status.raw_state) == (state, raw)


def test_livy_status_404_is_unknown_and_dead_has_log() -> None:
    status = _livy(lambda r: httpx.Response(404, json={"msg": "Session '1' not found."})).status(
        "1"
    )
    assert (status.state, status.raw_state) == (AppState.UNKNOWN, "not_found")

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/log"):
            # Read back further than the 50 lines shown, for the cause (below).
            assert int(request.url.params["size"]) >= 50
            return httpx.Response(
                200,
                json={"id": 1, "from": 0, "total": 2, "log": ["Traceback", "RuntimeError: boom"]},
            )
        return httpx.Response(200, json={"id": 1, "state": "dead", "log": ["short"]})

    status = _livy(handler).status("1")
    assert status.state is AppState.FAILED
    assert status.message == "Traceback\nRuntimeError: boom"  # no header: not a traceback


def test_livy_kill_is_idempotent() -> None:
    methods: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        methods.append(request.method)
        return httpx.Response(404, json={"msg": "not found"})

    _livy(lambda r: httpx.Response(200, json={"msg": "deleted"})).kill("1")
    _livy(handler).kill("1")
    assert methods == ["DELETE"]
    with pytest.raises(TemporaryBackendError):
        _livy(lambda r: httpx.Response(503, text="busy")).kill("1")


def test_livy_find_pages_through_batches() -> None:
    requests: list[tuple[int, int]] = []
    sessions = [{"id": i, "name": f"tag-{i}"} for i in range(250)]

    def handler(request: httpx.Request) -> httpx.Response:
        start, size = int(request.url.params["from"]), int(request.url.params["size"])
        requests.append((start, size))
        return httpx.Response(
            200,
            json={
                "from": start,
                "total": len(sessions),
                "sessions": sessions[start : start + size],
            },
        )

    backend = _livy(handler, page_size=100)
    assert backend.find("tag-230") == "230"
    assert requests == [(0, 100), (100, 100), (200, 100)]
    assert backend.find("missing") is None


def test_livy_transport_errors_are_temporary_and_ready_is_false() -> None:
    backend = _livy(_refuse_network)
    for call in (
        lambda: backend.submit(_spec()),
        lambda: backend.status("1"),
        lambda: backend.kill("1"),
        lambda: backend.find("t"),
    ):
        with pytest.raises(TemporaryBackendError):
            call()
    assert backend.ready() is False
    assert backend.log_tail("1") is None
    assert _livy(
        lambda r: httpx.Response(200, json={"from": 0, "total": 0, "sessions": []})
    ).ready()


def test_standalone_find_survives_an_unreachable_worker_ui() -> None:
    master = _master_json(("driver-20260101000000-0000", "FINISHED", "worker-1"))

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/json/":
            return httpx.Response(200, json=master)
        raise httpx.ConnectError("worker UI is firewalled", request=request)

    assert _standalone(handler, ui_url=UI).find("run-1") is None
    master = _master_json(("driver-20260101000000-0000", "RUNNING", "worker-1"))
    with pytest.raises(TemporaryBackendError, match="cannot tell yet"):
        _standalone(handler, ui_url=UI).find("run-1")


@pytest.mark.parametrize("bad", ["../create", "a/b", "", ".."])
def test_standalone_rejects_odd_ids(bad: str) -> None:
    backend = _standalone(_refuse_network)
    with pytest.raises(PermanentBackendError):
        backend.status(bad)
    with pytest.raises(PermanentBackendError):
        backend.kill(bad)
    assert backend.log_tail(bad) is None


# ---- a failed driver's log ---------------------------------------------------------------------

_TORN_DOWN = [
    "26/11/29 23:28:45 INFO SparkContext: Starting",
    "Traceback (most recent call last):",
    '  File "app.py", line 65, in <module>',
    "    main(sys.argv[1:])",
    "tidegate_runtime.driver.channel.UndeclaredQuery: query 'enrich' is not declared",
    "26/11/29 23:28:45 INFO SparkContext: Invoking stop() from shutdown hook",
    *[f"\tat org.apache.spark.Frame{i}(Frame.scala:{i})" for i in range(80)],
]


def test_a_failed_driver_s_cause_comes_first_when_shutdown_noise_buried_it() -> None:
    log = "\n".join(_TORN_DOWN)
    shown = _http.cause_first(_http.tail_lines(log, 50), log)
    lines = shown.splitlines()
    assert lines[0] == (
        "tidegate_runtime.driver.channel.UndeclaredQuery: query 'enrich' is not declared"
    )
    assert lines[1] == "[...]" and lines[2:] == _TORN_DOWN[-50:]


def test_the_cause_comes_first_even_when_the_tail_holds_it() -> None:
    text = "\n".join(_TORN_DOWN[:8])
    assert _http.cause_first(text, text) == f"{_TORN_DOWN[4]}\n[...]\n{text}"
    assert _http.python_cause("no traceback here\n\tat x") is None
    assert _http.cause_first("no traceback here", "no traceback here") == "no traceback here"


def test_livy_log_of_a_failed_batch_reads_back_far_enough_to_put_its_cause_first() -> None:
    asked: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        size = int(request.url.params["size"])
        asked.append(size)
        return httpx.Response(200, json={"id": 7, "log": _TORN_DOWN[-size:]})

    shown = _livy(handler).log_tail("7", 30)
    assert asked and asked[0] > len(_TORN_DOWN)
    assert shown is not None
    assert shown.splitlines()[0].endswith("query 'enrich' is not declared")
    assert shown.splitlines()[2:] == _TORN_DOWN[-30:]
