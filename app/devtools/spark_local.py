"""A Spark standalone cluster (one master, one worker) started from pyspark's own distribution.

pyspark from PyPI ships ``bin/spark-class`` but no ``sbin/start-*.sh``, so the master and the
worker are launched directly. The pids are written to ``<work_dir>/cluster.json`` so that
another process (``tidegate spark down``) can stop what ``tidegate spark up`` started.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psutil

from tidegate_runtime.packaging.pyspark_zip import spark_home

logger = logging.getLogger(__name__)

HOST = "127.0.0.1"
STATE_FILE = "cluster.json"


def find_free_port(host: str = HOST) -> int:
    """A port that was free a moment ago (the usual race applies; good enough for tests)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def spark_env(home: Path | None = None) -> dict[str, str]:
    """Environment for Spark processes: loopback only, so nothing listens on public interfaces."""
    env = dict(os.environ)
    env["SPARK_HOME"] = str(home or spark_home())
    env["SPARK_LOCAL_IP"] = HOST
    return env


@dataclass(frozen=True)
class _Proc:
    pid: int
    create_time: float

    @classmethod
    def of(cls, pid: int) -> _Proc:
        return cls(pid, psutil.Process(pid).create_time())

    def process(self) -> psutil.Process | None:
        """The process if it is still the one we started (pids get reused)."""
        try:
            proc = psutil.Process(self.pid)
            if abs(proc.create_time() - self.create_time) > 1.0:
                return None
            if proc.status() == psutil.STATUS_ZOMBIE:
                return None
            return proc
        except psutil.NoSuchProcess:
            return None


class LocalStandaloneCluster:
    """One master (with the REST submission server) and one worker on 127.0.0.1.

    The worker gets more cores than the machine has (default 4): in cluster mode every
    driver holds a worker core, so a driver and its executor need two.
    """

    def __init__(
        self,
        work_dir: Path,
        master_port: int = 7077,
        rest_port: int = 6066,
        ui_port: int = 8080,
        worker_cores: int = 4,
        worker_memory: str = "4g",
        *,
        worker_ui_port: int = 0,
        start_timeout: float = 90.0,
    ) -> None:
        self.work_dir = Path(work_dir).absolute()
        self.master_port = master_port or find_free_port()
        self.rest_port = rest_port or find_free_port()
        self.ui_port = ui_port or find_free_port()
        self.worker_ui_port = worker_ui_port or find_free_port()
        self.worker_cores = worker_cores
        self.worker_memory = worker_memory
        self.start_timeout = start_timeout
        self._master: _Proc | None = None
        self._worker: _Proc | None = None
        self._popens: list[subprocess.Popen[bytes]] = []  # kept so they are reaped, not leaked

    @property
    def master_url(self) -> str:
        return f"spark://{HOST}:{self.master_port}"

    @property
    def rest_url(self) -> str:
        return f"http://{HOST}:{self.rest_port}"

    @property
    def ui_url(self) -> str:
        return f"http://{HOST}:{self.ui_port}"

    @property
    def worker_dir(self) -> Path:
        """The worker's ``--work-dir``: drivers run in ``<worker_dir>/<driver-id>/``."""
        return self.work_dir / "worker"

    @property
    def state_file(self) -> Path:
        return self.work_dir / STATE_FILE

    def start(self) -> None:
        """Start master then worker; return once the worker is ALIVE and REST answers."""
        if running_cluster(self.work_dir) is not None:
            raise RuntimeError(f"a cluster started from {self.work_dir} is already running")
        self.worker_dir.mkdir(parents=True, exist_ok=True)
        logs = self.work_dir / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        props = self._write_properties()
        home = spark_home()
        spark_class = str(home / "bin" / "spark-class")
        env = spark_env(home)
        deadline = time.monotonic() + self.start_timeout
        try:
            self._master = self._spawn(
                [
                    spark_class,
                    "org.apache.spark.deploy.master.Master",
                    "--host",
                    HOST,
                    "--port",
                    str(self.master_port),
                    "--webui-port",
                    str(self.ui_port),
                    "--properties-file",
                    str(props),
                ],
                env,
                logs / "master.log",
            )
            # The REST server starts with the master; a taken port only shows in the log.
            self._wait(deadline, logs / "master.log", self._master_alive)
            self._wait(deadline, logs / "master.log", self._rest_ready)
            self._worker = self._spawn(
                [
                    spark_class,
                    "org.apache.spark.deploy.worker.Worker",
                    self.master_url,
                    "--host",
                    HOST,
                    "--cores",
                    str(self.worker_cores),
                    "--memory",
                    self.worker_memory,
                    "--work-dir",
                    str(self.worker_dir),
                    "--webui-port",
                    str(self.worker_ui_port),
                    "--properties-file",
                    str(props),
                ],
                env,
                logs / "worker.log",
            )
            self._wait(deadline, logs / "worker.log", self._worker_alive)
        except BaseException:
            self.stop()
            raise
        self._write_state()
        logger.info(
            "spark standalone cluster up: master %s, rest %s, ui %s",
            self.master_url,
            self.rest_url,
            self.ui_url,
        )

    def stop(self, grace: float = 15.0) -> None:
        """Stop worker (which kills its drivers and executors), then master."""
        procs = [p for p in (self._worker, self._master) if p is not None]
        if not procs:
            return
        _terminate_trees(procs, grace)
        for popen in self._popens:
            popen.poll()
        self._popens.clear()
        self._master = self._worker = None
        self.state_file.unlink(missing_ok=True)

    def alive(self) -> bool:
        return all(p is not None and p.process() is not None for p in (self._master, self._worker))

    def __enter__(self) -> LocalStandaloneCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _write_properties(self) -> Path:
        # Worker cleanup: drivers/apps that ended more than a day ago are removed every 30 min.
        # maxRetries=0: if a chosen port is taken, fail instead of silently binding port+1.
        props = {
            "spark.master.rest.enabled": "true",
            "spark.master.rest.port": str(self.rest_port),
            "spark.port.maxRetries": "0",
            "spark.worker.cleanup.enabled": "true",
            "spark.worker.cleanup.interval": "1800",
            "spark.worker.cleanup.appDataTtl": "86400",
        }
        path = self.work_dir / "spark-cluster.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        return path

    def _spawn(self, cmd: list[str], env: dict[str, str], log: Path) -> _Proc:
        if log.exists():  # keep one previous run's log; only this run's lines are checked
            log.replace(log.with_name(log.name + ".1"))
        with log.open("wb") as out:
            proc = subprocess.Popen(
                cmd,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                cwd=self.work_dir,
                start_new_session=True,
            )
        self._popens.append(proc)
        return _Proc.of(proc.pid)

    def _wait(self, deadline: float, log: Path, check: Callable[[], bool]) -> None:
        while time.monotonic() < deadline:
            for p in (self._master, self._worker):
                if p is not None and p.process() is None:
                    raise RuntimeError(f"spark process {p.pid} exited:\n{_tail(log)}")
            bind_error = _grep(log, "java.net.BindException")
            if bind_error:
                raise RuntimeError(f"a port is taken: {bind_error}")
            try:
                if check():
                    return
            except (httpx.HTTPError, ValueError):
                pass
            time.sleep(0.5)
        raise TimeoutError(f"spark cluster did not come up in time:\n{_tail(log)}")

    def _master_json(self) -> dict[str, Any]:
        resp = httpx.get(f"{self.ui_url}/json/", timeout=5.0)
        resp.raise_for_status()
        data: dict[str, Any] = resp.json()
        return data

    def _master_alive(self) -> bool:
        return self._master_json().get("status") == "ALIVE"

    def _worker_alive(self) -> bool:
        return any(w.get("state") == "ALIVE" for w in self._master_json().get("workers", []))

    def _rest_ready(self) -> bool:
        resp = httpx.get(f"{self.rest_url}/v1/submissions/readyz", timeout=5.0)
        return resp.status_code == 200 and bool(resp.json().get("success"))

    def _write_state(self) -> None:
        assert self._master is not None and self._worker is not None
        state = {
            "master": {"pid": self._master.pid, "create_time": self._master.create_time},
            "worker": {"pid": self._worker.pid, "create_time": self._worker.create_time},
            "master_url": self.master_url,
            "rest_url": self.rest_url,
            "ui_url": self.ui_url,
            "worker_dir": str(self.worker_dir),
        }
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, indent=2))
        tmp.replace(self.state_file)


def running_cluster(work_dir: Path) -> dict[str, Any] | None:
    """The state file of a cluster started from ``work_dir`` whose processes still run."""
    path = Path(work_dir).absolute() / STATE_FILE
    try:
        state: dict[str, Any] = json.loads(path.read_text())
    except (FileNotFoundError, ValueError):
        return None
    procs = [_Proc(state[k]["pid"], state[k]["create_time"]) for k in ("worker", "master")]
    return state if any(p.process() is not None for p in procs) else None


def stop_cluster(work_dir: Path, grace: float = 15.0) -> bool:
    """Stop the cluster recorded in ``work_dir`` by another process; False if none ran."""
    path = Path(work_dir).absolute() / STATE_FILE
    state = running_cluster(work_dir)
    if state is None:
        path.unlink(missing_ok=True)
        return False
    procs = [_Proc(state[k]["pid"], state[k]["create_time"]) for k in ("worker", "master")]
    _terminate_trees(procs, grace)
    path.unlink(missing_ok=True)
    return True


def _terminate_trees(procs: list[_Proc], grace: float) -> None:
    """SIGTERM each process in order, then SIGKILL whatever of its tree outlives ``grace``."""
    for p in procs:
        proc = p.process()
        if proc is None:
            continue
        try:
            tree = [proc, *proc.children(recursive=True)]
        except psutil.NoSuchProcess:
            continue
        _signal(proc, "terminate")
        _, alive = psutil.wait_procs(tree, timeout=grace)
        for q in alive:
            _signal(q, "kill")
        psutil.wait_procs(alive, timeout=5)


def _signal(proc: psutil.Process, how: str) -> None:
    with contextlib.suppress(psutil.NoSuchProcess):
        proc.terminate() if how == "terminate" else proc.kill()


def _grep(path: Path, needle: str) -> str | None:
    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        return None
    return next((line for line in text.splitlines() if needle in line), None)


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return ""
