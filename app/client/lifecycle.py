"""Lifecycle commands (each a 202 and an operation the worker carries out), named as in
hz-cli, flink and gcloud dataflow: submit, stop, cancel, drain, restart, update, compat (the
operations they create are in ``operations.py``: ``operations list|show``, ``wait``).

Every one sends an ``Idempotency-Key``: a fresh one per invocation unless given, so the
CLI's retries after a lost answer never start a second submission, and a script that
passes its own key (``--idempotency-key deploy-$CI_PIPELINE_ID``) can re-run the command.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from app.client.api import new_idempotency_key, seg
from app.client.base import Ctx, command, exclusive, load_document
from app.client.errors import CliError, Exit
from app.client.operations import wait_command
from app.client.wait import KeyOption, TimeoutOption, WaitOption, accepted

JobArg = Annotated[str, typer.Argument(help="The job's name.", show_default=False)]
VersionOption = Annotated[
    int, typer.Option("--version", "-v", min=1, help="The version number.", show_default=False)
]


class Strategy(StrEnum):
    snapshot = "snapshot"
    drain = "drain"
    stateless = "stateless"


def operate(
    ctx: Ctx,
    job: str,
    verb: str,
    body: dict[str, Any] | None,
    key: str | None,
    wait: bool,
    timeout: float | None,
) -> None:
    op = ctx.api.post(
        f"/jobs/{seg(job)}/{verb}", body, idempotency_key=key or new_idempotency_key()
    )
    accepted(ctx, op, wait, timeout)


def register(cli: typer.Typer) -> None:
    """The top-level verbs (tidegate submit JOB …), as stream engineers type them."""
    command(cli, "submit", rich_help_panel="Lifecycle")(submit)
    command(cli, "stop", rich_help_panel="Lifecycle")(stop)
    command(cli, "cancel", rich_help_panel="Lifecycle")(cancel)
    command(cli, "drain", rich_help_panel="Lifecycle")(drain)
    command(cli, "restart", rich_help_panel="Lifecycle")(restart)
    command(cli, "update", rich_help_panel="Lifecycle")(update)
    command(cli, "compat", rich_help_panel="Lifecycle")(compat)
    command(cli, "wait", rich_help_panel="Lifecycle")(wait_command)  # (app/client/operations.py)


GraceOption = Annotated[
    int | None,
    typer.Option(
        "--grace",
        min=1,
        help="Seconds to wait for a graceful stop before the driver is killed (default 120).",
        show_default=False,
    ),
]
SnapshotJobOption = Annotated[
    str | None,
    typer.Option(
        help="With --snapshot: the job it belongs to (default this job).", show_default=False
    ),
]
ResumePointOption = Annotated[
    Path | None,
    typer.Option(
        help="A resume point file (YAML/JSON): query -> {mode: resume, snapshot|run, query} or "
        "{mode: initialize}; 'tidegate resume-points build --save' writes one.",
        show_default=False,
    ),
]


def resume_point_file(path: Path) -> Any:
    doc = load_document(path)
    # A saved 'resume-points build' answer carries the mapping under 'resume_point'.
    if isinstance(doc, dict) and isinstance(doc.get("resume_point"), dict) and "version" in doc:
        return doc["resume_point"]
    return doc


def _start_from(
    version: int, snapshot: str | None, snapshot_job: str | None, resume_point: Path | None
) -> dict[str, Any]:
    """The body's start: a snapshot (maybe another job's), a resume point, or nothing."""
    exclusive(snapshot=snapshot, resume_point=resume_point)
    if snapshot_job is not None and snapshot is None:
        raise CliError("--snapshot-job goes with --snapshot", Exit.USAGE)
    body: dict[str, Any] = {"version": version}
    if snapshot is not None:
        body["snapshot"] = snapshot
    if snapshot_job is not None:
        body["snapshot_job"] = snapshot_job
    if resume_point is not None:
        body["resume_point"] = resume_point_file(resume_point)
    return body


def submit(
    ctx: Ctx,
    job: JobArg,
    version: VersionOption,
    snapshot: Annotated[
        str | None,
        typer.Option(help="Start from this named snapshot (state restored by query name)."),
    ] = None,
    snapshot_job: SnapshotJobOption = None,
    resume_point: ResumePointOption = None,
    wait: WaitOption = False,
    timeout: TimeoutOption = None,
    idempotency_key: KeyOption = None,
) -> None:
    """Start a run of a version, fresh or from a snapshot or resume point.

    Without --wait it prints the operation id and returns; --wait follows it to the end.

    Example: tidegate submit clicks-per-minute --version 2 --snapshot before-v2 --wait
    """
    body = _start_from(version, snapshot, snapshot_job, resume_point)
    operate(ctx, job, "submit", body, idempotency_key, wait, timeout)


def stop(
    ctx: Ctx,
    job: JobArg,
    grace: GraceOption = None,
    wait: WaitOption = False,
    timeout: TimeoutOption = None,
    idempotency_key: KeyOption = None,
) -> None:
    """Stop the job's run at a batch boundary (no snapshot); restart resumes it.

    Example: tidegate stop clicks-per-minute --wait
    """
    body = {"timeout_seconds": grace} if grace is not None else None
    operate(ctx, job, "stop", body, idempotency_key, wait, timeout)


def cancel(
    ctx: Ctx,
    job: JobArg,
    wait: WaitOption = False,
    timeout: TimeoutOption = None,
    idempotency_key: KeyOption = None,
) -> None:
    """Kill the job's run now (the last batch may be re-run on restart).

    Example: tidegate cancel clicks-per-minute
    """
    operate(ctx, job, "cancel", None, idempotency_key, wait, timeout)


def drain(
    ctx: Ctx,
    job: JobArg,
    drain_timeout: Annotated[
        int | None,
        typer.Option(
            "--drain-timeout",
            min=10,
            help="Seconds the drain may take; then the job is stopped cleanly at a batch "
            "boundary instead (server default 1800).",
        ),
    ] = None,
    wait: WaitOption = False,
    timeout: TimeoutOption = None,
    idempotency_key: KeyOption = None,
) -> None:
    """Stop-and-drain: process up to the current end offsets, flush windows, stop.

    The drained end offsets are recorded, so the next version can start exactly there with
    fresh state: an incompatible change loses nothing and duplicates nothing.

    Example: tidegate drain clicks-per-minute --wait
    """
    body = {"timeout_seconds": drain_timeout} if drain_timeout is not None else None
    operate(ctx, job, "drain", body, idempotency_key, wait, timeout)


def restart(
    ctx: Ctx,
    job: JobArg,
    wait: WaitOption = False,
    timeout: TimeoutOption = None,
    idempotency_key: KeyOption = None,
    prewarm: Annotated[
        bool | None,
        typer.Option(
            "--prewarm/--no-prewarm",
            help="Default: the job's prewarm. Start the next attempt's driver first, as a "
            "spare; the run then stops at a batch boundary and the spare takes over at once. "
            "--no-prewarm: stop, then start again (cold).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Restart the current version from its own checkpoint (applies pending startpoints).

    Example: tidegate restart clicks-per-minute --wait
    """
    body = {"prewarm": prewarm} if prewarm is not None else None
    operate(ctx, job, "restart", body, idempotency_key, wait, timeout)


def update(
    ctx: Ctx,
    job: JobArg,
    version: VersionOption,
    strategy: Annotated[
        Strategy,
        typer.Option(
            help="snapshot: save a snapshot, start the new version from it (state kept); "
            "drain: drain, start fresh at the drained offsets; stateless (no state held): stop "
            "at a batch boundary, start fresh at the committed offsets.",
        ),
    ] = Strategy.snapshot,
    snapshot_name: Annotated[
        str | None,
        typer.Option(
            help="Name of the snapshot the update saves (default update-v<old>-v<new>-…)."
        ),
    ] = None,
    grace: GraceOption = None,
    verify_seconds: Annotated[
        int | None,
        typer.Option(
            min=0,
            max=3_600,
            help="The new run is verified when every query has committed its first batch past "
            "the restored one (or Spark reports it idle, with no new input) and it has kept "
            "running at least this many seconds; a failure before then rolls back. 0: only "
            "check that it started (server default 20).",
            show_default=False,
        ),
    ] = None,
    first_batch_seconds: Annotated[
        int | None,
        typer.Option(
            min=1,
            max=86_400,
            help="How long every query of the new run has to commit that first batch (or "
            "report idle) before the update rolls back (server default 600).",
            show_default=False,
        ),
    ] = None,
    prewarm: Annotated[
        bool | None,
        typer.Option(
            "--prewarm/--no-prewarm",
            help="Start the new driver as a standby while the old run still processes, so "
            "the switch pays no driver start; --no-prewarm: one driver at a time (cold). "
            "Default: the job's setting.",
            show_default=False,
        ),
    ] = None,
    wait: WaitOption = False,
    timeout: TimeoutOption = None,
    idempotency_key: KeyOption = None,
) -> None:
    """Replace the running version with another (snapshot, drain or stateless).

    Stops the old run the chosen way and starts the new version from it. Check first with
    'tidegate compat'.

    Example: tidegate update clicks-per-minute --version 3 --strategy snapshot --wait
    """
    body: dict[str, Any] = {"version": version, "strategy": strategy.value}
    if prewarm is not None:
        body["prewarm"] = prewarm
    for key, value in (
        ("snapshot_name", snapshot_name),
        ("timeout_seconds", grace),
        ("verify_seconds", verify_seconds),
        ("first_batch_seconds", first_batch_seconds),
    ):
        if value is not None:
            body[key] = value
    operate(ctx, job, "update", body, idempotency_key, wait, timeout)


def outcomes_table(ctx: Ctx, doc: dict[str, Any]) -> None:
    """Per query: resume (from where), initialize or dropped; then every problem."""
    ctx.out.table(
        doc.get("queries") or [],
        [
            ("QUERY", "query"),
            ("OUTCOME", "outcome"),
            ("FROM", lambda q: _source(q.get("source"))),
            ("PARTS", lambda q: ", ".join(q.get("parts") or []) or None),
            ("DETAIL", "detail"),
        ],
        "No queries in the answer.",
    )
    for name in doc.get("dropped") or []:
        ctx.out.line(f"dropped: {name} (in the snapshot, not in version {doc.get('version')})")
    for problem in doc.get("problems") or []:
        ctx.out.line(f"incompatible: {_problem(problem)}")


def _source(source: Any) -> str | None:
    if not isinstance(source, dict):
        return None
    where = (
        f"snapshot {source['snapshot']}"
        if source.get("snapshot")
        else f"run {source.get('run')}"
        + (f" batch {source['batch_id']}" if source.get("batch_id") is not None else "")
    )
    job = f" of {source['job']}" if source.get("job") else ""
    return f"{where}{job}, query {source.get('query')}"


def _problem(problem: Any) -> str:
    if not isinstance(problem, dict):
        return str(problem)
    return f"{problem.get('query')}: {problem.get('detail')} ({problem.get('kind')})"


def compat(
    ctx: Ctx,
    job: JobArg,
    version: VersionOption,
    snapshot: Annotated[
        str | None, typer.Option(help="The snapshot to start from.", show_default=False)
    ] = None,
    snapshot_job: SnapshotJobOption = None,
    resume_point: ResumePointOption = None,
) -> None:
    """Check whether a version can start from a snapshot, before anything is stopped.

    Shows which queries resume their state, start empty, or are dropped; exit 3 if the
    version is incompatible (a renamed stateful query, another operator kind, a changed
    state schema or number of state partitions).

    Example: tidegate compat clicks-per-minute --version 3 --snapshot before-v3
    """
    if snapshot is None and resume_point is None:
        raise CliError("give --snapshot NAME or --resume-point FILE", Exit.USAGE)
    body = _start_from(version, snapshot, snapshot_job, resume_point)
    doc = ctx.api.post(f"/jobs/{seg(job)}/compatibility", body)
    compatible = bool(doc.get("compatible"))
    start = f"snapshot {snapshot}" if snapshot else f"resume point {resume_point}"

    def table() -> None:
        outcomes_table(ctx, doc)
        ctx.out.line(f"version {version} {'can' if compatible else 'cannot'} start from {start}")

    ctx.out.emit(doc, table)
    if not compatible:
        problems = doc.get("problems") or []
        raise CliError(
            f"version {version} of {job} cannot start from {start}"
            + (f": {_problem(problems[0])}" if problems else ""),
            Exit.CONFLICT,
        )
