"""``tidegate jobs …`` and ``tidegate versions …``: what runs, and its immutable versions."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from app.client.api import seg
from app.client.base import All, Ctx, Limit, command, confirm, load_mapping
from app.client.errors import CliError, Exit
from app.client.output import Column, human_time, pick

jobs_app = typer.Typer(help="Jobs: named streaming jobs and their state.", no_args_is_help=True)
versions_app = typer.Typer(
    help="Versions: the immutable app, conf, cluster and queries a job runs.",
    no_args_is_help=True,
)

JobArg = Annotated[str, typer.Argument(help="The job's name.", show_default=False)]
POLICY = "Restart policy (PSTL backoff)"

JOB_COLUMNS: list[Column] = [
    ("NAME", "name"),
    ("STATE", "state"),
    ("VERSION", "latest_version"),
    ("RUN", "current_run_id"),
    ("NEXT RESTART", lambda j: human_time(j.get("next_restart_at"))),
    ("UPDATED", lambda j: human_time(j.get("updated_at"))),
]


def _policy_options(
    min_backoff: str | None,
    max_backoff: str | None,
    random_factor: float | None,
    max_attempts: int | None,
    stable_period: str | None,
    restart: bool | None,
) -> dict[str, Any]:
    given = {
        "min_backoff": min_backoff,
        "max_backoff": max_backoff,
        "random_factor": random_factor,
        "max_attempts": max_attempts,
        "stable_period": stable_period,
        "enabled": restart,
    }
    return {k: v for k, v in given.items() if v is not None}


MinBackoff = Annotated[
    str | None,
    typer.Option(help="First restart delay, e.g. 1s, 250ms.", rich_help_panel=POLICY),
]
MaxBackoff = Annotated[
    str | None, typer.Option(help="Longest restart delay, e.g. 1h.", rich_help_panel=POLICY)
]
RandomFactor = Annotated[
    float | None,
    typer.Option(min=0, help="Jitter: delay * (1 + U[0,1) * factor).", rich_help_panel=POLICY),
]
MaxAttempts = Annotated[
    int | None,
    typer.Option(
        min=0, help="Restarts before the job fails (default unlimited).", rich_help_panel=POLICY
    ),
]
StablePeriod = Annotated[
    str | None,
    typer.Option(
        help="Healthy this long resets the failure count, e.g. 5m.", rich_help_panel=POLICY
    ),
]
Restart = Annotated[
    bool | None,
    typer.Option(
        "--restart/--no-restart",
        help="Supervised restarts on or off.",
        rich_help_panel=POLICY,
        show_default=False,
    ),
]


def show_job(ctx: Ctx, job: dict[str, Any]) -> None:
    ctx.out.emit(
        job,
        lambda: ctx.out.fields(
            job,
            [
                ("NAME", "name"),
                ("STATE", "state"),
                ("DESCRIPTION", "description"),
                ("LATEST VERSION", "latest_version"),
                ("CURRENT RUN", "current_run_id"),
                ("NEXT RESTART", lambda j: human_time(j.get("next_restart_at"))),
                ("RESTART POLICY", "restart_policy"),
                ("PREWARM", "prewarm"),
                ("HOT SPARE", "hot_spare"),
                ("REVISION", "revision"),
                (
                    "CREATED",
                    lambda j: f"{human_time(j.get('created_at'))} by {j.get('created_by')}",
                ),
                ("UPDATED", lambda j: human_time(j.get("updated_at"))),
            ],
        ),
    )


@command(jobs_app, "list")
def jobs_list(
    ctx: Ctx,
    state: Annotated[
        str | None, typer.Option(help="Only jobs in this state (running, failed, …).")
    ] = None,
    limit: Limit = 50,
    all_: All = False,
) -> None:
    """List jobs with their state, latest version and current run.

    Example: tidegate jobs list --state running -o json
    """
    jobs = ctx.list("/jobs", limit, all_, state=state)
    ctx.out.emit(
        jobs, lambda: ctx.out.table(jobs, JOB_COLUMNS, "No jobs yet: tidegate jobs create NAME")
    )


@command(jobs_app, "show")
def jobs_show(ctx: Ctx, job: JobArg) -> None:
    """Show one job: state, current run, next restart, restart policy, revision.

    Example: tidegate jobs show clicks-per-minute
    """
    show_job(ctx, ctx.api.get(f"/jobs/{seg(job)}"))


Prewarm = Annotated[
    bool | None,
    typer.Option(
        "--prewarm/--no-prewarm",
        help="Whether updates and restarts start the new driver as a standby before the old "
        "run stops (one more driver during the switch); default on.",
        show_default=False,
    ),
]

HotSpare = Annotated[
    bool | None,
    typer.Option(
        "--hot-spare/--no-hot-spare",
        help="Keep a spare driver waiting for the current run's next attempt, so a crashed "
        "driver is replaced in seconds; costs one idle driver while the job runs. Default off.",
        show_default=False,
    ),
]


@command(jobs_app, "create")
def jobs_create(
    ctx: Ctx,
    name: Annotated[str, typer.Argument(help="Job name: letters, digits, '_', '.', '-'.")],
    description: Annotated[str | None, typer.Option(help="What the job does.")] = None,
    file: Annotated[
        Path | None,
        typer.Option("--file", "-f", help="A YAML/JSON job body; flags override its fields."),
    ] = None,
    min_backoff: MinBackoff = None,
    max_backoff: MaxBackoff = None,
    random_factor: RandomFactor = None,
    max_attempts: MaxAttempts = None,
    stable_period: StablePeriod = None,
    restart: Restart = None,
    prewarm: Prewarm = None,
    hot_spare: HotSpare = None,
) -> None:
    """Create a job (409, exit 3, if the name is taken). Then add a version and submit it.

    Example: tidegate jobs create clicks-per-minute --description "per-key counts" --max-attempts 10
    """
    body: dict[str, Any] = load_mapping(file, "job") if file else {}
    body["name"] = name
    if description is not None:
        body["description"] = description
    policy = _policy_options(
        min_backoff, max_backoff, random_factor, max_attempts, stable_period, restart
    )
    if policy:
        body["restart_policy"] = {**(body.get("restart_policy") or {}), **policy}
    if prewarm is not None:
        body["prewarm"] = prewarm
    if hot_spare is not None:
        body["hot_spare"] = hot_spare
    show_job(ctx, ctx.api.post("/jobs", body))


@command(jobs_app, "edit")
def jobs_edit(
    ctx: Ctx,
    job: JobArg,
    description: Annotated[str | None, typer.Option(help="New description.")] = None,
    if_match: Annotated[
        int | None,
        typer.Option(
            "--if-match",
            help="Only if the job is still at this revision (412, exit 3, otherwise). "
            "Default: the revision read just before the change.",
        ),
    ] = None,
    min_backoff: MinBackoff = None,
    max_backoff: MaxBackoff = None,
    random_factor: RandomFactor = None,
    max_attempts: MaxAttempts = None,
    stable_period: StablePeriod = None,
    restart: Restart = None,
    prewarm: Prewarm = None,
    hot_spare: HotSpare = None,
) -> None:
    """Change a job's description, restart policy, prewarm or hot spare (PATCH, If-Match).

    Only the policy fields you give change: the rest are read from the job first, and the
    change is refused if someone else changed the job in between.

    Example: tidegate jobs edit clicks-per-minute --max-backoff 10m --stable-period 5m
    """
    policy = _policy_options(
        min_backoff, max_backoff, random_factor, max_attempts, stable_period, restart
    )
    if description is None and not policy and prewarm is None and hot_spare is None:
        raise CliError(
            "nothing to change: give --description, --[no-]prewarm, --[no-]hot-spare or a "
            "policy option",
            Exit.USAGE,
        )
    current = ctx.api.get(f"/jobs/{seg(job)}")
    body: dict[str, Any] = {}
    if description is not None:
        body["description"] = description
    if policy:
        body["restart_policy"] = {**(current.get("restart_policy") or {}), **policy}
    if prewarm is not None:
        body["prewarm"] = prewarm
    if hot_spare is not None:
        body["hot_spare"] = hot_spare
    revision = if_match if if_match is not None else current.get("revision")
    updated = ctx.api.request(
        "PATCH", f"/jobs/{seg(job)}", json=body, headers={"If-Match": f'"{revision}"'}
    )
    show_job(ctx, updated)


@command(jobs_app, "delete")
def jobs_delete(
    ctx: Ctx,
    job: JobArg,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")] = False,
) -> None:
    """Delete a job with its versions and history (409, exit 3, while a run is active).

    Example: tidegate jobs delete clicks-per-minute --yes
    """
    if not yes and typer.get_text_stream("stdin").isatty():
        confirm(f"Delete job '{job}' with all its versions and history?")
    ctx.api.request("DELETE", f"/jobs/{seg(job)}")
    if ctx.out.is_table:
        ctx.out.line(f"job {job} deleted")
    else:
        ctx.out.document({"name": job, "deleted": True})


# ---- versions ---------------------------------------------------------------------------


def _queries(version: dict[str, Any]) -> str:
    return ", ".join(str(q.get("name")) for q in version.get("queries") or [])


VERSION_COLUMNS: list[Column] = [
    ("VERSION", "number"),
    ("CLUSTER", "cluster"),
    ("QUERIES", _queries),
    ("APP", lambda v: (v.get("app") or {}).get("file")),
    ("CREATED", lambda v: human_time(v.get("created_at"))),
    ("BY", "created_by"),
]


def show_version(ctx: Ctx, version: dict[str, Any]) -> None:
    def table() -> None:
        app = version.get("app") or {}
        ctx.out.fields(
            version,
            [
                ("JOB", "job"),
                ("VERSION", "number"),
                ("CLUSTER", "cluster"),
                ("APP", lambda _: app.get("file")),
                ("ARGS", lambda _: " ".join(app.get("args") or []) or None),
                ("PY FILES", lambda _: ", ".join(app.get("py_files") or []) or None),
                ("CONF", "conf"),
                ("DESCRIPTION", "description"),
                (
                    "CREATED",
                    lambda v: f"{human_time(v.get('created_at'))} by {v.get('created_by')}",
                ),
            ],
        )
        ctx.out.line("")
        ctx.out.table(
            version.get("queries") or [],
            [
                ("QUERY", lambda q: q["name"] + (" (derived)" if q.get("name_derived") else "")),
                (
                    "SOURCES",
                    lambda q: ", ".join(
                        f"{s.get('name')}:{s.get('kind')}" for s in q.get("sources") or []
                    ),
                ),
                (
                    "STATEFUL",
                    lambda q: (
                        ", ".join(str(o.get("kind")) for o in q.get("stateful_operators") or [])
                        or None
                    ),
                ),
                ("MODE", "output_mode"),
                ("TRIGGER", "trigger"),
                ("CHECKPOINT", pick("checkpoint_location")),
            ],
        )

    ctx.out.emit(version, table)


@command(versions_app, "create")
def versions_create(
    ctx: Ctx,
    job: JobArg,
    file: Annotated[
        str,
        typer.Option(
            "--file",
            "-f",
            help="The version body as YAML or JSON ('-' reads stdin): app, cluster, conf, "
            "queries (see docs/cli.md).",
            show_default=False,
        ),
    ],
) -> None:
    """Add an immutable version to a job from a YAML or JSON file; prints its number.

    Example: tidegate versions create clicks-per-minute -f version.yaml
    """
    body = load_mapping(file, "version")
    show_version(ctx, ctx.api.post(f"/jobs/{seg(job)}/versions", body))


@command(versions_app, "list")
def versions_list(ctx: Ctx, job: JobArg, limit: Limit = 50, all_: All = False) -> None:
    """List a job's versions.

    Example: tidegate versions list clicks-per-minute
    """
    rows = ctx.list(f"/jobs/{seg(job)}/versions", limit, all_)
    ctx.out.emit(
        rows,
        lambda: ctx.out.table(
            rows, VERSION_COLUMNS, f"No versions: tidegate versions create {job} -f FILE"
        ),
    )


@command(versions_app, "show")
def versions_show(
    ctx: Ctx,
    job: JobArg,
    number: Annotated[int, typer.Argument(min=1, help="The version number.")],
) -> None:
    """Show one version: app, conf, cluster and its queries.

    Example: tidegate versions show clicks-per-minute 2 -o yaml
    """
    show_version(ctx, ctx.api.get(f"/jobs/{seg(job)}/versions/{number}"))
