"""``tidegate events``: the audit trail (``events`` / ``events list``), and producing into and
inspecting on-disk event logs (``events produce`` / ``events offsets``, for demos and tests)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer

from app.client.base import OptionsMeanListGroup
from tidegate_runtime.sources.eventlog import EventLog, EventLogError
from tidegate_runtime.sources.eventlog_producer import produce

events_app = typer.Typer(
    cls=OptionsMeanListGroup,
    help="Audit events ('tidegate events [--job J]' lists who did what), and on-disk event logs "
    "('events produce', 'events offsets').",
)

RootOption = Annotated[Path, typer.Option("--root", help="Event log root directory.")]
StreamOption = Annotated[str, typer.Option("--stream", help="Stream name.")]


def _epoch_ms(text: str) -> int:
    """Epoch milliseconds, or an ISO-8601 time (UTC unless it has an offset)."""
    if text.lstrip("-").isdigit():
        return int(text)
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


@events_app.command("produce")
def produce_command(
    root: RootOption,
    stream: StreamOption,
    partitions: Annotated[int, typer.Option(min=1, help="Partitions (created or grown).")] = 1,
    rate: Annotated[float, typer.Option(min=0, help="Records per second; 0 = at once.")] = 0,
    count: Annotated[
        int | None, typer.Option(min=1, help="Records to write; omit to run until Ctrl-C.")
    ] = None,
    start_ts: Annotated[
        str | None,
        typer.Option(help="Event time of the first record: epoch ms or ISO-8601; default: now."),
    ] = None,
    ts_step: Annotated[
        int, typer.Option(help="Event-time step between records in ms (with --start-ts).")
    ] = 100,
    keys: Annotated[int, typer.Option(min=1, help="Number of distinct keys k0..kN-1.")] = 10,
) -> None:
    """Append generated events to a stream and print its latest offsets.

    Example: tidegate events produce --root ./log --stream clicks --partitions 4 --count 1000
    """
    if count is None and rate == 0:
        raise typer.BadParameter("give --count, or a --rate to run until interrupted")
    try:
        latest = produce(
            root,
            stream,
            partitions,
            rate,
            count,
            start_ts_ms=None if start_ts is None else _epoch_ms(start_ts),
            ts_step_ms=ts_step,
            keys=[f"k{i}" for i in range(keys)],
        )
    except KeyboardInterrupt:
        latest = EventLog(root).stream(stream).latest_offsets()
    typer.echo(json.dumps({"latest": {str(p): o for p, o in latest.items()}}))


@events_app.command("offsets")
def offsets_command(root: RootOption, stream: StreamOption) -> None:
    """Print a stream's partition count and earliest/latest offsets as JSON.

    Example: tidegate events offsets --root ./log --stream clicks
    """
    try:
        target = EventLog(root).stream(stream)
    except EventLogError as e:
        typer.echo(str(e), err=True)
        raise typer.Exit(1) from None
    doc = {
        "stream": stream,
        "partitions": target.partitions,
        "earliest": {str(p): o for p, o in target.earliest_offsets().items()},
        "latest": {str(p): o for p, o in target.latest_offsets().items()},
    }
    typer.echo(json.dumps(doc))
