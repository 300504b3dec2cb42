"""``tidegate clusters …``: the Spark backends runs go to (standalone REST or Livy)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from app.client.api import seg
from app.client.base import All, Ctx, Limit, command, confirm, load_mapping
from app.client.output import Column, human_time

clusters_app = typer.Typer(
    help="Clusters: Spark standalone masters and Livy-compatible services runs go to.",
    no_args_is_help=True,
)

NameArg = Annotated[str, typer.Argument(help="The cluster's name.", show_default=False)]
CREDENTIALS = "Credentials (stored, never shown again)"

COLUMNS: list[Column] = [
    ("NAME", "name"),
    ("KIND", "kind"),
    ("URL", "url"),
    ("MASTER", "master_url"),
    ("CREDENTIALS", "has_credentials"),
    ("CREATED", lambda c: human_time(c.get("created_at"))),
]


def _show(ctx: Ctx, cluster: dict[str, Any]) -> None:
    ctx.out.emit(
        cluster,
        lambda: ctx.out.fields(
            cluster,
            [
                ("NAME", "name"),
                ("KIND", "kind"),
                ("URL", "url"),
                ("MASTER URL", "master_url"),
                ("UI URL", "ui_url"),
                ("DESCRIPTION", "description"),
                ("CREDENTIALS", "has_credentials"),
                ("REACHABLE", "reachable"),
                ("REACHABILITY ERROR", "reachability_error"),
                ("CREATED", lambda c: human_time(c.get("created_at"))),
            ],
        ),
    )


@command(clusters_app, "list")
def clusters_list(ctx: Ctx, limit: Limit = 50, all_: All = False) -> None:
    """List registered clusters.

    Example: tidegate clusters list
    """
    rows = ctx.list("/clusters", limit, all_)
    ctx.out.emit(rows, lambda: ctx.out.table(rows, COLUMNS, "No clusters registered."))


@command(clusters_app, "show")
def clusters_show(ctx: Ctx, name: NameArg) -> None:
    """Show one cluster and whether tidegate can reach it now.

    Example: tidegate clusters show local
    """
    _show(ctx, ctx.api.get(f"/clusters/{seg(name)}"))


@command(clusters_app, "create")
def clusters_create(
    ctx: Ctx,
    name: NameArg,
    kind: Annotated[
        str | None, typer.Option(help="standalone (Spark REST submission) or livy.")
    ] = None,
    url: Annotated[
        str | None,
        typer.Option(
            "--cluster-url",
            help="Standalone: the REST server (http://host:6066). Livy: its base URL.",
        ),
    ] = None,
    master_url: Annotated[
        str | None, typer.Option(help="Standalone only: spark://host:7077 (the RPC port).")
    ] = None,
    ui_url: Annotated[
        str | None, typer.Option(help="Standalone only: the master web UI (http://host:8080).")
    ] = None,
    description: Annotated[str | None, typer.Option(help="What it is.")] = None,
    username: Annotated[str | None, typer.Option(rich_help_panel=CREDENTIALS)] = None,
    password: Annotated[
        str | None,
        typer.Option(
            envvar="TIDEGATE_CLUSTER_PASSWORD",
            rich_help_panel=CREDENTIALS,
            help="Or TIDEGATE_CLUSTER_PASSWORD, to keep it out of shell history.",
        ),
    ] = None,
    authorization: Annotated[
        str | None,
        typer.Option(help="A full Authorization header value.", rich_help_panel=CREDENTIALS),
    ] = None,
    file: Annotated[
        Path | None,
        typer.Option("--file", "-f", help="A YAML/JSON cluster body; flags override it."),
    ] = None,
) -> None:
    """Register a cluster (admin token). --cluster-url because --url is tidegate's own.

    Example: tidegate clusters create emr --kind livy --cluster-url http://livy:8998 --username svc
    """
    body: dict[str, Any] = load_mapping(file, "cluster") if file else {}
    body["name"] = name
    for key, value in (
        ("kind", kind),
        ("url", url),
        ("master_url", master_url),
        ("ui_url", ui_url),
        ("description", description),
    ):
        if value is not None:
            body[key] = value
    creds = {
        k: v
        for k, v in (
            ("username", username),
            ("password", password),
            ("authorization", authorization),
        )
        if v is not None
    }
    if creds:
        body["credentials"] = {**(body.get("credentials") or {}), **creds}
    _show(ctx, ctx.api.post("/clusters", body))


@command(clusters_app, "delete")
def clusters_delete(
    ctx: Ctx,
    name: NameArg,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")] = False,
) -> None:
    """Remove a cluster (409, exit 3, while versions target it).

    Example: tidegate clusters delete emr --yes
    """
    if not yes and typer.get_text_stream("stdin").isatty():
        confirm(f"Remove cluster '{name}'?")
    ctx.api.request("DELETE", f"/clusters/{seg(name)}")
    if ctx.out.is_table:
        ctx.out.line(f"cluster {name} removed")
    else:
        ctx.out.document({"name": name, "deleted": True})
