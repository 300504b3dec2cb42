"""Secrets never leak: a real `tidegate api` and `tidegate worker` (JSON logs, DEBUG level)
carry a job through submit, progress and stop on the local runner, with refusals along the
way. Afterwards no token (admin, operate, read, the run's own) and no cluster credential
appears in the API's or the worker's logs, the driver's log, any API response or error, or
the audit trail."""

from __future__ import annotations

import base64
import os
import random
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest

from app.core import migrate
from app.devtools.spark_local import find_free_port
from tests.conftest import ADMIN_TOKEN
from tests.support.database import scratch_database
from tests.support.e2e import RUNNER_AUTH, SPARK_TEST_CONF, spark_submit_processes
from tests.support.stack import ROOT, wait_until
from tests.support.waiting import stop_process
from tidegate_runtime.sources.eventlog import EventLog
from tidegate_runtime.sources.eventlog_producer import produce

pytestmark = pytest.mark.e2e

TOKEN_LINE = re.compile(r"TIDEGATE_RUN_(TOKEN|BOOTSTRAP)=(\S+)")


@pytest.fixture
def database(pg_server: str) -> Iterator[str]:
    with scratch_database(pg_server, "tidegate_secrets") as url:
        migrate.upgrade(url)
        with psycopg.connect(url, autocommit=True) as conn:  # the runner is shared: own run ids
            conn.execute(
                "select setval('runs_id_seq', %s, false)", (random.randrange(1, 9000) * 10**6,)
            )
        yield url


def _spawn(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "app.cli", *args],
        env={**os.environ, **env},
        cwd=ROOT,
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
    )


def _stop(proc: subprocess.Popen[bytes]) -> None:
    stop_process(proc, grace=30)


def test_no_secret_in_logs_responses_errors_or_audit(
    tmp_path: Path, database: str, livy_runner: str, runner_state_dir: Path
) -> None:
    port = find_free_port()
    url = f"http://127.0.0.1:{port}"
    env = {
        "TIDEGATE_DATABASE_URL": database,
        "TIDEGATE_ADMIN_TOKEN": ADMIN_TOKEN,
        "TIDEGATE_PORT": str(port),
        "TIDEGATE_PUBLIC_URL": url,
        "TIDEGATE_DATA_DIR": str(tmp_path / "data"),
        "TIDEGATE_CHECKPOINT_ROOT": str(tmp_path / "checkpoints"),
        "TIDEGATE_LOG_JSON": "true",
        "TIDEGATE_LOG_LEVEL": "DEBUG",
        # The operate token below creates the version: its app file must lie under a root.
        "TIDEGATE_APP_ROOTS": str(ROOT / "pipelines"),
    }
    api = _spawn(["api", "--no-migrate"], env, tmp_path / "api.log")
    worker = _spawn(["worker", "--poll-seconds", "0.5"], env, tmp_path / "worker.log")
    seen: list[str] = []  # every response body and error the clients got

    def record(response: httpx.Response) -> None:
        response.read()
        if (response.request.method, response.request.url.path) == ("POST", "/api/v1/tokens"):
            return  # a new token's secret is shown once, to its creator: that is the point
        seen.append(f"{response.status_code} {dict(response.headers)} {response.text}")

    def client(token: str) -> httpx.Client:
        return httpx.Client(
            base_url=url + "/api/v1",
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
            event_hooks={"response": [record]},
        )

    cluster_secret = RUNNER_AUTH["Authorization"]  # the runner refuses any other
    password = f"pw-{uuid.uuid4().hex}"
    job = "secrets"
    try:
        wait_until(lambda: _up(url), bool, 60, 0.2)
        admin = client(ADMIN_TOKEN)
        operate = client(
            admin.post("/tokens", json={"name": "ci", "scope": "operate"}).json()["token"]
        )
        read = client(admin.post("/tokens", json={"name": "dash", "scope": "read"}).json()["token"])
        r = admin.post(
            "/clusters",
            json={
                "name": "runner",
                "kind": "livy",
                "url": livy_runner,
                "credentials": {"authorization": cluster_secret},
            },
        )
        assert r.status_code == 201, r.text
        r = admin.post(
            "/clusters",
            json={
                "name": "basic",
                "kind": "livy",
                "url": livy_runner,
                "credentials": {"username": "svc", "password": password},
            },
        )
        assert r.status_code == 201, r.text
        # Refusals that carry the secrets in their request: none may echo them.
        for body in (
            {
                "name": "bad name!",
                "kind": "livy",
                "url": livy_runner,
                "credentials": {"password": password},
            },
            {
                "name": "runner",
                "kind": "livy",
                "url": livy_runner,
                "credentials": {"authorization": cluster_secret},
            },
            {
                "name": "x",
                "kind": "livy",
                "url": "nope",
                "credentials": {"authorization": cluster_secret},
            },
        ):
            assert admin.post("/clusters", json=body).status_code in (409, 422)
        assert (
            operate.post(
                "/clusters", json={"name": "y", "kind": "livy", "url": livy_runner}
            ).status_code
            == 403
        )
        assert read.post("/jobs", json={"name": "nope"}).status_code == 403
        assert client(ADMIN_TOKEN[:-3] + "xyz").get("/jobs").status_code == 401

        root, out = tmp_path / "log", tmp_path / "out"
        EventLog(root).create_stream("clicks", 2)
        produce(str(root), "clicks", 2, rate=0, count=100, start_ts_ms=1_767_225_600_000)
        assert operate.post("/jobs", json={"name": job}).status_code == 201
        version = {
            "app": {
                "file": str(ROOT / "pipelines" / "enrich.py"),
                "args": ["--root", str(root), "--stream", "clicks", "--output", str(out)],
            },
            "cluster": "runner",
            "conf": {**SPARK_TEST_CONF, "spark.sql.session.timeZone": "UTC"},
            "queries": [
                {
                    "name": "enrich",
                    "sources": [
                        {
                            "name": "clicks",
                            "kind": "eventlog",
                            "options": {"root": str(root), "stream": "clicks"},
                        }
                    ],
                    "trigger": "1 SECONDS",
                }
            ],
        }
        assert operate.post(f"/jobs/{job}/versions", json=version).status_code == 201
        op = operate.post(f"/jobs/{job}/submit", json={"version": 1}).json()
        done = wait_until(
            lambda: read.get(f"/operations/{op['id']}").json(),
            lambda o: o["state"] != "running" and o["state"] != "pending",
            240,
        )
        assert done["state"] == "succeeded", done
        run_id = done["run_id"]
        wait_until(lambda: read.get(f"/runs/{run_id}").json()["progress"], bool, 180)
        # The driver's environment is where its single-use bootstrap token goes (never the
        # conf): read it from the live spark-submit JVM, to look for it everywhere else
        # below. The driver spent it at start: it buys nothing now.
        tag = read.get(f"/runs/{run_id}").json()["tag"]
        (driver,) = spark_submit_processes(tag)
        handed = driver.environ().get("TIDEGATE_RUN_BOOTSTRAP")
        assert "TIDEGATE_RUN_TOKEN" not in driver.environ()
        spent = httpx.post(
            f"{url}/api/v1/runs/{run_id}/token",
            headers={"Authorization": f"Bearer {handed}"},
        )
        assert spent.status_code == 401, spent.text
        stop = operate.post(f"/jobs/{job}/stop").json()
        wait_until(
            lambda: read.get(f"/operations/{stop['id']}").json()["state"],
            lambda s: s == "succeeded",
            180,
        )
        for path in (
            "/clusters",
            "/clusters/runner",
            "/clusters/basic",
            "/tokens",
            f"/runs/{run_id}",
            f"/runs/{run_id}/progress",
            f"/jobs/{job}/runs",
            f"/jobs/{job}/versions/1",
            f"/jobs/{job}/operations",
            f"/operations/{op['id']}",
            "/events?limit=500",
        ):
            assert admin.get(path).status_code == 200, path
    finally:
        _stop(worker)
        _stop(api)

    batch = _batch_of(livy_runner, run_id)
    props = (runner_state_dir / "batches" / str(batch) / "spark.properties").read_text()
    assert handed and handed.startswith("tg_"), "the run token was not handed to the driver"
    assert not TOKEN_LINE.search(props.replace("\\", "")), "the run token is in the conf"
    secrets = {
        "admin token": ADMIN_TOKEN,
        "operate token": operate.headers["Authorization"].split()[1],
        "read token": read.headers["Authorization"].split()[1],
        "run token": handed,
        "cluster authorization": cluster_secret.split()[1],
        "cluster password": password,
        "basic auth header": base64.b64encode(f"svc:{password}".encode()).decode(),
    }
    with psycopg.connect(database) as conn:
        audit = "\n".join(str(row) for row in conn.execute("select * from audit_events"))
    places = {
        "API log": (tmp_path / "api.log").read_text(),
        "worker log": (tmp_path / "worker.log").read_text(),
        "driver log": (runner_state_dir / "batches" / str(batch) / "log").read_text(),
        "responses and errors": "\n".join(seen),
        "audit trail": audit,
    }
    assert "directives" in places["API log"]  # the logs did see the run's own calls
    leaks = [
        (what, where) for what, s in secrets.items() for where, text in places.items() if s in text
    ]
    assert not leaks, leaks


def _up(url: str) -> bool:
    try:
        return httpx.get(url + "/readyz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def _batch_of(runner_url: str, run_id: int) -> int:
    sessions = httpx.get(
        f"{runner_url}/batches", params={"size": 10_000}, headers=RUNNER_AUTH
    ).json()["sessions"]
    ids = [b["id"] for b in sessions if b["name"] == f"tidegate-run-{run_id}-a0"]
    assert len(ids) == 1, ids
    return int(ids[0])
