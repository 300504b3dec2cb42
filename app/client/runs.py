"""``tidegate runs JOB`` and ``tidegate runs show ID``: each submission of a version, with its
restarts and the latest progress of every query. (``run`` is taken: it starts the stack.)"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from app.client.api import seg
from app.client.base import All, Ctx, DefaultListGroup, Limit, command
from app.client.errors import CliError, Exit
from app.client.output import Column, cell, human_time

runs_app = typer.Typer(
    cls=DefaultListGroup,
    help="Runs: submissions of a version, their restarts and progress. "
    "'tidegate runs JOB' lists a job's runs.",
    no_args_is_help=True,
)

RunIdArg = Annotated[int, typer.Argument(min=1, help="The run id.", show_default=False)]


def _progress_summary(run: dict[str, Any]) -> str | None:
    progress = run.get("progress") or {}
    parts = [f"{q}@{p.get('batch_id')}" for q, p in progress.items() if isinstance(p, dict)]
    return ", ".join(parts) or None


RUN_COLUMNS: list[Column] = [
    ("ID", "id"),
    ("VERSION", "version"),
    ("STATE", "state"),
    ("ATTEMPT", "attempt"),
    ("FAILURES", "failures"),
    ("BACKEND ID", "backend_id"),
    ("NEXT RESTART", lambda r: human_time(r.get("next_restart_at"))),
    ("BATCHES", _progress_summary),
    ("CREATED", lambda r: human_time(r.get("created_at"))),
]


def _offsets(sources: Any) -> str | None:
    if not isinstance(sources, list):
        return None
    return "; ".join(cell(s.get("end_offset")) for s in sources if isinstance(s, dict)) or None


def _state_rows(ops: Any) -> int | None:
    if not isinstance(ops, list):
        return None
    rows = [o.get("num_rows_total") for o in ops if isinstance(o, dict)]
    return sum(r for r in rows if isinstance(r, int)) if rows else None


@command(runs_app, "list")
def runs_list(
    ctx: Ctx,
    job: Annotated[str, typer.Argument(help="The job's name.", show_default=False)],
    limit: Limit = 20,
    all_: All = False,
) -> None:
    """List a job's runs, newest first.

    Example: tidegate runs clicks-per-minute
    """
    rows = ctx.list(f"/jobs/{seg(job)}/runs", limit, all_)
    ctx.out.emit(
        rows, lambda: ctx.out.table(rows, RUN_COLUMNS, f"{job} has not run yet: tidegate submit")
    )


@command(runs_app, "show")
def runs_show(ctx: Ctx, run_id: RunIdArg) -> None:
    """Show one run: state, backend id, restarts, per-query progress and recent transitions.

    Example: tidegate runs show 7
    """
    run = ctx.api.get(f"/runs/{run_id}")

    def table() -> None:
        ctx.out.fields(
            run,
            [
                ("ID", "id"),
                ("JOB", "job"),
                ("VERSION", "version"),
                ("CLUSTER", "cluster"),
                ("STATE", "state"),
                ("STOP REASON", "stop_reason"),
                ("ATTEMPT", "attempt"),
                ("FAILURES", "failures"),
                ("BACKEND ID", "backend_id"),
                ("TAG", "tag"),
                (
                    "OBSERVED",
                    lambda r: (
                        f"{cell(r.get('observed_state'))} at {human_time(r.get('observed_at'))}"
                        if r.get("observed_state")
                        else None
                    ),
                ),
                ("RUNNING SINCE", lambda r: human_time(r.get("running_since"))),
                ("NEXT RESTART", lambda r: human_time(r.get("next_restart_at"))),
                ("LAST ERROR", "last_error"),
                ("DRAIN", "drain"),  # requested_at, end offsets per source, drained_at
                (
                    "CREATED",
                    lambda r: f"{human_time(r.get('created_at'))} by {r.get('created_by')}",
                ),
                ("ENDED", lambda r: human_time(r.get("ended_at"))),
            ],
        )
        progress = run.get("progress") or {}
        if progress:
            ctx.out.line("")
            ctx.out.table(
                [{"query": q, **p} for q, p in progress.items() if isinstance(p, dict)],
                [
                    ("QUERY", "query"),
                    ("BATCH", "batch_id"),
                    ("INPUT ROWS", "num_input_rows"),
                    ("WATERMARK", "watermark"),
                    ("WM LEAD", lambda p: _lead(p.get("watermark_lead_seconds"))),
                    ("END OFFSETS", lambda p: _offsets(p.get("sources"))),
                    ("STATE ROWS", lambda p: _state_rows(p.get("state_operators"))),
                    ("DROPPED LATE", _dropped_late),
                    ("AT", lambda p: human_time(p.get("timestamp") or p.get("at"))),
                ],
            )
        if run.get("transitions"):
            ctx.out.line("")
            ctx.out.table(
                run["transitions"],
                [
                    ("AT", lambda t: human_time(t.get("at"))),
                    ("FROM", "from_state"),
                    ("TO", "to_state"),
                    ("REASON", "reason"),
                ],
            )

    ctx.out.emit(run, table)


def _dropped_late(p: dict[str, Any]) -> str | None:
    """Rows the query's stateful operators dropped as behind the watermark: over the run's
    batches, and in the last one (docs/late-data.md)."""
    total, last = p.get("rows_dropped_late_total"), p.get("rows_dropped_late")
    if total is None and last is None:
        return None
    return f"{total or 0} (last batch {last if last is not None else '-'})"


def _lead(seconds: Any) -> str | None:
    """The watermark against the driver's clock: +70s is ahead of it."""
    return None if not isinstance(seconds, int | float) else f"{seconds:+.0f}s"


@command(runs_app, "progress")
def runs_progress(
    ctx: Ctx,
    run_id: RunIdArg,
    query: Annotated[str | None, typer.Option(help="Only this query.")] = None,
    limit: Annotated[int, typer.Option(min=1, max=500, help="How many reports.")] = 20,
) -> None:
    """Recent progress reports of a run's queries (batch, rows, offsets, watermark).

    Example: tidegate runs progress 7 --query windowed_counts --limit 5
    """
    rows = ctx.api.get(f"/runs/{run_id}/progress", query=query, limit=limit)
    ctx.out.emit(
        rows,
        lambda: ctx.out.table(
            rows,
            [
                ("AT", lambda r: human_time(r.get("at"))),
                ("QUERY", "query"),
                ("BATCH", "batch_id"),
                ("INPUT ROWS", lambda r: (r.get("payload") or {}).get("num_input_rows")),
                ("WATERMARK", lambda r: (r.get("payload") or {}).get("watermark")),
                ("DROPPED LATE", lambda r: (r.get("payload") or {}).get("rows_dropped_late")),
                ("END OFFSETS", lambda r: _offsets((r.get("payload") or {}).get("sources"))),
            ],
            "No progress reported yet.",
        ),
    )


def verify(
    ctx: Ctx,
    job: Annotated[str, typer.Argument(help="The job's name.", show_default=False)],
    run_id: Annotated[
        int | None, typer.Option("--run", min=1, help="A run of the job; default: its current.")
    ] = None,
) -> None:
    """Did the job lose anything? Per query and batch: the records its checkpoint says the run
    read, what Spark counted in, and the rows dropped as late. Exits 1 when a record read was
    not counted in or a row was dropped as late (docs/late-data.md).

    Example: tidegate verify clicks-per-minute
    """
    if run_id is None:
        current = ctx.api.get(f"/jobs/{seg(job)}").get("current_run_id")
        if current is None:
            raise CliError(f"job {job} has no run to verify", Exit.NOT_FOUND)
        run_id = int(current)
    doc = ctx.api.get(f"/runs/{run_id}/accounting")
    if doc.get("job") != job:
        raise CliError(f"run {run_id} is a run of {doc.get('job')}, not of {job}", Exit.USAGE)

    def table() -> None:
        rows = [{"query": q["query"], **b} for q in doc.get("queries") or [] for b in q["batches"]]
        ctx.out.table(
            rows,
            [
                ("QUERY", "query"),
                ("BATCH", "batch_id"),
                ("READ", "read"),
                ("COUNTED IN", "counted_in"),
                ("NOT COUNTED", "not_counted"),
                ("DROPPED LATE", "dropped_late"),
            ],
            f"Run {run_id} has reported no batch yet.",
        )
        ctx.out.hint(f"run {run_id}: {doc.get('verdict')}")

    ctx.out.emit(doc, table)
    lost = any(q["not_counted"] or q["dropped_late"] for q in doc.get("queries") or [])
    if lost:
        raise typer.Exit(int(Exit.FAILED))
