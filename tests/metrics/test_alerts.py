"""The alert rules end to end: a real Prometheus (Debian's package) scrapes a real tidegate
(API, real worker process, PostgreSQL) every second and evaluates docker/prometheus/alerts.yml
with only its `for:` durations shortened, while the test drives jobs into each condition.

- operation stuck, no live worker: submissions with no worker running;
- job failed: a real spark-submit (the session's local Livy runner) of an app that fails at
  start, with restarts disabled;
- backlog / watermark delay growing, no progress: one real run of the example windowed
  pipeline on the runner, its progress reported by the tidegate runtime in the driver. A
  thread appends records faster than the query may read them (maxRecordsPerBatch), all at
  one event time: the backlog the driver reports grows and the watermark stands still. Then
  its driver JVM is frozen (SIGSTOP): alive for the runner, so the run stays running, but no
  batch and no report come any more — a hung driver;
- restart loop: a Livy stand-in whose batches of one job die at once, so the real worker's
  supervisor restarts it over and over (each attempt would otherwise cost a JVM start);
- query restart loop: a job on the stand-in whose "driver" is this test: it takes the run's
  bootstrap token from the submission, as a driver does, and reports through the runtime's
  own client that its query failed and restarts alone, again and again
  (tests/runtime/test_query_supervision.py proves a real driver makes that report);
- watermark ahead, late rows dropped: the same "driver" reports batches whose watermark runs
  5 minutes ahead of its clock, then one whose stateful operator dropped rows behind it
  (tests/operations/test_lifecycle_e2e.py::test_rows_dropped_late_on_real_spark proves a
  real driver reports Spark's figure).

And on real Spark alone (the session's stack): a backlog stamped 4 minutes ahead of the clock
fires the watermark-ahead alert, and ``tidegate verify`` names the batch that dropped the live
records behind it.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from app.devtools.spark_local import find_free_port
from bench.fake_livy import FakeLivy
from tests.conftest import ADMIN_TOKEN
from tests.operations.test_lifecycle_e2e import _windowed_version
from tests.support.e2e import (
    RUNNER_AUTH,
    SPARK_TEST_CONF,
    app_path,
    runner_cluster,
    spark_submit_processes,
)
from tests.support.stack import Stack, running_stack, wait_until
from tests.support.waiting import stop_process
from tidegate_runtime.contract import BOOTSTRAP_ENV
from tidegate_runtime.driver.channel import ControlClient
from tidegate_runtime.sources.eventlog import EventLog
from tidegate_runtime.sources.eventlog_producer import produce

pytestmark = pytest.mark.e2e

PROMETHEUS_DIR = Path(__file__).resolve().parents[2] / "docker" / "prometheus"
ALERTS = PROMETHEUS_DIR / "alerts.yml"
CONFIG = PROMETHEUS_DIR / "prometheus.yml"


class StandInLivy(FakeLivy):
    """Batches run until deleted, but those of the ``dying`` jobs die at once."""

    def __init__(self, dying: set[str]) -> None:
        super().__init__()
        self.dying = dying

    def create(self, payload: dict[str, Any]) -> tuple[int, Any]:
        status, body = super().create(payload)
        if status == 201 and (payload.get("conf") or {}).get("spark.tidegate.job") in self.dying:
            with self.lock:
                self.batches[body["id"]]["state"] = "dead"
        if status == 201:
            with self.lock:
                self.batches[body["id"]]["conf"] = dict(payload.get("conf") or {})
        return status, body

    def driver_conf(self, job: str) -> dict[str, str] | None:
        """The conf of the job's latest batch (a driver's view of its submission)."""
        with self.lock:
            for batch in reversed(list(self.batches.values())):
                if batch.get("conf", {}).get("spark.tidegate.job") == job:
                    return dict(batch["conf"])
        return None


class Appender(threading.Thread):
    """Appends ``per_round`` records every ``every`` seconds, all at one event time: faster
    than a query reading ``maxRecordsPerBatch`` records a batch (batches at least 1 s apart)
    can follow, and with nothing to move its watermark."""

    def __init__(self, root: Path, stream: str, per_round: int, every: float) -> None:
        super().__init__(name="appender", daemon=True)
        self.root, self.stream, self.per_round, self.every = root, stream, per_round, every
        self.event_time_ms = int((time.time() - 60) * 1000)
        self.halt = threading.Event()

    def append(self) -> None:
        produce(self.root, self.stream, 1, 0, self.per_round, self.event_time_ms, ts_step_ms=0)

    def run(self) -> None:
        while not self.halt.wait(self.every):  # paces the producer; nothing is awaited
            self.append()


@contextmanager
def prometheus(tmp: Path, target: str) -> Iterator[str]:
    """A real Prometheus: 1 s scrape and evaluation, the alert rules with `for:` at 1 s."""
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.skip("prometheus not installed (Debian: apt-get install prometheus)")
    rules = yaml.safe_load(ALERTS.read_text())
    for group in rules["groups"]:
        for rule in group["rules"]:
            rule["for"] = "1s"
    (tmp / "alerts.yml").write_text(yaml.safe_dump(rules))
    (tmp / "token").write_text(ADMIN_TOKEN)
    # docker/prometheus/prometheus.yml itself, with 1 s intervals and this test's target.
    config = yaml.safe_load(CONFIG.read_text())
    config["global"] = {"scrape_interval": "1s", "evaluation_interval": "1s"}
    config["rule_files"] = [str(tmp / "alerts.yml")]
    (scrape,) = config["scrape_configs"]
    scrape["scrape_timeout"] = "1s"
    scrape["authorization"]["credentials_file"] = str(tmp / "token")
    scrape["static_configs"] = [{"targets": [target]}]
    (tmp / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = find_free_port()
    log = (tmp / "prometheus.log").open("wb")
    proc = subprocess.Popen(
        [
            binary,
            f"--config.file={tmp / 'prometheus.yml'}",
            f"--storage.tsdb.path={tmp / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: _ready(url, proc), bool, 60, 0.2)
        yield url
    finally:
        stop_process(proc)
        log.close()


def _ready(url: str, proc: subprocess.Popen[bytes]) -> bool:
    if proc.poll() is not None:
        raise AssertionError(f"prometheus exited with {proc.returncode}")
    try:
        return httpx.get(f"{url}/-/ready", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def firing(url: str) -> list[dict[str, Any]]:
    body = httpx.get(f"{url}/api/v1/alerts", timeout=5).json()
    return [a for a in body["data"]["alerts"] if a["state"] == "firing"]


def wait_firing(
    url: str, alert: str, labels: dict[str, str], timeout: float = 60
) -> dict[str, Any]:
    def find() -> dict[str, Any] | None:
        for a in firing(url):
            if a["labels"]["alertname"] == alert and labels.items() <= a["labels"].items():
                return a
        return None

    found: dict[str, Any] = wait_until(find, lambda a: a is not None, timeout, 0.5)
    return found


def _job(stack: Stack, name: str, cluster: str, *, policy: dict[str, Any], app: str) -> None:
    r = stack.client.post("/jobs", json={"name": name, "restart_policy": policy})
    assert r.status_code == 201, r.text
    source = {"name": "events", "kind": "eventlog", "options": {"stream": "s"}}
    version = {
        "app": {"file": app},
        "cluster": cluster,
        "conf": SPARK_TEST_CONF,
        "queries": [{"sources": [source], "trigger": "1 second"}],
    }
    r = stack.client.post(f"/jobs/{name}/versions", json=version)
    assert r.status_code == 201, r.text


def test_each_alert_fires_against_a_real_tidegate(tmp_path: Path, livy_runner: str) -> None:
    stand_in = StandInLivy(dying={"loops"}).start()
    for sub in ("stack", "prom", "log"):
        (tmp_path / sub).mkdir()
    EventLog(tmp_path / "log").create_stream("clicks", 1)
    # ~20 records/s, where the query reads at most 2 a batch.
    appender = Appender(tmp_path / "log", "clicks", per_round=5, every=0.25)
    # Run ids far from the session stack's: the shared runner names batches by run id.
    with (
        running_stack(tmp_path / "stack", first_id=900_000) as stack,
        prometheus(tmp_path / "prom", stack.url.removeprefix("http://")) as prom,
    ):
        try:
            appender.append()  # the first batch has records to read
            appender.start()
            _scenario(stack, prom, tmp_path, stand_in, livy_runner)
        finally:
            appender.halt.set()
            if appender.ident is not None:
                appender.join(10)
            _end_real_runs(stack, livy_runner, "lags")
            stand_in.stop()


def _scenario(stack: Stack, prom: str, tmp: Path, stand_in: StandInLivy, livy_runner: str) -> None:
    c = stack.client
    for body in (
        {"name": "stand-in", "kind": "livy", "url": stand_in.url},
        runner_cluster(livy_runner),
    ):
        r = c.post("/clusters", json=body)
        assert r.status_code == 201, r.text
    quick = {"min_backoff": "1s", "max_backoff": "1s"}
    _job(stack, "loops", "stand-in", policy=quick, app="/opt/never-runs.py")
    _job(stack, "flaky", "stand-in", policy={"enabled": False}, app="/opt/never-runs.py")
    _job(stack, "fails", "runner", policy={"enabled": False}, app=app_path("fail.py"))
    r = c.post("/jobs", json={"name": "lags", "restart_policy": {"enabled": False}})
    assert r.status_code == 201, r.text
    _windowed_version(stack, "lags", "runner", tmp / "log", tmp / "out", max_records_per_batch=2)

    # No worker yet: the submissions wait unclaimed.
    for job in ("loops", "fails", "lags", "flaky"):
        r = c.post(f"/jobs/{job}/submit", json={"version": 1})
        assert r.status_code == 202, r.text
    wait_firing(prom, "TidegateNoLiveWorker", {})
    wait_firing(prom, "TidegateOperationStuck", {"kind": "submit"})

    stack.start_worker()
    wait_until(
        lambda: [a["labels"]["alertname"] for a in firing(prom)],
        lambda names: "TidegateNoLiveWorker" not in names,
        60,
    )
    wait_firing(prom, "TidegateRestartLoop", {"job": "loops"})
    driver = _query_restart_loop(stack, prom, stand_in)
    _late_rows(prom, driver)

    # The real run: its driver reports a growing backlog and a watermark that stands still.
    lags = {"job": "lags", "query": "windowed_counts"}
    wait_firing(prom, "TidegateBacklogGrowing", {**lags, "source": "clicks"}, 240)
    wait_firing(prom, "TidegateWatermarkDelayGrowing", lags, 60)
    assert not any(
        a["labels"]["alertname"] == "TidegateQueryNoProgress" and a["labels"]["job"] == "lags"
        for a in firing(prom)
    ), "a query that commits a batch every second or so is not silent"

    # Frozen, the driver is alive (the run stays running) but reports nothing any more:
    # 3 trigger intervals (at least 15 s) of silence.
    (run,) = c.get("/jobs/lags/runs").json()["items"]
    (driver,) = spark_submit_processes(run["tag"])
    driver.send_signal(signal.SIGSTOP)
    wait_firing(prom, "TidegateQueryNoProgress", lags, 90)
    assert stack.run(run["id"])["state"] == "running"

    # A real spark-submit of an app that fails at start, restarts disabled.
    wait_firing(prom, "TidegateJobFailed", {"job": "fails"}, 180)


def _query_restart_loop(stack: Stack, prom: str, stand_in: StandInLivy) -> ControlClient:
    """The stand-in's batch of job 'flaky' runs; acting as its driver, report its query
    failing and restarting alone: once, and once Prometheus has that first value (a counter
    that appears at N shows no increase), four times more."""
    conf = wait_until(lambda: stand_in.driver_conf("flaky"), lambda c: c is not None, 60)
    assert conf is not None
    run_id, attempt = int(conf["spark.tidegate.run_id"]), int(conf["spark.tidegate.attempt"])
    bootstrap = conf[f"spark.yarn.appMasterEnv.{BOOTSTRAP_ENV}"]
    driver = ControlClient(conf["spark.tidegate.api_url"], run_id, bootstrap)
    driver.exchange_bootstrap()

    def fail(n: int) -> None:
        report = {"attempt": attempt, "query": "events", "failures": n, "error": f"boom {n}"}
        driver.query_failed({**report, "restart_in_seconds": 1})

    fail(1)
    wait_until(
        lambda: httpx.get(
            f"{prom}/api/v1/query",
            params={"query": 'tidegate_query_restarts_total{job="flaky"}'},
            timeout=5,
        ).json()["data"]["result"],
        lambda result: bool(result) and result[0]["value"][1] == "1",
        60,
        0.5,
    )
    for n in range(2, 6):
        fail(n)
    alert = wait_firing(prom, "TidegateQueryRestartLoop", {"job": "flaky", "query": "events"})
    assert "restarted its query events alone" in alert["annotations"]["description"]
    restarts = stack.run(run_id)["query_restarts"]["events"]
    assert restarts["restarts"] == 5 and restarts["last_error"] == "boom 5", restarts
    return driver


def _counter(prom: str, expr: str) -> str | None:
    result = httpx.get(f"{prom}/api/v1/query", params={"query": expr}, timeout=5).json()
    return result["data"]["result"][0]["value"][1] if result["data"]["result"] else None


def _late_rows(prom: str, driver: ControlClient) -> None:
    """Acting as job flaky's driver again: batches whose watermark runs 5 minutes ahead of
    the driver's clock (a producer's clock ahead), then one whose stateful operator dropped
    500 rows behind it (tests/operations/test_lifecycle_e2e.py proves a real driver reports
    Spark's figure)."""

    def iso(t: float) -> str:
        return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(t))

    def batch(batch_id: int, dropped: int) -> None:
        now = time.time()
        op = {"operator_name": "stateStoreSave", "num_rows_dropped_by_watermark": dropped}
        driver.progress(
            {
                "query": "events",
                "batch_id": batch_id,
                "timestamp": iso(now),
                "watermark": iso(now + 300),
                "state_operators": [op],
                "durations_ms": {"triggerExecution": 100},
            }
        )

    batch(1, 0)
    ahead = wait_firing(prom, "TidegateWatermarkAhead", {"job": "flaky", "query": "events"})
    assert "ahead of the driver's clock" in ahead["annotations"]["description"]
    counter = 'tidegate_query_rows_dropped_late_total{job="flaky",query="events"}'
    wait_until(lambda: _counter(prom, counter), lambda v: v == "0", 60, 0.5)  # seen at 0 first
    batch(2, 500)
    batch(2, 500)  # the same batch reported again: counted once
    alert = wait_firing(prom, "TidegateLateRowsDropped", {"job": "flaky", "query": "events"})
    assert "rows a minute as behind the watermark" in alert["annotations"]["description"]
    assert _counter(prom, counter) == "500"


def _end_real_runs(stack: Stack, livy_runner: str, job: str) -> None:
    """Kill the job's drivers on the shared runner (thawed first: a frozen JVM would sit out
    the SIGTERM until the runner's SIGKILL)."""
    for run in stack.client.get(f"/jobs/{job}/runs").json()["items"]:
        for driver in spark_submit_processes(run["tag"]):
            driver.send_signal(signal.SIGCONT)
        if run["backend_id"] is not None:
            r = httpx.delete(
                f"{livy_runner}/batches/{run['backend_id']}", headers=RUNNER_AUTH, timeout=60
            )
            assert r.status_code < 300 or r.status_code == 404, r.text


def test_a_backlog_stamped_ahead_of_the_clock_is_alerted_and_verify_names_the_drops(
    clusters: Stack, tmp_path: Path
) -> None:
    """Issue 53's scenario on real Spark: a backlog whose event times run ahead of the clock
    (a producer whose clock is 4 minutes fast) moves the watermark past now; live records
    stamped with the real time are then behind it and Spark drops them. Prometheus, scraping
    the session's tidegate, fires TidegateWatermarkAhead; ``tidegate verify`` names the batch
    and the count, and exits 1."""
    from typer.testing import CliRunner

    from app.cli import cli
    from tests.operations.test_lifecycle_e2e import _job, _operate

    stack, job, query = clusters, "clock-ahead", "windowed_counts"
    root, out = tmp_path / "log", tmp_path / "out"
    EventLog(root).create_stream("clicks", 1)
    now_ms = int(time.time() * 1000)
    ahead_keys = [f"ahead-{i}" for i in range(20)]
    produce(str(root), "clicks", 1, 0, 20, start_ts_ms=now_ms + 240_000, keys=ahead_keys)
    _job(stack, job, {"enabled": False})
    version = _windowed_version(stack, job, "runner", root, out)
    (tmp_path / "prom").mkdir()
    with prometheus(tmp_path / "prom", stack.url.removeprefix("http://")) as prom:
        submit = _operate(stack, job, "submit", {"version": version})
        assert submit["state"] == "succeeded", submit
        run_id = submit["run_id"]
        alert = wait_firing(prom, "TidegateWatermarkAhead", {"job": job, "query": query}, 180)
        assert "ahead of the driver's clock" in alert["annotations"]["description"]

        # Live records, stamped with the clock at the start: their 1-minute windows ended
        # long before the watermark (about now + 230 s), each its own key (one row each).
        live_keys = [f"live-{i}" for i in range(5)]
        produce(str(root), "clicks", 1, 0, 5, start_ts_ms=now_ms, keys=live_keys)
        account = wait_until(
            lambda: stack.client.get(f"/runs/{run_id}/accounting").json(),
            lambda a: a["queries"][0]["dropped_late"] >= 5,
            120,
        )
    [counted] = account["queries"]
    assert (counted["dropped_late"], counted["not_counted"]) == (5, 0), account
    [late_batch] = [b for b in counted["batches"] if b["dropped_late"]]
    assert (late_batch["read"], late_batch["counted_in"]) == (5, 5), late_batch

    token = ["--url", stack.url, "--token", ADMIN_TOKEN]
    shown = CliRunner().invoke(cli, ["verify", job, *token])
    assert shown.exit_code == 1, shown.output
    assert f"{query}: 5 rows dropped as late" in shown.output, shown.output
    rows = [line.split() for line in shown.output.splitlines() if line.startswith(query)]
    by_batch = {int(cells[1]): cells for cells in rows}
    assert by_batch[late_batch["batch_id"]][-1] == "5", shown.output  # its DROPPED LATE
    cancel = _operate(stack, job, "cancel")
    assert cancel["state"] == "succeeded", cancel
