"""The `tidegate` command: servers (api, worker, runner, spark) and admin tasks."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from app.core.config import Settings, get_settings

cli = typer.Typer(
    name="tidegate",
    help="Change long-running Spark Structured Streaming jobs without losing data or state.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
tokens_cli = typer.Typer(help="API tokens.", no_args_is_help=True)
cli.add_typer(tokens_cli, name="tokens")


def _setup(settings: Settings) -> None:
    from app.core.logging_setup import configure_from

    configure_from(settings)


@cli.command()
def migrate(
    revision: Annotated[str, typer.Argument(help="Target revision.")] = "head",
) -> None:
    """Upgrade the metadata store's schema (TIDEGATE_DATABASE_URL, or the embedded one).

    Example: tidegate migrate
    """
    from app.core import migrate as m
    from app.core.embedded import resolve_database_url

    settings = get_settings()
    _setup(settings)
    m.upgrade(resolve_database_url(settings), revision)
    typer.echo(f"migrated to {revision}")


@cli.command()
def api(
    no_migrate: Annotated[bool, typer.Option(help="Do not upgrade the schema first.")] = False,
) -> None:
    """Serve the HTTP API on TIDEGATE_HOST:TIDEGATE_PORT.

    Example: TIDEGATE_DATABASE_URL=postgresql://… tidegate api
    """
    import uvicorn

    from app.api.main import create_app
    from app.core import migrate as m
    from app.core.embedded import resolve_database_url

    settings = get_settings()
    _setup(settings)
    url = resolve_database_url(settings)
    if not no_migrate:
        m.upgrade(url)
    app = create_app(settings.model_copy(update={"database_url": url}))
    uvicorn.run(
        app, host=settings.host, port=settings.port, log_config=None, timeout_graceful_shutdown=10
    )


@tokens_cli.command("create")
def tokens_create(
    name: Annotated[str, typer.Option(help="Who or what the token is for.")],
    scope: Annotated[str, typer.Option(help="read, operate or admin.")] = "read",
) -> None:
    """Create an API token and print it once (it is stored hashed).

    Example: tidegate tokens create --scope operate --name deploy-pipeline
    """
    from app.auth.service import Scope, create_token
    from app.core.db import make_engine, make_sessionmaker, transaction
    from app.core.embedded import resolve_database_url

    if scope not in ("read", "operate", "admin"):
        typer.echo("--scope must be read, operate or admin", err=True)
        raise typer.Exit(2)
    settings = get_settings()
    engine = make_engine(resolve_database_url(settings), pool_size=1)
    with transaction(make_sessionmaker(engine)) as session:
        _, secret = create_token(session, name=name, scope=Scope(scope))
    engine.dispose()
    typer.echo(secret)


@cli.command()
def run() -> None:
    """Everything on one machine: embedded PostgreSQL, the local Livy-compatible runner
    (registered as cluster 'local'), the worker and the API. Ctrl-C stops it all.

    Example: make run
    """
    from app.devtools.local_stack import run_local_stack

    # The terminal shows the banner and warnings; every line goes to DATA_DIR/logs/.
    os.environ.setdefault("TIDEGATE_LOG_TERMINAL_LEVEL", "WARNING")  # the children's too
    settings = get_settings()
    settings = settings.model_copy(
        update={
            "log_terminal_level": os.environ["TIDEGATE_LOG_TERMINAL_LEVEL"],
            "log_file": settings.log_file or settings.data_dir.absolute() / "logs" / "api.log",
        }
    )
    _setup(settings)
    run_local_stack(settings)


def _register_subcommands() -> None:
    from app.client import register
    from app.devtools.events_cli import events_app
    from app.devtools.kafka_cli import kafka_app
    from app.devtools.spark_cli import spark_app
    from app.runner.cli import runner_app
    from app.worker.cli import worker_app

    cli.add_typer(runner_app, name="runner")
    cli.add_typer(spark_app, name="spark")
    cli.add_typer(events_app, name="events")
    cli.add_typer(kafka_app, name="kafka")
    cli.add_typer(worker_app, name="worker")
    register(cli)  # the API client commands; 'events list' joins the event-log group


_register_subcommands()


def main() -> None:
    cli()


if __name__ == "__main__":
    main()
