"""Real Spark for end-to-end tests: one standalone cluster and one local runner per session.

Ports are picked free at start; everything runs on 127.0.0.1 and is stopped at the end.
Registered as a plugin by ``tests/conftest.py``, so every test that needs Spark, whichever
domain folder it lives in, shares these session fixtures instead of starting its own.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import psutil
import pytest
import uvicorn

from app.devtools.spark_local import LocalStandaloneCluster, find_free_port
from app.runner.app import create_app
from tests.support.waiting import wait_for  # noqa: F401  (re-exported for the e2e tests)

APPS = Path(__file__).parent.absolute() / "apps"

# Small and quiet: these share a 2-core machine.
SPARK_TEST_CONF = {
    "spark.driver.memory": "512m",
    "spark.executor.memory": "512m",
    "spark.cores.max": "1",
    "spark.executor.cores": "1",
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "2",
}

# The session runner's bearer token; clusters pointing at it carry it as their credentials.
RUNNER_TOKEN = "tg_test_runner_token_" + uuid.uuid4().hex
RUNNER_AUTH = {"Authorization": f"Bearer {RUNNER_TOKEN}"}


def runner_cluster(url: str, name: str = "runner") -> dict[str, object]:
    """The POST /clusters body registering the test runner at ``url``."""
    return {
        "name": name,
        "kind": "livy",
        "url": url,
        "credentials": {"authorization": RUNNER_AUTH["Authorization"]},
    }


def app_path(name: str) -> str:
    return str(APPS / name)


def unique_tag(prefix: str) -> str:
    return f"e2e-{prefix}-{uuid.uuid4().hex[:8]}"


def processes_mentioning(text: str) -> list[psutil.Process]:
    """Live processes whose command line or working directory contains ``text``."""
    found = []
    for proc in psutil.process_iter(["cmdline", "cwd", "status"]):
        if proc.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        haystack = " ".join(proc.info["cmdline"] or []) + " " + (proc.info["cwd"] or "")
        if text in haystack:
            found.append(proc)
    return found


def spark_submit_processes(text: str) -> list[psutil.Process]:
    """The spark-submit JVMs whose command line mentions ``text``.

    A JVM forks short-lived helpers (Hadoop runs ``chmod`` through a shell): between fork and
    exec such a child still shows its parent's command line, so children of a match are not
    drivers of their own."""
    procs = [
        p for p in processes_mentioning(text) if "SparkSubmit" in " ".join(p.info["cmdline"] or [])
    ]
    pids = {p.pid for p in procs}
    drivers = []
    for proc in procs:
        try:
            if proc.ppid() not in pids:
                drivers.append(proc)
        except psutil.NoSuchProcess:
            continue
    return drivers


def driver_jvms(tag: str) -> list[psutil.Process]:
    """The driver JVM of the submission tagged ``tag`` on either backend: the runner's
    ``spark-submit --name <tag>`` (local mode) or a standalone worker's ``DriverWrapper``
    launched with ``-Dspark.app.name=<tag>`` (cluster deploy mode). Exact arguments, so
    ``…-a1`` never matches ``…-a10``."""
    found = []
    for proc in spark_submit_processes(tag) + processes_mentioning("DriverWrapper"):
        args = proc.info["cmdline"] or []
        if tag in args or f"-Dspark.app.name={tag}" in args:
            found.append(proc)
    return found


# The JVM flags of every spark-submit the tests start (the runner's drivers, dry runs, the
# runtime tests' SparkSession) and of the standalone cluster's master and worker: the
# client-only JIT and the serial collector. Test JVMs live for seconds to minutes on tiny
# data, so C2 compiler threads and a parallel GC only take CPU from the other JVMs on a
# 2-core machine; this halves a driver's time to its first batches there. Flags only: no
# Spark behaviour changes. SPARK_SUBMIT_OPTS / SPARK_DAEMON_JAVA_OPTS already set (even
# empty) are kept.
TEST_JVM_OPTS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


@pytest.fixture(scope="session", autouse=True)
def _loopback_spark() -> None:
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    os.environ.setdefault("SPARK_SUBMIT_OPTS", TEST_JVM_OPTS)
    os.environ.setdefault("SPARK_DAEMON_JAVA_OPTS", TEST_JVM_OPTS)


@pytest.fixture(scope="session")
def standalone_cluster(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[LocalStandaloneCluster]:
    cluster = LocalStandaloneCluster(
        tmp_path_factory.mktemp("spark-cluster"),
        find_free_port(),
        find_free_port(),
        find_free_port(),
        worker_cores=4,
        worker_memory="2g",
    )
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@contextmanager
def serve_runner(state_dir: Path, port: int | None = None) -> Iterator[str]:
    """The runner app under uvicorn in a background thread; yields its URL."""
    port = port or find_free_port()
    app = create_app(state_dir, "local[2]", token=RUNNER_TOKEN, kill_grace=5.0)
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    )
    thread = threading.Thread(target=server.run, name="livy-runner", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the runner did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture(scope="session")
def runner_state_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("livy-runner")


@pytest.fixture(scope="session")
def livy_runner(runner_state_dir: Path) -> Iterator[str]:
    with serve_runner(runner_state_dir) as url:
        try:
            yield url
        finally:
            # Leave nothing running: kill every batch that has not ended.
            batches = httpx.get(
                f"{url}/batches", params={"size": 1000}, headers=RUNNER_AUTH
            ).json()["sessions"]
            for batch in batches:
                if batch["state"] not in ("success", "dead", "killed"):
                    httpx.delete(f"{url}/batches/{batch['id']}", headers=RUNNER_AUTH, timeout=30)


from tests.support.stack import stack  # noqa: E402, F401  (the tidegate API + workers fixture)
