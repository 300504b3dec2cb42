"""`tidegate spark up|down|status`: a local Spark standalone cluster for development and tests;
`tidegate spark precompile`: bytecode in a Spark installation's Python zips."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from types import FrameType
from typing import Annotated

import typer

from app.devtools.spark_local import LocalStandaloneCluster, running_cluster, stop_cluster

spark_app = typer.Typer(
    help="A local Spark standalone cluster (master + worker) from pyspark's distribution.",
    no_args_is_help=True,
)

WorkDir = Annotated[Path, typer.Option(help="Holds the worker's work dir, logs and the pid file.")]


def _setup_logging() -> None:
    from app.core.config import get_settings
    from app.core.logging_setup import configure_from

    settings = get_settings()
    configure_from(settings)


@spark_app.command()
def up(
    work_dir: WorkDir = Path(".tidegate/spark"),
    master_port: Annotated[int, typer.Option(help="Master RPC port; 0 picks a free one.")] = 7077,
    rest_port: Annotated[int, typer.Option(help="REST submission port; 0 picks one.")] = 6066,
    ui_port: Annotated[int, typer.Option(help="Master web UI port; 0 picks one.")] = 8080,
    cores: Annotated[int, typer.Option(help="Worker cores (each driver holds one).")] = 4,
    memory: Annotated[str, typer.Option(help="Worker memory.")] = "4g",
    detach: Annotated[bool, typer.Option(help="Leave the cluster running and return.")] = False,
) -> None:
    """Start a master and a worker on 127.0.0.1 and print their URLs.

    Example: tidegate spark up --work-dir /tmp/spark --detach
    """
    _setup_logging()
    cluster = LocalStandaloneCluster(
        work_dir, master_port, rest_port, ui_port, worker_cores=cores, worker_memory=memory
    )
    try:
        cluster.start()
    except (RuntimeError, TimeoutError) as exc:
        typer.echo(f"cannot start the cluster: {exc}", err=True)
        raise typer.Exit(1) from exc
    typer.echo(f"master_url={cluster.master_url}")
    typer.echo(f"rest_url={cluster.rest_url}")
    typer.echo(f"ui_url={cluster.ui_url}")
    typer.echo(f"worker_dir={cluster.worker_dir}")
    if detach:
        return

    stopping = False

    def _stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    try:
        while not stopping and cluster.alive():
            time.sleep(0.5)
    finally:
        cluster.stop()
    if not stopping:
        raise typer.Exit(1)


@spark_app.command()
def down(work_dir: WorkDir = Path(".tidegate/spark")) -> None:
    """Stop the cluster that `tidegate spark up` started from this work dir.

    Example: tidegate spark down --work-dir /tmp/spark
    """
    _setup_logging()
    typer.echo("stopped" if stop_cluster(work_dir) else "no cluster was running")


@spark_app.command()
def status(work_dir: WorkDir = Path(".tidegate/spark")) -> None:
    """Print the URLs of the running cluster, or exit 1 if none runs.

    Example: tidegate spark status
    """
    state = running_cluster(work_dir)
    if state is None:
        typer.echo("no cluster is running")
        raise typer.Exit(1)
    for key in ("master_url", "rest_url", "ui_url", "worker_dir"):
        typer.echo(f"{key}={state[key]}")


@spark_app.command()
def precompile(
    spark_home: Annotated[
        Path | None, typer.Argument(help="Default: SPARK_HOME, else pyspark's own.")
    ] = None,
) -> None:
    """Add bytecode to SPARK_HOME/python/lib/*.zip, so each Python process Spark starts (one
    per streaming query on a Python data source) skips compiling pyspark. Run once per Spark
    installation, on every node; `make install` and the image do it for theirs.

    Example: tidegate spark precompile /opt/spark
    """
    from tidegate_runtime.packaging.pyspark_zip import main as precompile_zips

    raise typer.Exit(precompile_zips([str(spark_home)] if spark_home else []))
