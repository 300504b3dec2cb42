"""`tidegate run`: the whole service on one machine, with embedded defaults."""

from __future__ import annotations

import logging
import signal
import subprocess
import sys
import time

import httpx
from pydantic import SecretStr
from sqlalchemy import select

from app import migrate
from app.config import Settings
from app.db import make_engine, make_sessionmaker, transaction
from app.embedded import bootstrap_admin_token, resolve_database_url

log = logging.getLogger(__name__)

LOCAL_CLUSTER = "local"


def _register_local_cluster(database_url: str, runner_url: str) -> None:
    from app.clusters.models import Cluster

    engine = make_engine(database_url, pool_size=1)
    with transaction(make_sessionmaker(engine)) as session:
        if session.scalar(select(Cluster).where(Cluster.name == LOCAL_CLUSTER)) is None:
            session.add(
                Cluster(
                    name=LOCAL_CLUSTER,
                    kind="livy",
                    url=runner_url,
                    description="The embedded Livy-compatible runner (spark-submit, local mode).",
                )
            )
    engine.dispose()


def _wait_http(url: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            httpx.get(url, timeout=1.0)
            return
        except httpx.HTTPError:
            time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer within {timeout:.0f}s")


def run_local_stack(settings: Settings) -> None:
    import uvicorn

    from app.cli import spawn, terminate
    from app.main import create_app

    database_url = resolve_database_url(settings)
    migrate.upgrade(database_url)
    admin_token = bootstrap_admin_token(settings)
    settings = settings.model_copy(
        # model_copy does not validate: the token must already be a SecretStr.
        update={"database_url": database_url, "admin_token": SecretStr(admin_token)}
    )
    env = {"TIDEGATE_DATABASE_URL": database_url, "TIDEGATE_ADMIN_TOKEN": admin_token}
    children: list[subprocess.Popen[bytes]] = []
    # uvicorn re-raises SIGTERM once it has shut down; as SystemExit it unwinds through the
    # finally below (the children, then the embedded PostgreSQL at exit) instead of killing
    # this process on the spot.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    try:
        runner_url = f"http://127.0.0.1:{settings.runner_port}"
        children.append(
            spawn(
                [
                    "runner",
                    "--port",
                    str(settings.runner_port),
                    "--state-dir",
                    str(settings.data_dir.absolute() / "runner"),
                ],
                env,
            )
        )
        _wait_http(runner_url + "/batches")
        _register_local_cluster(database_url, runner_url)
        children.append(spawn(["worker"], env))
        print(
            f"\ntidegate is serving on http://{settings.host}:{settings.port}  "
            f"(admin token in {settings.data_dir.absolute() / 'admin-token'})\n"
            f"  export TIDEGATE_TOKEN=$(cat {settings.data_dir / 'admin-token'})\n"
            f'  curl -H "Authorization: Bearer $TIDEGATE_TOKEN" '
            f"http://{settings.host}:{settings.port}/api/v1/clusters\n",
            file=sys.stderr,
        )
        uvicorn.run(
            create_app(settings),
            host=settings.host,
            port=settings.port,
            log_config=None,
            timeout_graceful_shutdown=10,
        )
    finally:
        for child in reversed(children):
            terminate(child)
