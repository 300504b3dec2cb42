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
) -> None:
    """Serve POST/GET/DELETE /batches; batches outlive the runner and are found on restart.

    Example: tidegate runner --port 8998 --state-dir .tidegate/runner
    """
    import uvicorn

    from app.config import get_settings
    from app.logging_setup import configure_logging
    from app.runner.app import create_app

    settings = get_settings()
    configure_logging(settings.log_level, json=settings.log_json)
    app = create_app(state_dir, master, python, kill_grace=kill_grace)
    uvicorn.run(app, host=host, port=port, log_config=None)
