"""The client side of ``tidegate``: commands that drive a tidegate server over its HTTP API.

``register(cli)`` adds them to the root command beside the server commands (api, worker,
run, …). They never touch the database: URL and token come from ``--url``/``--token``,
``TIDEGATE_URL``/``TIDEGATE_TOKEN`` or ``~/.config/tidegate/config.toml``.
"""

from __future__ import annotations

import typer

from app.client import admin, lifecycle, operations, runs, snapshots
from app.client.base import command
from app.client.clusters import clusters_app
from app.client.jobs import jobs_app, versions_app
from app.client.runs import runs_app
from app.client.startpoints import startpoints_app

__all__ = ["register"]


def _group(cli: typer.Typer, name: str) -> typer.Typer | None:
    return next(
        (g.typer_instance for g in cli.registered_groups if g.name == name and g.typer_instance),
        None,
    )


def register(cli: typer.Typer) -> None:
    """Add the client commands to the root ``tidegate`` command."""
    for name, app, panel in (
        ("jobs", jobs_app, "Jobs"),
        ("versions", versions_app, "Jobs"),
        ("clusters", clusters_app, "Jobs"),
        ("runs", runs_app, "Inspect"),
        ("operations", operations.operations_app, "Inspect"),
        ("startpoints", startpoints_app, "Startpoints and snapshots"),
        ("snapshots", snapshots.snapshots_app, "Startpoints and snapshots"),
        ("resume-points", snapshots.resume_points_app, "Startpoints and snapshots"),
        ("config", admin.config_app, "Client settings"),
    ):
        cli.add_typer(app, name=name, rich_help_panel=panel)
    lifecycle.register(cli)
    snapshots.register(cli)
    command(cli, "verify", rich_help_panel="Inspect")(runs.verify)
    command(cli, "audit", rich_help_panel="Inspect")(admin.audit)
    events = _group(cli, "events")  # the event-log tool's group: bare 'events' lists the audit
    if events is None:
        command(cli, "events", rich_help_panel="Inspect")(admin.audit)
    else:
        command(events, "list")(admin.audit)
    command(cli, "source-kinds", rich_help_panel="Inspect")(admin.source_kinds)
    command(cli, "metrics", rich_help_panel="Inspect")(admin.metrics)
    command(cli, "status", rich_help_panel="Client settings")(admin.status)
    command(cli, "login", rich_help_panel="Client settings")(admin.login)
    # 'tokens create' (database, for the first token) stays; list/revoke/issue go through the API.
    tokens = _group(cli, "tokens")
    if tokens is None:
        tokens = typer.Typer(help="API tokens.", no_args_is_help=True)
        cli.add_typer(tokens, name="tokens")
    admin.register_tokens(tokens)
