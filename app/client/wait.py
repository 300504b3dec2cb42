"""Following a lifecycle operation to its end (``--wait``), live on a terminal, line by line
in a log, so a deploy pipeline's output says what happened as it happened."""

from __future__ import annotations

import time
from datetime import datetime
from typing import Annotated, Any

import typer
from rich.console import Group, RenderableType
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from app.client.api import seg
from app.client.base import Ctx
from app.client.errors import CliError, Exit
from app.client.output import cell, human_size

TERMINAL = ("succeeded", "failed")

WaitOption = Annotated[
    bool,
    typer.Option(
        "--wait",
        "-w",
        help="Follow the operation to its end with live progress; exit 1 if it fails.",
    ),
]
TimeoutOption = Annotated[
    float | None,
    typer.Option(
        "--timeout",
        min=0,
        help="With --wait: give up after this many seconds (exit 7; the operation goes on).",
        show_default=False,
    ),
]
KeyOption = Annotated[
    str | None,
    typer.Option(
        "--idempotency-key",
        help="Same key, same operation: re-running the command with it has no second effect. "
        "Default: a fresh key per invocation, so the CLI's own retries are safe.",
        show_default=False,
    ),
]


def _number(key: str, value: Any) -> str:
    if isinstance(value, int | float) and not isinstance(value, bool) and "bytes" in key:
        return human_size(value)
    return cell(value)


def _flatten(doc: dict[str, Any], prefix: str = "", depth: int = 0) -> dict[str, Any]:
    """Scalar fields with dotted keys (two levels), for a one-line summary."""
    out: dict[str, Any] = {}
    for key, value in doc.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            if depth < 1:
                out.update(_flatten(value, name + ".", depth + 1))
        elif value is not None and not isinstance(value, list):
            out[name] = value
    return out


def progress_fields(op: dict[str, Any]) -> dict[str, Any]:
    """How far the operation got, from what it carries: its interim ``result`` while running
    (a drain's backlog; a snapshot export's bytes_total, bytes_copied, files_copied), else the
    latest step's detail."""
    source: Any = op.get("result") if op.get("state") == "running" else None
    if not (isinstance(source, dict) and source):
        steps = op.get("steps") or []
        source = steps[-1].get("detail") if steps and isinstance(steps[-1], dict) else None
    if not isinstance(source, dict):
        return {}
    fields = _flatten({k: v for k, v in source.items() if k not in ("backlog", "end_offsets")})
    backlog = source.get("backlog")
    if isinstance(backlog, dict):  # a drain: {query: {records, sources: {source: n}}}
        per_query = {q: b.get("records") for q, b in backlog.items() if isinstance(b, dict)}
        counts = [n for n in per_query.values() if isinstance(n, int)]
        fields["backlog_records"] = sum(counts)
        if len(per_query) > 1:
            fields.update({f"backlog.{q}": n for q, n in per_query.items()})
    return fields


def _bars(fields: dict[str, Any]) -> list[tuple[str, float, float]]:
    """(label, done, total) for every ``X_total`` with an ``X_done``/``X_copied`` beside it."""
    out = []
    for key, total in fields.items():
        if not key.endswith("_total") or not isinstance(total, int | float) or total <= 0:
            continue
        base = key.removesuffix("_total")
        for suffix in ("_done", "_copied", "_processed"):
            done = fields.get(base + suffix)
            if isinstance(done, int | float):
                out.append((base, done, total))
                break
    return out


def render(op: dict[str, Any], started: float) -> RenderableType:
    state = str(op.get("state", "?"))
    colour = {"succeeded": "green", "failed": "red", "running": "cyan"}.get(state, "yellow")
    head = Text.assemble(
        (f"operation {op.get('id')} ", "bold"),
        (f"{op.get('kind')} ", ""),
        (f"job {op.get('job')} ", "dim"),
        (state, f"bold {colour}"),
        (f"  {time.monotonic() - started:.0f}s", "dim"),
    )
    parts: list[RenderableType] = [head]
    steps = op.get("steps") or []
    if steps:
        names = " → ".join(str(s.get("name")) for s in steps if isinstance(s, dict))
        parts.append(Text(f"  steps done ({len(steps)}): {names}"))
    fields = progress_fields(op)
    for label, done, total in _bars(fields):
        bar = Table.grid(padding=(0, 1))
        bar.add_row(
            Text(f"  {label}"),
            ProgressBar(total=total, completed=done, width=30),
            Text(f"{_number(label, done)} / {_number(label, total)}"),
        )
        parts.append(bar)
    if fields:
        parts.append(Text(f"  {summary(fields)}", style="dim"))
    return Group(*parts)


def summary(fields: dict[str, Any]) -> str:
    return ", ".join(f"{k}={_number(k, v)}" for k, v in fields.items())


def follow(ctx: Ctx, op: dict[str, Any], timeout: float | None) -> dict[str, Any]:
    """Poll the operation until it succeeds or fails; live display on a terminal, one line
    per new step otherwise. Returns the final operation."""
    err = ctx.out.err
    started = time.monotonic()
    deadline = None if timeout is None else started + timeout
    op_id = op["id"]

    def poll() -> dict[str, Any]:
        doc: dict[str, Any] = ctx.api.get(f"/operations/{seg(op_id)}")
        return doc

    def timed_out() -> bool:
        return deadline is not None and time.monotonic() >= deadline

    if err.is_terminal:
        with Live(render(op, started), console=err, refresh_per_second=4, transient=True) as live:
            while op.get("state") not in TERMINAL and not timed_out():
                time.sleep(ctx.settings.poll_interval)
                op = poll()
                live.update(render(op, started))
    else:  # a log (CI, a pipe): one line per change, so the log reads as a story
        seen, state, said, said_at = 0, None, "", 0.0
        while True:
            if op.get("state") != state:
                state = op.get("state")
                err.print(f"operation {op_id} {op.get('kind')}: {state}", markup=False)
            steps = op.get("steps") or []
            for step in steps[seen:]:
                detail = step.get("detail") if isinstance(step, dict) else None
                extra = f" {summary(_flatten(detail))}" if isinstance(detail, dict) else ""
                err.print(f"  done: {step.get('name')}{extra}", markup=False)
            seen = len(steps)
            now = summary(progress_fields(op)) if state == "running" else ""
            if now and now != said and time.monotonic() - said_at >= 5 * ctx.settings.poll_interval:
                err.print(f"  {now}", markup=False)
                said, said_at = now, time.monotonic()
            if state in TERMINAL or timed_out():
                break
            time.sleep(ctx.settings.poll_interval)
            op = poll()
    if op.get("state") not in TERMINAL:
        raise CliError(
            f"operation {op_id} is still {op.get('state')} after {timeout:g}s; it goes on — "
            f"follow it with: tidegate wait {op_id}",
            Exit.TIMEOUT,
        )
    return op


def duration(op: dict[str, Any]) -> str:
    try:
        start = datetime.fromisoformat(str(op.get("started_at") or op.get("created_at")))
        end = datetime.fromisoformat(str(op.get("finished_at")))
    except ValueError:
        return ""
    return f" in {(end - start).total_seconds():.1f}s"


def report(ctx: Ctx, op: dict[str, Any]) -> None:
    """Print the operation's final state; exit 1 when it failed."""
    out = ctx.out
    if out.is_table:
        result = op.get("result") or {}
        extra = f", run {op['run_id']}" if op.get("run_id") else ""
        out.line(f"operation {op['id']} {op.get('kind')} {op.get('state')}{duration(op)}{extra}")
        if isinstance(result, dict) and result:
            out.fields(result)
    else:
        out.document(op)
    if op.get("state") == "failed":
        reason = op.get("error") or "no reason given"
        raise CliError(f"operation {op['id']} ({op.get('kind')}) failed: {reason}", Exit.FAILED)


def accepted(ctx: Ctx, op: dict[str, Any], wait: bool, timeout: float | None) -> None:
    """After a 202: follow the operation (``--wait``) or print its id and return at once."""
    if wait:
        report(ctx, follow(ctx, op, timeout))
        return
    if ctx.out.is_table:
        ctx.out.line(f"operation {op['id']} {op.get('kind')} {op.get('state')}")
        ctx.out.hint(f"follow it with: tidegate wait {op['id']}")
    else:
        ctx.out.document(op)
