"""Two of everything on one PostgreSQL database: two API processes (``tidegate api``, uvicorn,
each on its own port) and two worker processes (``tidegate worker`` with a short lease), all
real processes started through the CLI entry point, on the session's local runner."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import httpx
import psycopg

from app.devtools.spark_local import find_free_port
from tests.conftest import ADMIN_TOKEN
from tests.support.chaos.harness import Chaos, kill_active_runs
from tests.support.e2e import runner_cluster
from tests.support.stack import ROOT, Stack, fresh_database
from tests.support.waiting import ends_with_the_tests, stop_process, wait_for


@dataclass
class Api:
    number: int
    proc: subprocess.Popen[bytes]
    url: str
    client: httpx.Client


@dataclass
class Fleet:
    """``chaos.stack`` talks to API #1 and owns the workers; ``apis`` are both APIs."""

    chaos: Chaos
    apis: list[Api]
    lease_seconds: float
    api_of: dict[int, Api] = field(default_factory=dict)  # worker pid -> its drivers' API

    def start_worker(self, api: Api) -> subprocess.Popen[bytes]:
        proc = self.chaos.stack.start_worker(
            "--lease-seconds", str(self.lease_seconds), TIDEGATE_PUBLIC_URL=api.url
        )
        self.api_of[proc.pid] = api
        return proc

    def replenish(self) -> list[subprocess.Popen[bytes]]:
        """Two live workers again (one per API), replacing those a test killed."""
        for proc in [p for p in self.workers if p.poll() is not None]:
            self.workers.remove(proc)
            self.start_worker(self.api_of.pop(proc.pid))
        assert len(self.workers) == 2, self.workers
        return list(self.workers)

    @property
    def workers(self) -> list[subprocess.Popen[bytes]]:
        return self.chaos.stack.workers

    def lease_owner(self, op_id: int) -> str | None:
        """The worker id (``host:pid:nonce``) holding ``op_id``'s lease, from the database."""
        with psycopg.connect(self.chaos.stack.database_url) as conn:
            row = conn.execute(
                "select lease_owner from operations where id = %s", (op_id,)
            ).fetchone()
        return None if row is None else row[0]

    def worker_holding(self, op_id: int) -> subprocess.Popen[bytes] | None:
        """The worker process whose id holds ``op_id``'s lease (None: nobody holds it)."""
        owner = self.lease_owner(op_id)
        if owner is None:
            return None
        pid = int(owner.split(":")[-2])
        (proc,) = [p for p in self.workers if p.pid == pid]
        return proc


def _api_process(tmp: Path, database_url: str, number: int) -> Api:
    port = find_free_port()
    url = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        "TIDEGATE_DATABASE_URL": database_url,
        "TIDEGATE_ADMIN_TOKEN": ADMIN_TOKEN,
        "TIDEGATE_HOST": "127.0.0.1",
        "TIDEGATE_PORT": str(port),
        "TIDEGATE_PUBLIC_URL": url,
        "TIDEGATE_DATA_DIR": str(tmp / "data"),
        "TIDEGATE_CHECKPOINT_ROOT": str(tmp / "checkpoints"),
        # The tests' event logs live in their own tmp folders, all under the system's one.
        "TIDEGATE_EVENTLOG_ROOTS": tempfile.gettempdir(),
        "TIDEGATE_LOG_JSON": "false",
    }
    log = open(tmp / f"api-{number}.log", "ab")  # noqa: SIM115
    proc = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "api", "--no-migrate"],
        env=env,
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
        preexec_fn=ends_with_the_tests,
    )
    client = httpx.Client(
        base_url=url + "/api/v1", timeout=30, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}
    )
    return Api(number, proc, url, client)


def _up(api: Api) -> bool:
    assert api.proc.poll() is None, f"API #{api.number} exited {api.proc.returncode}"
    try:
        return httpx.get(f"{api.url}/readyz", timeout=5).status_code == 200
    except httpx.HTTPError:
        return False


def _stop(proc: subprocess.Popen[bytes]) -> None:
    stop_process(proc, grace=30)


@contextmanager
def two_of_everything(tmp: Path, runner_url: str, lease_seconds: float) -> Iterator[Fleet]:
    """A fresh database, two API processes and two workers, the runner registered through
    API #1. Worker N hands its drivers API #N's URL: the runtime channel goes through both."""
    first_id = random.randrange(1, 9_000) * 1_000_000  # run ids apart from other stacks'
    with fresh_database(tmp, first_id=first_id) as database_url, ExitStack() as cleanup:
        apis: list[Api] = []
        for number in (1, 2):
            api = _api_process(tmp, database_url, number)
            cleanup.callback(_stop, api.proc)
            cleanup.callback(api.client.close)
            apis.append(api)
        for api in apis:
            wait_for(partial(_up, api), bool, 90, 0.2, what=f"API #{api.number}")
        stack = Stack(apis[0].url, database_url, tmp / "checkpoints", tmp)
        cleanup.callback(stack.client.close)
        cleanup.callback(kill_active_runs, database_url, runner_url)
        cleanup.callback(stack.stop_workers)
        r = stack.client.post("/clusters", json=runner_cluster(runner_url))
        assert r.status_code == 201, r.text
        fleet = Fleet(
            Chaos(stack, runner_url, range(first_id, first_id + 1_000_000)), apis, lease_seconds
        )
        for api in apis:
            fleet.start_worker(api)
        yield fleet
