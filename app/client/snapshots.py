"""Snapshots and resume points, with hz-cli's names at the top level: ``save-snapshot`` (export
and stop), ``export-snapshot`` (export while running), ``list-snapshots``; the rest under
``tidegate snapshots …`` and ``tidegate resume-points build``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from app.client.api import new_idempotency_key, seg
from app.client.base import All, Ctx, Limit, command, confirm, exclusive, load_document
from app.client.errors import CliError, Exit
from app.client.lifecycle import GraceOption, SnapshotJobOption, outcomes_table
from app.client.output import Column, human_size, human_time
from app.client.wait import KeyOption, TimeoutOption, WaitOption, accepted

snapshots_app = typer.Typer(
    help="Snapshots: named, durable copies of a run's state at a committed batch.",
    no_args_is_help=True,
)
resume_points_app = typer.Typer(
    help="Resume points: where each query of a new version takes its offsets and state from.",
    no_args_is_help=True,
)

JobArg = Annotated[str, typer.Argument(help="The job's name.", show_default=False)]
SnapshotArg = Annotated[str, typer.Argument(help="The snapshot's name.", show_default=False)]


# hz-cli's list-snapshots columns, sizes for people.
def _name(snap: dict[str, Any]) -> str:
    state = snap.get("state")
    return str(snap.get("name")) + (f" ({state})" if state not in (None, "ready") else "")


SNAPSHOT_COLUMNS: list[Column] = [
    ("TIME", lambda s: human_time(s.get("created_at"))),
    ("SIZE", lambda s: human_size(s.get("size_bytes"))),
    ("JOB NAME", "job"),
    ("SNAPSHOT NAME", _name),  # a snapshot not ready to start from says so
]


def register(cli: typer.Typer) -> None:
    command(cli, "save-snapshot", rich_help_panel="Startpoints and snapshots")(save_snapshot)
    command(cli, "export-snapshot", rich_help_panel="Startpoints and snapshots")(export_snapshot)
    command(cli, "list-snapshots", rich_help_panel="Startpoints and snapshots")(list_snapshots)


def _export(
    ctx: Ctx,
    job: str,
    body: dict[str, Any],
    key: str | None,
    wait: bool,
    timeout: float | None,
) -> None:
    op = ctx.api.post(
        f"/jobs/{seg(job)}/snapshots", body, idempotency_key=key or new_idempotency_key()
    )
    accepted(ctx, op, wait, timeout)


def save_snapshot(
    ctx: Ctx,
    job: JobArg,
    name: SnapshotArg,
    grace: GraceOption = None,
    wait: WaitOption = False,
    timeout: TimeoutOption = None,
    idempotency_key: KeyOption = None,
) -> None:
    """Export a named snapshot and stop the job (hz-cli save-snapshot).

    The snapshot is the state to start the next version from (submit/update --snapshot).

    Example: tidegate save-snapshot clicks-per-minute before-v2 --wait
    """
    body: dict[str, Any] = {"name": name, "stop": True}
    if grace is not None:
        body["timeout_seconds"] = grace
    _export(ctx, job, body, idempotency_key, wait, timeout)


def export_snapshot(
    ctx: Ctx,
    job: JobArg,
    name: SnapshotArg,
    wait: WaitOption = False,
    timeout: TimeoutOption = None,
    idempotency_key: KeyOption = None,
) -> None:
    """Export a named snapshot while the job keeps running (like a savepoint).

    Example: tidegate export-snapshot clicks-per-minute nightly-2026-01-01 --wait
    """
    _export(ctx, job, {"name": name, "stop": False}, idempotency_key, wait, timeout)


def list_snapshots(
    ctx: Ctx,
    job: Annotated[
        str | None, typer.Argument(help="Only this job's snapshots.", show_default=False)
    ] = None,
    limit: Limit = 50,
    all_: All = False,
) -> None:
    """List snapshots: TIME, SIZE, JOB NAME, SNAPSHOT NAME (sizes in bytes with -o json).

    Example: tidegate list-snapshots clicks-per-minute
    """
    rows = ctx.list("/snapshots", limit, all_, job=job)
    ctx.out.emit(rows, lambda: ctx.out.table(rows, SNAPSHOT_COLUMNS, "No snapshots."))


@command(snapshots_app, "list")
def snapshots_list(
    ctx: Ctx,
    job: Annotated[
        str | None, typer.Argument(help="Only this job's snapshots.", show_default=False)
    ] = None,
    limit: Limit = 50,
    all_: All = False,
) -> None:
    """List snapshots (the same as list-snapshots).

    Example: tidegate snapshots list clicks-per-minute -o json
    """
    list_snapshots(ctx, job, limit, all_)


@command(snapshots_app, "show")
def snapshots_show(ctx: Ctx, job: JobArg, name: SnapshotArg) -> None:
    """Show one snapshot: its coordinates, per-query batch and offsets, operators.

    Example: tidegate snapshots show clicks-per-minute before-v2
    """
    snap = ctx.api.get(f"/jobs/{seg(job)}/snapshots/{seg(name)}")

    def table() -> None:
        ctx.out.fields(
            snap,
            [
                ("JOB", "job"),
                ("NAME", "name"),
                ("STATE", "state"),
                ("TIME", lambda s: human_time(s.get("created_at"))),
                ("COMPLETED", lambda s: human_time(s.get("completed_at"))),
                ("SIZE", lambda s: human_size(s.get("size_bytes"))),
                ("WRITTEN", lambda s: human_size(s.get("bytes_written"))),
                ("FILES", "file_count"),
                ("FROM RUN", "run_id"),
                ("VERSION", "version"),
                ("STOPPED THE RUN", "stop"),
                ("OPERATION", "operation_id"),
                ("ERROR", "error"),
            ],
        )
        if snap.get("queries"):
            ctx.out.line("")
            ctx.out.table(
                snap["queries"],
                [
                    ("QUERY", "query"),
                    ("BATCH", "batch_id"),
                    ("OFFSETS", "offsets"),
                    (
                        "OPERATORS",
                        lambda q: (
                            ", ".join(
                                f"{o.get('id')}:{o.get('name')}/{o.get('partitions')}"
                                for o in q.get("operators") or []
                            )
                            or None
                        ),
                    ),
                    ("FILES", "files"),
                    ("SIZE", lambda q: human_size(q.get("size_bytes"))),
                ],
            )
        if snap.get("started_runs"):
            ctx.out.line("")
            ctx.out.table(
                snap["started_runs"],
                [
                    ("RUN", "run_id"),
                    ("JOB", "job"),
                    ("STATE", "run_state"),
                    ("QUERY", "query"),
                    ("FROM QUERY", "source_query"),
                    ("PARTS", "parts"),
                ],
            )

    ctx.out.emit(snap, table)


@command(snapshots_app, "delete")
def snapshots_delete(
    ctx: Ctx,
    job: JobArg,
    name: SnapshotArg,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")] = False,
) -> None:
    """Delete a snapshot (409, exit 3, while a run uses it).

    Example: tidegate snapshots delete clicks-per-minute before-v2 --yes
    """
    if not yes and typer.get_text_stream("stdin").isatty():
        confirm(f"Delete snapshot '{name}' of job '{job}'?")
    ctx.api.request("DELETE", f"/jobs/{seg(job)}/snapshots/{seg(name)}")
    if ctx.out.is_table:
        ctx.out.line(f"snapshot {name} of {job} deleted")
    else:
        ctx.out.document({"job": job, "name": name, "deleted": True})


@command(snapshots_app, "coordinates")
def snapshots_coordinates(ctx: Ctx, job: JobArg) -> None:
    """The latest snapshot coordinates (run, query, batch) of the job's current or last run.

    What a resume point can point at without a named snapshot.

    Example: tidegate snapshots coordinates clicks-per-minute -o json > coords.json
    """
    doc = ctx.api.get(f"/jobs/{seg(job)}/snapshot-coordinates")
    ctx.out.emit(doc, lambda: _coordinates_table(ctx, doc))


def _coordinates_table(ctx: Ctx, doc: dict[str, Any]) -> None:
    ctx.out.line(
        f"run {doc.get('run')} of {doc.get('job')} (version {doc.get('version')}, "
        f"{doc.get('run_state')})"
    )
    ctx.out.table(
        doc.get("coordinates") or [],
        [("JOB", "job"), ("RUN", "run"), ("QUERY", "query"), ("BATCH", "batch_id")],
        "No committed batch yet.",
    )
    for query in doc.get("uncommitted") or []:
        ctx.out.hint(f"{query}: nothing committed yet")


@command(snapshots_app, "retention")
def snapshots_retention(
    ctx: Ctx,
    job: JobArg,
    keep_last: Annotated[
        int | None, typer.Option(min=1, help="Keep this many newest snapshots.")
    ] = None,
    max_age: Annotated[
        str | None, typer.Option(help="Delete snapshots older than this, e.g. 7d, 12h.")
    ] = None,
    clear: Annotated[bool, typer.Option("--clear", help="No limits: keep everything.")] = False,
) -> None:
    """Show or set how many snapshots a job keeps (applied after each export).

    Without options it shows the policy; a snapshot an active run started from is never
    deleted.

    Example: tidegate snapshots retention clicks-per-minute --keep-last 5 --max-age 7d
    """
    path = f"/jobs/{seg(job)}/snapshot-retention"
    if clear and (keep_last is not None or max_age is not None):
        raise CliError("--clear takes no --keep-last or --max-age", Exit.USAGE)
    if clear or keep_last is not None or max_age is not None:
        doc = ctx.api.request("PUT", path, json={"keep_last": keep_last, "max_age": max_age})
    else:
        doc = ctx.api.get(path)
    ctx.out.emit(doc, lambda: ctx.out.fields(doc))


@command(resume_points_app, "build")
def resume_points_build(
    ctx: Ctx,
    job: JobArg,
    version: Annotated[
        int,
        typer.Option("--version", "-v", min=1, help="The version to start.", show_default=False),
    ],
    snapshot: Annotated[
        str | None, typer.Option(help="Map every query to this snapshot by name.")
    ] = None,
    snapshot_job: SnapshotJobOption = None,
    coordinates: Annotated[
        Path | None,
        typer.Option(
            help="Map to these coordinates (a YAML/JSON file, e.g. from "
            "'snapshots coordinates -o json')."
        ),
    ] = None,
    save: Annotated[
        Path | None,
        typer.Option("--save", help="Write the resume point here (JSON) to edit and submit."),
    ] = None,
) -> None:
    """Build a resume point mapping every query of a version to a snapshot by name.

    Edit it (take state from other queries or jobs, initialize some) and pass it to
    'submit --resume-point'.

    Example: tidegate resume-points build clicks-per-minute -v 3 --snapshot before-v3 --save rp.json
    """
    exclusive(snapshot=snapshot, coordinates=coordinates)
    if snapshot is None and coordinates is None:
        raise CliError("give --snapshot NAME or --coordinates FILE", Exit.USAGE)
    if snapshot_job is not None and snapshot is None:
        raise CliError("--snapshot-job goes with --snapshot", Exit.USAGE)
    body: dict[str, Any] = {"version": version}
    if snapshot is not None:
        body["snapshot"] = snapshot
        if snapshot_job is not None:
            body["snapshot_job"] = snapshot_job
    else:
        assert coordinates is not None
        coords = load_document(coordinates)
        # 'snapshots coordinates -o json' wraps the list with the run it came from.
        body["coordinates"] = coords.get("coordinates") if isinstance(coords, dict) else coords
    doc = ctx.api.post(f"/jobs/{seg(job)}/resume-points/build", body)
    if save is not None:
        save.write_text(json.dumps(doc.get("resume_point", doc), indent=2) + "\n")
        ctx.out.hint(
            f"resume point written to {save}; edit it if you like, then: "
            f"tidegate submit {job} --version {version} --resume-point {save}"
        )

    def table() -> None:
        outcomes_table(ctx, doc)
        ctx.out.line("")
        ctx.out.line(json.dumps(doc.get("resume_point"), indent=2))

    ctx.out.emit(doc, table)
