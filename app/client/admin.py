"""Tokens over the API, the audit trail, the server's status, and the client's own settings."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

import typer
from pydantic import ValidationError

from app.client.base import All, Ctx, Limit, command, guarded, run_command
from app.client.config import KEYS, ClientSettings, check_value, config_path, read_file, write_file
from app.client.errors import ApiError, CliError, Exit
from app.client.output import Column, human_time

config_app = typer.Typer(
    help="The client's settings file (url, token, output, timeout, poll_interval).",
    no_args_is_help=True,
)

TOKEN_COLUMNS: list[Column] = [
    ("ID", "id"),
    ("NAME", "name"),
    ("SCOPE", "scope"),
    ("PREFIX", "prefix"),
    ("CREATED", lambda t: human_time(t.get("created_at"))),
    ("EXPIRES", lambda t: human_time(t.get("expires_at"))),
    ("REVOKED", lambda t: human_time(t.get("revoked_at"))),
]
EVENT_COLUMNS: list[Column] = [
    ("TIME", lambda e: human_time(e.get("at"))),
    ("ACTOR", "actor"),
    ("ACTION", "action"),
    ("JOB", "job"),
    ("TARGET", "target"),
    ("RESULT", lambda e: f"{e.get('result')} {e.get('status_code')}"),
]


def register_tokens(tokens: typer.Typer) -> None:
    """API-side token commands, beside the database-side ``tokens create`` (bootstrap)."""
    command(tokens, "list")(tokens_list)
    command(tokens, "revoke")(tokens_revoke)
    command(tokens, "issue")(tokens_issue)


def tokens_list(ctx: Ctx) -> None:
    """List API tokens (admin token; run tokens are not shown). Through the API.

    Example: tidegate tokens list
    """
    rows = ctx.api.get("/tokens")
    ctx.out.emit(rows, lambda: ctx.out.table(rows, TOKEN_COLUMNS, "No tokens."))


def tokens_revoke(
    ctx: Ctx,
    token_id: Annotated[int, typer.Argument(min=1, help="The token id (tokens list).")],
) -> None:
    """Revoke an API token at once. Through the API (admin token).

    Example: tidegate tokens revoke 3
    """
    ctx.api.request("DELETE", f"/tokens/{token_id}")
    if ctx.out.is_table:
        ctx.out.line(f"token {token_id} revoked")
    else:
        ctx.out.document({"id": token_id, "revoked": True})


def tokens_issue(
    ctx: Ctx,
    name: Annotated[str, typer.Option(help="Who or what the token is for.", show_default=False)],
    scope: Annotated[str, typer.Option(help="read, operate or admin.")] = "read",
    expires_at: Annotated[
        datetime | None, typer.Option(help="When it stops working (ISO-8601, UTC).")
    ] = None,
) -> None:
    """Issue a token through the API and print its secret once (admin token).

    'tokens create' does the same on the database directly, for the first token.

    Example: tidegate tokens issue --name dashboard --scope read
    """
    body: dict[str, Any] = {"name": name, "scope": scope}
    if expires_at is not None:
        body["expires_at"] = expires_at.isoformat()
    doc = ctx.api.post("/tokens", body)
    if ctx.out.is_table:
        ctx.out.line(str(doc.get("token")))
        ctx.out.hint(f"token {doc.get('id')} ({doc.get('scope')}): shown once; store it now")
    else:
        ctx.out.document(doc)


def audit(
    ctx: Ctx,
    job: Annotated[str | None, typer.Option("--job", "-j", help="Only this job's events.")] = None,
    action: Annotated[
        str | None, typer.Option(help="Only this action, e.g. operation.submit, job.create.")
    ] = None,
    limit: Limit = 50,
    all_: All = False,
) -> None:
    """Who did what to which job, when, with what result (refusals included).

    Example: tidegate audit --job clicks-per-minute --limit 20
    """
    rows = ctx.list("/events", limit, all_, job=job, action=action)
    ctx.out.emit(rows, lambda: ctx.out.table(rows, EVENT_COLUMNS, "No events."))


SOURCE_KIND_COLUMNS: list[Column] = [
    ("KIND", "kind"),
    ("STARTPOINTS", lambda k: ",".join(k.get("startpoints") or []) or "-"),
    ("DRAIN", "drain"),
    ("DRAIN HANDOFF", "drain_handoff"),
    ("NOTE", "note"),
]


def source_kinds(ctx: Ctx) -> None:
    """What each source kind supports: startpoint types, how it drains, drain handoff.

    Example: tidegate source-kinds -o json
    """
    rows = ctx.api.get("/source-kinds")
    ctx.out.emit(rows, lambda: ctx.out.table(rows, SOURCE_KIND_COLUMNS, "No source kinds."))


def metrics(
    ctx: Ctx,
    match: Annotated[
        str | None,
        typer.Option(
            "--match", "-m", help="Only metric lines (and their HELP/TYPE) containing this."
        ),
    ] = None,
) -> None:
    """The server's Prometheus metrics, as text (any token; -o is ignored: it is not JSON).

    Example: tidegate metrics --match tidegate_operations
    """
    text = str(ctx.api.request("GET", "/metrics", raw=True) or "")
    lines = text.splitlines()
    if match:
        lines = [line for line in lines if match in line]
    typer.echo("\n".join(lines))


def status(ctx: Ctx) -> None:
    """Is the server up and ready, and does the token work? Exit 0 only if all three.

    Example: tidegate status
    """
    api = ctx.api
    health = api.get("/healthz")
    try:
        ready: Any = api.get("/readyz")
    except ApiError as e:
        ready = {"status": "not ready", "detail": e.message}
    auth: dict[str, Any] = {"ok": True}
    try:
        api.get("/jobs", limit=1)
    except ApiError as e:
        if e.status not in (401, 403):
            raise
        auth = {"ok": False, "detail": e.message}
    doc = {
        "url": ctx.settings.url,
        "health": health,
        "ready": ready,
        "token": auth,
        "config": str(config_path()),
    }

    def table() -> None:
        ctx.out.fields(
            doc,
            [
                ("URL", "url"),
                ("HEALTH", lambda d: (d["health"] or {}).get("status", d["health"])),
                ("READY", lambda d: (d["ready"] or {}).get("status", d["ready"])),
                ("TOKEN", lambda d: "accepted" if d["token"]["ok"] else d["token"]["detail"]),
                ("CONFIG FILE", "config"),
            ],
        )

    ctx.out.emit(doc, table)
    if not auth["ok"]:
        raise CliError("the token was refused", Exit.AUTH)
    if isinstance(ready, dict) and ready.get("status") == "not ready":
        raise CliError(f"the server is not ready: {ready.get('detail')}", Exit.UNAVAILABLE)


# ---- the client's own settings ----------------------------------------------------------


def _effective(settings: ClientSettings) -> dict[str, Any]:
    token = settings.token.get_secret_value() if settings.token else None
    return {
        "url": settings.url,
        "token": f"{token[:8]}…" if token else None,
        "output": settings.output.value,
        "timeout": settings.timeout,
        "poll_interval": settings.poll_interval,
        "config_file": str(config_path()),
    }


@config_app.command("show")
def config_show() -> None:
    """The settings in effect (flags aside): environment over the file over defaults.

    Example: tidegate config show
    """

    def body(ctx: Ctx) -> None:
        doc = _effective(ctx.settings)
        ctx.out.emit(doc, lambda: ctx.out.fields(doc))

    run_command(body, {}, {})


@config_app.command("path")
def config_path_command() -> None:
    """Print where the settings file is ($TIDEGATE_CONFIG or ~/.config/tidegate/config.toml).

    Example: tidegate config path
    """
    typer.echo(str(config_path()))


@config_app.command("set")
def config_set(
    key: Annotated[str, typer.Argument(help=f"One of: {', '.join(KEYS)}.")],
    value: Annotated[str, typer.Argument(help="The value.")],
) -> None:
    """Save one setting in the settings file (created 0600: it may hold a token).

    Example: tidegate config set url http://tidegate.internal:8000
    """

    def body() -> None:
        if key not in KEYS:
            raise CliError(f"unknown setting '{key}'; one of: {', '.join(KEYS)}", Exit.USAGE)
        try:
            checked = check_value(key, value)
        except ValidationError as e:
            raise CliError(f"{key}: {e.errors()[0]['msg']}", Exit.USAGE) from None
        values = read_file(strict=False)
        values[key] = checked
        path = write_file(values)
        typer.echo(f"{key} saved in {path}")

    guarded(body)


@config_app.command("unset")
def config_unset(key: Annotated[str, typer.Argument(help=f"One of: {', '.join(KEYS)}.")]) -> None:
    """Remove one setting from the settings file.

    Example: tidegate config unset token
    """

    def body() -> None:
        values = read_file(strict=False)
        if values.pop(key, None) is None:
            raise CliError(f"'{key}' is not set in {config_path()}", Exit.NOT_FOUND)
        write_file(values)
        typer.echo(f"{key} removed from {config_path()}")

    guarded(body)


def login(ctx: Ctx) -> None:
    """Check --url and --token against the server, then save them in the settings file.

    Example: tidegate login --url http://127.0.0.1:8000 --token "$(cat .tidegate/admin-token)"
    """
    ctx.api.get("/jobs", limit=1)  # refuses a bad URL or token before anything is saved
    values = read_file()
    values["url"] = ctx.settings.url
    if ctx.settings.token is not None:
        values["token"] = ctx.settings.token.get_secret_value()
    path = write_file(values)
    typer.echo(f"logged in to {ctx.settings.url}; saved in {path}")
