"""The operations lifecycle commands create: ``operations list|show`` and ``wait``."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from app.client.api import seg
from app.client.base import All, Ctx, DefaultListGroup, Limit, command
from app.client.output import Column, human_time
from app.client.wait import TimeoutOption, follow, report

JobArg = Annotated[str, typer.Argument(help="The job's name.", show_default=False)]

operations_app = typer.Typer(
    cls=DefaultListGroup,
    help="Operations: what submit, stop, drain, … asked for and how far the worker got. "
    "'tidegate operations JOB' lists a job's.",
    no_args_is_help=True,
)


OP_COLUMNS: list[Column] = [
    ("ID", "id"),
    ("KIND", "kind"),
    ("STATE", "state"),
    ("RUN", "run_id"),
    ("STEPS", lambda o: ", ".join(str(s.get("name")) for s in o.get("steps") or []) or None),
    ("CREATED", lambda o: human_time(o.get("created_at"))),
    ("BY", "created_by"),
    ("ERROR", "error"),
]


def show_operation(ctx: Ctx, op: dict[str, Any]) -> None:
    def table() -> None:
        ctx.out.fields(
            op,
            [
                ("ID", "id"),
                ("JOB", "job"),
                ("KIND", "kind"),
                ("STATE", "state"),
                ("PARAMS", "params"),
                ("RUN", "run_id"),
                ("ERROR", "error"),
                ("RESULT", "result"),
                ("IDEMPOTENCY KEY", "idempotency_key"),
                (
                    "CREATED",
                    lambda o: f"{human_time(o.get('created_at'))} by {o.get('created_by')}",
                ),
                ("STARTED", lambda o: human_time(o.get("started_at"))),
                ("FINISHED", lambda o: human_time(o.get("finished_at"))),
            ],
        )
        if op.get("steps"):
            ctx.out.line("")
            ctx.out.table(
                op["steps"],
                [
                    ("STEP", "name"),
                    ("AT", lambda s: human_time(s.get("at"))),
                    ("DETAIL", "detail"),
                ],
            )

    ctx.out.emit(op, table)


@command(operations_app, "list")
def operations_list(ctx: Ctx, job: JobArg, limit: Limit = 20, all_: All = False) -> None:
    """List a job's operations, newest first.

    Example: tidegate operations list clicks-per-minute
    """
    rows = ctx.list(f"/jobs/{seg(job)}/operations", limit, all_)
    ctx.out.emit(rows, lambda: ctx.out.table(rows, OP_COLUMNS, f"No operations for {job}."))


OpIdArg = Annotated[int, typer.Argument(min=1, help="The operation id.", show_default=False)]


@command(operations_app, "show")
def operations_show(ctx: Ctx, op_id: OpIdArg) -> None:
    """Show one operation: state, steps done, error, result.

    Example: tidegate operations show 42
    """
    show_operation(ctx, ctx.api.get(f"/operations/{op_id}"))


def wait_command(ctx: Ctx, op_id: OpIdArg, timeout: TimeoutOption = None) -> None:
    """Follow an operation to its end with live progress; exit 1 if it failed.

    Example: tidegate wait 42 --timeout 600
    """
    report(ctx, follow(ctx, ctx.api.get(f"/operations/{op_id}"), timeout))
