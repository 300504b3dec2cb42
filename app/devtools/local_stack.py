"""`tidegate run`: the whole service on one machine, with embedded defaults."""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
from pydantic import SecretStr
from sqlalchemy import select

from app.core import migrate
from app.core.config import Settings
from app.core.db import make_engine, make_sessionmaker, transaction
from app.core.embedded import (
    bootstrap_admin_token,
    resolve_database_url,
    runner_token,
    server_log_path,
)

if TYPE_CHECKING:
    import uvicorn

log = logging.getLogger(__name__)

LOCAL_CLUSTER = "local"


def _register_local_cluster(database_url: str, runner_url: str, runner_auth: str) -> None:
    from app.clusters.models import Cluster

    credentials = {"authorization": runner_auth}
    engine = make_engine(database_url, pool_size=1)
    with transaction(make_sessionmaker(engine)) as session:
        cluster = session.scalar(select(Cluster).where(Cluster.name == LOCAL_CLUSTER))
        if cluster is None:
            session.add(
                Cluster(
                    name=LOCAL_CLUSTER,
                    kind="livy",
                    url=runner_url,
                    description="The embedded Livy-compatible runner (spark-submit, local mode).",
                    credentials=credentials,
                )
            )
        else:  # TIDEGATE_RUNNER_PORT or the runner token may have changed since the last start
            cluster.url, cluster.credentials = runner_url, credentials
    engine.dispose()


def _kill_live_batches(runner_url: str, runner_auth: str) -> int:
    """Stop the drivers the embedded runner started (this stack's, or ones a stack that
    crashed left running): they are nobody's once the stack is gone. Returns how many."""
    headers = {"Authorization": runner_auth}
    stopped = 0
    try:
        body = httpx.get(
            f"{runner_url}/batches", params={"size": 10_000}, headers=headers, timeout=10
        ).json()
        for batch in body.get("sessions", []):
            if batch.get("state") not in ("success", "dead", "killed"):
                httpx.delete(f"{runner_url}/batches/{batch['id']}", headers=headers, timeout=60)
                stopped += 1
    except httpx.HTTPError as e:
        log.warning("could not stop the runner's batches: %s", e)
    return stopped


def _say(text: str) -> None:
    """A line for the person at the terminal (the logs go to files)."""
    print(f"tidegate: {text}", file=sys.stderr, flush=True)


def _watch_children(children: list[subprocess.Popen[bytes]], stop: threading.Event) -> None:
    """A worker or runner that dies takes the stack down (no half-working service)."""
    while not stop.wait(1.0):
        dead = [c for c in children if c.poll() is not None]
        if dead:
            log.error(
                "a tidegate child exited (%s, code %s); stopping everything",
                " ".join(str(a) for a in list(dead[0].args)[3:4]),  # type: ignore[arg-type]
                dead[0].returncode,
            )
            os.kill(os.getpid(), signal.SIGTERM)
            return


def _wait_http(url: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            httpx.get(url, timeout=1.0)
            return
        except httpx.HTTPError:
            time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer within {timeout:.0f}s")


def local_url(settings: Settings) -> str:
    host = "127.0.0.1" if settings.host in ("0.0.0.0", "::", "") else settings.host
    return f"http://{host}:{settings.port}"


def banner(settings: Settings, *, embedded: bool, token_in_env: bool) -> str:
    """What a person needs once the stack is up: where to look and how to log in."""
    url = local_url(settings)
    token_file = settings.data_dir.absolute() / "admin-token"
    where, value = (
        ("$TIDEGATE_ADMIN_TOKEN", "$TIDEGATE_ADMIN_TOKEN")
        if token_in_env
        else (str(token_file), f"$(cat {token_file})")
    )
    lines = [
        "",
        f"tidegate is ready on {url}",
        f"  status page  {url}/ui  (log in: paste the admin token, from {where})",
        f"  CLI          export TIDEGATE_TOKEN={value}; tidegate jobs list",
        f'  API          curl -H "Authorization: Bearer $TIDEGATE_TOKEN" {url}/api/v1/clusters',
    ]
    if embedded:
        lines.append(f"  PostgreSQL   embedded; its log: {server_log_path(settings.data_dir)}")
    lines.append("  Stop with Ctrl-C.")
    return "\n".join(lines) + "\n"


def _announce_when_started(server: uvicorn.Server, text: str, stop: threading.Event) -> None:
    """The banner once the API serves: the last thing on the terminal, not lost among the
    start-up lines before it."""
    while not stop.is_set():
        if server.started:
            print(text, file=sys.stderr, flush=True)
            return
        stop.wait(0.1)


def terminate(proc: subprocess.Popen[bytes], grace: float = 10.0) -> None:
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    if proc.poll() is None:
        proc.kill()


def _die_with_parent() -> None:
    """In the child, before exec: SIGTERM when the stack's process dies (Linux), so a killed
    stack does not leave its worker and runner behind."""
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


def spawn(
    args: list[str], env: dict[str, str] | None = None, *, log_file: Path | None = None
) -> subprocess.Popen[bytes]:
    """A child in a session of its own: Ctrl-C (SIGINT to the terminal's process group)
    reaches only the stack, which stops its children in order; they do not race it."""
    log_env = {"TIDEGATE_LOG_FILE": str(log_file)} if log_file else {}
    return subprocess.Popen(
        [sys.executable, "-m", "app.cli", *args],
        env={**os.environ, **(env or {}), **log_env},
        start_new_session=True,
        preexec_fn=_die_with_parent,
    )


def _taken(host: str, port: int) -> bool:
    """Something listens on ``host:port`` (connections a stopped server left in TIME_WAIT do
    not count: its successor binds there as the server will)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return True
    return False


def _ports_free(settings: Settings) -> None:
    """Each port the stack listens on free before anything starts, or one line that says
    which is taken and which setting moves it (exit 2: the settings are the problem)."""
    for what, host, port, setting in (
        ("the API", settings.host, settings.port, "TIDEGATE_PORT"),
        ("the local Spark runner", "127.0.0.1", settings.runner_port, "TIDEGATE_RUNNER_PORT"),
    ):
        if _taken(host, port):
            _say(
                f"{host}:{port} is in use (another tidegate run?), and {what} listens there: "
                f"stop what holds it, or set {setting} to a free port"
            )
            sys.exit(2)


def run_local_stack(settings: Settings) -> None:
    import uvicorn

    from app.api.main import create_app

    _ports_free(settings)  # before the database starts: nothing to stop again
    embedded, token_in_env = not settings.database_url, settings.admin_token is not None
    database_url = resolve_database_url(settings)
    migrate.upgrade(database_url)
    admin_token = bootstrap_admin_token(settings)
    settings = settings.model_copy(
        # model_copy does not validate: the token must already be a SecretStr.
        update={"database_url": database_url, "admin_token": SecretStr(admin_token)}
    )
    env = {"TIDEGATE_DATABASE_URL": database_url, "TIDEGATE_ADMIN_TOKEN": admin_token}
    # Only the runner knows its token; tidegate sends it as the 'local' cluster's credentials.
    runner_secret = runner_token(settings)
    runner_auth = f"Bearer {runner_secret}"
    children: list[subprocess.Popen[bytes]] = []
    # uvicorn re-raises SIGTERM once it has shut down; as SystemExit it unwinds through the
    # finally below (the children, then the embedded PostgreSQL at exit) instead of killing
    # this process on the spot.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    runner_url = f"http://127.0.0.1:{settings.runner_port}"
    watching = threading.Event()
    logs = settings.data_dir.absolute() / "logs"
    try:
        children.append(
            spawn(
                [
                    "runner",
                    "--port",
                    str(settings.runner_port),
                    "--state-dir",
                    str(settings.data_dir.absolute() / "runner"),
                ],
                {**env, "TIDEGATE_RUNNER_TOKEN": runner_secret},
                log_file=logs / "runner.log",
            )
        )
        _wait_http(runner_url + "/batches")
        # Drivers a stack that crashed left running write to checkpoints with no control
        # plane: stop them before the worker supervises their runs again.
        if left := _kill_live_batches(runner_url, runner_auth):
            _say(f"stopped {left} Spark driver(s) an earlier tidegate run left running")
        _register_local_cluster(database_url, runner_url, runner_auth)
        children.append(spawn(["worker"], env, log_file=logs / "worker.log"))
        server = uvicorn.Server(
            uvicorn.Config(
                create_app(settings),
                host=settings.host,
                port=settings.port,
                log_config=None,
                timeout_graceful_shutdown=10,
            )
        )
        threading.Thread(
            target=_announce_when_started,
            args=(server, banner(settings, embedded=embedded, token_in_env=token_in_env), watching),
            name="banner",
            daemon=True,
        ).start()
        threading.Thread(
            target=_watch_children, args=(children, watching), name="watch", daemon=True
        ).start()
        server.run()
        if not server.started:
            sys.exit(3)  # uvicorn's startup failure (e.g. the port is taken); it said why
    finally:
        watching.set()
        _stop_children(children, runner_url, runner_auth)


def _stop_children(
    children: list[subprocess.Popen[bytes]], runner_url: str, runner_auth: str
) -> None:
    """The worker first (so it restarts nothing), then the drivers, then the runner."""
    if len(children) > 1:
        _say("stopping the worker")
        terminate(children[1])
    if children:
        stopped = _kill_live_batches(runner_url, runner_auth) if children[0].poll() is None else 0
        _say(f"stopped {stopped} Spark driver(s); stopping the runner")
        terminate(children[0])
    _say("stopped")
