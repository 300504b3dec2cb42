"""`tidegate runner`: serve the Livy-compatible local runner."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

runner_app = typer.Typer(
    help="Livy-compatible batch runner that runs spark-submit on this machine.",
    invoke_without_command=True,
)


@runner_app.callback()
def run(
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8998,
    state_dir: Annotated[
        Path, typer.Option(help="Where batches, their logs and exit codes are kept.")
    ] = Path(".tidegate/runner"),
    master: Annotated[str, typer.Option(help="--master passed to spark-submit.")] = "local[2]",
    python: Annotated[
        str, typer.Option(help="Python for the drivers and Python workers.")
    ] = sys.executable,
    kill_grace: Annotated[
        float, typer.Option(help="Seconds between SIGTERM and SIGKILL on DELETE.")
    ] = 10.0,
    allow_host: Annotated[
        list[str] | None,
        typer.Option(help="A Host header to accept besides loopback names (repeatable)."),
    ] = None,
) -> None:
    """Serve POST/GET/DELETE /batches; batches outlive the runner and are found on restart.
    Clients send Authorization: Bearer <token>: TIDEGATE_RUNNER_TOKEN, else the token kept in
    STATE_DIR/token (made on first start). Register it as the cluster's credentials.

    Example: tidegate runner --port 8998 --state-dir .tidegate/runner
    """
    import logging

    import uvicorn

    from app.core.config import get_settings
    from app.core.embedded import kept_secret
    from app.core.logging_setup import configure_from
    from app.runner.app import LOOPBACK_HOSTS, create_app

    settings = get_settings()
    configure_from(settings)
    if settings.runner_token is not None:
        token = settings.runner_token.get_secret_value()
    else:
        token = kept_secret(state_dir.absolute() / "token", "tg_runner_")
        logging.getLogger(__name__).info("runner token in %s", state_dir.absolute() / "token")
    app = create_app(
        state_dir,
        master,
        python,
        token=token,
        kill_grace=kill_grace,
        allowed_hosts=LOOPBACK_HOSTS | set(allow_host or ()),
    )
    uvicorn.run(app, host=host, port=port, log_config=None)
