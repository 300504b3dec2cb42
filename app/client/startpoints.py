"""``tidegate startpoints …`` (Samza SEP-18): where a source starts reading next time the job's
queries start — rewind or fast-forward without touching the checkpoint by hand."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from app.client.api import seg
from app.client.base import Ctx, command, exclusive, load_document
from app.client.errors import CliError, Exit
from app.client.output import Column, epoch_ms_time, human_time
from app.client.wait import TimeoutOption, WaitOption, accepted

startpoints_app = typer.Typer(
    help="Startpoints: rewind or fast-forward a job's sources (applied when queries next start).",
    no_args_is_help=True,
)

JobArg = Annotated[str, typer.Argument(help="The job's name.", show_default=False)]
PositionPanel = "Position (give exactly one)"


@command(startpoints_app, "set")
def startpoints_set(
    ctx: Ctx,
    job: JobArg,
    source: Annotated[
        str | None,
        typer.Argument(help="A source name of the job's version.", show_default=False),
    ] = None,
    partition: Annotated[
        int | None,
        typer.Option(min=0, help="One partition; omitted: every partition of the source."),
    ] = None,
    oldest: Annotated[
        bool,
        typer.Option("--oldest", help="The oldest retained record.", rich_help_panel=PositionPanel),
    ] = False,
    upcoming: Annotated[
        bool,
        typer.Option(
            "--upcoming", help="Only records written from now on.", rich_help_panel=PositionPanel
        ),
    ] = False,
    offset: Annotated[
        int | None,
        typer.Option(min=0, help="This offset (the next one read).", rich_help_panel=PositionPanel),
    ] = None,
    timestamp: Annotated[
        str | None,
        typer.Option(
            help="The first record at or after this time: epoch ms or ISO-8601 "
            "(2026-01-01T00:00:00Z).",
            rich_help_panel=PositionPanel,
        ),
    ] = None,
    file: Annotated[
        Path | None,
        typer.Option(
            "--file",
            "-f",
            help="Many at once: a YAML/JSON list of "
            "{source, partition?, type, value?} (instead of SOURCE and a position).",
        ),
    ] = None,
    restart: Annotated[
        bool, typer.Option("--restart", help="Also restart the job now so they apply at once.")
    ] = False,
    wait: WaitOption = False,
    timeout: TimeoutOption = None,
) -> None:
    """Set a startpoint (or many with -f): where a source reads from next time.

    It overrides the checkpoint the next time the job's queries start (--restart: now) and
    is dropped once a batch past it commits.

    Example: tidegate startpoints set my-job clicks --timestamp 2026-01-01T00:00:00Z --restart
    """
    exclusive(oldest=oldest, upcoming=upcoming, offset=offset, timestamp=timestamp)
    if file is not None:
        if source is not None or oldest or upcoming or offset is not None or timestamp:
            raise CliError("with --file, give no SOURCE and no position", Exit.USAGE)
        items = load_document(file)
        if isinstance(items, dict) and "startpoints" in items:
            items = items["startpoints"]
        if not isinstance(items, list):
            raise CliError(f"{file} must hold a list of startpoints", Exit.USAGE)
    else:
        if source is None:
            raise CliError("give SOURCE (or --file)", Exit.USAGE)
        item: dict[str, Any] = {"source": source}
        if partition is not None:
            item["partition"] = partition
        if oldest:
            item["type"] = "OLDEST"
        elif upcoming:
            item["type"] = "UPCOMING"
        elif offset is not None:
            item.update(type="OFFSET", value=offset)
        elif timestamp is not None:
            value: int | str = int(timestamp) if timestamp.isdigit() else timestamp
            item.update(type="TIMESTAMP", value=value)
        else:
            raise CliError(
                "give a position: --oldest, --upcoming, --offset N or --timestamp T", Exit.USAGE
            )
        items = [item]
    result = ctx.api.request(
        "PUT", f"/jobs/{seg(job)}/startpoints", json={"startpoints": items, "restart": restart}
    )
    op_id = (result or {}).get("restart_operation_id")
    if op_id is not None:
        if ctx.out.is_table:
            ctx.out.line(f"{result.get('upserted')} startpoint(s) set; restarting {job}")
        accepted(ctx, ctx.api.get(f"/operations/{op_id}"), wait, timeout)
        return
    if ctx.out.is_table:
        ctx.out.line(f"{(result or {}).get('upserted', len(items))} startpoint(s) set")
        ctx.out.hint(
            f"they apply when the job's queries next start: tidegate restart {job} "
            f"(preview first: tidegate startpoints preview {job})"
        )
    else:
        ctx.out.document(result)


def position(row: dict[str, Any]) -> Any:
    """A TIMESTAMP startpoint's value (epoch milliseconds in the API) as a time people read."""
    value = row.get("value")
    return epoch_ms_time(value) if row.get("type") == "TIMESTAMP" else value


PENDING_COLUMNS: list[Column] = [
    ("ID", "id"),
    ("SOURCE", "source"),
    ("PARTITION", lambda s: "all" if s.get("partition") is None else s["partition"]),
    ("TYPE", "type"),
    ("VALUE", position),
    ("STATE", "state"),
    ("SET", lambda s: human_time(s.get("updated_at") or s.get("created_at"))),
    ("BY", "created_by"),
]
APPLIED_COLUMNS: list[Column] = [
    ("ID", "id"),
    ("RUN", "run_id"),
    ("QUERY", "query"),
    ("SOURCE", "source"),
    ("BATCH", "batch_id"),
    ("BEFORE", "before_offsets"),
    ("AFTER", "after_offsets"),
    ("APPLIED", lambda a: human_time(a.get("applied_at"))),
    ("COMMITTED", lambda a: human_time(a.get("committed_at"))),
    ("REVERTED", lambda a: human_time(a.get("reverted_at"))),
]


@command(startpoints_app, "list")
def startpoints_list(ctx: Ctx, job: JobArg) -> None:
    """Pending startpoints and recent applications (before/after offsets).

    Example: tidegate startpoints list clicks-per-minute
    """
    doc = ctx.api.get(f"/jobs/{seg(job)}/startpoints")
    while isinstance(doc, dict) and doc.get("next_cursor"):  # every page of pending ones
        more = ctx.api.get(f"/jobs/{seg(job)}/startpoints", cursor=doc["next_cursor"])
        doc = {**more, "pending": [*doc.get("pending", []), *more.get("pending", [])]}

    def table() -> None:
        pending = doc.get("pending", doc) if isinstance(doc, dict) else doc
        ctx.out.table(pending or [], PENDING_COLUMNS, "No pending startpoints.")
        applied = doc.get("applied") if isinstance(doc, dict) else None
        if applied:
            ctx.out.line("")
            ctx.out.line("Recently applied:")
            ctx.out.table(applied, APPLIED_COLUMNS)

    ctx.out.emit(doc, table)


@command(startpoints_app, "preview")
def startpoints_preview(ctx: Ctx, job: JobArg) -> None:
    """What each pending startpoint would resolve to now; applies nothing.

    Per partition: the current position, the target, and how many records that replays or
    skips. Per query that replays: the watermark it would start with and how many replayed
    records lie behind it (may be dropped as late).

    Example: tidegate startpoints preview clicks-per-minute
    """
    doc = ctx.api.post(f"/jobs/{seg(job)}/startpoints/preview")

    def table() -> None:
        ctx.out.table(
            doc.get("rows") or [],
            [
                ("SOURCE", "source"),
                ("PARTITION", "partition"),
                ("TYPE", "type"),
                ("VALUE", position),
                ("CURRENT", "current"),
                ("TARGET", "target"),
                ("MOVE", "move"),
                ("RECORDS", "records"),
            ],
            "No pending startpoints to preview.",
        )
        for late in doc.get("late") or []:
            ctx.out.hint(str(late.get("note")))
        for err in doc.get("errors") or []:
            ctx.out.hint(f"{err.get('source')}: {err.get('error')}")

    ctx.out.emit(doc, table)


@command(startpoints_app, "withdraw")
def startpoints_withdraw(
    ctx: Ctx,
    job: JobArg,
    source: Annotated[str, typer.Argument(help="The source.", show_default=False)],
    partition: Annotated[
        int | None, typer.Option(min=0, help="One partition's; omitted: the source-level one.")
    ] = None,
) -> None:
    """Withdraw a pending startpoint before it is applied.

    Example: tidegate startpoints withdraw clicks-per-minute clicks --partition 2
    """
    path = f"/jobs/{seg(job)}/startpoints/{seg(source)}"
    if partition is not None:
        path += f"/{partition}"
    ctx.api.request("DELETE", path)
    what = f"{source}" + (f" partition {partition}" if partition is not None else "")
    if ctx.out.is_table:
        ctx.out.line(f"startpoint for {what} withdrawn")
    else:
        ctx.out.document({"source": source, "partition": partition, "withdrawn": True})


@command(startpoints_app, "revert")
def startpoints_revert(
    ctx: Ctx,
    job: JobArg,
    application: Annotated[
        int,
        typer.Argument(
            min=1,
            help="The application id (startpoints list, 'Recently applied').",
            show_default=False,
        ),
    ],
) -> None:
    """Undo an applied startpoint: put the checkpoint's original offsets back.

    The job must be stopped, and no batch may have committed past it.

    Example: tidegate startpoints revert clicks-per-minute 7
    """
    doc = ctx.api.post(f"/jobs/{seg(job)}/startpoints/{application}/revert")
    ctx.out.emit(
        doc,
        lambda: ctx.out.line(
            f"application {application} reverted: offsets back to {doc.get('before_offsets')}"
        ),
    )
