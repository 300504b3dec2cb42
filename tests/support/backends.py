"""Where the lifecycle scenarios run: both backends, each the way a team would use it.

The scenario tests (startpoints, snapshots, drains) take a ``target`` and run once per
backend -- the embedded Livy-compatible runner (Spark local mode) and the standalone cluster
through its REST submission API, driver in cluster deploy mode -- rather than being written
twice. CI runs each scenario on one of them (``CI_BACKEND``: some on each, so every push
exercises both); ``TIDEGATE_SUITE=full`` (``make chaos``) runs every scenario on both. On
both, the pipeline is a copy of ``pipelines/windowed_counts.py`` in a folder of its
own (a team's repository: it imports pyspark and ``tidegate_runtime`` only) and the drivers
and executors run a Python that has pyspark and pyarrow and nothing else: the runtime reaches
them only as the zip the worker adds to every submission.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow
import pyspark
import pytest

from app.core.run_states import ACTIVE
from app.devtools.spark_local import LocalStandaloneCluster
from tests.support.e2e import SPARK_TEST_CONF, runner_cluster
from tests.support.sizes import FULL
from tests.support.stack import ROOT, Stack, wait_until

BACKENDS = ["runner", "standalone"]

# The one backend each scenario runs on in CI (the suite stays within its time on two cores);
# a scenario not named here runs on both.
# (The snapshot story's three standby starts on the standalone cluster ran it past ten
# minutes on two loaded cores: in CI it runs cold on the runner. A standby on standalone, a
# driver and an executor JVM in cluster deploy mode, takes a minute or more to be ready there:
# the RocksDB lifecycle, up to its pre-warmed update by snapshot, took 143 s on standalone and
# 80 s on the runner, so it and the Kafka startpoints run on the runner too; standalone keeps
# the hot spare (a warm driver given go), the Kafka sink, the windowed lifecycle
# (test_lifecycle_e2e.py) and a resume point's save-snapshot.)
CI_BACKEND = {
    "test_new_version_from_a_snapshot_of_a_running_job": "runner",
    "test_a_killed_driver_is_restarted_with_the_output_exact": "standalone",
    "test_the_lifecycle_on_rocksdb_with_changelog_checkpointing": "runner",
    "test_update_by_drain_replaces_the_state_with_nothing_lost_or_twice": "runner",
    "test_the_large_state_example_through_an_update_by_snapshot_and_a_drain": "runner",
    "test_startpoints_end_to_end_keep_state": "runner",
    "test_kafka_startpoints_end_to_end_keep_state": "runner",
    "test_kafka_update_by_drain_then_a_new_partition_a_driver_kill_and_a_drain": "runner",
    "test_a_kafka_sink_is_at_least_once_its_copies_bounded_by_the_batch_under_way": "standalone",
    "test_a_drain_with_its_broker_down_stops_cleanly_and_a_later_drain_is_exact": "runner",
    "test_a_kafka_job_with_its_checkpoints_in_s3_restarts_rewinds_updates_and_drains": "runner",
    "test_a_kafka_job_with_its_checkpoints_in_s3_is_updated_by_snapshot_and_resumed_from_one": (
        "runner"
    ),
}


@dataclass(frozen=True)
class Target:
    """One backend to run a scenario on."""

    cluster: str  # the registered cluster's name: "runner" or "standalone"
    python: str  # the drivers' and executors' Python: pyspark and pyarrow only
    pipelines: Path  # the team's own folder of pipelines

    def pipeline(self, name: str) -> str:
        return str(self.pipelines / name)

    def conf(self, **more: Any) -> dict[str, Any]:
        return {
            **SPARK_TEST_CONF,
            "spark.sql.session.timeZone": "UTC",
            "spark.pyspark.python": self.python,
            **more,
        }


@pytest.fixture(scope="session")
def cluster_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A virtual environment holding pyspark (with py4j) and pyarrow only: no tidegate, no
    ``app``, no ``pipelines``. Linked from this environment rather than installed again (a
    pyspark install is half a gigabyte)."""
    venv = tmp_path_factory.mktemp("cluster-python") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python3*/site-packages"))
    import py4j

    for module in (pyspark, py4j, pyarrow):
        (site / module.__name__).symlink_to(Path(module.__file__ or "").parent)
    python = venv / "bin" / "python"
    probe = subprocess.run(
        [
            str(python),
            "-c",
            "import pyspark, pyarrow\ntry:\n import app\nexcept ImportError:\n"
            " print('bare')\ntry:\n import tidegate_runtime\nexcept ImportError:\n print('bare')",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=venv,
    )
    assert probe.stdout.split() == ["bare", "bare"], probe
    return str(python)


@pytest.fixture(scope="session")
def team_pipelines(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example pipelines as a team keeps them: a folder outside the tidegate checkout."""
    folder = tmp_path_factory.mktemp("team-repo") / "pipelines"
    folder.mkdir()
    for name in (
        "windowed_counts.py",
        "kafka_windowed_counts.py",
        "kafka_relay.py",
        "enrich.py",
        "dedup_events.py",
    ):
        shutil.copy(ROOT / "pipelines" / name, folder / name)
    return folder


@pytest.fixture(scope="module")
def clusters(stack: Stack, standalone_cluster: LocalStandaloneCluster, livy_runner: str) -> Stack:
    """Both backends registered (``runner`` and ``standalone``) and a worker running."""
    for body in (
        runner_cluster(livy_runner),
        {
            "name": "standalone",
            "kind": "standalone",
            "url": standalone_cluster.rest_url,
            "master_url": standalone_cluster.master_url,
            "ui_url": standalone_cluster.ui_url,
        },
    ):
        r = stack.client.post("/clusters", json=body)
        assert r.status_code in (201, 409), r.text
        assert stack.client.get(f"/clusters/{body['name']}").json()["reachable"] is True
    if not stack.workers:
        stack.start_worker()
    return stack


def _active_jobs(stack: Stack) -> list[str]:
    jobs, cursor = [], None
    while True:
        params: dict[str, Any] = {"limit": 200, **({"cursor": cursor} if cursor else {})}
        page = stack.client.get("/jobs", params=params).json()
        for job in page["items"]:
            runs = stack.client.get(f"/jobs/{job['name']}/runs", params={"limit": 20}).json()
            if any(run["state"] in ACTIVE for run in runs["items"]):
                jobs.append(job["name"])
        cursor = page.get("next_cursor")
        if not cursor:
            return jobs


def end_every_run(stack: Stack) -> list[str]:
    """Cancel every job of the session's stack that still has a live run (a driver, a standby
    or a spare): a test that failed half-way would leave its drivers holding the shared
    clusters' cores, and every later test there would wait for a core and fail in turn."""
    ended = _active_jobs(stack)
    for job in ended:
        for _ in range(3):  # an operation of the test's may still be under way: 409 until done
            r = stack.client.post(f"/jobs/{job}/cancel")
            if r.status_code == 202:
                stack.wait_operation(r.json()["id"], timeout=180)
                break
            if r.status_code != 409:
                break
            url = f"/jobs/{job}/operations"
            wait_until(
                lambda url=url: stack.client.get(url, params={"limit": 5}).json(),  # type: ignore[misc]
                lambda page: all(
                    op["state"] in ("succeeded", "failed") for op in page.get("items", [])
                ),
                180,
            )
    if ended:
        print(f"\nended the live runs of {ended} left by the test", file=sys.stderr)
    return ended


@pytest.fixture(autouse=True)
def _no_run_outlives_its_test(request: pytest.FixtureRequest) -> Iterator[None]:
    """After each test on the session's stack, its drivers are gone (see end_every_run)."""
    yield
    if "stack" in request.fixturenames:
        end_every_run(request.getfixturevalue("stack"))


@pytest.fixture
def runner(stack: Stack, livy_runner: str) -> Stack:
    """Only the local runner registered (``runner``) and a worker running: for a scenario
    that needs one backend, without starting the standalone cluster."""
    r = stack.client.post("/clusters", json=runner_cluster(livy_runner))
    assert r.status_code in (201, 409), r.text
    if not stack.workers:
        stack.start_worker()
    return stack


@pytest.fixture(params=BACKENDS)
def target(
    request: pytest.FixtureRequest, clusters: Stack, cluster_python: str, team_pipelines: Path
) -> Target:
    ci = CI_BACKEND.get(request.function.__name__, request.param)
    if not FULL and request.param != ci:
        pytest.skip(f"CI runs this scenario on {ci}; TIDEGATE_SUITE=full runs it on both")
    return Target(request.param, cluster_python, team_pipelines)
