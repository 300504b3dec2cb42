"""Batches of the local runner: each one a ``spark-submit`` child process, persisted on disk.

Layout under ``state_dir/batches/<id>/``: ``batch.json`` (the record, written atomically),
``spark.properties`` (the conf, mode 0600, so values never appear in ``ps`` or in logs),
``log`` (stdout+stderr of spark-submit) and ``exit_code``. spark-submit runs under a tiny
``sh`` wrapper in its own session: the wrapper writes ``exit_code`` when spark-submit ends,
so a runner restarted in between still learns how the batch ended. The record keeps the
wrapper's pid and create time, so a reused pid is never mistaken for the batch.
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import psutil

from app.core.paths import private_dir
from app.core.redaction import redact
from app.runner.driver_io import (
    ENV_KEY,
    driver_environment,
    local_path,
    mtime,
    properties_escape,
    slice_lines,
    tail_lines,
    terminate,
)
from tidegate_runtime.packaging.pyspark_zip import spark_home

logger = logging.getLogger(__name__)

TERMINAL = frozenset({"success", "dead", "killed"})
APP_MASTER_ENV = "spark.yarn.appMasterEnv."
# The driver's SparkContext has started: Livy's "running" (the YARN app was accepted).
_STARTED = re.compile(rb"SparkContext: Running Spark version")
_APP_ID = re.compile(rb"app ID (app-[\w-]+)|(application_\d+_\d+)|Submitted application (\S+)")
_SCAN_LIMIT = 8 * 1024 * 1024  # stop looking for the start marker after this much log
_WRAPPER = 'f=$1; shift; "$@"; c=$?; echo $c > "$f.tmp" && mv "$f.tmp" "$f"; exit $c'


class BatchError(Exception):
    """A request the runner refuses; ``status`` is the HTTP status to answer with."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class SubmitRequest:
    """What ``POST /batches`` asks for (the Livy fields the runner can honour)."""

    file: str
    name: str | None = None
    class_name: str | None = None
    args: list[str] = field(default_factory=list)
    py_files: list[str] = field(default_factory=list)
    jars: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    archives: list[str] = field(default_factory=list)
    conf: dict[str, str] = field(default_factory=dict)
    driver_memory: str | None = None
    driver_cores: int | None = None
    executor_memory: str | None = None
    executor_cores: int | None = None
    num_executors: int | None = None


@dataclass
class Batch:
    id: int
    name: str | None
    file: str
    state: str = "not_started"
    pid: int | None = None
    create_time: float | None = None
    exit_code: int | None = None
    app_id: str | None = None
    submitted_at: float = field(default_factory=time.time)
    ended_at: float | None = None
    message: str | None = None


class BatchManager:
    """Starts, observes, kills and remembers batches. Thread-safe."""

    def __init__(
        self,
        state_dir: Path,
        master: str = "local[2]",
        python: str | None = None,
        *,
        spark_submit: str | None = None,
        kill_grace: float = 10.0,
    ) -> None:
        self.root = Path(state_dir).absolute() / "batches"
        private_dir(self.root.parent)  # the runner's state: drivers' confs, logs, exit codes
        private_dir(self.root)
        self.master = master
        self.python = python
        self.spark_submit = spark_submit or str(spark_home() / "bin" / "spark-submit")
        self.kill_grace = kill_grace
        self._lock = threading.RLock()
        self._batches: dict[int, Batch] = {}
        self._children: dict[int, subprocess.Popen[bytes]] = {}
        self._scanned: dict[int, int] = {}  # batch id → log bytes already searched
        self._lines: dict[int, tuple[int, int]] = {}  # batch id → (bytes, newlines) counted
        for path in self.root.glob("*/batch.json"):
            try:
                batch = Batch(**json.loads(path.read_text()))
            except (ValueError, TypeError) as exc:
                logger.warning("ignoring unreadable batch record %s: %s", path, exc)
                continue
            self._batches[batch.id] = batch

    # -- queries ----------------------------------------------------------------------------

    def get(self, batch_id: int) -> Batch:
        with self._lock:
            batch = self._batches.get(batch_id)
            if batch is None:
                raise BatchError(f"Session '{batch_id}' not found.", 404)
            return self._refresh(batch)

    def page(self, start: int = 0, size: int = 100) -> tuple[int, list[Batch]]:
        with self._lock:
            ids = sorted(self._batches)
            page = ids[max(start, 0) :][: max(size, 0)]
            return len(ids), [self._refresh(self._batches[i]) for i in page]

    # -- commands ---------------------------------------------------------------------------

    def submit(self, req: SubmitRequest) -> Batch:
        self._validate(req)
        with self._lock:
            if req.name is not None and any(b.name == req.name for b in self._batches.values()):
                raise BatchError(f"Duplicate session name: {req.name}")
            batch_id, folder = self._allocate()
            batch = Batch(id=batch_id, name=req.name, file=req.file)
            self._batches[batch_id] = batch
            try:
                self._launch(batch, folder, req)
            except OSError as exc:
                batch.state, batch.ended_at = "dead", time.time()
                batch.message = f"could not start spark-submit: {exc}"
                logger.error("batch %s: %s", batch_id, batch.message)
            self._save(batch)
            return batch

    def kill(self, batch_id: int) -> Batch:
        """Mark the batch killed, then SIGTERM its process tree and SIGKILL what outlives the
        grace period. Returns once the processes are gone, so a new driver on the same
        checkpoint cannot overlap with this one."""
        with self._lock:
            batch = self.get(batch_id)
            if batch.state in TERMINAL:
                return batch
            batch.state, batch.ended_at = "killed", time.time()
            self._save(batch)
            tree = self._tree(batch)
        logger.info("batch %s: killing %d process(es)", batch_id, len(tree))
        terminate(tree, self.kill_grace)
        with self._lock:
            child = self._children.pop(batch_id, None)
            if child is not None:
                child.poll()
        return batch

    # -- logs -------------------------------------------------------------------------------

    def log(self, batch_id: int, start: int | None, size: int) -> tuple[int, int, list[str]]:
        """Livy's log paging: without ``from``, the last ``size`` lines."""
        self.get(batch_id)
        path = self._folder(batch_id) / "log"
        with self._lock:
            total = self._count_lines(batch_id, path)
        size = total if size < 0 else size
        if start is None or start < 0:
            start = max(0, total - size)
            return start, total, tail_lines(path, min(size, total - start))
        return start, total, slice_lines(path, start, size)

    def tail(self, batch_id: int, lines: int) -> list[str]:
        return tail_lines(self._folder(batch_id) / "log", lines)

    # -- internals --------------------------------------------------------------------------

    def _validate(self, req: SubmitRequest) -> None:
        for what, paths in (
            ("file", [req.file]),
            ("pyFiles", req.py_files),
            ("jars", req.jars),
            ("files", req.files),
            ("archives", req.archives),
        ):
            for path in paths:
                local = local_path(path)
                if local is None:
                    continue
                if not local.is_absolute():
                    raise BatchError(f"{what}: {path!r} must be an absolute path or a URL")
                if not local.exists():
                    raise BatchError(f"{what}: {path!r} does not exist")
        for key in req.conf:
            if key.startswith(APP_MASTER_ENV) and not ENV_KEY.fullmatch(key[len(APP_MASTER_ENV) :]):
                raise BatchError(f"conf: {key!r} does not name an environment variable")

    def _allocate(self) -> tuple[int, Path]:
        """The next id; ``mkdir`` is atomic, so two runners on one state dir never share one."""
        batch_id = max(self._batches, default=-1) + 1
        while True:
            folder = self._folder(batch_id)
            try:
                folder.mkdir(mode=0o700)
                return batch_id, folder
            except FileExistsError:
                batch_id += 1

    def _folder(self, batch_id: int) -> Path:
        return self.root / str(batch_id)

    def _launch(self, batch: Batch, folder: Path, req: SubmitRequest) -> None:
        conf = {k: v for k, v in req.conf.items() if not k.startswith(APP_MASTER_ENV)}
        if self.python:
            conf.setdefault("spark.pyspark.python", self.python)
        props = folder / "spark.properties"
        fd = os.open(props, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            for key, value in conf.items():
                f.write(f"{properties_escape(key, key=True)}={properties_escape(value)}\n")

        cmd = [self.spark_submit, "--master", self.master, "--properties-file", str(props)]
        if req.name:
            cmd += ["--name", req.name]
        for flag, values in (
            ("--py-files", req.py_files),
            ("--jars", req.jars),
            ("--files", req.files),
            ("--archives", req.archives),
        ):
            if values:
                cmd += [flag, ",".join(values)]
        options: tuple[tuple[str, str | int | None], ...] = (
            ("--class", req.class_name),
            ("--driver-memory", req.driver_memory),
            ("--driver-cores", req.driver_cores),
            ("--executor-memory", req.executor_memory),
            ("--executor-cores", req.executor_cores),
            ("--num-executors", req.num_executors),
        )
        for flag, option in options:
            if option is not None:
                cmd += [flag, str(option)]
        cmd += [req.file, *req.args]

        env = driver_environment(dict(os.environ))
        env["SPARK_HOME"] = str(Path(self.spark_submit).parent.parent)
        if self.master.startswith("local"):
            env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # a local driver needs no public port
        env.update(
            {
                k[len(APP_MASTER_ENV) :]: v
                for k, v in req.conf.items()
                if k.startswith(APP_MASTER_ENV)
            }
        )
        with (folder / "log").open("ab") as log:
            child = subprocess.Popen(
                ["/bin/sh", "-c", _WRAPPER, "tidegate-batch", str(folder / "exit_code"), *cmd],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=folder,
                env=env,
                start_new_session=True,
            )
        self._children[batch.id] = child
        batch.pid = child.pid
        try:
            batch.create_time = psutil.Process(child.pid).create_time()
        except psutil.NoSuchProcess:
            batch.create_time = None
        batch.state = "starting"
        logger.info(
            "batch %s (%s): started pid %s: %s (+%d args); conf: %s",
            batch.id,
            batch.name,
            child.pid,
            " ".join(cmd[: len(cmd) - len(req.args)]),
            len(req.args),
            redact(conf),
        )

    def _refresh(self, batch: Batch) -> Batch:
        """Bring a live batch's state up to date from its process, exit file and log."""
        if batch.state in TERMINAL or batch.pid is None:
            return batch
        child = self._children.get(batch.id)
        if child is not None and child.poll() is not None:
            del self._children[batch.id]
        before = (batch.state, batch.app_id)
        code = self._exit_code(batch.id)
        if code is None and self._process(batch) is None:
            code = self._exit_code(batch.id)  # it may have exited between the two looks
            if code is None:
                batch.state, batch.ended_at = "dead", time.time()
                batch.message = "spark-submit ended without an exit code (killed by a signal?)"
        if code is not None:
            batch.exit_code = code
            batch.state = "success" if code == 0 else "dead"
            batch.ended_at = mtime(self._folder(batch.id) / "exit_code") or time.time()
        self._scan_log(batch)
        if (batch.state, batch.app_id) != before:
            logger.info("batch %s: %s -> %s", batch.id, before[0], batch.state)
            self._save(batch)
        return batch

    def _scan_log(self, batch: Batch) -> None:
        if batch.app_id is not None and batch.state != "starting":
            return
        offset = self._scanned.get(batch.id, 0)
        if offset >= _SCAN_LIMIT:
            return
        path = self._folder(batch.id) / "log"
        try:
            with path.open("rb") as f:
                f.seek(max(0, offset - 256))  # a marker may straddle two reads
                data = f.read(_SCAN_LIMIT - offset)
        except OSError:
            return
        if not data:
            return
        self._scanned[batch.id] = offset + len(data)
        if batch.state == "starting" and _STARTED.search(data):
            batch.state = "running"
        if batch.app_id is None and (m := _APP_ID.search(data)):
            batch.app_id = next(g for g in m.groups() if g).decode()

    def _exit_code(self, batch_id: int) -> int | None:
        try:
            return int((self._folder(batch_id) / "exit_code").read_text().strip())
        except (OSError, ValueError):
            return None

    @staticmethod
    def _process(batch: Batch) -> psutil.Process | None:
        """The batch's wrapper process, if it is still the one that was started."""
        if batch.pid is None:
            return None
        try:
            proc = psutil.Process(batch.pid)
            if batch.create_time is not None and abs(proc.create_time() - batch.create_time) > 1:
                return None
            return None if proc.status() == psutil.STATUS_ZOMBIE else proc
        except psutil.NoSuchProcess:
            return None

    def _tree(self, batch: Batch) -> list[psutil.Process]:
        """The wrapper, its descendants, and anything else left in its session."""
        procs: dict[int, psutil.Process] = {}
        root = self._process(batch)
        if root is not None:
            try:
                procs[root.pid] = root
                procs.update((p.pid, p) for p in root.children(recursive=True))
            except psutil.NoSuchProcess:
                pass
        if batch.pid is not None:
            for proc in psutil.process_iter():
                try:
                    if proc.pid not in procs and os.getsid(proc.pid) == batch.pid:
                        procs[proc.pid] = proc
                except (OSError, psutil.Error):
                    continue
        return list(procs.values())

    def _save(self, batch: Batch) -> None:
        path = self._folder(batch.id) / "batch.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(batch), indent=2))
        tmp.replace(path)

    def _count_lines(self, batch_id: int, path: Path) -> int:
        """Lines in the log, counting only the bytes appended since the last call."""
        offset, newlines = self._lines.get(batch_id, (0, 0))
        try:
            with path.open("rb") as f:
                f.seek(offset)
                while chunk := f.read(1 << 20):
                    newlines += chunk.count(b"\n")
                    offset += len(chunk)
                if offset == 0:
                    return 0
                f.seek(offset - 1)
                partial = f.read(1) != b"\n"
        except OSError:
            return 0
        self._lines[batch_id] = (offset, newlines)
        return newlines + (1 if partial else 0)
