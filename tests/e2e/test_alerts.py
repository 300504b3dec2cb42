"""The alert rules end to end: a real Prometheus (Debian's package) scrapes a real tidegate
(API, real worker process, PostgreSQL) every second and evaluates docker/prometheus/alerts.yml
with only its `for:` durations shortened, while the test drives jobs into each condition.

- operation stuck, no live worker: submissions with no worker running;
- job failed: a real spark-submit (the local Livy runner) of an app that fails at start,
  with restarts disabled;
- restart loop: a Livy stand-in whose batches of one job die at once (each attempt would
  otherwise cost a JVM start), so the real worker's supervisor restarts it over and over;
- backlog / watermark delay growing, no progress: runs the stand-in reports running; the
  test plays the driver through the runtime channel (POST /runs/{id}/progress with the run's
  own token, as the in-job runtime does) — growing backlog, a watermark that stands still,
  and a query that never reports. Real Spark driving these takes minutes (not done here).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from app.spark_local import find_free_port
from bench.fake_livy import FakeLivy
from tests.conftest import ADMIN_TOKEN
from tests.e2e.fixtures import SPARK_TEST_CONF, app_path
from tests.e2e.stack import Stack, running_stack, wait_until

pytestmark = pytest.mark.e2e

PROMETHEUS_DIR = Path(__file__).resolve().parents[2] / "docker" / "prometheus"
ALERTS = PROMETHEUS_DIR / "alerts.yml"
CONFIG = PROMETHEUS_DIR / "prometheus.yml"
TOKEN_CONF = "spark.yarn.appMasterEnv.TIDEGATE_RUN_TOKEN"


class StandInLivy(FakeLivy):
    """Batches run until deleted, but those of the ``dying`` jobs die at once; keeps each
    batch's submission (for the run token a driver would get)."""

    def __init__(self, dying: set[str]) -> None:
        super().__init__()
        self.dying = dying
        self.submitted: dict[str, dict[str, Any]] = {}

    def create(self, payload: dict[str, Any]) -> tuple[int, Any]:
        status, body = super().create(payload)
        if status == 201:
            conf = payload.get("conf") or {}
            with self.lock:
                self.submitted[str(payload.get("name"))] = payload
                if conf.get("spark.tidegate.job") in self.dying:
                    self.batches[body["id"]]["state"] = "dead"
        return status, body

    def token_for(self, tag: str) -> str | None:
        with self.lock:
            payload = self.submitted.get(tag)
        return (payload or {}).get("conf", {}).get(TOKEN_CONF)


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
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
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
    url: str, alert: str, labels: dict[str, str], timeout: float = 60, tick: Any = None
) -> dict[str, Any]:
    def find() -> dict[str, Any] | None:
        if tick is not None:
            tick()
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


def _iso(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")


class Driver:
    """Plays a driver's progress reports: backlog grows by 100 records a report and the
    watermark stands still."""

    def __init__(self, stack: Stack, run_id: int, token: str) -> None:
        self.stack, self.run_id, self.token = stack, run_id, token
        self.batch = 0
        self.watermark = _iso(datetime.now(UTC) - timedelta(minutes=1))

    def report(self) -> None:
        self.batch += 1
        end = 1000 * self.batch
        r = httpx.post(
            f"{self.stack.url}/api/v1/runs/{self.run_id}/progress",
            headers={"Authorization": f"Bearer {self.token}"},
            json={
                "query": "events",
                "batch_id": self.batch,
                "timestamp": _iso(datetime.now(UTC)),
                "num_input_rows": 1000,
                "watermark": self.watermark,
                "sources": [
                    {
                        "end_offset": {"0": end},
                        "latest_offset": {"0": end + 100 * self.batch},
                    }
                ],
                "durations_ms": {"triggerExecution": 900},
            },
            timeout=10,
        )
        assert r.status_code < 300, r.text


def test_each_alert_fires_against_a_real_tidegate(tmp_path: Path, livy_runner: str) -> None:
    stand_in = StandInLivy(dying={"loops"}).start()
    for sub in ("stack", "prom"):
        (tmp_path / sub).mkdir()
    # Run ids far from the session stack's: the shared runner names batches by run id.
    with (
        running_stack(tmp_path / "stack", first_id=900_000) as stack,
        prometheus(tmp_path / "prom", stack.url.removeprefix("http://")) as prom,
    ):
        try:
            _scenario(stack, prom, stand_in, livy_runner)
        finally:
            stand_in.stop()


def _scenario(stack: Stack, prom: str, stand_in: StandInLivy, livy_runner: str) -> None:
    c = stack.client
    for name, url in (("stand-in", stand_in.url), ("runner", livy_runner)):
        r = c.post("/clusters", json={"name": name, "kind": "livy", "url": url})
        assert r.status_code == 201, r.text
    quick = {"min_backoff": "1s", "max_backoff": "1s"}
    _job(stack, "loops", "stand-in", policy=quick, app="/opt/never-runs.py")
    _job(stack, "fails", "runner", policy={"enabled": False}, app=app_path("fail.py"))
    _job(stack, "lags", "stand-in", policy=quick, app="/opt/never-runs.py")
    _job(stack, "hangs", "stand-in", policy=quick, app="/opt/never-runs.py")

    # No worker yet: the submissions wait unclaimed.
    for job in ("loops", "fails", "lags", "hangs"):
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

    lags = wait_until(
        lambda: c.get("/jobs/lags/runs").json()["items"][0],
        lambda run: run["state"] == "running",
        60,
    )
    token = stand_in.token_for(lags["tag"])
    assert token, "the worker gave the run no token"
    driver = Driver(stack, lags["id"], token)
    # The driver reports about once a second while the alerts are awaited.
    wait_firing(
        prom, "TidegateBacklogGrowing", {"job": "lags", "source": "events"}, tick=driver.report
    )
    wait_firing(prom, "TidegateWatermarkDelayGrowing", {"job": "lags"}, tick=driver.report)

    # Running, and never a report: 3 trigger intervals (at least 15 s) of silence.
    wait_firing(prom, "TidegateQueryNoProgress", {"job": "hangs", "query": "events"}, 60)
    assert not any(
        a["labels"]["alertname"] == "TidegateQueryNoProgress" and a["labels"]["job"] == "lags"
        for a in firing(prom)
    ), "a query that reports every second is not silent"

    # A real spark-submit of an app that fails at start, restarts disabled.
    wait_firing(prom, "TidegateJobFailed", {"job": "fails"}, 180)
