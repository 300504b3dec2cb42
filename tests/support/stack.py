"""tidegate itself for end-to-end tests: the API under uvicorn and workers as real processes,
on their own database. Spark drivers reach the API over loopback."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
import uvicorn

from app.api.main import create_app
from app.core import migrate
from app.core.config import Settings
from app.core.db import make_engine
from app.devtools.spark_local import find_free_port
from app.snapshots.restore import STAGING_SUFFIX
from app.snapshots.store.blobs import SnapshotStore
from tests.conftest import ADMIN_TOKEN
from tests.support.database import scratch_database, server_url
from tests.support.s3 import ACCESS_KEY, REGION, SECRET_KEY, create_bucket, moto_server
from tests.support.waiting import ends_with_the_tests, wait_for
from tidegate_runtime.checkpoints.checkpoint import _STORES as checkpoint_registry

wait_until = wait_for  # the name most e2e and chaos tests import

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Stack:
    url: str
    database_url: str
    checkpoint_root: Path
    tmp: Path
    # Where snapshots go (TIDEGATE_SNAPSHOT_ROOT and its fsspec options); None: DATA_DIR's.
    snapshot_root: str | None = None
    snapshot_options: dict[str, Any] | None = None
    # Checkpoints in object storage (TIDEGATE_CHECKPOINT_ROOT=s3a://… and its s3fs options):
    # then ``checkpoint_root`` is unused.
    checkpoint_url: str | None = None
    checkpoint_options: dict[str, Any] | None = None
    workers: list[subprocess.Popen[bytes]] = field(default_factory=list)
    client: httpx.Client = field(init=False)

    def __post_init__(self) -> None:
        self.client = httpx.Client(
            base_url=self.url + "/api/v1",
            timeout=30,
            headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
        )

    def worker_env(self, **extra: str) -> dict[str, str]:
        return {
            **os.environ,
            "TIDEGATE_DATABASE_URL": self.database_url,
            "TIDEGATE_CHECKPOINT_ROOT": self.checkpoint_url or str(self.checkpoint_root),
            "TIDEGATE_CHECKPOINT_STORAGE_OPTIONS": json.dumps(self.checkpoint_options or {}),
            "TIDEGATE_PUBLIC_URL": self.url,
            "TIDEGATE_LOG_JSON": "false",
            "TIDEGATE_DATA_DIR": str(self.tmp / "data"),
            "SPARK_LOCAL_IP": "127.0.0.1",
            # What is left of a fenced driver is killed after this (60 s by default): a test
            # of a driver that lingers waits for it.
            "TIDEGATE_FENCED_EXIT_SECONDS": "20",
            **self._snapshot_env(),
            **extra,
        }

    def _snapshot_env(self) -> dict[str, str]:
        if self.snapshot_root is None:
            return {}
        return {
            "TIDEGATE_SNAPSHOT_ROOT": self.snapshot_root,
            "TIDEGATE_SNAPSHOT_STORAGE_OPTIONS": json.dumps(self.snapshot_options or {}),
        }

    def snapshot_store(self) -> SnapshotStore:
        """The store this stack's API and workers write snapshots to."""
        root = self.snapshot_root or str(self.tmp / "data" / "snapshots")
        return SnapshotStore(root, self.snapshot_options)

    def start_worker(self, *args: str, **env: str) -> subprocess.Popen[bytes]:
        """A worker process (the real CLI entry point); ``args``: more worker options."""
        log = open(self.tmp / f"worker-{len(self.workers)}.log", "ab")  # noqa: SIM115
        proc = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "worker", "--poll-seconds", "0.5", *args],
            env=self.worker_env(**env),
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            preexec_fn=ends_with_the_tests,
        )
        self.workers.append(proc)
        return proc

    def stop_workers(self) -> None:
        for proc in self.workers:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.workers:
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
        self.workers.clear()

    def wait_operation(self, op_id: int, timeout: float = 480.0) -> dict[str, Any]:
        # Generous: a cold update starts two drivers; on two loaded cores that took 5.5 min.
        return wait_until(
            lambda: self.client.get(f"/operations/{op_id}").json(),
            lambda op: op["state"] in ("succeeded", "failed"),
            timeout,
            what=f"operation {op_id} to finish",
        )

    def run(self, run_id: int) -> dict[str, Any]:
        body: dict[str, Any] = self.client.get(f"/runs/{run_id}").json()
        return body

    def progress(
        self, run_id: int, query: str, until: Callable[[dict[str, Any]], bool], timeout: float = 120
    ) -> dict[str, Any]:
        """``query``'s last progress report once ``until`` holds for it. Drivers post their
        progress when they like: a sink may hold a batch's rows before its report reaches
        the API, so a test never reads progress once."""
        report: dict[str, Any] = wait_for(
            lambda: self.run(run_id)["progress"].get(query) or {},
            until,
            timeout,
            what=f"run {run_id}'s progress of {query!r}",
        )
        return report


@dataclass
class StandbyWatch:
    """What a watcher saw of a job's standbys while an update ran: how often it looked at a
    ready standby whose job still had its old run active, and every checkpoint file such a
    standby's run had then (there must be none: nothing is touched before go)."""

    looks: int = 0
    touched: list[str] = field(default_factory=list)


@contextmanager
def watching_standbys(stack: Stack, job: str, every: float = 0.1) -> Iterator[StandbyWatch]:
    """Look, every ``every`` seconds, at the checkpoints of the job's ready standby runs while
    the run they replace is active. The folder is read first, the job's state after: a file
    seen then, with the old run still active, was written before the old run ended."""
    watch, stop = StandbyWatch(), threading.Event()

    def look() -> None:
        while not stop.wait(every):
            runs = stack.client.get(f"/jobs/{job}/runs").json()["items"]
            for run in runs:
                if run["state"] != "standby" or run["standby_ready_at"] is None:
                    continue
                folder = stack.checkpoint_root / job / str(run["id"])
                files = [
                    str(p)
                    for p in (folder.rglob("*") if folder.exists() else ())
                    # The worker's own staging of a restore ahead of go, not the driver's.
                    if not any(part.endswith(STAGING_SUFFIX) for part in p.parts)
                ]
                now = stack.client.get(f"/jobs/{job}").json()
                # Past go, the job's current run is the standby's own: what its folder held
                # then may be from after go (the job read comes second).
                old_active = now["current_run_id"] != run["id"] and now["state"] in (
                    "running",
                    "stopping",
                    "draining",
                    "submitting",
                )
                if old_active:
                    watch.looks += 1
                    watch.touched += files

    thread = threading.Thread(target=look, daemon=True)
    thread.start()
    try:
        yield watch
    finally:
        stop.set()
        thread.join(10)


def assert_switch(
    stack: Stack, job: str, op: dict[str, Any], watch: StandbyWatch, prewarm: bool
) -> None:
    """A finished update went the way asked. Pre-warmed: a standby was ready before the old
    run was asked to end, got go after it had, and touched no checkpoint before go (the
    watcher looked while it waited; Spark's files of the new run are all from after go)."""
    names = [step["name"] for step in op["steps"]]
    new = stack.run(op["result"]["run_id"])
    # The old run ended on its driver's fence (queries stopped at a boundary, then its Spark
    # session), not when the backend saw the process exit: that is when the handover began.
    old = stack.run(op["result"]["previous_run_id"])
    assert "(fenced)" in old["transitions"][0]["reason"], old["transitions"]
    if not prewarm:
        assert "standby" not in names and "create_run" in names, names
        assert new["go_at"] is None and watch.looks == 0
        return
    ending = next(n for n in names if n in ("request_stop", "request_drain"))
    assert names.index("standby_ready") < names.index(ending) < names.index("go"), names
    assert "create_run" not in names, names
    checked = next((s["detail"] for s in op["steps"] if s["name"] == "dry_run"), {})
    if checked.get("checked") and "cold_dry_run" not in names:
        # An update by snapshot: its dry run ran inside the standby, no driver of its own.
        assert checked["in_standby_run"] == new["id"] and "dry_run_submit" not in names, names
        assert names.index("standby") < names.index("dry_run") < names.index(ending), names
    assert watch.looks > 0, "the watcher never saw the standby waiting"
    assert watch.touched == [], f"the standby touched {watch.touched} before go"
    go_at = datetime.fromisoformat(new["go_at"]).timestamp()
    assert new["standby_ready_at"] and new["standby_ready_at"] < new["go_at"]
    # Spark's commits in the new run's checkpoints: those from before go are the restored
    # ones tidegate copied in (none on fresh checkpoints); the run's own come after go.
    restored = op["result"].get("restored") or {}
    for query in (stack.checkpoint_root / job / str(new["id"])).iterdir():
        for commit in (query / "commits").glob("[0-9]*"):
            if commit.stat().st_mtime < go_at - 0.5:
                assert int(commit.name) <= int(restored.get(query.name, -1)), commit


@contextmanager
def running_stack(
    tmp: Path,
    *,
    first_id: int = 1,
    pool_size: int = 5,
    server: str | None = None,
    snapshots: tuple[str, dict[str, Any]] | None = None,
    checkpoints: tuple[str, dict[str, Any]] | None = None,
) -> Iterator[Stack]:
    """The API in a thread and a fresh database; workers are started by the caller.
    ``first_id`` starts run ids elsewhere than 1: a runner shared by several stacks (one per
    test database) names batches by run id, and two stacks must not adopt each other's.
    ``snapshots``, ``checkpoints``: the snapshot store's and the checkpoint root's URL and
    storage options (default: folders under ``tmp``)."""
    with (
        fresh_database(tmp, first_id=first_id, server=server) as database_url,
        _api_thread(tmp, database_url, pool_size, snapshots, checkpoints) as result,
    ):
        yield result


@contextmanager
def fresh_database(tmp: Path, *, first_id: int = 1, server: str | None = None) -> Iterator[str]:
    """A migrated database of its own (dropped at the end) and ``tmp/checkpoints``; its URL."""
    server = server or server_url(tmp)  # another server: a test's own, which it may crash
    with scratch_database(server, "tidegate_e2e") as database_url:
        migrate.upgrade(database_url)
        if first_id > 1:
            with psycopg.connect(database_url, autocommit=True) as conn:
                conn.execute("select setval('runs_id_seq', %s, false)", (first_id,))
        (tmp / "checkpoints").mkdir()
        yield database_url


@contextmanager
def _api_thread(
    tmp: Path,
    database_url: str,
    pool_size: int,
    snapshots: tuple[str, dict[str, Any]] | None = None,
    checkpoints: tuple[str, dict[str, Any]] | None = None,
) -> Iterator[Stack]:
    checkpoint_root = tmp / "checkpoints"
    port = find_free_port()
    settings = Settings(
        database_url=database_url,
        admin_token=ADMIN_TOKEN,  # type: ignore[arg-type]
        data_dir=tmp / "data",
        checkpoint_root=checkpoints[0] if checkpoints else checkpoint_root,
        checkpoint_storage_options=json.dumps(checkpoints[1]) if checkpoints else None,  # type: ignore[arg-type]
        # The tests' event logs live in their own tmp folders, all under the system's one.
        eventlog_roots=tempfile.gettempdir(),
        log_json=False,
        host="127.0.0.1",
        port=port,
        snapshot_root=snapshots[0] if snapshots else None,
        snapshot_storage_options=json.dumps(snapshots[1]) if snapshots else None,  # type: ignore[arg-type]
    )
    engine = make_engine(database_url, pool_size=pool_size)
    api = uvicorn.Server(
        uvicorn.Config(
            create_app(settings, engine),
            host="127.0.0.1",
            port=port,
            log_level="warning",
            log_config=None,
        )
    )
    thread = threading.Thread(target=api.run, name="tidegate-api", daemon=True)
    thread.start()
    wait_until(lambda: api.started, bool, 30, 0.05)
    result = Stack(
        f"http://127.0.0.1:{port}",
        database_url,
        checkpoint_root,
        tmp,
        snapshot_root=snapshots[0] if snapshots else None,
        snapshot_options=snapshots[1] if snapshots else None,
        checkpoint_url=checkpoints[0] if checkpoints else None,
        checkpoint_options=checkpoints[1] if checkpoints else None,
    )
    try:
        yield result
    finally:
        result.stop_workers()
        api.should_exit = True
        thread.join(10)
        engine.dispose()
        if checkpoints:  # the store create_app registered for this stack's checkpoints
            checkpoint_registry.pop("s3a", None)


@contextmanager
def s3_snapshot_root() -> Iterator[tuple[str, dict[str, Any]]]:
    """A bucket on a real S3-compatible server (moto's server mode, loopback): the snapshot
    root and the fsspec options tidegate gets for it."""
    with moto_server() as endpoint:
        bucket = create_bucket(endpoint)
        options = {
            "endpoint_url": endpoint,
            "key": ACCESS_KEY,
            "secret": SECRET_KEY,
            "client_kwargs": {"region_name": REGION},
        }
        yield f"s3://{bucket}/snapshots", options


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """The end-to-end tests' tidegate: its snapshots in S3, as in production."""
    with (
        s3_snapshot_root() as snapshots,
        running_stack(tmp_path_factory.mktemp("stack"), snapshots=snapshots) as result,
    ):
        yield result
